"""Stored message rows -> Message, upgrading old formats on the way (LEGACY_FORMATS.md).

This is the one place rows become models.  Rows already in the current format take a
fast path that validates nothing again (PostgreSQL's CHECK constraints held them to the
format when they were written); older formats are lifted one step at a time, vN -> vN+1,
then validated.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Any

from ctxstore.errors import CorruptDataError, InvalidInputError, UnsupportedFormatError
from ctxstore.models import MESSAGE_FORMAT, Message, construct_trusted

MessageDocument = dict[str, Any]
_KNOWN_KEYS = ("role", "content", "name", "turn_id", "timestamp", "metadata")


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
            f"message format {format_version} is newer than this ctxstore knows "
            f"({MESSAGE_FORMAT})",
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
        return Message.parse(document)
    except InvalidInputError as error:
        raise CorruptDataError(
            f"stored message does not validate: {error}", session_id=session_id, position=position
        ) from error


@lru_cache(maxsize=64)
def _fixed_offset(seconds: int) -> timezone:
    return timezone(timedelta(seconds=seconds))


def _restore_offset(stamp: datetime | None, offset: int | None) -> datetime | None:
    if stamp is None or not offset:
        return stamp
    return stamp.astimezone(_fixed_offset(offset))


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
        return construct_trusted(role, content, turn_id, stamp, name, metadata, digest)
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
