"""Every SQL statement of the PostgreSQL backend, named, in one style.

Column lists come from db/tables.py: a new ``messages`` column is written by every
statement that writes messages once it has an entry in rows.MESSAGE_VALUES.  Each
version check sits in the WHERE clause (or a key constraint) of the statement that
writes, so PostgreSQL enforces it; when a statement returns no row, a ``*_FACTS`` read
only explains why.

Lock order: every write locks the ``sessions`` row before any row of its children
(messages, summaries, consultation states and their history), within the statement or
transaction that writes, so no two writers wait for each other in a cycle.  Deleting a
session locks its row, then the cascade locks the children; a write to a child table that
let the foreign-key check lock the parent afterwards would take them the other way round
and deadlock against it.  So: save's transaction locks (or creates) the row first; appends
update it in their first CTE; state and summary writes lock it in theirs (``locked``);
purge-expired locks its batch's rows (skipping locked ones) before the cascade; rewrites
claim or lock the row before touching its children.

On Citus (docs/citus.md) a write whose CTEs insert, or that mixes a session's shard with
a reference table, is a ``Split``: the same statement on PostgreSQL, and on a distributed
database its parts (defined beside it), each routed to the session's shard, in one
transaction and in the same lock order (storage/postgres/sharded.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from sqlalchemy.dialects import postgresql

from ctxstore.db.tables import (
    consultation_states,
    messages,
    summaries,
    user_profiles,
)
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER
from ctxstore.storage.postgres.sharded import SEQUENTIAL, Split, pick
from ctxstore.storage.postgres.statement import Driver, Statement

_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]

# A session past its expires_at behaves as missing: reads skip it, writes purge it first.
LIVE = "(s.expires_at IS NULL OR s.expires_at > now())"
_LIVE_SESSION = f"EXISTS (SELECT FROM sessions AS s WHERE s.session_id = :sid AND {LIVE})"


def _or_now(parameter: str) -> str:
    """The time ``parameter`` holds, else the statement's.  A scalar subquery: Citus refuses
    now() inside COALESCE or CASE in an UPDATE of a distributed table, but evaluates a
    subquery's once on the coordinator (PostgreSQL: once, as an InitPlan)."""
    return f"(SELECT coalesce(({parameter})::timestamptz, now()))"


# The first CTE of a write to a child table: the live session row, locked before the child
# rows (see the lock order above).  NO KEY UPDATE, what an UPDATE of the row takes: writers
# of one session queue on it, while the foreign-key checks of its own inserts (KEY SHARE)
# need nothing more.  After a wait it yields the row as the last writer left it (and no
# row if that writer deleted it or let it expire).
_LOCK_LIVE = f"""
    SELECT s.session_id, s.message_count FROM sessions AS s
     WHERE s.session_id = :sid AND {LIVE}
       FOR NO KEY UPDATE"""
_LOCKED_SESSION = f"locked AS ({_LOCK_LIVE}\n)"
# The same lock as a statement of its own: the first part of a write on Citus (sharded.py).
LOCK_LIVE_SESSION = Statement("lock live session", _LOCK_LIVE)

# -- messages: the columns --------------------------------------------------------------------

#: Every column a message write fills, from the table (session_id and seq come apart).
MESSAGE_WRITE_COLUMNS = tuple(c.name for c in messages.c if c.name not in ("session_id", "seq"))
_unknown = set(MESSAGE_COLUMN_ORDER) - set(messages.c.keys())
assert not _unknown, f"formats read columns messages doesn't have: {_unknown}"

_PLAIN_READ = ", ".join(f"m.{name}" for name in MESSAGE_COLUMN_ORDER)
# Every message read also takes the data key and the sealed value, right after the columns
# formats read (rows.KEY_ID, rows.SEALED): rows.open_messages opens sealed rows.
_READ = f"{_PLAIN_READ}, m.key_id, m.sealed"
_READ_WITH_COUNTS = f"{_READ}, m.token_count, m.token_encoding"


def _new_messages() -> str:
    """unnest() of the new messages: one typed array parameter per column, ``:new_<column>``,
    plus ``:new_seq`` (offsets 0, 1, ... from where the write starts)."""
    arrays = ["(:new_seq)::int[]"]
    for name in MESSAGE_WRITE_COLUMNS:
        column_type = messages.c[name].type.compile(dialect=_DIALECT)
        # ts comes as ISO text (rows.py): asyncpg would send two instants as infinities
        source = f"(:new_{name})::text[]" if name == "ts" else f"(:new_{name})"
        arrays.append(f"{source}::{column_type}[]")
    names = ", ".join(("seq", *MESSAGE_WRITE_COLUMNS))
    return f"unnest({', '.join(arrays)}) AS m({names})"


def _insert_messages(start: str, source: str = "", where: str = "", session: str = ":sid") -> str:
    """INSERT of the new messages at positions ``start`` + offset."""
    columns = ", ".join(MESSAGE_WRITE_COLUMNS)
    values = ", ".join(f"m.{name}" for name in MESSAGE_WRITE_COLUMNS)
    return f"""
    INSERT INTO messages (session_id, seq, {columns})
    SELECT {session}, {start} + m.seq, {values}
      FROM {source}{_new_messages()}
    {where}"""


# -- messages: reads ---------------------------------------------------------------------------

# Session state and every message in one statement: one snapshot, one round trip.
# A session without messages yields one row whose message columns are NULL.
LOAD_SESSION = Statement(
    "load session",
    f"""
SELECT {_READ}, s.message_count, s.content_hash, s.version, s.user_id
  FROM sessions AS s
  LEFT JOIN messages AS m ON m.session_id = s.session_id
 WHERE s.session_id = :sid AND {LIVE}
 ORDER BY m.seq""",
)

SESSION_VERSION = Statement(
    "session version",
    f"SELECT version FROM sessions AS s WHERE session_id = :sid AND {LIVE}",
)

# Why an append wrote nothing: expired, too many messages, or another version.
SESSION_FACTS = Statement(
    "session facts",
    f"""
SELECT version, message_count, NOT {LIVE} AS expired
  FROM sessions AS s WHERE session_id = :sid""",
)

# -- messages: writes ---------------------------------------------------------------------------

# save()'s fast path.  Append the new messages only if the session still holds exactly
# the list the caller extended (:known_count messages with :known_hash) and, when given,
# is at :expected.  Under READ COMMITTED a concurrent save makes the UPDATE re-check its
# WHERE against the new row version, so a lost race returns no row and writes nothing;
# the caller then takes the locked path.
_UPDATE_IF_UNCHANGED = f"""
    UPDATE sessions AS s
       SET message_count = :new_count, content_hash = :new_hash, version = version + 1,
           updated_at = now(), user_id = coalesce(:user_id, user_id),
           expires_at = now() + (:ttl)::interval, turn_count = turn_count + :turns,
           first_activity_at = coalesce((:first_ts)::timestamptz, first_activity_at),
           last_activity_at = {_or_now(":last_ts")}
     WHERE session_id = :sid AND message_count = :known_count AND content_hash = :known_hash
       AND ((:expected)::bigint IS NULL OR version = :expected) AND {LIVE}
 RETURNING version"""


async def _append_if_unchanged_parts(driver: Driver, values: dict[str, Any]) -> Any:
    row = await _UPDATE_IF_UNCHANGED_PART.fetchrow(
        driver, **pick(_UPDATE_IF_UNCHANGED_PART, values)
    )
    if row is not None:
        start = {"start": values["known_count"]}
        await INSERT_MESSAGES.execute(driver, **pick(INSERT_MESSAGES, values | start))
    return row


_UPDATE_IF_UNCHANGED_PART = Statement("append if unchanged: session", _UPDATE_IF_UNCHANGED)
APPEND_IF_UNCHANGED = Split(
    Statement(
        "append if unchanged",
        f"""
WITH updated AS ({_UPDATE_IF_UNCHANGED}
), inserted AS ({_insert_messages(":known_count", where="WHERE EXISTS (SELECT FROM updated)")}
)
SELECT version FROM updated""",
    ),
    _append_if_unchanged_parts,
)


# append(): the session row hands out the positions (its message_count), under its row
# lock, so concurrent appends never collide or leave gaps.  The content hash: of the new
# messages alone (:added_hash) when nothing was stored, else :extended_hash (the hash
# this process knew, :known_hash for :known_count messages, extended by the new ones) if
# that knowledge was right, else NULL (the next save recomputes it from the digests).
# Analytics: :turns user messages among the new ones, :first_ts/:last_ts the first and
# last new message's time (the server's when they have none).
#
# In the DO UPDATE of the upsert Citus allows no function at all: there the times come
# from the proposed row (EXCLUDED), whose VALUES computed them the same way (its
# updated_at: the column's default, now()).
def _extend_session(*, upsert: bool) -> str:
    expires, first, last = (
        ("EXCLUDED.expires_at", "EXCLUDED.first_activity_at", "EXCLUDED.last_activity_at")
        if upsert
        else ("now() + (:ttl)::interval", _or_now(":first_ts"), _or_now(":last_ts"))
    )
    return f"""
       expires_at = {expires},
       turn_count = s.turn_count + :turns,
       first_activity_at = CASE WHEN s.message_count = 0 THEN {first}
                                ELSE s.first_activity_at END,
       last_activity_at = {last},
       message_count = s.message_count + :added,
       content_hash = CASE WHEN s.message_count = 0 THEN (:added_hash)::bytea
                           WHEN s.message_count = :known_count AND s.content_hash = :known_hash
                           THEN (:extended_hash)::bytea END,
       version = s.version + 1,
       user_id = coalesce(:user_id, s.user_id),
       updated_at = {"EXCLUDED.updated_at" if upsert else "now()"}"""


_NEW_SESSION = """
INSERT INTO sessions AS s (session_id, user_id, message_count, content_hash, version,
                           expires_at, turn_count, first_activity_at, last_activity_at)
VALUES (:sid, :user_id, :added, :added_hash, 1, now() + (:ttl)::interval, :turns,
        coalesce((:first_ts)::timestamptz, now()), coalesce((:last_ts)::timestamptz, now()))"""

# Within the limit on messages per session, and live; else no row (SESSION_FACTS says why).
_FITS = f"s.message_count + :added <= :max_messages AND {LIVE}"
_FITS_UPSERTED = (
    "s.message_count + :added <= :max_messages"
    " AND (s.expires_at IS NULL OR s.expires_at > EXCLUDED.updated_at)"
)


def _append(target: str) -> Split:
    """``target`` (the session row, RETURNING start and version), then the messages."""
    session = Statement("append: session", target)

    async def parts(driver: Driver, values: dict[str, Any]) -> Any:
        row = await session.fetchrow(driver, **pick(session, values))
        if row is not None:
            start = {"start": row["start"]}
            await INSERT_MESSAGES.execute(driver, **pick(INSERT_MESSAGES, values | start))
        return row

    whole = Statement(
        "append",
        f"""
WITH target AS ({target}),
inserted AS ({_insert_messages("t.start", source="target AS t, ")})
SELECT start, version FROM target""",
    )
    return Split(whole, parts)


APPEND = _append(f"""{_NEW_SESSION}
    ON CONFLICT (session_id) DO UPDATE SET {_extend_session(upsert=True)}
     WHERE {_FITS_UPSERTED}
    RETURNING s.message_count - :added AS start, s.version""")

# expected_version = 0: only if the session does not exist yet.
APPEND_TO_NEW = _append(f"""{_NEW_SESSION}
    ON CONFLICT (session_id) DO NOTHING
    RETURNING 0 AS start, s.version""")

APPEND_AT_VERSION = _append(f"""
    UPDATE sessions AS s SET {_extend_session(upsert=False)}
     WHERE s.session_id = :sid AND s.version = :expected AND {_FITS}
    RETURNING s.message_count - :added AS start, s.version""")


# With the session go its own data key (a session without a user), after its rows: every
# writer locks rows before the key its commit checks (revision 0010), and so does this.
# On Citus data_keys is a reference table, written on every node (two-phase commit): the
# parts delete the key only when there is one, so a session without one stays on its shard.
def _deleting(name: str, condition: str) -> Split:
    doomed = f"DELETE FROM sessions WHERE session_id = :sid{condition} RETURNING session_id"
    session = Statement(f"{name}: session", doomed)

    async def parts(driver: Driver, values: dict[str, Any]) -> Any:
        if await session.fetchval(driver, sid=values["sid"]) is not None and (
            await SESSION_KEY_EXISTS.fetchval(driver, sid=values["sid"])
        ):
            await DELETE_SESSION_KEY.execute(driver, sid=values["sid"])

    whole = f"""
WITH gone AS ({doomed})
DELETE FROM data_keys WHERE owner IN (SELECT 's:' || session_id FROM gone)"""
    return Split(Statement(name, whole), parts)


SESSION_KEY_EXISTS = Statement(
    "session key exists", "SELECT EXISTS (SELECT FROM data_keys WHERE owner = 's:' || :sid)"
)
DELETE_SESSION_KEY = Statement(
    "delete session key", "DELETE FROM data_keys WHERE owner = 's:' || :sid"
)

PURGE_IF_EXPIRED = _deleting("purge if expired", " AND expires_at <= now()")

# The locked save (general path): one transaction around these.
LOCK_SESSION = Statement(
    "lock session",
    """
SELECT message_count, content_hash, version FROM sessions
 WHERE session_id = :sid AND ((:expected)::bigint IS NULL OR version = :expected)
   FOR UPDATE""",
)

CREATE_SESSION = Statement(
    "create session",
    """
INSERT INTO sessions (session_id, content_hash, expires_at)
VALUES (:sid, :empty_hash, now() + (:ttl)::interval)
ON CONFLICT (session_id) DO NOTHING
RETURNING message_count, content_hash, version""",
)

ANY_SESSION_VERSION = Statement(
    "any session version", "SELECT version FROM sessions WHERE session_id = :sid"
)

STORED_DIGESTS = Statement(
    "stored digests",
    "SELECT seq, digest, metadata, key_id FROM messages WHERE session_id = :sid ORDER BY seq",
)

DELETE_FROM_POSITION = Statement(
    "delete from position", "DELETE FROM messages WHERE session_id = :sid AND seq >= :start"
)

# On Citus an INSERT ... SELECT runs on the session's shard, with a plain commit, when the
# session id comes from the colocated sessions row; from a parameter it goes through the
# coordinator as a COPY, which always commits in two phases.  A few messages (a turn) go
# as rows of VALUES instead: Citus plans those on its fast path, in half the time.
_INSERT_ON_SHARD = Statement(
    "insert messages on the session's shard",
    _insert_messages(
        ":start", "sessions AS s, ", "WHERE s.session_id = :sid", session="s.session_id"
    ),
)
_VALUES_AT_MOST = 8


@functools.cache
def _insert_rows(count: int) -> Statement:
    """INSERT of ``count`` messages as VALUES, ``:r<i>_<column>`` each (ts as text)."""
    columns = ", ".join(("session_id", "seq", *MESSAGE_WRITE_COLUMNS))
    rows = []
    for i in range(count):
        cells = [":sid", f":r{i}_seq"] + [
            f"(:r{i}_{name})::text::timestamptz" if name == "ts" else f":r{i}_{name}"
            for name in MESSAGE_WRITE_COLUMNS
        ]
        rows.append(f"({', '.join(cells)})")
    return Statement(
        f"insert {count} messages", f"INSERT INTO messages ({columns}) VALUES {', '.join(rows)}"
    )


async def _insert_messages_parts(driver: Driver, values: dict[str, Any]) -> Any:
    offsets = values["new_seq"]
    if not 0 < len(offsets) <= _VALUES_AT_MOST:
        return await _INSERT_ON_SHARD.execute(driver, **pick(_INSERT_ON_SHARD, values))
    cells: dict[str, Any] = {"sid": values["sid"]}
    for i, offset in enumerate(offsets):
        cells[f"r{i}_seq"] = values["start"] + offset
        for name in MESSAGE_WRITE_COLUMNS:
            cells[f"r{i}_{name}"] = values[f"new_{name}"][i]
    return await _insert_rows(len(offsets)).execute(driver, **cells)


INSERT_MESSAGES = Split(
    Statement("insert messages", _insert_messages(":start")), _insert_messages_parts
)

FINISH_SAVE = Statement(
    "finish save",
    f"""
UPDATE sessions
   SET message_count = :count, content_hash = :hash, version = version + 1,
       updated_at = now(), user_id = coalesce(:user_id, user_id),
       expires_at = now() + (:ttl)::interval, turn_count = :turns,
       first_activity_at = coalesce((:first_ts)::timestamptz, first_activity_at),
       last_activity_at = {_or_now(":last_ts")}
 WHERE session_id = :sid AND version = :old
RETURNING version""",
)

# Everything session-scoped goes with the row (ON DELETE CASCADE); the profile stays.  So
# does the data key of the session's user; a session's own key (no user) is destroyed,
# after the session row is locked (the lock order of every writer: rows, then keys).
DELETE_SESSION = _deleting("delete session", "")

# -- erasure ---------------------------------------------------------------------------------

# Every session of a user, counted and deleted (with everything cascading from it) in one
# statement; its sub-statements share one snapshot, so the counts are of what it deletes.
# Session rows are locked first, in id order, as every write path locks them.
# On Citus (no FOR UPDATE across shards) the parts lock the rows with an UPDATE that
# changes nothing, count what hangs from them (writers wait for those locks, so the counts
# stay true) and delete them, in the caller's transaction.
_LOCK_USER_SESSIONS = Statement(
    "erase user sessions: lock",
    "UPDATE sessions SET user_id = user_id WHERE user_id = :user_id"
    " RETURNING session_id, message_count",
)
_COUNT_SESSION_ROWS = Statement(
    "erase user sessions: count",
    """
SELECT (SELECT count(*) FROM summaries WHERE session_id = ANY(:ids)) AS summaries,
       (SELECT count(*) FROM consultation_states WHERE session_id = ANY(:ids)) AS states,
       (SELECT count(*) FROM consultation_state_history WHERE session_id = ANY(:ids))
           AS state_changes""",
)
_DELETE_SESSIONS = Statement(
    "erase user sessions: delete", "DELETE FROM sessions WHERE session_id = ANY(:ids)"
)


async def _erase_user_sessions_parts(driver: Driver, values: dict[str, Any]) -> Any:
    # One connection per worker: the keys' deletion, later in this transaction, must see the
    # rows sealed under them gone (its foreign-key checks run on each worker's connection).
    await driver.execute(SEQUENTIAL)
    locked = await _LOCK_USER_SESSIONS.fetch(driver, user_id=values["user_id"])
    ids = sorted(row["session_id"] for row in locked)
    counts: dict[str, int] = {"summaries": 0, "states": 0, "state_changes": 0}
    if ids:
        counts = dict(await _COUNT_SESSION_ROWS.fetchrow(driver, ids=ids))
        await _DELETE_SESSIONS.execute(driver, ids=ids)
    return {
        "session_ids": ids,
        "messages": sum(row["message_count"] for row in locked),
        **counts,
    }


ERASE_USER_SESSIONS = Split(
    Statement(
        "erase user sessions",
        """
WITH doomed AS (
    SELECT session_id FROM sessions WHERE user_id = :user_id ORDER BY session_id FOR UPDATE
), gone AS (
    DELETE FROM sessions AS s USING doomed
     WHERE s.session_id = doomed.session_id
    RETURNING s.session_id, s.message_count
)
SELECT (SELECT coalesce(array_agg(session_id ORDER BY session_id), '{}') FROM gone)
           AS session_ids,
       (SELECT coalesce(sum(message_count), 0) FROM gone) AS messages,
       (SELECT count(*) FROM summaries JOIN doomed USING (session_id)) AS summaries,
       (SELECT count(*) FROM consultation_states JOIN doomed USING (session_id)) AS states,
       (SELECT count(*) FROM consultation_state_history JOIN doomed USING (session_id))
           AS state_changes""",
    ),
    _erase_user_sessions_parts,
)

ERASE_USER_PROFILE = Statement(
    "erase user profile", "DELETE FROM user_profiles WHERE user_id = :user_id"
)

# Crypto-shredding, last in the erasure's transaction (writers lock rows, then the key their
# commit checks; so does the erasure): the user's data keys and the own keys of the user's
# sessions (written before the session had a user).
ERASE_USER_KEYS = Statement(
    "erase user keys",
    """
DELETE FROM data_keys
 WHERE owner = 'u:' || :user_id
    OR owner IN (SELECT 's:' || session_id FROM unnest((:session_ids)::text[]) AS session_id)
RETURNING key_id, owner""",
)

# -- expiry -----------------------------------------------------------------------------------


# purge-expired: one batch; SKIP LOCKED leaves sessions being written to the next run.
# expires_hour (indexed) is never later than expires_at, so no expired session is missed.
# Citus takes no row lock across shards: there the parts read the batch without one, then
# delete those rows still matching (a session a writer holds is waited for, then kept if
# that write moved it on), and the keys of those deleted.
def _purge_batch(name: str, matching: str, order: str) -> Split:
    candidates = Statement(
        f"{name}: candidates",
        f"SELECT session_id FROM sessions WHERE {matching} {order} LIMIT :batch_size",
    )
    doomed = Statement(
        f"{name}: delete",
        f"""
DELETE FROM sessions WHERE session_id = ANY(:ids) AND {matching}
RETURNING session_id, message_count""",
    )

    async def parts(driver: Driver, values: dict[str, Any]) -> Any:
        await driver.execute(SEQUENTIAL)
        found = await candidates.fetch(driver, **pick(candidates, values))
        ids = [row["session_id"] for row in found]
        gone = await doomed.fetch(driver, **pick(doomed, values | {"ids": ids})) if ids else []
        owners = [f"s:{row['session_id']}" for row in gone]
        if owners and await _ANY_KEY_OF.fetchval(driver, owners=owners):
            await _DELETE_KEYS_OF.execute(driver, owners=owners)
        return gone

    whole = f"""
WITH doomed AS (
    SELECT session_id FROM sessions
     WHERE {matching}
     {order}
     LIMIT :batch_size
       FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM sessions AS s USING doomed WHERE s.session_id = doomed.session_id
    RETURNING s.session_id, s.message_count
), shredded AS (  -- the sessions' own data keys, after their rows
    DELETE FROM data_keys WHERE owner IN (SELECT 's:' || session_id FROM gone)
)
SELECT message_count FROM gone"""
    return Split(Statement(name, whole), parts)


_ANY_KEY_OF = Statement(
    "any key of", "SELECT EXISTS (SELECT FROM data_keys WHERE owner = ANY(:owners))"
)
_DELETE_KEYS_OF = Statement("delete keys of", "DELETE FROM data_keys WHERE owner = ANY(:owners)")

PURGE_EXPIRED_BATCH = _purge_batch(
    "purge expired batch",
    "expires_hour <= now() AND expires_at <= now()",
    "ORDER BY expires_hour",
)

# Retention: sessions whose last write is older than :age (updated_at has no index: a
# batch scans until it found its rows; retention runs rarely, off the request path).
PURGE_OLD_BATCH = _purge_batch("purge old batch", "updated_at < now() - (:age)::interval", "")

COUNT_OLD = Statement(
    "count old", "SELECT count(*) FROM sessions WHERE updated_at < now() - (:age)::interval"
)

COUNT_EXPIRED = Statement(
    "count expired",
    "SELECT count(*) FROM sessions WHERE expires_hour <= now() AND expires_at <= now()",
)

# -- summaries --------------------------------------------------------------------------------

_SUMMARY_READ = ", ".join(c.name for c in summaries.c if c.name != "session_id")


# The next version is max + 1, computed by the INSERT after it locked the session row; a
# writer that waited for that lock computed max from its statement's snapshot, so two
# concurrent writers collide on the primary key (session_id, summary_version), and the
# loser gets ConflictError.  message_count is the locked row's, current.
# On Citus the lock is a statement of its own and the INSERT reads the (colocated) session
# row itself: Citus then runs it on the session's shard.  There the INSERT's snapshot is
# taken after the lock, so a concurrent writer's summary is seen and the next version
# taken instead (unless :expected says otherwise).
def _insert_summary(source: str) -> str:
    return f"""
INSERT INTO summaries AS new (session_id, summary_version, text, covers_until, token_count,
                              format_version, key_id, sealed)
SELECT s.session_id, latest.version + 1, :text, :covers_until, :token_count, :format_version,
       :key_id, :sealed
  FROM {source} AS s,
       LATERAL (SELECT coalesce(max(summary_version), 0) AS version
                  FROM summaries WHERE session_id = :sid) AS latest
 WHERE s.session_id = :sid AND s.message_count > :covers_until
   AND ((:expected)::int IS NULL OR latest.version = :expected)
RETURNING {", ".join(f"new.{name}" for name in _SUMMARY_READ.split(", "))}"""


_SUMMARY_ON_SHARD = Statement("insert summary: summary", _insert_summary("sessions"))


async def _insert_summary_parts(driver: Driver, values: dict[str, Any]) -> Any:
    if await LOCK_LIVE_SESSION.fetchrow(driver, sid=values["sid"]) is None:
        return None
    return await _SUMMARY_ON_SHARD.fetchrow(driver, **pick(_SUMMARY_ON_SHARD, values))


INSERT_SUMMARY = Split(
    Statement("insert summary", f"WITH {_LOCKED_SESSION}{_insert_summary('locked')}"),
    _insert_summary_parts,
)

SUMMARY_FACTS = Statement(
    "summary facts",
    f"""
SELECT s.message_count,
       (SELECT coalesce(max(summary_version), 0) FROM summaries WHERE session_id = :sid)
         AS latest
  FROM sessions AS s WHERE s.session_id = :sid AND {LIVE}""",
)

LATEST_SUMMARY = Statement(
    "latest summary",
    f"""
SELECT {_SUMMARY_READ} FROM summaries
 WHERE session_id = :sid AND {_LIVE_SESSION} ORDER BY summary_version DESC LIMIT 1""",
)

SUMMARY_AT = Statement(
    "summary at",
    f"""
SELECT {_SUMMARY_READ} FROM summaries
 WHERE session_id = :sid AND summary_version = :summary_version AND {_LIVE_SESSION}""",
)

# -- consultation state -----------------------------------------------------------------------

#: The state's typed columns, the document and its format: rows.state_values fills them.
STATE_COLUMNS = tuple(
    c.name for c in consultation_states.c if c.name not in ("session_id", "version", "updated_at")
)
_STATE_LIST = ", ".join(STATE_COLUMNS)
_STATE_VALUES = ", ".join(f":{name}" for name in STATE_COLUMNS)
_STATE_EXCLUDED = ", ".join(f"{name} = EXCLUDED.{name}" for name in STATE_COLUMNS)


_STATE_HISTORY_ROW = Statement(
    "state write: history",
    f"""
INSERT INTO consultation_state_history (session_id, version, {_STATE_LIST}, created_at)
VALUES (:sid, :version, {_STATE_VALUES}, :updated_at)""",
)


def _state_write(name: str, target: Callable[[bool], str]) -> Split:
    """The write of a state version: the session row locked, then ``target`` plus its
    history row, one statement.  ``target(True)`` takes the row from the ``locked`` CTE;
    ``target(False)`` runs after the lock, as a statement of its own (the parts on Citus,
    each on the session's shard)."""
    alone = Statement(f"{name}: state", target(False))

    async def parts(driver: Driver, values: dict[str, Any]) -> Any:
        if await LOCK_LIVE_SESSION.fetchrow(driver, sid=values["sid"]) is None:
            return None
        row = await alone.fetchrow(driver, **pick(alone, values))
        if row is not None:
            written = {"version": row["version"], "updated_at": row["updated_at"]}
            await _STATE_HISTORY_ROW.execute(driver, **pick(_STATE_HISTORY_ROW, values | written))
        return row

    whole = f"""
WITH {_LOCKED_SESSION},
target AS ({target(True)}),
history AS (
    INSERT INTO consultation_state_history (session_id, version, {_STATE_LIST}, created_at)
    SELECT :sid, t.version, {_STATE_VALUES}, t.updated_at FROM target AS t
)
SELECT version, updated_at FROM target"""
    return Split(Statement(name, whole), parts)


def _new_state(locked: bool) -> str:
    if locked:
        return f"SELECT s.session_id, 1, {_STATE_VALUES} FROM locked AS s"
    return f"VALUES (:sid, 1, {_STATE_VALUES})"


# Any version wins; the first write of a session's state inserts version 1.  (No function
# in the DO UPDATE, which Citus refuses: updated_at is the proposed row's default, now().)
def _upsert_state(locked: bool) -> str:
    return f"""
    INSERT INTO consultation_states AS c (session_id, version, {_STATE_LIST})
    {_new_state(locked)}
    ON CONFLICT (session_id) DO UPDATE
       SET version = c.version + 1, {_STATE_EXCLUDED}, updated_at = EXCLUDED.updated_at
    RETURNING c.version, c.updated_at"""


# expected_version = 0: only when no state exists yet.
def _insert_first_state(locked: bool) -> str:
    return f"""
    INSERT INTO consultation_states (session_id, version, {_STATE_LIST})
    {_new_state(locked)}
    ON CONFLICT (session_id) DO NOTHING
    RETURNING version, updated_at"""


# A state row that changed while this waited for the session's lock is re-checked against
# :expected as it is now (READ COMMITTED re-evaluates the WHERE on the updated row).
def _update_state_at(locked: bool) -> str:
    return f"""
    UPDATE consultation_states
       SET version = version + 1, ({_STATE_LIST}) = ({_STATE_VALUES}), updated_at = now()
     WHERE session_id = :sid AND version = :expected
       {"AND EXISTS (SELECT FROM locked)" if locked else ""}
    RETURNING version, updated_at"""


UPSERT_STATE = _state_write("upsert state", _upsert_state)
INSERT_FIRST_STATE = _state_write("insert first state", _insert_first_state)
UPDATE_STATE_AT = _state_write("update state at version", _update_state_at)

STATE_FACTS = Statement(
    "state facts",
    f"""
SELECT (SELECT version FROM consultation_states WHERE session_id = :sid) AS version
  FROM sessions AS s WHERE session_id = :sid AND {LIVE}""",
)

CURRENT_STATE = Statement(
    "current state",
    f"""
SELECT document, format_version, version, updated_at, key_id, sealed
  FROM consultation_states WHERE session_id = :sid AND {_LIVE_SESSION}""",
)

STATE_HISTORY = Statement(
    "state history",
    f"""
SELECT document, format_version, version, created_at AS updated_at, key_id, sealed
  FROM consultation_state_history WHERE session_id = :sid AND {_LIVE_SESSION}
 ORDER BY version""",
)

# -- user profiles --------------------------------------------------------------------------

DELETE_PROFILE = Statement("delete profile", "DELETE FROM user_profiles WHERE user_id = :user_id")

#: The profile's typed columns, document and format: rows.profile_values fills them.
PROFILE_COLUMNS = tuple(
    c.name
    for c in user_profiles.c
    if c.name not in ("user_id", "version", "created_at", "updated_at")
)
_PROFILE_LIST = ", ".join(PROFILE_COLUMNS)
_PROFILE_VALUES = ", ".join(f":{name}" for name in PROFILE_COLUMNS)
_PROFILE_EXCLUDED = ", ".join(f"{name} = EXCLUDED.{name}" for name in PROFILE_COLUMNS)


def _key_checked(statement: Statement) -> Split:
    """One statement on both; on Citus followed by the check of the data key it sealed
    under (sharded.Split), which a worker's commit would report only as a failure."""
    return Split(statement, lambda driver, values: statement.fetchrow(driver, **values))


# A reference table on Citus: a profile write commits on every node.
UPSERT_PROFILE = _key_checked(
    Statement(
        "upsert profile",
        f"""
INSERT INTO user_profiles AS p (user_id, version, {_PROFILE_LIST})
VALUES (:user_id, 1, {_PROFILE_VALUES})
ON CONFLICT (user_id) DO UPDATE
   SET version = p.version + 1, {_PROFILE_EXCLUDED}, updated_at = EXCLUDED.updated_at
RETURNING version""",
    )
)

INSERT_FIRST_PROFILE = _key_checked(
    Statement(
        "insert first profile",
        f"""
INSERT INTO user_profiles (user_id, version, {_PROFILE_LIST})
VALUES (:user_id, 1, {_PROFILE_VALUES})
ON CONFLICT (user_id) DO NOTHING
RETURNING version""",
    )
)

UPDATE_PROFILE_AT = _key_checked(
    Statement(
        "update profile at version",
        f"""
UPDATE user_profiles
   SET version = version + 1, ({_PROFILE_LIST}) = ({_PROFILE_VALUES}), updated_at = now()
 WHERE user_id = :user_id AND version = :expected
RETURNING version""",
    )
)

PROFILE_VERSION = Statement(
    "profile version", "SELECT version FROM user_profiles WHERE user_id = :user_id"
)

CURRENT_PROFILE = Statement(
    "current profile",
    """
SELECT document, format_version, version, updated_at, key_id, sealed FROM user_profiles
 WHERE user_id = :user_id""",
)

# -- whole sessions and context reads ----------------------------------------------------------

SESSION_HEAD = Statement(
    "session head",
    f"""
SELECT version, message_count, created_at, user_id FROM sessions AS s
 WHERE session_id = :sid AND {LIVE}""",
)

# On a replica, before a context read: how far it has caught up with this session (its
# messages, summaries, state) and its user's profile, to compare with what this process
# wrote (storage/postgres/replica.py).  No row: the session isn't there (yet).
REPLICA_FRESHNESS = Statement(
    "replica freshness",
    f"""
SELECT s.version, s.message_count, s.created_at, s.user_id,
       (SELECT max(summary_version) FROM summaries WHERE session_id = :sid) AS summary_version,
       (SELECT version FROM consultation_states WHERE session_id = :sid) AS state_version,
       (SELECT version FROM user_profiles AS p WHERE p.user_id = s.user_id) AS profile_version
  FROM sessions AS s
 WHERE s.session_id = :sid AND {LIVE}""",
)

# A backward range scan of the primary key: reads only the rows the window takes.
NEWEST = Statement(
    "newest messages",
    f"""
SELECT {_READ_WITH_COUNTS} FROM messages AS m
 WHERE session_id = :sid AND seq < :before
 ORDER BY seq DESC LIMIT :limit""",
)

# The newest :limit messages of a live session in one statement (one round trip, one
# snapshot): what a framework's "last N messages" asks for.
NEWEST_OF_SESSION = Statement(
    "newest of session",
    f"""
SELECT {_READ_WITH_COUNTS} FROM messages AS m
 WHERE m.session_id = :sid AND {_LIVE_SESSION}
 ORDER BY m.seq DESC LIMIT :limit""",
)

# The same, cut after the first message whose stored count no longer fits :budget: the
# window sum streams over the backward index scan, so at most :limit rows are read, and
# only the ones the window needs are sent.  Counts in another encoding than the reader's
# (and uncounted older messages) count as 0 here; the caller counts them and asks for
# more if it must.
NEWEST_WITHIN = Statement(
    "newest messages within a budget",
    f"""
SELECT {", ".join((*MESSAGE_COLUMN_ORDER, "key_id", "sealed", "token_count", "token_encoding"))}
  FROM (
    SELECT {_READ_WITH_COUNTS},
           sum(m.usable) OVER (ORDER BY m.seq DESC) - m.usable AS before_me
      FROM (SELECT *, CASE WHEN token_encoding = :encoding THEN token_count ELSE 0 END
                      AS usable
              FROM messages
             WHERE session_id = :sid AND seq < :before
             ORDER BY seq DESC LIMIT :limit) AS m
) AS window_rows
 WHERE before_me < :budget
 ORDER BY seq DESC""",
)

SPAN = Statement(
    "message span",
    f"""
SELECT {_READ} FROM messages AS m
 WHERE session_id = :sid AND seq >= :start AND seq < :stop
 ORDER BY seq""",
)

# Messages without a usable count (older formats, another encoding) are estimated from
# their length (a sealed one's from its ciphertext, less the 65 bytes sealing adds): a
# trigger threshold, not a budget, depends on this.
TOKEN_TOTAL = Statement(
    "token total",
    """
SELECT count(*) AS messages,
       coalesce(sum(CASE WHEN token_encoding = :encoding THEN token_count
                         ELSE char_length(content) + 16
                              + coalesce(octet_length(sealed) - 65, 0) END), 0) AS tokens
  FROM messages WHERE session_id = :sid AND seq > :after""",
)

# -- rewriting rows in the current format (upgrade-data, write-back on load) --------------------

LEGACY_MESSAGES_OF_SESSION = Statement(
    "legacy messages of a session",
    f"""
SELECT s.version AS session_version, {_READ}
  FROM sessions AS s JOIN messages AS m ON m.session_id = s.session_id
 WHERE s.session_id = :sid AND m.format_version <> :current
 ORDER BY m.seq""",
)

# The optimistic check and the row lock: only if nobody wrote since the read.  The hash
# becomes unknown (digests change with the format); the next save recomputes it.
CLAIM_SESSION = Statement(
    "claim session",
    """
UPDATE sessions SET content_hash = NULL
 WHERE session_id = :sid AND version = :version
RETURNING 1""",
)

# :new_seq holds absolute positions here (see rows.new_message_arrays).
REWRITE_MESSAGES = Statement(
    "rewrite messages",
    f"""
UPDATE messages AS t
   SET ({", ".join(MESSAGE_WRITE_COLUMNS)}) = ({", ".join(f"m.{c}" for c in MESSAGE_WRITE_COLUMNS)})
  FROM {_new_messages()}
 WHERE t.session_id = :sid AND t.seq = m.seq""",
)

SESSIONS_WITH_LEGACY_MESSAGES = Statement(
    "sessions with legacy messages",
    """
SELECT DISTINCT session_id FROM messages WHERE format_version <> :current
 ORDER BY session_id""",
)

COUNT_LEGACY_MESSAGES = Statement(
    "count legacy messages", "SELECT count(*) FROM messages WHERE format_version <> :current"
)


def _legacy_states(table: str) -> Statement:
    return Statement(
        f"legacy rows of {table}",
        f"""
SELECT session_id, version, document, format_version FROM {table}
 WHERE format_version <> :current AND (session_id, version) > (:after_session, :after_version)
 ORDER BY session_id, version LIMIT :batch_size""",
    )


def _rewrite_state(table: str) -> Statement:
    # The session row first, as every write (an expired session's rows are rewritten too:
    # they are still stored).
    return Statement(
        f"rewrite a row of {table}",
        f"""
WITH locked AS (SELECT FROM sessions WHERE session_id = :sid FOR NO KEY UPDATE)
UPDATE {table} SET ({_STATE_LIST}) = ({_STATE_VALUES})
 WHERE session_id = :sid AND version = :version AND format_version = :old_format
   AND EXISTS (SELECT FROM locked)""",
    )


def _count_legacy_states(table: str) -> Statement:
    return Statement(
        f"count legacy rows of {table}",
        f"SELECT count(*) FROM {table} WHERE format_version <> :current",
    )


# upgrade-data: asyncpg sends exactly Go's zero time (0001-01-01T00:00:00Z) and
# 9999-12-31T23:59:59.999999Z as -infinity and infinity, and ctxstore once sent message
# times as datetimes; ``late``: infinity.  (Times go as text now: _new_messages.)
INFINITE_TIMESTAMPS = Statement(
    "messages stored with an infinite time",
    """
SELECT session_id, seq, ts = 'infinity' AS late, ts_offset FROM messages
 WHERE ts IN ('infinity', '-infinity') AND (session_id, seq) > (:after_session, :after_seq)
 ORDER BY session_id, seq LIMIT :batch_size""",
)

COUNT_INFINITE_TIMESTAMPS = Statement(
    "count infinite message times",
    "SELECT count(*) FROM messages WHERE ts IN ('infinity', '-infinity')",
)

# The time it stood for, as text; the session row first, as every write.  Not a new
# version: the row gets back what was written.
REPAIR_TIMESTAMP = Statement(
    "repair an infinite message time",
    """
WITH locked AS (SELECT FROM sessions WHERE session_id = :sid FOR NO KEY UPDATE)
UPDATE messages SET ts = (:ts)::text::timestamptz
 WHERE session_id = :sid AND seq = :seq AND ts IN ('infinity', '-infinity')
   AND EXISTS (SELECT FROM locked)""",
)

# The activity columns took those times too: one microsecond inwards, as writes now do
# (ctxstore/timestamps.activity_time).
REPAIR_ACTIVITY_TIMES = Statement(
    "repair infinite session activity times",
    """
UPDATE sessions
   SET first_activity_at = CASE WHEN first_activity_at = '-infinity'
                                THEN timestamptz '0001-01-01 00:00:00.000001+00'
                                WHEN first_activity_at = 'infinity'
                                THEN timestamptz '9999-12-31 23:59:59.999998+00'
                                ELSE first_activity_at END,
       last_activity_at = CASE WHEN last_activity_at = '-infinity'
                               THEN timestamptz '0001-01-01 00:00:00.000001+00'
                               WHEN last_activity_at = 'infinity'
                               THEN timestamptz '9999-12-31 23:59:59.999998+00'
                               ELSE last_activity_at END
 WHERE first_activity_at IN ('infinity', '-infinity')
    OR last_activity_at IN ('infinity', '-infinity')""",
)

STATE_TABLES = ("consultation_states", "consultation_state_history")
LEGACY_STATES = {table: _legacy_states(table) for table in STATE_TABLES}
REWRITE_STATE = {table: _rewrite_state(table) for table in STATE_TABLES}
COUNT_LEGACY_STATES = {table: _count_legacy_states(table) for table in STATE_TABLES}

# -- import-redis -----------------------------------------------------------------------------

# --carry-ttl: the Redis key's remaining TTL becomes the session's expiry (NULL: never),
# only if the session is still at the version the import wrote.
CARRY_EXPIRY = Statement(
    "carry expiry",
    """
UPDATE sessions SET expires_at = now() + (:ttl)::interval
 WHERE session_id = :sid AND version = :version""",
)


# -- data keys (encryption at rest; storage/postgres/keys.py) ---------------------------------

CURRENT_DATA_KEY = Statement(
    "current data key",
    """
SELECT key_id, owner, master_key_id, wrapped FROM data_keys
 WHERE owner = :owner AND retired_at IS NULL""",
)

# Two writers of a new owner race here: the partial unique index lets one win; the other
# reads the winner's key.
CREATE_DATA_KEY = Statement(
    "create data key",
    """
INSERT INTO data_keys (owner, master_key_id, wrapped) VALUES (:owner, :master_key_id, :wrapped)
ON CONFLICT (owner) WHERE retired_at IS NULL DO NOTHING
RETURNING key_id, owner, master_key_id, wrapped""",
)

DATA_KEYS_BY_ID = Statement(
    "data keys by id",
    "SELECT key_id, owner, master_key_id, wrapped FROM data_keys WHERE key_id = ANY(:ids)",
)

SESSION_USER = Statement("session user", "SELECT user_id FROM sessions WHERE session_id = :sid")


# -- rotate-keys (rotate_keys.py) -------------------------------------------------------------

COUNT_TO_REWRAP = Statement(
    "count keys to re-wrap", "SELECT count(*) FROM data_keys WHERE master_key_id <> :current"
)
REWRAP_BATCH = Statement(
    "keys to re-wrap",
    """
SELECT key_id, owner, master_key_id, wrapped FROM data_keys
 WHERE master_key_id <> :current ORDER BY key_id LIMIT :batch_size FOR UPDATE SKIP LOCKED""",
)
REWRAP = Statement(
    "re-wrap key",
    "UPDATE data_keys SET master_key_id = :master_key_id, wrapped = :wrapped WHERE key_id = :id",
)
ANY_RETIRED = Statement(
    "any retired key", "SELECT EXISTS (SELECT FROM data_keys WHERE retired_at IS NOT NULL)"
)
RETIRE_ALL = Statement(
    "retire keys", "UPDATE data_keys SET retired_at = now() WHERE retired_at IS NULL"
)

_STALE = (
    "(t.key_id IS NULL OR t.key_id IN (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL))"
)
_SESSION_TABLES = ("messages", "summaries", "consultation_states", "consultation_state_history")
_SESSION_NEEDS_WORK = " OR ".join(
    f"EXISTS (SELECT FROM {table} AS t WHERE t.session_id = s.session_id AND {_STALE})"
    for table in _SESSION_TABLES
)
COUNT_SESSIONS = Statement(
    "count sessions to re-encrypt",
    f"SELECT count(*) FROM sessions AS s WHERE {_SESSION_NEEDS_WORK}",
)
_SESSIONS_TO_REENCRYPT = f"""
SELECT s.session_id, s.user_id FROM sessions AS s
 WHERE s.session_id > :after AND ({_SESSION_NEEDS_WORK})
 ORDER BY s.session_id LIMIT :batch_size"""
_SESSIONS_TO_REENCRYPT_UNLOCKED = Statement("sessions to re-encrypt", _SESSIONS_TO_REENCRYPT)
# Citus: the batch read without a lock, then locked by an UPDATE that changes nothing (a
# session being written is waited for rather than skipped); one connection per worker, for
# the data keys the batch creates in the same transaction.
_LOCK_SESSIONS = Statement(
    "lock sessions",
    "UPDATE sessions SET user_id = user_id WHERE session_id = ANY(:ids) RETURNING session_id",
)


async def _sessions_batch_parts(driver: Driver, values: dict[str, Any]) -> Any:
    await driver.execute(SEQUENTIAL)
    found = await _SESSIONS_TO_REENCRYPT_UNLOCKED.fetch(driver, **values)
    if found:
        await _LOCK_SESSIONS.execute(driver, ids=[row["session_id"] for row in found])
    return found


SESSIONS_BATCH = Split(
    Statement("sessions to re-encrypt", f"{_SESSIONS_TO_REENCRYPT} FOR UPDATE OF s SKIP LOCKED"),
    _sessions_batch_parts,
)
SESSION_MESSAGES = Statement(
    "messages to re-encrypt",
    """
SELECT seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, format_version,
       key_id, sealed FROM messages WHERE session_id = :sid ORDER BY seq""",
)
RESEAL_MESSAGES = Statement(
    "re-seal messages",
    """
UPDATE messages AS t SET content = '', metadata = NULL, digest = m.digest,
       key_id = :key_id, sealed = m.sealed
  FROM unnest((:seqs)::int[], (:digests)::bytea[], (:sealed)::bytea[]) AS m(seq, digest, sealed)
 WHERE t.session_id = :sid AND t.seq = m.seq""",
)
SET_CONTENT_HASH = Statement(
    "set content hash", "UPDATE sessions SET content_hash = :hash WHERE session_id = :sid"
)
SESSION_SUMMARIES = Statement(
    "summaries to re-encrypt",
    f"""
SELECT summary_version, text, key_id, sealed, format_version, covers_until, token_count,
       created_at FROM summaries AS t WHERE t.session_id = :sid AND {_STALE}""",
)
RESEAL_SUMMARY = Statement(
    "re-seal summary",
    """
UPDATE summaries SET text = '', key_id = :key_id, sealed = :sealed
 WHERE session_id = :sid AND summary_version = :version""",
)


def _state_statements(table: str) -> tuple[Statement, Statement]:
    read = Statement(
        f"{table} to re-encrypt",
        f"""
SELECT version, document, key_id, sealed FROM {table} AS t
 WHERE t.session_id = :sid AND {_STALE}""",
    )
    write = Statement(
        f"re-seal {table}",
        f"""
UPDATE {table} SET document = 'null'::jsonb, key_id = :key_id, sealed = :sealed
 WHERE session_id = :sid AND version = :version""",
    )
    return read, write


STATE_STATEMENTS = {
    table: _state_statements(table)
    for table in ("consultation_states", "consultation_state_history")
}
PROFILES_BATCH = Statement(
    "profiles to re-encrypt",
    f"""
SELECT user_id, document, key_id, sealed FROM user_profiles AS t
 WHERE user_id > :after AND {_STALE}
 ORDER BY user_id LIMIT :batch_size FOR UPDATE SKIP LOCKED""",
)
RESEAL_PROFILE = Statement(
    "re-seal profile",
    """
UPDATE user_profiles SET document = 'null'::jsonb, age = NULL, gender = NULL,
       exercise_habit = NULL, known_limitations = '{}', key_id = :key_id, sealed = :sealed
 WHERE user_id = :user_id""",
)
_SEALED_TABLES = (*_SESSION_TABLES, "user_profiles")
# Citus deletes from a reference table only with other reference tables in the statement:
# there the keys still in use are looked up first (writers seal under current keys only).
_RETIRED_KEYS_IN_USE = Statement(
    "retired keys in use",
    " UNION ".join(
        f"SELECT key_id FROM {table} WHERE key_id = ANY(:retired)" for table in _SEALED_TABLES
    ),
)
_RETIRED_KEYS = Statement(
    "retired keys", "SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL"
)
_DELETE_RETIRED = Statement(
    "delete retired keys",
    "DELETE FROM data_keys WHERE key_id = ANY(:ids) AND retired_at IS NOT NULL RETURNING key_id",
)


async def _delete_unused_retired_parts(driver: Driver, values: dict[str, Any]) -> Any:
    await driver.execute(SEQUENTIAL)
    retired = [row["key_id"] for row in await _RETIRED_KEYS.fetch(driver)]
    if not retired:
        return []
    used = {row["key_id"] for row in await _RETIRED_KEYS_IN_USE.fetch(driver, retired=retired)}
    unused = [key_id for key_id in retired if key_id not in used]
    return await _DELETE_RETIRED.fetch(driver, ids=unused) if unused else []


DELETE_UNUSED_RETIRED = Split(
    Statement(
        "delete unused retired keys",
        f"""
DELETE FROM data_keys AS d WHERE retired_at IS NOT NULL
   AND {
            " AND ".join(
                f"NOT EXISTS (SELECT FROM {table} WHERE key_id = d.key_id)"
                for table in _SEALED_TABLES
            )
        }
RETURNING key_id""",
    ),
    _delete_unused_retired_parts,
)
COUNT_RETIRED = Statement(
    "count retired keys", "SELECT count(*) FROM data_keys WHERE retired_at IS NOT NULL"
)
