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
"""

from __future__ import annotations

from sqlalchemy.dialects import postgresql

from ctxstore.db.tables import (
    consultation_states,
    messages,
    summaries,
    user_profiles,
)
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER
from ctxstore.storage.postgres.statement import Statement

_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]

# A session past its expires_at behaves as missing: reads skip it, writes purge it first.
LIVE = "(s.expires_at IS NULL OR s.expires_at > now())"
_LIVE_SESSION = f"EXISTS (SELECT FROM sessions AS s WHERE s.session_id = :sid AND {LIVE})"

# The first CTE of a write to a child table: the live session row, locked before the child
# rows (see the lock order above).  NO KEY UPDATE, what an UPDATE of the row takes: writers
# of one session queue on it, while the foreign-key checks of its own inserts (KEY SHARE)
# need nothing more.  After a wait it yields the row as the last writer left it (and no
# row if that writer deleted it or let it expire).
_LOCKED_SESSION = f"""locked AS (
    SELECT s.session_id, s.message_count FROM sessions AS s
     WHERE s.session_id = :sid AND {LIVE}
       FOR NO KEY UPDATE
)"""

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


def _insert_messages(start: str, source: str = "", where: str = "") -> str:
    """INSERT of the new messages at positions ``start`` + offset."""
    columns = ", ".join(MESSAGE_WRITE_COLUMNS)
    values = ", ".join(f"m.{name}" for name in MESSAGE_WRITE_COLUMNS)
    return f"""
    INSERT INTO messages (session_id, seq, {columns})
    SELECT :sid, {start} + m.seq, {values}
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
APPEND_IF_UNCHANGED = Statement(
    "append if unchanged",
    f"""
WITH updated AS (
    UPDATE sessions AS s
       SET message_count = :new_count, content_hash = :new_hash, version = version + 1,
           updated_at = now(), user_id = coalesce(:user_id, user_id),
           expires_at = now() + (:ttl)::interval, turn_count = turn_count + :turns,
           first_activity_at = coalesce((:first_ts)::timestamptz, first_activity_at),
           last_activity_at = coalesce((:last_ts)::timestamptz, now())
     WHERE session_id = :sid AND message_count = :known_count AND content_hash = :known_hash
       AND ((:expected)::bigint IS NULL OR version = :expected) AND {LIVE}
 RETURNING version
), inserted AS ({_insert_messages(":known_count", where="WHERE EXISTS (SELECT FROM updated)")}
)
SELECT version FROM updated""",
)

# append(): the session row hands out the positions (its message_count), under its row
# lock, so concurrent appends never collide or leave gaps.  The content hash: of the new
# messages alone (:added_hash) when nothing was stored, else :extended_hash (the hash
# this process knew, :known_hash for :known_count messages, extended by the new ones) if
# that knowledge was right, else NULL (the next save recomputes it from the digests).
# Analytics: :turns user messages among the new ones, :first_ts/:last_ts the first and
# last new message's time (the server's when they have none).
_EXTEND_SESSION = """
       expires_at = now() + (:ttl)::interval,
       turn_count = s.turn_count + :turns,
       first_activity_at = CASE WHEN s.message_count = 0
                                THEN coalesce((:first_ts)::timestamptz, now())
                                ELSE s.first_activity_at END,
       last_activity_at = coalesce((:last_ts)::timestamptz, now()),
       message_count = s.message_count + :added,
       content_hash = CASE WHEN s.message_count = 0 THEN (:added_hash)::bytea
                           WHEN s.message_count = :known_count AND s.content_hash = :known_hash
                           THEN (:extended_hash)::bytea END,
       version = s.version + 1,
       user_id = coalesce(:user_id, s.user_id),
       updated_at = now()"""

_NEW_SESSION = """
INSERT INTO sessions AS s (session_id, user_id, message_count, content_hash, version,
                           expires_at, turn_count, first_activity_at, last_activity_at)
VALUES (:sid, :user_id, :added, :added_hash, 1, now() + (:ttl)::interval, :turns,
        coalesce((:first_ts)::timestamptz, now()), coalesce((:last_ts)::timestamptz, now()))"""

# Within the limit on messages per session, and live; else no row (SESSION_FACTS says why).
_FITS = f"s.message_count + :added <= :max_messages AND {LIVE}"


def _append(target: str) -> Statement:
    return Statement(
        "append",
        f"""
WITH target AS ({target}),
inserted AS ({_insert_messages("t.start", source="target AS t, ")})
SELECT start, version FROM target""",
    )


APPEND = _append(f"""{_NEW_SESSION}
    ON CONFLICT (session_id) DO UPDATE SET {_EXTEND_SESSION}
     WHERE {_FITS}
    RETURNING s.message_count - :added AS start, s.version""")

# expected_version = 0: only if the session does not exist yet.
APPEND_TO_NEW = _append(f"""{_NEW_SESSION}
    ON CONFLICT (session_id) DO NOTHING
    RETURNING 0 AS start, s.version""")

APPEND_AT_VERSION = _append(f"""
    UPDATE sessions AS s SET {_EXTEND_SESSION}
     WHERE s.session_id = :sid AND s.version = :expected AND {_FITS}
    RETURNING s.message_count - :added AS start, s.version""")

# With the session go its own data key (a session without a user), after its rows: every
# writer locks rows before the key its commit checks (revision 0010), and so does this.
PURGE_IF_EXPIRED = Statement(
    "purge if expired",
    """
WITH gone AS (
    DELETE FROM sessions WHERE session_id = :sid AND expires_at <= now() RETURNING session_id
)
DELETE FROM data_keys WHERE owner IN (SELECT 's:' || session_id FROM gone)""",
)

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

INSERT_MESSAGES = Statement("insert messages", _insert_messages(":start"))

FINISH_SAVE = Statement(
    "finish save",
    """
UPDATE sessions
   SET message_count = :count, content_hash = :hash, version = version + 1,
       updated_at = now(), user_id = coalesce(:user_id, user_id),
       expires_at = now() + (:ttl)::interval, turn_count = :turns,
       first_activity_at = coalesce((:first_ts)::timestamptz, first_activity_at),
       last_activity_at = coalesce((:last_ts)::timestamptz, now())
 WHERE session_id = :sid AND version = :old
RETURNING version""",
)

# Everything session-scoped goes with the row (ON DELETE CASCADE); the profile stays.  So
# does the data key of the session's user; a session's own key (no user) is destroyed,
# after the session row is locked (the lock order of every writer: rows, then keys).
DELETE_SESSION = Statement(
    "delete session",
    """
WITH gone AS (DELETE FROM sessions WHERE session_id = :sid RETURNING session_id)
DELETE FROM data_keys WHERE owner IN (SELECT 's:' || session_id FROM gone)""",
)

# -- erasure ---------------------------------------------------------------------------------

# Every session of a user, counted and deleted (with everything cascading from it) in one
# statement; its sub-statements share one snapshot, so the counts are of what it deletes.
# Session rows are locked first, in id order, as every write path locks them.
ERASE_USER_SESSIONS = Statement(
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
PURGE_EXPIRED_BATCH = Statement(
    "purge expired batch",
    """
WITH doomed AS (
    SELECT session_id FROM sessions
     WHERE expires_hour <= now() AND expires_at <= now()
     ORDER BY expires_hour
     LIMIT :batch_size
       FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM sessions AS s USING doomed WHERE s.session_id = doomed.session_id
    RETURNING s.session_id, s.message_count
), shredded AS (  -- the sessions' own data keys, after their rows
    DELETE FROM data_keys WHERE owner IN (SELECT 's:' || session_id FROM gone)
)
SELECT message_count FROM gone""",
)

# Retention: sessions whose last write is older than :age (updated_at has no index: a
# batch scans until it found its rows; retention runs rarely, off the request path).
PURGE_OLD_BATCH = Statement(
    "purge old batch",
    """
WITH doomed AS (
    SELECT session_id FROM sessions
     WHERE updated_at < now() - (:age)::interval
     LIMIT :batch_size
       FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM sessions AS s USING doomed WHERE s.session_id = doomed.session_id
    RETURNING s.session_id, s.message_count
), shredded AS (  -- the sessions' own data keys, after their rows
    DELETE FROM data_keys WHERE owner IN (SELECT 's:' || session_id FROM gone)
)
SELECT message_count FROM gone""",
)

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
INSERT_SUMMARY = Statement(
    "insert summary",
    f"""
WITH {_LOCKED_SESSION}
INSERT INTO summaries AS new (session_id, summary_version, text, covers_until, token_count,
                              format_version, key_id, sealed)
SELECT s.session_id, latest.version + 1, :text, :covers_until, :token_count, :format_version,
       :key_id, :sealed
  FROM locked AS s,
       LATERAL (SELECT coalesce(max(summary_version), 0) AS version
                  FROM summaries WHERE session_id = :sid) AS latest
 WHERE s.message_count > :covers_until
   AND ((:expected)::int IS NULL OR latest.version = :expected)
RETURNING {", ".join(f"new.{name}" for name in _SUMMARY_READ.split(", "))}""",
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


def _state_write(name: str, target: str) -> Statement:
    """The write of a state version: the session row locked, then ``target`` (a CTE that
    selects from ``locked``) plus its history row, one statement."""
    return Statement(
        name,
        f"""
WITH {_LOCKED_SESSION},
target AS ({target}),
history AS (
    INSERT INTO consultation_state_history (session_id, version, {_STATE_LIST}, created_at)
    SELECT :sid, t.version, {_STATE_VALUES}, t.updated_at FROM target AS t
)
SELECT version, updated_at FROM target""",
    )


# Any version wins; the first write of a session's state inserts version 1.
UPSERT_STATE = _state_write(
    "upsert state",
    f"""
    INSERT INTO consultation_states AS c (session_id, version, {_STATE_LIST})
    SELECT s.session_id, 1, {_STATE_VALUES} FROM locked AS s
    ON CONFLICT (session_id) DO UPDATE
       SET version = c.version + 1, {_STATE_EXCLUDED}, updated_at = now()
    RETURNING c.version, c.updated_at""",
)

# expected_version = 0: only when no state exists yet.
INSERT_FIRST_STATE = _state_write(
    "insert first state",
    f"""
    INSERT INTO consultation_states (session_id, version, {_STATE_LIST})
    SELECT s.session_id, 1, {_STATE_VALUES} FROM locked AS s
    ON CONFLICT (session_id) DO NOTHING
    RETURNING version, updated_at""",
)

# A state row that changed while this waited for the session's lock is re-checked against
# :expected as it is now (READ COMMITTED re-evaluates the WHERE on the updated row).
UPDATE_STATE_AT = _state_write(
    "update state at version",
    f"""
    UPDATE consultation_states
       SET version = version + 1, ({_STATE_LIST}) = ({_STATE_VALUES}), updated_at = now()
     WHERE session_id = :sid AND version = :expected AND EXISTS (SELECT FROM locked)
    RETURNING version, updated_at""",
)

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

UPSERT_PROFILE = Statement(
    "upsert profile",
    f"""
INSERT INTO user_profiles AS p (user_id, version, {_PROFILE_LIST})
VALUES (:user_id, 1, {_PROFILE_VALUES})
ON CONFLICT (user_id) DO UPDATE
   SET version = p.version + 1, {_PROFILE_EXCLUDED}, updated_at = now()
RETURNING version""",
)

INSERT_FIRST_PROFILE = Statement(
    "insert first profile",
    f"""
INSERT INTO user_profiles (user_id, version, {_PROFILE_LIST})
VALUES (:user_id, 1, {_PROFILE_VALUES})
ON CONFLICT (user_id) DO NOTHING
RETURNING version""",
)

UPDATE_PROFILE_AT = Statement(
    "update profile at version",
    f"""
UPDATE user_profiles
   SET version = version + 1, ({_PROFILE_LIST}) = ({_PROFILE_VALUES}), updated_at = now()
 WHERE user_id = :user_id AND version = :expected
RETURNING version""",
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
SESSIONS_BATCH = Statement(
    "sessions to re-encrypt",
    f"""
SELECT s.session_id, s.user_id FROM sessions AS s
 WHERE s.session_id > :after AND ({_SESSION_NEEDS_WORK})
 ORDER BY s.session_id LIMIT :batch_size FOR UPDATE OF s SKIP LOCKED""",
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
DELETE_UNUSED_RETIRED = Statement(
    "delete unused retired keys",
    """
DELETE FROM data_keys AS d WHERE retired_at IS NOT NULL
   AND NOT EXISTS (SELECT FROM messages WHERE key_id = d.key_id)
   AND NOT EXISTS (SELECT FROM summaries WHERE key_id = d.key_id)
   AND NOT EXISTS (SELECT FROM consultation_states WHERE key_id = d.key_id)
   AND NOT EXISTS (SELECT FROM consultation_state_history WHERE key_id = d.key_id)
   AND NOT EXISTS (SELECT FROM user_profiles WHERE key_id = d.key_id)
RETURNING key_id""",
)
COUNT_RETIRED = Statement(
    "count retired keys", "SELECT count(*) FROM data_keys WHERE retired_at IS NOT NULL"
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
