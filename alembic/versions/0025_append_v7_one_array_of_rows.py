"""The append takes its messages as one array of rows, not fifteen arrays.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-04

Issue 27: asyncpg checks every element of every array parameter (is it itself an array?)
through Python's abstract base classes before it encodes it, so the append's fifteen
message arrays cost the HTTP worker about 20 µs of CPU a turn, and PostgreSQL about
10 µs to unnest them: the largest single cost of an append left.  ``ctxstore_append_v7``
takes the messages as one array of ``ctxstore_message_row_v1``, one element a message,
fields in the order of the messages' columns; ``metadata`` is JSON text (asyncpg encodes
a composite in binary only, and the storage's connections read and write jsonb as text).

Its fast path is v6's (the session row hands out the positions, one INSERT); a session
it has to create, or one that refuses the messages, goes through ``ctxstore_append_v6``
with the arrays made from the rows, so the two can't disagree.  v6 stays for processes
of the previous release.  The save's functions keep their arrays (a save is not on the
hot path, and takes the session's lock first).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0025"
down_revision: str | Sequence[str] | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
FIELDS = (
    ("seq", "integer"),
    ("role", "text"),
    ("content", "text"),
    ("turn_id", "text"),
    ("ts", "text"),
    ("ts_offset", "integer"),
    ("name", "text"),
    ("metadata", "text"),
    ("digest", "bytea"),
    ("token_count", "integer"),
    ("format_version", "smallint"),
    ("token_encoding", "text"),
    ("key_id", "bigint"),
    ("sealed", "bytea"),
    ("ts_nanos", "smallint"),
)
_NAMES = ", ".join(name for name, _ in FIELDS)

ROW_TYPE = (
    "CREATE TYPE ctxstore_message_row_v1 AS ("
    + ", ".join(f"{name} {kind}" for name, kind in FIELDS)
    + ")"
)


def _array(name: str) -> str:
    """One of v6's arrays, made from the rows in their order."""
    value = "m.metadata::jsonb" if name == "metadata" else f"m.{name}"
    return (
        f"ARRAY(SELECT {value} FROM unnest(p_rows) WITH ORDINALITY AS m({_NAMES}, n) ORDER BY m.n)"
    )


_AS_ARRAYS = ",\n               ".join(_array(name) for name, _ in FIELDS)

APPEND = f"""
CREATE FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text,
    p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea,
    p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, p_rows ctxstore_message_row_v1[], p_write_ids text[],
    OUT start integer, OUT version bigint, OUT current_version bigint,
    OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_rows);
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
    IF p_expected IS DISTINCT FROM 0 THEN
        UPDATE sessions AS s
           SET expires_at = now() + p_ttl,
               turn_count = s.turn_count + p_turns,
               first_activity_at = CASE WHEN s.message_count = 0 THEN v_first
                                        ELSE s.first_activity_at END,
               last_activity_at = v_last,
               message_count = s.message_count + v_added,
               content_hash = CASE WHEN s.message_count = 0 THEN p_added_hash
                                   WHEN s.message_count = p_known_count
                                    AND s.content_hash = p_known_hash
                                   THEN p_extended_hash END,
               version = s.version + 1,
               user_id = coalesce(s.user_id, p_user_id),
               updated_at = now()
         WHERE s.session_id = p_session_id
           AND (p_expected IS NULL OR s.version = p_expected)
           AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
           AND s.message_count + v_added <= p_max_messages
           AND (s.expires_at IS NULL OR s.expires_at > now())
        RETURNING s.message_count - v_added, s.version INTO start, version;
        IF FOUND THEN
            INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                                  name, metadata, digest, token_count, format_version,
                                  token_encoding, key_id, sealed, ts_nanos)
            SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
                   m.ts::timestamptz, m.ts_offset, m.name, m.metadata::jsonb, m.digest,
                   m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed,
                   m.ts_nanos
              FROM unnest(p_rows) AS m;
            IF (p_rows[1]).key_id IS NOT NULL THEN
                PERFORM ctxstore_require_keys_v1(
                    ARRAY(SELECT m.key_id FROM unnest(p_rows) AS m), 'messages');
            END IF;
            IF cardinality(p_write_ids) > 0 THEN
                INSERT INTO applied_session_writes (session_id, write_id)
                SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
                ON CONFLICT DO NOTHING;
            END IF;
            RETURN;
        END IF;
    END IF;
    -- A new session, one that can't take the messages, another user's, or a race: v6.
    SELECT a.start, a.version, a.current_version, a.current_count, a.current_hash,
           a.current_expired
      INTO start, version, current_version, current_count, current_hash, current_expired
      FROM ctxstore_append_v6(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts,
               {_AS_ARRAYS},
               p_write_ids) AS a;
END
$$"""

PRIVILEGES = """
DO $$
DECLARE
    v_owner text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'owner');
    v_app text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'app');
    v_function text := 'ctxstore_append_v7(text, bigint, text, interval, integer, integer, '
        || 'bytea, bytea, bytea, integer, timestamptz, timestamptz, '
        || 'ctxstore_message_row_v1[], text[])';
BEGIN
    EXECUTE 'REVOKE ALL ON FUNCTION ' || v_function || ' FROM PUBLIC';
    IF v_app IS NOT NULL THEN
        EXECUTE 'GRANT EXECUTE ON FUNCTION ' || v_function || ' TO ' || quote_ident(v_app);
    END IF;
    IF v_owner IS NOT NULL THEN
        EXECUTE 'ALTER TYPE ctxstore_message_row_v1 OWNER TO ' || quote_ident(v_owner);
        EXECUTE 'ALTER FUNCTION ' || v_function || ' OWNER TO ' || quote_ident(v_owner);
    END IF;
END
$$"""


def upgrade() -> None:
    op.execute(ROW_TYPE)
    op.execute(APPEND)
    op.execute(PRIVILEGES)


def downgrade() -> None:
    op.execute("DROP FUNCTION ctxstore_append_v7")
    op.execute("DROP TYPE ctxstore_message_row_v1")
