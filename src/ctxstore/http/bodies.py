"""Request bodies: read, validated strictly against their published schema, and checked
for two values the PostgreSQL backend would accept but could not give back.

Every body is parsed once, by the standard library's JSON parser, which refuses what RFC
8259 leaves to the receiver in the one way that is safe: an object with a duplicate
name (that parsers answer differently), NaN and Infinity, text that is not UTF-8.  The
parsed document is then validated once, in pydantic's strict mode: a string is never
read as a number or a boolean, a number never as a timestamp, so what the OpenAPI
document calls invalid is refused.  Messages, states and profiles are validated by the
library's own models (nothing here restates their fields); the library then applies its
rules (limits, storable text) when the handler calls it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from ctxstore.http.problems import MALFORMED, UNSUPPORTED_MEDIA_TYPE, Problem
from ctxstore.http.schemas import AttachResponseIn, ContextRequest, SummaryIn, WriteMessages
from ctxstore.models import ConsultationState, UserProfile

ModelT = TypeVar("ModelT", bound=BaseModel)
#: Bodies above this many bytes are parsed off the event loop (about 2 ms of CPU here).
OFF_LOOP_BYTES = 64 * 1024

#: The request schemas of the OpenAPI document, by component name (openapi.py adds them).
REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "WriteMessages": WriteMessages,
    "SummaryIn": SummaryIn,
    "StateIn": ConsultationState,
    "ProfileIn": UserProfile,
    "ContextRequest": ContextRequest,
    "AttachResponseIn": AttachResponseIn,
}
_NAMES = {model: name for name, model in REQUEST_MODELS.items()}


def request_body(model: type[BaseModel]) -> dict[str, Any]:
    """A route's ``openapi_extra`` for a JSON body of ``model``."""
    reference = {"$ref": f"#/components/schemas/{_NAMES[model]}"}
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": reference}}}
    }


async def parse(request: Request, model: type[ModelT]) -> ModelT:
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise Problem(UNSUPPORTED_MEDIA_TYPE, "send the body as application/json")
    raw = await request.body()
    if len(raw) > OFF_LOOP_BYTES:
        # Parsing a large body takes the CPU for many milliseconds: in a thread, the
        # event loop still gets its turns (the GIL changes hands every few ms) and the
        # worker's other requests, its probes included, are answered meanwhile.
        return await asyncio.to_thread(_validated, raw, model)
    return _validated(raw, model)


def _validated(raw: bytes, model: type[ModelT]) -> ModelT:
    try:
        document = json.loads(
            raw.decode("utf-8"), object_pairs_hook=_object, parse_constant=_no_constant
        )
    except UnicodeDecodeError:
        raise Problem(MALFORMED, "the request body is not UTF-8") from None
    except _DuplicateName as error:
        raise Problem(MALFORMED, f"the request body names {error} twice in one object") from None
    except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
        raise Problem(MALFORMED, "the request body is not valid JSON") from None
    try:
        return model.model_validate(document, strict=True)
    except ValidationError as error:
        raise _invalid(error.errors(include_url=False, include_input=False)) from None


class _DuplicateName(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for name, _ in pairs:
            if name in seen:
                raise _DuplicateName(json.dumps(name, ensure_ascii=False)[:80])
            seen.add(name)
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN, Infinity, -Infinity


def _invalid(errors: Any) -> RequestValidationError:
    return RequestValidationError(
        [{**item, "loc": ("body", *item.get("loc", ()))} for item in errors]
    )
