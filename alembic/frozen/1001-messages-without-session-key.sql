-- Revision 1001: the functions that write or delete messages, for a messages table
-- without its foreign key to sessions.  The deletes delete the messages themselves, after
-- the session rows; the inserts hold the session row (FOR KEY SHARE) as the key did.
-- Same signatures as the baseline's, replaced in place: processes of the previous release
-- call them unchanged.

CREATE OR REPLACE FUNCTION ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    -- The session row, held against a delete until commit: no foreign key does it
    -- (revision 1001), and a delete removes only the messages it sees.
    PERFORM FROM sessions AS s WHERE s.session_id = p_session_id FOR KEY SHARE;
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, name,
                          metadata, digest, token_count, format_version, token_encoding,
                          key_id, sealed, ts_nanos)
    SELECT s.session_id, p_start + m.seq, m.role, m.content, m.turn_id, m.ts::timestamptz,
           m.ts_offset, m.name, m.metadata, m.digest, m.token_count, m.format_version,
           m.token_encoding, m.key_id, m.sealed, m.ts_nanos
      FROM sessions AS s,
           unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed, p_ts_nanos) AS m(seq, role, content, turn_id, ts, ts_offset, name,
                       metadata, digest, token_count, format_version, token_encoding,
                       key_id, sealed, ts_nanos)
     WHERE s.session_id = p_session_id;
    IF p_key_id[1] IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) RETURNS void
    LANGUAGE plpgsql
    AS $$
BEGIN
    -- The session row, held against a delete until commit: no foreign key does it
    -- (revision 1001), and a delete removes only the messages it sees.
    PERFORM FROM sessions AS s WHERE s.session_id = p_session_id FOR KEY SHARE;
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, name,
                          metadata, digest, token_count, format_version, token_encoding,
                          key_id, sealed)
    SELECT s.session_id, p_start + m.seq, m.role, m.content, m.turn_id, m.ts::timestamptz,
           m.ts_offset, m.name, m.metadata, m.digest, m.token_count, m.format_version,
           m.token_encoding, m.key_id, m.sealed
      FROM sessions AS s,
           unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS m(seq, role, content, turn_id, ts, ts_offset, name,
                       metadata, digest, token_count, format_version, token_encoding,
                       key_id, sealed)
     WHERE s.session_id = p_session_id;
    IF p_key_id[1] IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_deleted boolean;
BEGIN
    DELETE FROM sessions
     WHERE session_id = p_session_id AND (NOT p_expired_only OR expires_at <= now());
    v_deleted := FOUND;
    IF v_deleted THEN
        -- No foreign key cascades to messages (revision 1001).  The deleted row stays
        -- locked until commit, so the messages this statement sees are all there will be.
        DELETE FROM messages WHERE session_id = p_session_id;
        IF EXISTS (SELECT FROM data_keys WHERE owner = 's:' || p_session_id) THEN
            DELETE FROM data_keys WHERE owner = 's:' || p_session_id;
        END IF;
    END IF;
    RETURN v_deleted;
END
$$;

CREATE OR REPLACE FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) RETURNS SETOF integer
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_ids text[];
    v_gone text[] := '{}';
    v_owners text[] := '{}';
    v_row record;
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
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
        v_gone := v_gone || v_row.session_id;
        v_owners := v_owners || ('s:' || v_row.session_id);
        RETURN NEXT v_row.message_count;
    END LOOP;
    -- no foreign key cascades to messages (revision 1001): as ctxstore_delete_session_v1
    DELETE FROM messages WHERE session_id = ANY(v_gone);
    IF EXISTS (SELECT FROM data_keys WHERE owner = ANY(v_owners)) THEN
        DELETE FROM data_keys WHERE owner = ANY(v_owners);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_keys bigint[];
    v_holding text[] := '{}';
    v_row record;
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
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
    session_ids := '{}';
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
        -- no foreign key cascades to messages (revision 1001): as ctxstore_delete_session_v1
        DELETE FROM messages AS t WHERE t.session_id = ANY(session_ids);
    END IF;
END
$$;
