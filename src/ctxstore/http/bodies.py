"""Request bodies: read, validated strictly against their published schema, and checked
for two values the PostgreSQL backend would accept but could not give back.

Every body is JSON validated in pydantic's strict mode straight from the bytes: a string
is never read as a number or a boolean, a number never as a timestamp, so what the
OpenAPI document calls invalid is refused.  Messages, states and profiles are validated
by the library's own models (nothing here restates their fields); the library then
applies its rules (limits, storable text) when the handler calls it.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from ctxstore.http.problems import UNSUPPORTED_MEDIA_TYPE, Problem
from ctxstore.http.schemas import ContextRequest, SummaryIn, WriteMessages
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
    try:
        if len(raw) > OFF_LOOP_BYTES:
            # Parsing a large body takes the CPU for many milliseconds: in a thread, the
            # event loop still gets its turns (the GIL changes hands every few ms) and the
            # worker's other requests, its probes included, are answered meanwhile.
            return await asyncio.to_thread(model.model_validate_json, raw, strict=True)
        return model.model_validate_json(raw, strict=True)
    except ValidationError as error:
        raise _invalid(error.errors(include_url=False, include_input=False)) from None


def _invalid(errors: Any) -> RequestValidationError:
    return RequestValidationError(
        [{**item, "loc": ("body", *item.get("loc", ()))} for item in errors]
    )
