"""The SQL of PostgresStorage, in one place.

Most statements are SQLAlchemy Core.  The two hot paths (load, append a turn) are plain
SQL sent straight to the asyncpg connection underneath SQLAlchemy's pool: each is one
statement, so it is its own transaction, and skipping SQLAlchemy's explicit
BEGIN/COMMIT and row processing is what keeps them within reach of raw asyncpg.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

from sqlalchemy import and_, bindparam, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ctxstore.db.tables import messages, sessions
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER

EMPTY_HASH = hashlib.sha256(b"").digest()

_M_COLUMNS = ", ".join(f"m.{name}" for name in MESSAGE_COLUMN_ORDER)

# Session state and every message in one statement: one snapshot, one round trip.
# A session without messages yields one row whose message columns are NULL.
LOAD_SESSION = f"""
SELECT {_M_COLUMNS}, s.message_count, s.content_hash
  FROM sessions AS s
  LEFT JOIN messages AS m ON m.session_id = s.session_id
 WHERE s.session_id = $1
 ORDER BY m.seq
"""

# Append new messages only if the session still holds exactly the list the caller
# extended (same count, same content hash).  Under READ COMMITTED a concurrent save makes
# the UPDATE re-check its WHERE against the new row version, so a lost race returns no
# row and writes nothing; the caller then takes the locked path.
APPEND_IF_UNCHANGED = """
WITH updated AS (
    UPDATE sessions
       SET message_count = $4, content_hash = $5, version = version + 1, updated_at = now()
     WHERE session_id = $1 AND message_count = $2 AND content_hash = $3
 RETURNING version
), inserted AS (
    INSERT INTO messages
           (session_id, seq, role, content, turn_id, ts, ts_offset, name, metadata, digest,
            format_version)
    SELECT $1, m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.name, m.metadata,
           m.digest, $15
      FROM unnest($6::int[], $7::text[], $8::text[], $9::text[], $10::timestamptz[],
                  $11::int[], $12::text[], $13::jsonb[], $14::bytea[])
           AS m(seq, role, content, turn_id, ts, ts_offset, name, metadata, digest)
     WHERE EXISTS (SELECT FROM updated)
)
SELECT version FROM updated
"""

LOCK_SESSION = (
    select(sessions.c.message_count, sessions.c.content_hash, sessions.c.version)
    .where(sessions.c.session_id == bindparam("sid"))
    .with_for_update()
)

CREATE_SESSION = (
    pg_insert(sessions)
    .values(session_id=bindparam("sid"), content_hash=EMPTY_HASH)
    .on_conflict_do_nothing(index_elements=[sessions.c.session_id])
    .returning(sessions.c.message_count, sessions.c.content_hash, sessions.c.version)
)

STORED_DIGESTS = (
    select(messages.c.seq, messages.c.digest, messages.c.metadata)
    .where(messages.c.session_id == bindparam("sid"))
    .order_by(messages.c.seq)
)

DELETE_FROM_POSITION = delete(messages).where(
    and_(messages.c.session_id == bindparam("sid"), messages.c.seq >= bindparam("start"))
)

FINISH_SAVE = (
    update(sessions)
    .where(sessions.c.session_id == bindparam("sid"))
    .values(
        message_count=bindparam("count"),
        content_hash=bindparam("hash"),
        version=bindparam("new_version"),
        updated_at=func.now(),
    )
)

INSERT_MESSAGES = messages.insert()

DELETE_SESSION = delete(sessions).where(sessions.c.session_id == bindparam("sid"))

SESSION_EXISTS = select(sessions.c.version).where(sessions.c.session_id == bindparam("sid"))


def prefix_and_total_hash(digests: Sequence[bytes], prefix: int) -> tuple[bytes, bytes]:
    """Content hashes of ``digests[:prefix]`` and of all of ``digests``, in one pass."""
    hasher = hashlib.sha256(b"".join(digests[:prefix]))
    prefix_hash = hasher.digest()
    hasher.update(b"".join(digests[prefix:]))
    return prefix_hash, hasher.digest()


class KnownSessions:
    """What this process last saw of each session: (message count, content hash).

    Only a hint for the one-statement append; PostgreSQL re-checks it, so a stale entry
    costs a fallback, never correctness.  Bounded, least recently used first out.
    """

    def __init__(self, capacity: int = 10_000) -> None:
        self._entries: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        self._capacity = capacity

    def get(self, session_id: str) -> tuple[int, bytes] | None:
        entry = self._entries.get(session_id)
        if entry is not None:
            self._entries.move_to_end(session_id)
        return entry

    def remember(self, session_id: str, count: int, content_hash: bytes) -> None:
        self._entries[session_id] = (count, content_hash)
        self._entries.move_to_end(session_id)
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def forget(self, session_id: str) -> None:
        self._entries.pop(session_id, None)
