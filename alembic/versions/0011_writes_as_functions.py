"""The writes that touch several tables or rows, as versioned SQL functions.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01

Each function is one write: the same text on PostgreSQL and on Citus.  The per-session
ones take the session id as ``p_session_id``; ``ctxstore db distribute`` registers them
with Citus beside ``sessions`` (``create_distributed_function``), so a call outside a
transaction block runs on the session's worker, and one inside a transaction runs each
statement on the session's shard: one worker, a plain commit.  Their statements keep to
what Citus runs on one shard: no INSERT in a CTE, no now() inside CASE or COALESCE, an
INSERT ... SELECT of messages reads the (colocated) session row.

A sealed row's data key is checked just before the write returns, with the session's
rows locked (rows, then keys: every writer's lock order), besides the foreign key at
commit (revision 0010): a Citus worker reports that key failing only as "could not
commit".  The batch functions (erasure, purge, key rotation) span sessions; on Citus they
run in sequential mode, so the data keys deleted later in their transaction see the rows
deleted on every worker.

A later change to one of these writes is a new function (``_v2``) in a new revision: the
old one stays until no process of the previous release calls it.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
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

FUNCTIONS = {
    "ctxstore_require_keys_v1": """
CREATE FUNCTION ctxstore_require_keys_v1(p_key_ids bigint[], p_table text)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM unnest(p_key_ids) AS k(key_id)
                WHERE k.key_id IS NOT NULL
                  AND NOT EXISTS (SELECT FROM data_keys AS d WHERE d.key_id = k.key_id)) THEN
        -- the constraint named in the message too: Citus relays a worker's error without
        -- its constraint field
        RAISE EXCEPTION 'a data key this write was sealed under was destroyed (%)',
                        'fk_' || p_table || '_key_id_data_keys'
            USING ERRCODE = 'foreign_key_violation',
                  CONSTRAINT = 'fk_' || p_table || '_key_id_data_keys';
    END IF;
END
$$""",
    # Messages at positions p_start + p_seq; ts comes as ISO text (asyncpg would send Go's
    # zero and maximum times as infinities).
    "ctxstore_insert_messages_v1": f"""
CREATE FUNCTION ctxstore_insert_messages_v1(p_session_id text, p_start integer,
    {_MESSAGE_ARRAYS})
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, name,
                          metadata, digest, token_count, format_version, token_encoding,
                          key_id, sealed)
    SELECT s.session_id, p_start + m.seq, m.role, m.content, m.turn_id, m.ts::timestamptz,
           m.ts_offset, m.name, m.metadata, m.digest, m.token_count, m.format_version,
           m.token_encoding, m.key_id, m.sealed
      FROM sessions AS s,
           unnest({_MESSAGE_ARGUMENTS}) AS m(seq, role, content, turn_id, ts, ts_offset, name,
                       metadata, digest, token_count, format_version, token_encoding,
                       key_id, sealed)
     WHERE s.session_id = p_session_id;
    IF p_key_id[1] IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
    END IF;
END
$$""",
    # append(): the session row hands out the positions (its message_count) under its row
    # lock.  p_expected: NULL any version (the session is created if missing), 0 only a
    # new session, else only that version.  The content hash: of the new messages alone
    # when nothing was stored, else p_extended_hash if the caller knew the stored list
    # (p_known_count messages with p_known_hash), else NULL (the next save recomputes it).
    # No row fits (too many messages, expired, another version): start and version NULL.
    "ctxstore_append_v1": f"""
CREATE FUNCTION ctxstore_append_v1(p_session_id text, p_expected bigint, p_user_id text,
    p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea,
    p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_MESSAGE_ARRAYS},
    OUT start integer, OUT version bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_seq);
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    LOOP
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
                   user_id = coalesce(p_user_id, s.user_id),
                   updated_at = now()
             WHERE s.session_id = p_session_id
               AND (p_expected IS NULL OR s.version = p_expected)
               AND s.message_count + v_added <= p_max_messages
               AND (s.expires_at IS NULL OR s.expires_at > now())
            RETURNING s.message_count - v_added, s.version INTO start, version;
            EXIT WHEN FOUND;
            IF p_expected IS NOT NULL
               OR EXISTS (SELECT FROM sessions WHERE session_id = p_session_id) THEN
                RETURN;  -- no fit: the caller reads why
            END IF;
        END IF;
        INSERT INTO sessions AS s (session_id, user_id, message_count, content_hash, version,
                                   expires_at, turn_count, first_activity_at, last_activity_at)
        VALUES (p_session_id, p_user_id, v_added, p_added_hash, 1, now() + p_ttl, p_turns,
                v_first, v_last)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING 0, s.version INTO start, version;
        EXIT WHEN FOUND OR p_expected = 0;
        -- created meanwhile by another writer: extend it
    END LOOP;
    IF version IS NOT NULL THEN
        PERFORM ctxstore_insert_messages_v1(p_session_id, start, {_MESSAGE_ARGUMENTS});
    END IF;
END
$$""",
    # save()'s fast path: append only if the session still holds exactly the list the
    # caller extended (p_known_count messages with p_known_hash), at p_expected when given.
    # The new version, or NULL: the session moved on (the caller takes the locked path).
    "ctxstore_append_if_unchanged_v1": f"""
CREATE FUNCTION ctxstore_append_if_unchanged_v1(p_session_id text, p_expected bigint,
    p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea,
    p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamptz,
    p_last_ts timestamptz, {_MESSAGE_ARRAYS})
RETURNS bigint LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    UPDATE sessions AS s
       SET message_count = p_new_count, content_hash = p_new_hash, version = s.version + 1,
           updated_at = now(), user_id = coalesce(p_user_id, s.user_id),
           expires_at = now() + p_ttl, turn_count = s.turn_count + p_turns,
           first_activity_at = coalesce(p_first_ts, s.first_activity_at),
           last_activity_at = v_last
     WHERE s.session_id = p_session_id AND s.message_count = p_known_count
       AND s.content_hash = p_known_hash
       AND (p_expected IS NULL OR s.version = p_expected)
       AND (s.expires_at IS NULL OR s.expires_at > now())
    RETURNING s.version INTO v_version;
    IF FOUND THEN
        PERFORM ctxstore_insert_messages_v1(p_session_id, p_known_count, {_MESSAGE_ARGUMENTS});
    END IF;
    RETURN v_version;
END
$$""",
    # A session and everything cascading from it; then its own data key (a session without
    # a user), after its rows, and only when it has one (on Citus data_keys is written on
    # every node).  p_expired_only: only if it has expired.  Whether it was deleted.
    "ctxstore_delete_session_v1": """
CREATE FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    v_deleted boolean;
BEGIN
    DELETE FROM sessions
     WHERE session_id = p_session_id AND (NOT p_expired_only OR expires_at <= now());
    v_deleted := FOUND;
    IF v_deleted AND EXISTS (SELECT FROM data_keys WHERE owner = 's:' || p_session_id) THEN
        DELETE FROM data_keys WHERE owner = 's:' || p_session_id;
    END IF;
    RETURN v_deleted;
END
$$""",
    # The next summary version (max + 1, read after the session row is locked, so writers
    # of one session take turns), only if the session is live and has more than
    # p_covers_until messages, and the latest version is p_expected when given.  Nothing
    # written: summary_version NULL.
    "ctxstore_insert_summary_v1": """
CREATE FUNCTION ctxstore_insert_summary_v1(p_session_id text, p_expected integer,
    p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint,
    p_key_id bigint, p_sealed bytea,
    OUT summary_version integer, OUT text text, OUT covers_until integer,
    OUT token_count integer, OUT format_version smallint, OUT created_at timestamptz,
    OUT key_id bigint, OUT sealed bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_count integer;
    v_latest integer;
BEGIN
    SELECT s.message_count INTO v_count FROM sessions AS s
     WHERE s.session_id = p_session_id AND (s.expires_at IS NULL OR s.expires_at > now())
       FOR NO KEY UPDATE;
    IF NOT FOUND OR v_count <= p_covers_until THEN
        RETURN;
    END IF;
    SELECT coalesce(max(m.summary_version), 0) INTO v_latest
      FROM summaries AS m WHERE m.session_id = p_session_id;
    IF p_expected IS NOT NULL AND v_latest <> p_expected THEN
        RETURN;
    END IF;
    INSERT INTO summaries AS n (session_id, summary_version, text, covers_until,
                                token_count, format_version, key_id, sealed)
    VALUES (p_session_id, v_latest + 1, p_text, p_covers_until, p_token_count,
            p_format_version, p_key_id, p_sealed)
    RETURNING n.summary_version, n.text, n.covers_until, n.token_count, n.format_version,
              n.created_at, n.key_id, n.sealed
         INTO summary_version, text, covers_until, token_count, format_version, created_at,
              key_id, sealed;
    PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'summaries');
END
$$""",
    # A consultation state version and its history row, with the session row locked first.
    # p_expected: NULL any version (the first write inserts version 1), 0 only the first,
    # else only that version.  Nothing written: version NULL.
    "ctxstore_write_state_v1": """
CREATE FUNCTION ctxstore_write_state_v1(p_session_id text, p_expected bigint,
    p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[],
    p_red_flags text[], p_pain_level smallint, p_duration text, p_document jsonb,
    p_format_version smallint, p_key_id bigint, p_sealed bytea,
    OUT version bigint, OUT updated_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    PERFORM FROM sessions AS s
     WHERE s.session_id = p_session_id AND (s.expires_at IS NULL OR s.expires_at > now())
       FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF p_expected IS DISTINCT FROM 0 THEN
        UPDATE consultation_states AS c
           SET version = c.version + 1,
               (stage, chief_complaint, body_parts, symptoms, red_flags, pain_level,
                duration, document, format_version, key_id, sealed)
             = (p_stage, p_chief_complaint, p_body_parts, p_symptoms, p_red_flags,
                p_pain_level, p_duration, p_document, p_format_version, p_key_id, p_sealed),
               updated_at = now()
         WHERE c.session_id = p_session_id AND (p_expected IS NULL OR c.version = p_expected)
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL AND (p_expected IS NULL OR p_expected = 0) THEN
        INSERT INTO consultation_states AS c (session_id, version, stage, chief_complaint,
            body_parts, symptoms, red_flags, pain_level, duration, document, format_version,
            key_id, sealed)
        VALUES (p_session_id, 1, p_stage, p_chief_complaint, p_body_parts, p_symptoms,
                p_red_flags, p_pain_level, p_duration, p_document, p_format_version,
                p_key_id, p_sealed)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO consultation_state_history (session_id, version, stage, chief_complaint,
        body_parts, symptoms, red_flags, pain_level, duration, document, format_version,
        key_id, sealed, created_at)
    VALUES (p_session_id, version, p_stage, p_chief_complaint, p_body_parts, p_symptoms,
            p_red_flags, p_pain_level, p_duration, p_document, p_format_version, p_key_id,
            p_sealed, updated_at);
    PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'consultation_states');
END
$$""",
    # A user's profile (a reference table on Citus: written on every node).  p_expected as
    # for states; the new version, or NULL.
    "ctxstore_write_profile_v1": """
CREATE FUNCTION ctxstore_write_profile_v1(p_user_id text, p_expected bigint,
    p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[],
    p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea)
RETURNS bigint LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
BEGIN
    LOOP
        IF p_expected IS DISTINCT FROM 0 THEN
            UPDATE user_profiles AS p
               SET version = p.version + 1,
                   (age, gender, exercise_habit, known_limitations, document,
                    format_version, key_id, sealed)
                 = (p_age, p_gender, p_exercise_habit, p_known_limitations, p_document,
                    p_format_version, p_key_id, p_sealed),
                   updated_at = now()
             WHERE p.user_id = p_user_id AND (p_expected IS NULL OR p.version = p_expected)
            RETURNING p.version INTO v_version;
            EXIT WHEN FOUND OR p_expected IS NOT NULL;
        END IF;
        INSERT INTO user_profiles AS p (user_id, version, age, gender, exercise_habit,
            known_limitations, document, format_version, key_id, sealed)
        VALUES (p_user_id, 1, p_age, p_gender, p_exercise_habit, p_known_limitations,
                p_document, p_format_version, p_key_id, p_sealed)
        ON CONFLICT (user_id) DO NOTHING
        RETURNING p.version INTO v_version;
        EXIT WHEN FOUND OR p_expected = 0;
        -- created meanwhile by another writer: update it
    END LOOP;
    IF v_version IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'user_profiles');
    END IF;
    RETURN v_version;
END
$$""",
    # Every session of a user, locked (an UPDATE that changes nothing: no row lock spans
    # Citus's shards otherwise), counted (writers wait for those locks, so the counts stay
    # true) and deleted with everything cascading from it.
    "ctxstore_erase_user_sessions_v1": f"""
CREATE FUNCTION ctxstore_erase_user_sessions_v1(p_user_id text,
    OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint,
    OUT state_changes bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_row record;
BEGIN
    {_SEQUENTIAL}
    session_ids := '{{}}';
    messages := 0;
    FOR v_row IN UPDATE sessions SET user_id = user_id WHERE user_id = p_user_id
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
    # purge-expired: one batch of expired sessions (p_age NULL), else of sessions whose
    # last write is older than p_age; read, then deleted if they still qualify (a session
    # being written is waited for, and kept if that write moved it on), then their own
    # data keys.  Each deleted session's message count.
    "ctxstore_purge_batch_v1": f"""
CREATE FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, p_age interval)
RETURNS SETOF integer LANGUAGE plpgsql AS $$
DECLARE
    v_ids text[];
    v_owners text[] := '{{}}';
    v_row record;
BEGIN
    {_SEQUENTIAL}
    IF p_age IS NULL THEN
        -- expires_hour (indexed) is never later than expires_at: no expired session missed
        v_ids := ARRAY(SELECT session_id FROM sessions
                        WHERE expires_hour <= now() AND expires_at <= now()
                        ORDER BY expires_hour LIMIT p_batch_size);
    ELSE
        v_ids := ARRAY(SELECT session_id FROM sessions WHERE updated_at < now() - p_age
                        LIMIT p_batch_size);
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;
    FOR v_row IN DELETE FROM sessions
                  WHERE session_id = ANY(v_ids)
                    AND (expires_at <= now() OR updated_at < now() - p_age)
                 RETURNING session_id, message_count LOOP
        v_owners := v_owners || ('s:' || v_row.session_id);
        RETURN NEXT v_row.message_count;
    END LOOP;
    IF EXISTS (SELECT FROM data_keys WHERE owner = ANY(v_owners)) THEN
        DELETE FROM data_keys WHERE owner = ANY(v_owners);
    END IF;
END
$$""",
    # rotate-keys --reencrypt: a batch of sessions holding rows sealed under a retired key
    # (or plaintext), after p_after in id order, locked by an UPDATE that changes nothing
    # (a session being written is waited for rather than skipped).
    "ctxstore_sessions_to_reencrypt_v1": f"""
CREATE FUNCTION ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer)
RETURNS TABLE (session_id text, user_id text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_ids text[];
BEGIN
    {_SEQUENTIAL}
    v_ids := ARRAY(
        SELECT s.session_id FROM sessions AS s
         WHERE s.session_id > p_after
           AND (EXISTS (SELECT FROM messages AS t WHERE t.session_id = s.session_id
                          AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL)))
             OR EXISTS (SELECT FROM summaries AS t WHERE t.session_id = s.session_id
                          AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL)))
             OR EXISTS (SELECT FROM consultation_states AS t
                         WHERE t.session_id = s.session_id AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL)))
             OR EXISTS (SELECT FROM consultation_state_history AS t
                         WHERE t.session_id = s.session_id AND (t.key_id IS NULL OR t.key_id IN
                               (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL))))
         ORDER BY s.session_id LIMIT p_batch_size);
    RETURN QUERY
        UPDATE sessions AS s SET user_id = s.user_id WHERE s.session_id = ANY(v_ids)
        RETURNING s.session_id, s.user_id;
END
$$""",
    # rotate-keys: retired keys no row is sealed under any more, deleted (the keys in use
    # looked up first: Citus deletes from a reference table only with other reference
    # tables in the statement; writers seal under current keys only).
    "ctxstore_delete_unused_retired_keys_v1": f"""
CREATE FUNCTION ctxstore_delete_unused_retired_keys_v1()
RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
    v_retired bigint[];
    v_used bigint[];
BEGIN
    {_SEQUENTIAL}
    v_retired := ARRAY(SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL);
    IF cardinality(v_retired) = 0 THEN
        RETURN;
    END IF;
    v_used := ARRAY(
        SELECT key_id FROM messages WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM summaries WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_states WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_state_history WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM user_profiles WHERE key_id = ANY(v_retired));
    RETURN QUERY
        DELETE FROM data_keys
         WHERE key_id = ANY(v_retired) AND key_id <> ALL(v_used) AND retired_at IS NOT NULL
        RETURNING key_id;
END
$$""",
}


# As every object of the schema (revision 0008): owned by the owner role, callable by the
# app role alone (PostgreSQL grants EXECUTE to PUBLIC by default).  The names come from the
# table 0008 records them in, not from this process's configuration.
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
