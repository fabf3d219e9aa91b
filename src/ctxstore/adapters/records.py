"""A framework's message or item, kept exactly inside one ctxstore Message.

Both frameworks' records are JSON documents.  The document's main text (a LangChain
message's string content, an Agents item's ``content``, ``output`` or ``arguments``)
becomes the Message's ``content``, which is what ctxstore's context windows, token
counts and the contract read; the rest of the document goes into ``metadata`` under
the framework's key, with the name of the field the text came from, so ``unpack``
returns a document equal to the one given.  A document whose rest does not fit the
storage's metadata limit is kept whole, as JSON, in ``content`` instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ctxstore.errors import InvalidMessageError, MissingExtraError
from ctxstore.models import Message, Role
from ctxstore.storage.rules import DEFAULT_LIMITS, Limits
from ctxstore.textcheck import json_problem

T = TypeVar("T")

#: In a record: the rest of the document, the field its text came from, or the whole
#: document as JSON in the content.
DOCUMENT, TEXT_FIELD, WHOLE = "document", "text_field", "whole"


def missing_extra(extra: str, package: str, error: ImportError) -> MissingExtraError:
    missing = MissingExtraError(
        f"ctxstore.adapters.{extra} needs {package}: pip install 'ctxstore[{extra}]' ({error})"
    )
    missing.name = error.name
    return missing


def limits_of(storage: object) -> Limits:
    limits = getattr(storage, "limits", None)
    return limits if isinstance(limits, Limits) else DEFAULT_LIMITS


def pack(
    key: str,
    document: dict[str, Any],
    role: Role,
    limits: Limits,
    *,
    text_field: str | None = None,
    text: str = "",
) -> Message:
    """``document`` as a Message: ``text_field``'s value (a str) as the content, else
    ``text`` (a rendering for context windows; the document keeps its own)."""
    if text_field is not None:
        text = document[text_field]
        rest = {name: value for name, value in document.items() if name != text_field}
        record: dict[str, Any] = {DOCUMENT: rest, TEXT_FIELD: text_field}
    else:
        record = {DOCUMENT: document}
    metadata = {key: record}
    if _compact_size(metadata) > limits.max_metadata_bytes:
        metadata = {key: {WHOLE: True}}
        text = _compact(document, limits)
    return Message(role=role, content=text, metadata=metadata)


def unpack(key: str, message: Message) -> dict[str, Any] | None:
    """The document ``pack`` stored; None for a message written without this adapter."""
    record = message.metadata.get(key)
    if not isinstance(record, dict):
        return None
    if record.get(WHOLE):
        whole = json.loads(message.content)
        if not isinstance(whole, dict):
            raise ValueError(f"a whole record is a JSON {type(whole).__name__}, not an object")
        return whole
    document: dict[str, Any] = dict(record[DOCUMENT])
    field = record.get(TEXT_FIELD)
    if field is not None:
        document[field] = message.content
    return document


def convert_all(messages: Sequence[Message], convert: Callable[[Message], T]) -> list[T]:
    """``convert`` applied to every message."""
    return [convert(message) for message in messages]


def _compact(value: object, limits: Limits) -> str:
    """Compact JSON of ``value``, refusing what JSON would not give back unchanged."""
    problem = json_problem(value, max_depth=limits.max_json_depth)
    if problem:
        raise InvalidMessageError(f"cannot be stored exactly: {problem}")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _compact_size(value: object) -> int:
    """UTF-8 bytes of ``value`` as compact JSON (what the metadata limit measures); the
    Message's own checks say what is wrong with a value that is not JSON."""
    try:
        encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return 0
    return len(encoded.encode("utf-8", "surrogatepass"))
