"""Stored message rows and serialized messages -> Message (docs/legacy-formats.md).

This is the one place rows become messages.  Rows already in the current format take a
fast path that validates nothing again (PostgreSQL's CHECK constraints held them to the
format when they were written); every other row and every serialized message goes
through the upgrade mapper (formats/mapper.py: MESSAGES).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from pydantic import BaseModel

from ctxstore.errors import CorruptDataError
from ctxstore.formats.mapper import FORMAT_KEY, MESSAGES
from ctxstore.models import (
    EMPTY_METADATA,
    FIELD_NAMES,
    MESSAGE_FORMAT,
    Message,
    construct_trusted,
)
from ctxstore.timestamps import NanoDatetime, with_nanoseconds

__all__ = [
    "FORMAT_KEY",
    "MESSAGE_COLUMN_ORDER",
    "MessageDocument",
    "detect_message_format",
    "message_from_document",
    "message_to_document",
    "row_to_message",
    "rows_to_messages",
    "upgrade_message_document",
]

MessageDocument = dict[str, Any]

#: The ``messages`` columns every row handed to this module starts with (from ``seq``).
MESSAGE_COLUMN_ORDER = (
    "seq",
    "role",
    "content",
    "turn_id",
    "ts",
    "ts_offset",
    "ts_nanos",
    "name",
    "metadata",
    "digest",
    "format_version",
)
_COLUMNS = len(MESSAGE_COLUMN_ORDER)


def detect_message_format(document: MessageDocument) -> int:
    """The format of a serialized message that may not say (docs/legacy-formats.md).

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
    return MESSAGES.load(body, format_version, session_id=session_id, position=position)


def message_to_document(message: Message) -> MessageDocument:
    """The current format as JSON-ready data, stating its format.

    Go's encoding/json matches keys case-insensitively and ignores unknown ones, so the
    original Go service can still read what this writes.
    """
    document = message.model_dump(mode="json")
    document[FORMAT_KEY] = MESSAGE_FORMAT
    return document


def upgrade_message_document(
    document: MessageDocument, format_version: int, *, session_id: str, position: int
) -> Message:
    """Lift a serialized message of any known format to the current Message."""
    return MESSAGES.load(document, format_version, session_id=session_id, position=position)


# -- rows ---------------------------------------------------------------------------------------

# A row stores the UTC instant and the original UTC offset in seconds.  Every offset in
# use on Earth is a whole number of quarter hours within +-14:00: the loading loop looks
# these up (the shift to add and the zone to attach); anything else takes the careful path.
_SHIFTS: dict[int, tuple[timedelta, timezone]] = {
    minutes * 60: (timedelta(minutes=minutes), timezone(timedelta(minutes=minutes)))
    for minutes in range(-14 * 60, 14 * 60 + 1, 15)
}
# ``datetime(state, zone)`` rebuilds a datetime from its 10-byte pickle state (wall-clock
# fields) with another zone.  Shifting the UTC instant, then re-attaching the zone this way
# costs half of ``astimezone``, the largest single cost of loading a message.
_new_datetime = cast("Callable[[bytes, timezone | None], datetime]", datetime)
_pickle_state = cast("Callable[[datetime], tuple[Any, tuple[bytes, Any]]]", datetime.__reduce__)
_NANO = cast("Callable[[bytes, timezone | None], NanoDatetime]", NanoDatetime)
#: A row rows_to_messages leaves to row_to_message (no format is this).
_CAREFUL: Any = object()


def _restore_offset(stamp: datetime | None, offset: int | None) -> datetime | None:
    if stamp is None or not offset:
        return stamp
    shift = _SHIFTS.get(offset)
    zone = shift[1] if shift is not None else timezone(timedelta(seconds=offset))
    return stamp.astimezone(zone)


def _infinity(stamp: object) -> str:
    # asyncpg reads -infinity as datetime.min and infinity as datetime.max, both naive.
    if stamp == datetime.min:
        return "-infinity"
    return "infinity" if stamp == datetime.max else repr(stamp)


# Setters of the slots pydantic keeps on every model, bound once: calling a slot's own
# setter skips the attribute lookup object.__setattr__ does on every call.
_SET_DICT = BaseModel.__dict__["__dict__"].__set__
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__


def trusted_messages(fields: Iterable[dict[str, Any]]) -> list[Message]:
    """Messages of fields a strict schema has validated already (the HTTP service's
    bodies): built without validating again, as rows are; the store checks its rules."""
    result: list[Message] = []
    new_instance, message_type = object.__new__, Message
    names = FIELD_NAMES
    for item in fields:
        message = new_instance(message_type)
        _SET_DICT(message, item)
        _SET_FIELDS_SET(message, names)
        _SET_EXTRA(message, None)
        _SET_PRIVATE(message, {"_core_digest": None})
        result.append(message)
    return result


def rows_to_messages(
    rows: Sequence[Any], *, session_id: str, current: int | None = MESSAGE_FORMAT
) -> list[Message]:
    """Map ``messages`` rows (starting with MESSAGE_COLUMN_ORDER) to Messages.

    Current-format rows are built inline: this loop runs once per stored message on
    every load, so it avoids every call per row but the time's.  Anything else goes
    through row_to_message and the upgrade mapper.  ``current``: how the rows spell the
    current format (a read may send NULL for it, and the format only of the other rows:
    None).
    """
    result: list[Message] = []
    append = result.append
    new_instance, message_type, field_names, empty, careful = (
        object.__new__,
        Message,
        FIELD_NAMES,
        EMPTY_METADATA,
        _CAREFUL,
    )
    set_dict, set_fields_set, set_extra, set_private = (
        _SET_DICT,
        _SET_FIELDS_SET,
        _SET_EXTRA,
        _SET_PRIVATE,
    )
    time_of = _Times().of
    end = _COLUMNS
    for row in rows:
        (position, role, content, turn_id, stamp, offset, nanos, name, metadata, digest, fmt) = row[
            :end
        ]
        if metadata is None:
            metadata = empty
        elif type(metadata) is not dict:
            fmt = careful
        if fmt == current and (stamp is not None or offset or nanos):
            stamp = time_of(stamp, offset, nanos)
            if stamp is careful:
                fmt = careful
        if fmt != current:
            append(_careful(row[:end], current, session_id, position))
            continue
        message = new_instance(message_type)
        set_dict(
            message,
            {
                "role": role,
                "content": content,
                "turn_id": turn_id,
                "timestamp": stamp,
                "name": name,
                "metadata": metadata,
            },
        )
        set_fields_set(message, field_names)
        set_extra(message, None)
        set_private(message, {"_core_digest": digest})
        append(message)
    return result


class _Times:
    """A stored time (instant, offset, nanoseconds) as a message's datetime, for
    rows_to_messages.  A run of rows at the very same stored time shares the one datetime
    made for the first of them."""

    __slots__ = ("_made", "_stored")

    def __init__(self) -> None:
        self._stored: tuple[Any, Any, Any] = (None, 0, None)
        self._made: Any = None

    def of(self, stamp: Any, offset: Any, nanos: Any) -> Any:
        """The datetime, or _CAREFUL for a row to look at closely: a time's parts without
        the time, +-infinity (which asyncpg reads naive), bad nanoseconds, an unusual or
        corrupt offset, a local time out of range."""
        if stamp is None:
            return _CAREFUL  # offset or nanoseconds without a time
        if stamp == self._stored[0] and offset == self._stored[1] and nanos == self._stored[2]:
            return self._made
        if stamp.tzinfo is None or (nanos and not 0 < nanos < 1000):
            return _CAREFUL
        if not offset:
            made = with_nanoseconds(stamp, nanos) if nanos else stamp
        elif (found := _SHIFTS.get(offset)) is None:
            return _CAREFUL
        else:
            made = _shifted(stamp, nanos, *found)
            if made is _CAREFUL:
                return made
        self._stored, self._made = (stamp, offset, nanos), made
        return made


def _shifted(stamp: datetime, nanos: Any, shift: timedelta, zone: timezone) -> Any:
    """The UTC instant shifted, its wall-clock fields given the zone (a datetime's pickle
    state): half the cost of astimezone, the costliest part of a row."""
    try:
        state = _pickle_state(stamp + shift)[1][0]
    except (TypeError, OverflowError):  # not a time, or local time out of range
        return _CAREFUL
    if nanos:  # with_nanoseconds, from the state at hand
        made = _NANO(state, zone)
        made.nanosecond = nanos
        return made
    return _new_datetime(state, zone)


def _careful(row: Any, current: int | None, session_id: str, position: int) -> Message:
    """row_to_message for rows_to_messages, the current format spelled out where the rows
    leave it out (``current`` None)."""
    if row[-1] is None and current is None:
        row = (*row[:-1], MESSAGE_FORMAT)
    return row_to_message(row, session_id=session_id, position=position)


def row_to_message(row: Any, *, session_id: str, position: int) -> Message:
    """Map one ``messages`` row (exactly MESSAGE_COLUMN_ORDER) to a Message."""
    (_seq, role, content, turn_id, stamp, offset, nanos, name, metadata, digest, fmt) = row
    if type(fmt) is not int or fmt > MESSAGE_FORMAT:
        # Newer than this code knows (or no format at all): nothing else can be trusted.
        return MESSAGES.load(None, fmt, session_id=session_id, position=position)
    if metadata is not None and not isinstance(metadata, dict):
        raise CorruptDataError(
            "message metadata is not an object", session_id=session_id, position=position
        )
    stamp = _stored_time(stamp, offset, nanos, session_id=session_id, position=position)
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
    document = _older_document(fmt, role, content, name, metadata)
    return MESSAGES.load(document, fmt, session_id=session_id, position=position)


def _stored_time(
    stamp: Any, offset: Any, nanos: Any, *, session_id: str, position: int
) -> datetime | None:
    """A row's timestamp columns as one time; CorruptDataError where they can't be."""
    if stamp is not None and (not isinstance(stamp, datetime) or stamp.tzinfo is None):
        raise CorruptDataError(
            f"stored timestamp is {_infinity(stamp)}, not a time: an earlier ctxstore stored "
            "Go's zero or maximum time so; `ctxstore upgrade-data` repairs it",
            session_id=session_id,
            position=position,
        )
    try:
        restored = _restore_offset(stamp, offset)
        if nanos and restored is not None:
            restored = with_nanoseconds(restored, nanos)
    except (TypeError, ValueError, OverflowError) as error:
        raise CorruptDataError(
            f"bad timestamp offset {offset} or nanoseconds {nanos}",
            session_id=session_id,
            position=position,
        ) from error
    return restored


def _older_document(
    fmt: int, role: Any, content: Any, name: Any, metadata: dict[str, Any] | None
) -> MessageDocument:
    """A row of an older format as the document that format stored."""
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
    return document
