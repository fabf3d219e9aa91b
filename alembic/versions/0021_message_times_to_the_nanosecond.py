"""Message times to the nanosecond: Go's ``time.Time`` kept exactly.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03

Issue 26: Go marshals ``time.Time`` with up to nine fractional digits, and on Linux nearly
every real timestamp has digits below the microsecond; ctxstore refused them, so most of
the Go service's sessions could not be imported or read.  ``messages.ts_nanos`` keeps the
nanoseconds below the microsecond (1-999; NULL: none) beside ``ts``, which stays the
instant to the microsecond that ordering, windows and analytics use, and ``ts_offset``.
Chosen over keeping the original text: the instant stays one typed column, a row of an
earlier revision reads unchanged (NULL), and it costs two bytes only where Go wrote them.

The writes that insert messages take ``p_ts_nanos`` in new versions:
``ctxstore_insert_messages_v2``, ``ctxstore_append_v6`` (v5's answer, nanoseconds
included; a session it has to create goes through v2 and gets its nanoseconds after) and
``ctxstore_append_if_unchanged_v3``.  The earlier versions stay for processes of the
previous release, which write no nanoseconds.

The two appends also take ``p_write_ids``: the fallback journal's write ids the append
applies (revision 0020), recorded in ``applied_session_writes`` by the same call, so a
turn that carries them costs no more round trips than one that doesn't.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
_ARRAYS = """
    p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[],
    p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[],
    p_token_count integer[], p_format_version smallint[], p_token_encoding text[],
    p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]"""
# The arrays the earlier versions take (all but p_ts_nanos).
_EARLIER = """
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed"""
_ALL = _EARLIER + ", p_ts_nanos"
_SHARE_USER = """IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;"""
_REFUSE_OTHER_OWNER = """
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;"""
# The journal write ids an append applied (revision 0020), with it.
# (text: asyncpg would look up uuid[]'s codec on each new connection first).
_RECORD = """IF cardinality(p_write_ids) > 0 THEN
            INSERT INTO applied_session_writes (session_id, write_id)
            SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
            ON CONFLICT DO NOTHING;
        END IF;"""
# The fast path's INSERT, at positions ``start + seq``.
_INSERT = f"""INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                          name, metadata, digest, token_count, format_version,
                          token_encoding, key_id, sealed, ts_nanos)
    SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
           m.ts::timestamptz, m.ts_offset, m.name, m.metadata, m.digest,
           m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed,
           m.ts_nanos
      FROM unnest({_ALL}) AS m(seq, role, content, turn_id, ts,
               ts_offset, name, metadata, digest, token_count, format_version,
               token_encoding, key_id, sealed, ts_nanos)"""

FUNCTIONS = {
    # Joined with the session's row, as v1: on Citus, inside the locked save's transaction
    # block (where the call is not delegated), that keeps the INSERT on the session's shard.
    "ctxstore_insert_messages_v2": f"""
CREATE FUNCTION ctxstore_insert_messages_v2(p_session_id text, p_start integer, {_ARRAYS})
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, name,
                          metadata, digest, token_count, format_version, token_encoding,
                          key_id, sealed, ts_nanos)
    SELECT s.session_id, p_start + m.seq, m.role, m.content, m.turn_id, m.ts::timestamptz,
           m.ts_offset, m.name, m.metadata, m.digest, m.token_count, m.format_version,
           m.token_encoding, m.key_id, m.sealed, m.ts_nanos
      FROM sessions AS s,
           unnest({_ALL}) AS m(seq, role, content, turn_id, ts, ts_offset, name,
                       metadata, digest, token_count, format_version, token_encoding,
                       key_id, sealed, ts_nanos)
     WHERE s.session_id = p_session_id;
    IF p_key_id[1] IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
    END IF;
END
$$""",
    "ctxstore_append_v6": f"""
CREATE FUNCTION ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text,
    p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea,
    p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_ARRAYS}, p_write_ids text[],
    OUT start integer, OUT version bigint, OUT current_version bigint,
    OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_seq);
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    {_SHARE_USER}
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
            {_INSERT};
            IF p_key_id[1] IS NOT NULL THEN
                PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
            END IF;
            {_RECORD}
            RETURN;
        END IF;
    END IF;
    -- A new session, one that can't take the messages, another user's, or a race.
    IF p_user_id IS NOT NULL THEN
        -- creators of one session id take turns, so only the first claims it
        PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore session ' || p_session_id, 0));
    END IF;
    {_REFUSE_OTHER_OWNER}
    SELECT a.start, a.version INTO start, version
      FROM ctxstore_append_v2(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts, {_EARLIER}) AS a;
    IF version IS NULL THEN
        SELECT s.version, s.message_count, s.content_hash,
               NOT (s.expires_at IS NULL OR s.expires_at > now())
          INTO current_version, current_count, current_hash, current_expired
          FROM sessions AS s WHERE s.session_id = p_session_id;
    ELSE
        IF EXISTS (SELECT FROM unnest(p_ts_nanos) AS n WHERE n IS NOT NULL) THEN
            UPDATE messages AS t SET ts_nanos = n.nanos
              FROM unnest(p_seq, p_ts_nanos) AS n(seq, nanos)
             WHERE t.session_id = p_session_id AND t.seq = start + n.seq
               AND n.nanos IS NOT NULL;
        END IF;
        {_RECORD}
    END IF;
END
$$""",
    "ctxstore_append_if_unchanged_v3": f"""
CREATE FUNCTION ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint,
    p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea,
    p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_ARRAYS}, p_write_ids text[])
RETURNS bigint LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    {_SHARE_USER}
    UPDATE sessions AS s
       SET message_count = p_new_count, content_hash = p_new_hash, version = s.version + 1,
           updated_at = now(), user_id = coalesce(s.user_id, p_user_id),
           expires_at = now() + p_ttl, turn_count = s.turn_count + p_turns,
           first_activity_at = coalesce(p_first_ts, s.first_activity_at),
           last_activity_at = v_last
     WHERE s.session_id = p_session_id AND s.message_count = p_known_count
       AND s.content_hash = p_known_hash
       AND (p_expected IS NULL OR s.version = p_expected)
       AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
       AND (s.expires_at IS NULL OR s.expires_at > now())
    RETURNING s.version INTO v_version;
    IF FOUND THEN
        PERFORM ctxstore_insert_messages_v2(p_session_id, p_known_count, {_ALL});
        {_RECORD}
        RETURN v_version;
    END IF;
    {_REFUSE_OTHER_OWNER}
    RETURN NULL;
END
$$""",
}

PRIVILEGES = """
DO $$
DECLARE
    v_owner text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'owner');
    v_app text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'app');
    v_function text;
BEGIN
    FOR v_function IN SELECT p.oid::regprocedure::text FROM pg_proc AS p
                       WHERE p.proname = ANY(string_to_array('{names}', ' ')) LOOP
        EXECUTE 'REVOKE ALL ON FUNCTION ' || v_function || ' FROM PUBLIC';
        IF v_app IS NOT NULL THEN
            EXECUTE 'GRANT EXECUTE ON FUNCTION ' || v_function || ' TO ' || quote_ident(v_app);
        END IF;
        IF v_owner IS NOT NULL THEN
            EXECUTE 'ALTER FUNCTION ' || v_function || ' OWNER TO ' || quote_ident(v_owner);
        END IF;
    END LOOP;
END
$$"""


def upgrade() -> None:
    # Two statements: Citus takes no other subcommand beside an ADD COLUMN.
    op.execute("ALTER TABLE messages ADD COLUMN ts_nanos smallint")
    op.execute(
        "ALTER TABLE messages ADD CONSTRAINT ck_messages_ts_nanos_below_a_microsecond "
        "CHECK (ts_nanos IS NULL OR (ts_nanos BETWEEN 1 AND 999 AND ts IS NOT NULL))"
    )
    for definition in FUNCTIONS.values():
        op.execute(definition)
    op.execute(PRIVILEGES.format(names=" ".join(FUNCTIONS)))


def downgrade() -> None:
    for name in reversed(list(FUNCTIONS)):
        op.execute(f"DROP FUNCTION {name}")
    # The times lose their nanoseconds (a downgraded process can't hold them).
    op.execute("ALTER TABLE messages DROP COLUMN ts_nanos")
