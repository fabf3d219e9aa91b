"""A session keeps the user it was written for; erasure finds every row of the user.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02

An append or save naming another user than the session's re-assigned it, so a later
erasure of the first user missed the session while its rows stayed sealed under that
user's key, and the key's deletion failed for good (issue 24).  From this revision:

- ``ctxstore_append_v4`` and ``ctxstore_append_if_unchanged_v2`` write a session only for
  its recorded user (or any user while none is recorded, which then becomes its user);
  a write for another user raises SQLSTATE CX001 and writes nothing.  Creators of a new
  session take a transaction lock on its id, so two users racing to create it can't both
  claim it.  The locked save checks the same in Python, on the row it has locked.
- ``ctxstore_erase_user_sessions_v2`` also erases every session holding a row sealed
  under the user's keys, whoever it is recorded for now (sessions re-assigned before this
  revision), so the keys' deletion no longer fails on them for good.
- A per-user lock: every write naming a user holds ``pg_advisory_xact_lock_shared`` on
  the user from its start, the erasure takes it exclusively before anything else, so
  sessions the user keeps opening no longer make the keys' deletion fail at commit over
  and over.  The lock order stays user, session rows, keys (locking the keys first would
  deadlock with a writer that holds its row and checks its key at commit).  On Citus the
  writes run on the session's worker and the erasure on the coordinator, whose advisory
  locks are not shared: there the erasure still tries again after a pause.

The previous functions stay until no process of the previous release calls them.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
_MESSAGE_ARRAYS = """
    p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[],
    p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[],
    p_token_count integer[], p_format_version smallint[], p_token_encoding text[],
    p_key_id bigint[], p_sealed bytea[]"""
_MESSAGE_ARGUMENTS = """
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed"""
_SEQUENTIAL = "PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);"
# Every write naming a user holds the user's lock shared, from its start: an erasure of
# the user takes it exclusively (see the docstring).
_SHARE_USER = """IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;"""
# A live session recorded for another user than p_user_id: refused.  Locks the row, so
# the write that follows sees the same owner.
_REFUSE_OTHER_OWNER = """
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;"""

FUNCTIONS = {
    "ctxstore_append_v4": f"""
CREATE FUNCTION ctxstore_append_v4(p_session_id text, p_expected bigint, p_user_id text,
    p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea,
    p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_MESSAGE_ARRAYS},
    OUT start integer, OUT version bigint)
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
            INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                                  name, metadata, digest, token_count, format_version,
                                  token_encoding, key_id, sealed)
            SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
                   m.ts::timestamptz, m.ts_offset, m.name, m.metadata, m.digest,
                   m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed
              FROM unnest({_MESSAGE_ARGUMENTS}) AS m(seq, role, content, turn_id, ts,
                       ts_offset, name, metadata, digest, token_count, format_version,
                       token_encoding, key_id, sealed);
            IF p_key_id[1] IS NOT NULL THEN
                PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
            END IF;
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
               p_first_ts, p_last_ts, {_MESSAGE_ARGUMENTS}) AS a;
END
$$""",
    "ctxstore_append_if_unchanged_v2": f"""
CREATE FUNCTION ctxstore_append_if_unchanged_v2(p_session_id text, p_expected bigint,
    p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea,
    p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_MESSAGE_ARRAYS})
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
        PERFORM ctxstore_insert_messages_v1(p_session_id, p_known_count, {_MESSAGE_ARGUMENTS});
        RETURN v_version;
    END IF;
    {_REFUSE_OTHER_OWNER}
    RETURN NULL;
END
$$""",
    # Every session recorded for the user or holding a row sealed under its keys, locked
    # (an UPDATE that changes nothing: no row lock spans Citus's shards otherwise),
    # counted and deleted with everything cascading from it.
    "ctxstore_erase_user_sessions_v2": f"""
CREATE FUNCTION ctxstore_erase_user_sessions_v2(p_user_id text,
    OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint,
    OUT state_changes bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_keys bigint[];
    v_holding text[] := '{{}}';
    v_row record;
BEGIN
    {_SEQUENTIAL}
    -- Writers naming the user hold this lock shared from their start: the erasure waits
    -- for those in flight and holds off new ones, before any row lock (no deadlock).
    PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore user ' || p_user_id, 0));
    v_keys := ARRAY(SELECT key_id FROM data_keys WHERE owner = 'u:' || p_user_id);
    IF cardinality(v_keys) > 0 THEN
        v_holding := ARRAY(
            SELECT t.session_id FROM messages AS t WHERE t.key_id = ANY(v_keys)
            UNION SELECT t.session_id FROM summaries AS t WHERE t.key_id = ANY(v_keys)
            UNION SELECT t.session_id FROM consultation_states AS t
                   WHERE t.key_id = ANY(v_keys)
            UNION SELECT t.session_id FROM consultation_state_history AS t
                   WHERE t.key_id = ANY(v_keys));
    END IF;
    session_ids := '{{}}';
    messages := 0;
    FOR v_row IN UPDATE sessions SET user_id = user_id
                  WHERE user_id = p_user_id OR session_id = ANY(v_holding)
                 RETURNING session_id, message_count LOOP
        session_ids := session_ids || v_row.session_id;
        messages := messages + v_row.message_count;
    END LOOP;
    session_ids := ARRAY(SELECT unnest(session_ids) ORDER BY 1);
    SELECT count(*) INTO summaries FROM summaries AS t WHERE t.session_id = ANY(session_ids);
    SELECT count(*) INTO states FROM consultation_states AS t
     WHERE t.session_id = ANY(session_ids);
    SELECT count(*) INTO state_changes FROM consultation_state_history AS t
     WHERE t.session_id = ANY(session_ids);
    IF cardinality(session_ids) > 0 THEN
        DELETE FROM sessions AS t WHERE t.session_id = ANY(session_ids);
    END IF;
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
    for definition in FUNCTIONS.values():
        op.execute(definition)
    op.execute(PRIVILEGES.format(names=" ".join(FUNCTIONS)))


def downgrade() -> None:
    for name in reversed(list(FUNCTIONS)):
        op.execute(f"DROP FUNCTION {name}")
