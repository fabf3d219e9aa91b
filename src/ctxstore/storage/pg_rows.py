"""Rows and parameters of PostgresStorage's writes, and what a loaded History extends."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER
from ctxstore.models import EMPTY_METADATA, MESSAGE_FORMAT, Message, full_digest
from ctxstore.storage import pg_sql
from ctxstore.storage.history import History, Origin

# LOAD_SESSION's trailing session columns.
COUNT = len(MESSAGE_COLUMN_ORDER)
HASH = COUNT + 1
VERSION = COUNT + 2
FORMAT = MESSAGE_COLUMN_ORDER.index("format_version")
DIGEST = MESSAGE_COLUMN_ORDER.index("digest")
METADATA = MESSAGE_COLUMN_ORDER.index("metadata")


def message_row(
    session_id: str, seq: int, message: Message, token_count: int | None = None
) -> dict[str, Any]:
    stamp = message.timestamp
    offset = stamp.utcoffset() if stamp is not None else None
    return {
        "session_id": session_id,
        "seq": seq,
        "role": message.role,
        "content": message.content,
        "turn_id": message.turn_id,
        "ts": stamp,
        "ts_offset": int(offset.total_seconds()) if offset is not None else None,
        "name": message.name,
        "metadata": message.metadata or None,
        "digest": message.core_digest(),
        "token_count": token_count,
        "format_version": MESSAGE_FORMAT,
    }


def append_arrays(first_seq: int, new: Sequence[Message]) -> list[list[Any]]:
    """Column arrays for pg_sql's unnest() of new messages, in its parameter order.

    Built column by column: this runs on every turn, so no per-message row dict.
    """
    offsets = [m.timestamp.utcoffset() if m.timestamp is not None else None for m in new]
    return [
        list(range(first_seq, first_seq + len(new))),
        [m.role for m in new],
        [m.content for m in new],
        [m.turn_id for m in new],
        [m.timestamp for m in new],
        [int(o.total_seconds()) if o is not None else None for o in offsets],
        [m.name for m in new],
        # SQLAlchemy's jsonb codec on the connection takes JSON text.
        [json.dumps(m.metadata) if m.metadata else None for m in new],
        [m.core_digest() for m in new],
    ]


def track(
    messages: object,
    session_id: str,
    saved: list[Message],
    digests: list[bytes],
    known: pg_sql.KnownSessions,
) -> None:
    """After a general-path save of a History: it now extends what is stored."""
    if not isinstance(messages, History):
        return
    entry = known.get(session_id)
    if entry is None or entry.hasher is None or entry.count != len(saved):
        messages.origin = None
        return
    messages.origin = Origin(
        session_id,
        entry.count,
        entry.content_hash,
        entry.hasher.copy(),
        # Only loaded messages share read-only empty metadata; anything else is checked.
        tuple(
            (position, digest)
            for position, (message, digest) in enumerate(zip(saved, digests, strict=True))
            if message.metadata is not EMPTY_METADATA
        ),
    )


def origin_of(session_id: str, rows: Sequence[Any], stored_hash: bytes | None) -> Origin | None:
    """What a loaded History extends: checked against the stored content hash."""
    if stored_hash is None:
        return None
    digests = [
        row[DIGEST] if row[METADATA] is None else full_digest(row[DIGEST], row[METADATA])
        for row in rows
    ]
    hasher = hashlib.sha256(b"".join(digests))
    if hasher.digest() != stored_hash:  # e.g. rows in an older format
        return None
    return Origin(
        session_id,
        len(rows),
        stored_hash,
        hasher,
        tuple(
            (position, digest)
            for position, (row, digest) in enumerate(zip(rows, digests, strict=True))
            if row[METADATA] is not None
        ),
    )


def user_messages(messages: Sequence[Message]) -> int:
    return sum(1 for message in messages if message.role == "user")


def activity(new: Sequence[Message], whole: Sequence[Message]) -> tuple[int, Any, Any]:
    """Analytics parameters of a write: user messages among ``new``, and the timestamps of
    the first and last message of ``whole`` (None: the server's time)."""
    return (
        user_messages(new),
        whole[0].timestamp if whole else None,
        whole[-1].timestamp if whole else None,
    )
