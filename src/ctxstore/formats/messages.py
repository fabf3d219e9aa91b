"""Stored message rows -> Message, upgrading old formats on the way (LEGACY_FORMATS.md).

This is the one place rows become models.  Rows already in the current format take a
fast path that validates nothing again (PostgreSQL's CHECK constraints held them to the
format when they were written); older formats are lifted one step at a time, vN -> vN+1,
then validated.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

from pydantic import BaseModel

from ctxstore.errors import CorruptDataError, InvalidInputError, UnsupportedFormatError
from ctxstore.models import (
    EMPTY_METADATA,
    FIELD_NAMES,
    MESSAGE_FORMAT,
    Message,
    construct_trusted,
)

MessageDocument = dict[str, Any]

#: The ``messages`` columns every row handed to this module starts with (from ``skip``).
MESSAGE_COLUMN_ORDER = (
    "seq",
    "role",
    "content",
    "turn_id",
    "ts",
    "ts_offset",
    "name",
    "metadata",
    "digest",
    "format_version",
)
_KNOWN_KEYS = frozenset(("role", "content", "name", "turn_id", "timestamp", "metadata"))
#: The key a serialized message (in Redis, in imports) may carry to name its format.
FORMAT_KEY = "format_version"


def _keep_unknown_in_metadata(document: MessageDocument) -> MessageDocument:
    """Fields the current Message doesn't have move to metadata instead of being dropped."""
    unknown = [key for key in document if key not in _KNOWN_KEYS]
    if not unknown:
        return document
    metadata = document.get("metadata")
    kept = dict(metadata) if isinstance(metadata, dict) else {}
    known = {key: value for key, value in document.items() if key in _KNOWN_KEYS}
    for key in unknown:
        kept.setdefault(key, document[key])
    known["metadata"] = kept
    return known


def detect_message_format(document: MessageDocument) -> int:
    """The format of a serialized message that may not say (LEGACY_FORMATS.md).

    An explicit ``format_version`` wins.  Go's encoding/json writes field names with
    capitals (format 0); the first Python format has neither turn ids nor timestamps
    (format 1); the current one has them (format 2).
    """
    explicit = document.get(FORMAT_KEY)
    if isinstance(explicit, int) and not isinstance(explicit, bool):
        return explicit
    if any(isinstance(key, str) and key != key.lower() for key in document):
        return 0
    if "turn_id" in document or "timestamp" in document:
        return 2
    return 1


def message_from_document(document: Any, *, session_id: str, position: int) -> Message:
    """A serialized message of any known format (a dict from JSON) -> the current Message."""
    if not isinstance(document, dict):
        raise CorruptDataError(
            f"a message must be a JSON object, not {type(document).__name__}",
            session_id=session_id,
            position=position,
        )
    format_version = detect_message_format(document)
    body = {key: value for key, value in document.items() if key != FORMAT_KEY}
    return upgrade_message_document(body, format_version, session_id=session_id, position=position)


def message_to_document(message: Message) -> MessageDocument:
    """The current format as JSON-ready data, stating its format.

    Go's encoding/json matches keys case-insensitively and ignores unknown ones, so the
    original Go service can still read what this writes.
    """
    document = message.model_dump(mode="json")
    document[FORMAT_KEY] = MESSAGE_FORMAT
    return document


def _upgrade_0_to_1(document: MessageDocument) -> MessageDocument:
    """Go's encoding/json keys (``Role``, ``Content``, ``Name``) -> lower-case keys.

    Keys and role values match case-insensitively; keys we do not know move to metadata.
    """
    upgraded: MessageDocument = {}
    metadata: dict[str, Any] = dict(document.get("metadata") or {})
    for key, value in document.items():
        lowered = key.lower()
        if lowered in ("role", "content", "name"):
            upgraded[lowered] = value
        elif key != "metadata":
            metadata[key] = value
    role = upgraded.get("role")
    if isinstance(role, str):
        upgraded["role"] = role.lower()
    upgraded["metadata"] = metadata
    return upgraded


def _upgrade_1_to_2(document: MessageDocument) -> MessageDocument:
    """Format 1 has no turn ids or timestamps: they stay null."""
    return {"turn_id": None, "timestamp": None, **document}


MESSAGE_UPGRADES: dict[int, Callable[[MessageDocument], MessageDocument]] = {
    0: _upgrade_0_to_1,
    1: _upgrade_1_to_2,
}


def upgrade_message_document(
    document: MessageDocument, format_version: int, *, session_id: str, position: int
) -> Message:
    """Lift a serialized message of any known format to the current Message."""
    if format_version > MESSAGE_FORMAT:
        raise UnsupportedFormatError(
            f"message format {format_version} is newer than this ctxstore knows ({MESSAGE_FORMAT})",
            session_id=session_id,
            position=position,
        )
    if format_version not in MESSAGE_UPGRADES and format_version != MESSAGE_FORMAT:
        raise CorruptDataError(
            f"unknown message format {format_version}", session_id=session_id, position=position
        )
    for step in range(format_version, MESSAGE_FORMAT):
        document = MESSAGE_UPGRADES[step](document)
    try:
        return Message.parse(_keep_unknown_in_metadata(document))
    except InvalidInputError as error:
        raise CorruptDataError(
            f"stored message does not validate: {error}", session_id=session_id, position=position
        ) from error


# Every UTC offset in use on Earth is a whole number of quarter hours within +-14:00;
# the loading loop looks these up, anything else is built (or refused) on the way.
_ZONES: dict[int, timezone] = {
    minutes * 60: timezone(timedelta(minutes=minutes))
    for minutes in range(-14 * 60, 14 * 60 + 1, 15)
}


def _restore_offset(stamp: datetime | None, offset: int | None) -> datetime | None:
    if stamp is None or not offset:
        return stamp
    zone = _ZONES.get(offset) or timezone(timedelta(seconds=offset))
    return stamp.astimezone(zone)


def rows_to_messages(rows: Sequence[Any], *, session_id: str) -> list[Message]:
    """Map ``messages`` rows (starting with MESSAGE_COLUMN_ORDER) to Messages.

    Current-format rows are built inline: this loop runs once per stored message on
    every load, so it avoids even a function call per row.  Anything else goes through
    row_to_message and the upgrade chain.
    """
    # Each message allocates four containers; with the collector running, building 1,000
    # of them triggers collections that cost as much as the building itself.  The loop
    # never awaits, so pausing the collector for it delays nothing else.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build_messages(rows, session_id)
    finally:
        if collecting:
            gc.enable()


# Setters of the slots pydantic keeps on every model, bound once: calling them directly
# is cheaper than object.__setattr__ looking the name up on each call.
_SET_DICT = object.__setattr__
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def _build_messages(rows: Sequence[Any], session_id: str) -> list[Message]:
    result: list[Message] = []
    append = result.append
    new_instance = object.__new__
    set_dict, set_fields_set, set_extra, set_private = (
        _SET_DICT,
        _SET_FIELDS_SET,
        _SET_EXTRA,
        _SET_PRIVATE,
    )
    field_names = FIELD_NAMES
    zones = _ZONES
    end = len(MESSAGE_COLUMN_ORDER)
    for row in rows:
        (position, role, content, turn_id, stamp, offset, name, metadata, digest, fmt) = row[:end]
        if fmt != MESSAGE_FORMAT or (metadata is not None and type(metadata) is not dict):
            append(row_to_message(row[:end], session_id=session_id, position=position))
            continue
        if offset:
            zone = zones.get(offset)
            if zone is None:  # an unusual offset, or a corrupt one: the careful path
                append(row_to_message(row[:end], session_id=session_id, position=position))
                continue
            stamp = stamp.astimezone(zone)
        message = new_instance(Message)
        set_dict(
            message,
            "__dict__",
            {
                "role": role,
                "content": content,
                "turn_id": turn_id,
                "timestamp": stamp,
                "name": name,
                "metadata": metadata if metadata is not None else EMPTY_METADATA,
            },
        )
        set_fields_set(message, field_names)
        set_extra(message, None)
        set_private(message, {"_core_digest": digest})
        append(message)
    return result


def row_to_message(row: Any, *, session_id: str, position: int) -> Message:
    """Map one ``messages`` row (see MESSAGE_COLUMNS) to a Message."""
    (_seq, role, content, turn_id, stamp, offset, name, metadata, digest, fmt) = row
    if metadata is not None and not isinstance(metadata, dict):
        raise CorruptDataError(
            "message metadata is not an object", session_id=session_id, position=position
        )
    try:
        stamp = _restore_offset(stamp, offset)
    except (ValueError, OverflowError) as error:
        raise CorruptDataError(
            f"bad timestamp offset {offset}", session_id=session_id, position=position
        ) from error
    if fmt == MESSAGE_FORMAT:
        return construct_trusted(
            role=role,
            content=content,
            turn_id=turn_id,
            timestamp=stamp,
            name=name,
            metadata=metadata,
            core_digest=digest,
        )
    if fmt > MESSAGE_FORMAT:
        return upgrade_message_document({}, fmt, session_id=session_id, position=position)
    document: MessageDocument
    if fmt == 0:
        # A Go-format row keeps its original keys: unknown ones sit in metadata.
        document = {**(metadata or {}), "Role": role, "Content": content}
        if name is not None:
            document["Name"] = name
    else:
        document = {"role": role, "content": content, "metadata": metadata or {}}
        if name is not None:
            document["name"] = name
    return upgrade_message_document(document, fmt, session_id=session_id, position=position)
