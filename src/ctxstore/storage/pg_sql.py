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
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    DateTime,
    Interval,
    Text,
    and_,
    bindparam,
    delete,
    func,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ctxstore.db.tables import messages, sessions
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER

EMPTY_HASH = hashlib.sha256(b"").digest()

# A session past its expires_at behaves as missing: reads skip it, writes purge it first.
LIVE = "(s.expires_at IS NULL OR s.expires_at > now())"

Hasher = Any  # hashlib's HASH object (not importable for annotations)

_M_COLUMNS = ", ".join(f"m.{name}" for name in MESSAGE_COLUMN_ORDER)

# Session state and every message in one statement: one snapshot, one round trip.
# A session without messages yields one row whose message columns are NULL.
LOAD_SESSION = f"""
SELECT {_M_COLUMNS}, s.message_count, s.content_hash, s.version
  FROM sessions AS s
  LEFT JOIN messages AS m ON m.session_id = s.session_id
 WHERE s.session_id = $1 AND {LIVE}
 ORDER BY m.seq
"""


def _new_messages(first: int, token_counts: int) -> str:
    """unnest() of the new messages' columns: nine array parameters from ``$first`` on,
    and their token counts in ``$token_counts``.

    The arrays are built by PostgresStorage's ``_append_arrays``, in this order.
    """
    p = [f"${first + i}" for i in range(9)]
    return f"""
unnest({p[0]}::int[], {p[1]}::text[], {p[2]}::text[], {p[3]}::text[],
       {p[4]}::timestamptz[], {p[5]}::int[], {p[6]}::text[], {p[7]}::jsonb[],
       {p[8]}::bytea[], ${token_counts}::int[])
    AS m(seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, token_count)"""


# save()'s fast path.  Append the new messages only if the session still holds exactly
# the list the caller extended (same count $2, same content hash $3) and, when given, is
# at the expected version $17 ($16: the user id, $18: the token counts, $19: the TTL,
# $20 the user messages among the new ones, $21/$22 the first and last message's
# timestamps).  Under READ COMMITTED a concurrent save makes the UPDATE re-check its WHERE
# against the new row version, so a lost race returns no row and writes nothing; the
# caller then takes the locked path.
APPEND_IF_UNCHANGED = f"""
WITH updated AS (
    UPDATE sessions AS s
       SET message_count = $4, content_hash = $5, version = version + 1, updated_at = now(),
           user_id = coalesce($16, user_id), expires_at = now() + $19::interval,
           turn_count = turn_count + $20,
           first_activity_at = coalesce($21::timestamptz, first_activity_at),
           last_activity_at = coalesce($22::timestamptz, now())
     WHERE session_id = $1 AND message_count = $2 AND content_hash = $3
       AND ($17::bigint IS NULL OR version = $17) AND {LIVE}
 RETURNING version
), inserted AS (
    INSERT INTO messages
           (session_id, seq, role, content, turn_id, ts, ts_offset, name, metadata, digest,
            token_count, format_version)
    SELECT $1, m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.name, m.metadata,
           m.digest, m.token_count, $15
      FROM {_new_messages(6, 18)}
     WHERE EXISTS (SELECT FROM updated)
)
SELECT version FROM updated
"""


def _append_statement(target: str) -> str:
    """append(): ``target`` claims positions on the session row; the messages take them.

    The session row's lock serializes appends and positions come from its message_count,
    so concurrent appends never collide or leave gaps.  Shared parameters: $1 session,
    $2 user, $3 number of new messages, $4 hash of the new messages alone (for a new
    session), $5-$13 the new messages (seq relative to the first), $14 their format,
    $15 their token counts.
    """
    return f"""
WITH target AS ({target}),
inserted AS (
    INSERT INTO messages
           (session_id, seq, role, content, turn_id, ts, ts_offset, name, metadata, digest,
            token_count, format_version)
    SELECT $1, t.start + m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.name,
           m.metadata, m.digest, m.token_count, $14
      FROM target AS t, {_new_messages(5, 15)}
)
SELECT start, version FROM target
"""


# The new content hash: of the new messages alone ($4) when nothing was stored, else
# $18, the hash this process last knew ($17, for $16 messages) extended by the new
# messages, if that knowledge was right; else NULL (the next save recomputes it from the
# stored digests).
# Activity for analytics: $turns user messages among the new ones, $first/$last the
# timestamps of the first and last new message (the server's time when they have none).
_EXTEND_SESSION = """
       expires_at = now() + $ttl::interval,
       turn_count = s.turn_count + $turns,
       first_activity_at = CASE WHEN s.message_count = 0
                                THEN coalesce($first::timestamptz, now())
                                ELSE s.first_activity_at END,
       last_activity_at = coalesce($last::timestamptz, now()),
       message_count = s.message_count + $3,
       content_hash = CASE WHEN s.message_count = 0 THEN $4::bytea
                           WHEN s.message_count = $16 AND s.content_hash = $17
                           THEN $18::bytea END,
       version = s.version + 1,
       user_id = coalesce($2, s.user_id),
       updated_at = now()"""


# An expired session makes these return no row; PostgresStorage purges it and retries.
def _extend(ttl: int, turns: int, first: int, last: int) -> str:
    return (
        _EXTEND_SESSION.replace("$ttl", f"${ttl}")
        .replace("$turns", f"${turns}")
        .replace("$first", f"${first}")
        .replace("$last", f"${last}")
    )


_NEW_SESSION_COLUMNS = """session_id, user_id, message_count, content_hash, version,
                               expires_at, turn_count, first_activity_at, last_activity_at"""

APPEND = _append_statement(f"""
    INSERT INTO sessions AS s ({_NEW_SESSION_COLUMNS})
    VALUES ($1, $2, $3, $4, 1, now() + $19::interval, $20,
            coalesce($21::timestamptz, now()), coalesce($22::timestamptz, now()))
    ON CONFLICT (session_id) DO UPDATE SET {_extend(19, 20, 21, 22)}
     WHERE {LIVE}
    RETURNING s.message_count - $3 AS start, s.version""")

# expected_version = 0: only if the session does not exist yet.
APPEND_TO_NEW = _append_statement(f"""
    INSERT INTO sessions AS s ({_NEW_SESSION_COLUMNS})
    VALUES ($1, $2, $3, $4, 1, now() + $16::interval, $17,
            coalesce($18::timestamptz, now()), coalesce($19::timestamptz, now()))
    ON CONFLICT (session_id) DO NOTHING
    RETURNING 0 AS start, s.version""")

# expected_version = $19.
APPEND_AT_VERSION = _append_statement(f"""
    UPDATE sessions AS s SET {_extend(20, 21, 22, 23)}
     WHERE s.session_id = $1 AND s.version = $19 AND {LIVE}
    RETURNING s.message_count - $3 AS start, s.version""")

SESSION_VERSION = f"SELECT version FROM sessions AS s WHERE session_id = $1 AND {LIVE}"

PURGE_IF_EXPIRED = """
DELETE FROM sessions WHERE session_id = $1 AND expires_at <= now() RETURNING 1
"""

PURGE_LOCKED_IF_EXPIRED = delete(sessions).where(
    sessions.c.session_id == bindparam("sid"), sessions.c.expires_at <= func.now()
)

# purge-expired: one batch; SKIP LOCKED leaves sessions being written to the next run.
PURGE_EXPIRED_BATCH = """
WITH doomed AS (
    SELECT session_id FROM sessions
     WHERE expires_at <= now()
     ORDER BY expires_at
     LIMIT $1
       FOR UPDATE SKIP LOCKED
)
DELETE FROM sessions AS s USING doomed WHERE s.session_id = doomed.session_id
RETURNING s.message_count
"""

COUNT_EXPIRED = "SELECT count(*) FROM sessions WHERE expires_at <= now()"

# The locked save: PostgreSQL checks the expected version while taking the row lock.
LOCK_SESSION = (
    select(sessions.c.message_count, sessions.c.content_hash, sessions.c.version)
    .where(
        sessions.c.session_id == bindparam("sid"),
        or_(
            bindparam("expected", type_=BigInteger) == None,  # noqa: E711 - SQL IS NULL
            sessions.c.version == bindparam("expected", type_=BigInteger),
        ),
    )
    .with_for_update()
)

CREATE_SESSION = (
    pg_insert(sessions)
    .values(
        session_id=bindparam("sid"),
        content_hash=EMPTY_HASH,
        expires_at=func.now() + bindparam("ttl", type_=Interval),
    )
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
    .where(sessions.c.session_id == bindparam("sid"), sessions.c.version == bindparam("old"))
    .values(
        message_count=bindparam("count"),
        content_hash=bindparam("hash"),
        version=sessions.c.version + 1,
        updated_at=func.now(),
        user_id=func.coalesce(bindparam("user_id", type_=Text), sessions.c.user_id),
        expires_at=func.now() + bindparam("ttl", type_=Interval),
        turn_count=bindparam("turns"),
        first_activity_at=func.coalesce(
            bindparam("first_ts", type_=DateTime(timezone=True)), sessions.c.first_activity_at
        ),
        last_activity_at=func.coalesce(
            bindparam("last_ts", type_=DateTime(timezone=True)), func.now()
        ),
    )
    .returning(sessions.c.version)
)

INSERT_MESSAGES = messages.insert()

DELETE_SESSION = delete(sessions).where(sessions.c.session_id == bindparam("sid"))

SESSION_EXISTS = select(sessions.c.version).where(sessions.c.session_id == bindparam("sid"))


def prefix_and_total_hash(digests: Sequence[bytes], prefix: int) -> tuple[bytes, Hasher]:
    """Content hash of ``digests[:prefix]``, and a hasher that has taken all of them."""
    hasher = hashlib.sha256(b"".join(digests[:prefix]))
    prefix_hash = hasher.digest()
    hasher.update(b"".join(digests[prefix:]))
    return prefix_hash, hasher


@dataclass(frozen=True)
class Known:
    """What this process last saw of a session: its message count and content hash.

    ``hasher`` (when known) has consumed every message digest, so appending can extend the
    hash without the earlier digests.
    """

    count: int
    content_hash: bytes
    hasher: Hasher | None


class KnownSessions:
    """The last Known state of each session this process wrote or read.

    Only a hint for one-statement writes; PostgreSQL re-checks it, so a stale entry
    costs a fallback, never correctness.  Bounded, least recently used first out.
    """

    def __init__(self, capacity: int = 10_000) -> None:
        self._entries: OrderedDict[str, Known] = OrderedDict()
        self._capacity = capacity

    def get(self, session_id: str) -> Known | None:
        entry = self._entries.get(session_id)
        if entry is not None:
            self._entries.move_to_end(session_id)
        return entry

    def remember(
        self, session_id: str, count: int, content_hash: bytes, hasher: Hasher | None = None
    ) -> None:
        self._entries[session_id] = Known(count, content_hash, hasher)
        self._entries.move_to_end(session_id)
        if len(self._entries) > self._capacity:
            self._entries.popitem(last=False)

    def forget(self, session_id: str) -> None:
        self._entries.pop(session_id, None)
