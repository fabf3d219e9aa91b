-- Revision 1003: the save's two writes take a turn's messages as the append does, one
-- ctxstore_message_row_v1 a message, instead of fifteen arrays: one encoding for every
-- write.  New versions beside the old ones, which the previous release's processes call
-- until release 1.1 drops them (docs/design.md, "One live version of each function").

CREATE FUNCTION ctxstore_append_if_unchanged_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[]) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_version bigint;
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
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
        -- the session row is this transaction's now: no delete gets between
        INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, name,
                              metadata, digest, token_count, format_version,
                              token_encoding, key_id, sealed, ts_nanos)
        SELECT p_session_id, p_known_count + m.seq, m.role, m.content, m.turn_id,
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
        RETURN v_version;
    END IF;
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;
    RETURN NULL;
END
$$;

ALTER FUNCTION ctxstore_append_if_unchanged_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[]) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_insert_messages_v3(p_session_id text, p_start integer, p_rows ctxstore_message_row_v1[]) RETURNS void
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
           m.ts_offset, m.name, m.metadata::jsonb, m.digest, m.token_count,
           m.format_version, m.token_encoding, m.key_id, m.sealed, m.ts_nanos
      FROM sessions AS s, unnest(p_rows) AS m
     WHERE s.session_id = p_session_id;
    IF (p_rows[1]).key_id IS NOT NULL THEN
        PERFORM ctxstore_require_keys_v1(ARRAY(SELECT m.key_id FROM unnest(p_rows) AS m),
                                         'messages');
    END IF;
END
$$;

ALTER FUNCTION ctxstore_insert_messages_v3(p_session_id text, p_start integer, p_rows ctxstore_message_row_v1[]) OWNER TO :"owner_role";

REVOKE ALL ON FUNCTION ctxstore_append_if_unchanged_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_append_if_unchanged_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[]) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_insert_messages_v3(p_session_id text, p_start integer, p_rows ctxstore_message_row_v1[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_insert_messages_v3(p_session_id text, p_start integer, p_rows ctxstore_message_row_v1[]) TO :"app_role";
