-- Revision 1002: ctxstore_append_v7 in one function.  Until now it reached a new session,
-- a race or a refused sealed append through ctxstore_append_v6, which called
-- ctxstore_append_v2, which called ctxstore_insert_messages_v1; the same steps are now
-- written out here, once.  Same signature and results, replaced in place: processes of the
-- previous release call it unchanged.  The three it called stay until release 1.1 drops them
-- (docs/design.md, "One live version of each function"): a call begun before this revision
-- may still reach them.

CREATE OR REPLACE FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_rows);
    v_sealed boolean := (p_rows[1]).key_id IS NOT NULL;
    v_user text;
    v_pass integer;
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
    -- The session extended where it stands: the turn's one UPDATE, tried a second time
    -- only after a refusal's checks below (the row may have changed, or is now locked).
    FOR v_pass IN 1..2 LOOP
        EXIT WHEN p_expected = 0;
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
           -- a sealed chain is extended from the very hash stored, never left unknown
           AND (NOT v_sealed OR s.message_count = 0
                OR (s.message_count = p_known_count
                    AND s.content_hash IS NOT DISTINCT FROM p_known_hash))
        RETURNING s.message_count - v_added, s.version, s.user_id INTO start, version, v_user;
        EXIT WHEN FOUND OR v_pass = 2 OR NOT v_sealed;
        -- A sealed append refused as the session stands, read only (a refusal writes
        -- nothing, not even a lock); else locked, read again and tried once more, its hash
        -- held to what is checked here.  Locked before the session id's lock below, as the
        -- UPDATE may already hold the row (one it waited for, then found changed).
        SELECT s.version, s.message_count, s.content_hash,
               NOT (s.expires_at IS NULL OR s.expires_at > now())
          INTO current_version, current_count, current_hash, current_expired
          FROM sessions AS s WHERE s.session_id = p_session_id;
        IF FOUND AND current_count > 0 AND NOT current_expired
           AND (current_count IS DISTINCT FROM p_known_count
                OR current_hash IS DISTINCT FROM p_known_hash) THEN
            RETURN;  -- refused, nothing written: the writer resumes the stored chain
        END IF;
        SELECT s.version, s.message_count, s.content_hash,
               NOT (s.expires_at IS NULL OR s.expires_at > now())
          INTO current_version, current_count, current_hash, current_expired
          FROM sessions AS s WHERE s.session_id = p_session_id
           FOR NO KEY UPDATE;
        IF FOUND AND current_count > 0 AND NOT current_expired
           AND (current_count IS DISTINCT FROM p_known_count
                OR current_hash IS DISTINCT FROM p_known_hash) THEN
            RETURN;
        END IF;
        current_version := NULL;
        current_count := NULL;
        current_hash := NULL;
        current_expired := NULL;
    END LOOP;
    IF version IS NULL THEN
        -- A new session, one that can't take the messages, another user's, or a race.
        IF p_user_id IS NOT NULL THEN
            -- creators of one session id take turns, so only the first claims it
            PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore session ' || p_session_id, 0));
            IF EXISTS (SELECT FROM sessions AS s
                        WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
                          AND (s.expires_at IS NULL OR s.expires_at > now())
                          FOR UPDATE) THEN
                RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
                    USING ERRCODE = 'CX001';
            END IF;
        END IF;
        LOOP
            -- Without the first UPDATE's user and chain conditions: the user was checked
            -- above, under the session id's lock, and a session another writer created
            -- meanwhile is extended as it stands (v2's rule, as before revision 1002).
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
                RETURNING s.message_count - v_added, s.version, s.user_id
                     INTO start, version, v_user;
                EXIT WHEN FOUND;
                -- A row this UPDATE didn't see may have committed since: only a row that is
                -- there and can't take the messages ends the call (the caller reads why);
                -- one that can is extended on the next turn of the loop.
                EXIT WHEN p_expected IS NOT NULL
                       OR EXISTS (SELECT FROM sessions AS s
                                   WHERE s.session_id = p_session_id
                                     AND (s.message_count + v_added > p_max_messages
                                          OR s.expires_at <= now()));
            END IF;
            INSERT INTO sessions AS s (session_id, user_id, message_count, content_hash,
                                       version, expires_at, turn_count, first_activity_at,
                                       last_activity_at)
            VALUES (p_session_id, p_user_id, v_added, p_added_hash, 1, now() + p_ttl,
                    p_turns, v_first, v_last)
            ON CONFLICT (session_id) DO NOTHING
            RETURNING 0, s.version, s.user_id INTO start, version, v_user;
            EXIT WHEN FOUND OR p_expected = 0;
            -- created meanwhile by another writer: extend it
        END LOOP;
        IF version IS NULL THEN
            SELECT s.version, s.message_count, s.content_hash,
                   NOT (s.expires_at IS NULL OR s.expires_at > now())
              INTO current_version, current_count, current_hash, current_expired
              FROM sessions AS s WHERE s.session_id = p_session_id;
            RETURN;  -- refused, nothing written
        END IF;
    END IF;
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                          name, metadata, digest, token_count, format_version,
                          token_encoding, key_id, sealed, ts_nanos)
    SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
           m.ts::timestamptz, m.ts_offset, m.name, m.metadata::jsonb, m.digest,
           m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed,
           m.ts_nanos
      FROM unnest(p_rows) AS m;
    IF cardinality(p_write_ids) > 0 THEN
        INSERT INTO applied_session_writes (session_id, write_id)
        SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
        ON CONFLICT DO NOTHING;
    END IF;
    -- The keys exist and are the session's own or its user's; else, as a destroyed key
    -- (the writer forgets its keys and seals again).  Checked here, not in a function of
    -- its own: a call begun before a downgrade must not find it dropped.
    IF v_sealed AND EXISTS (
        SELECT FROM unnest(p_rows) AS m
         WHERE NOT EXISTS (SELECT FROM data_keys AS d
                            WHERE d.key_id = m.key_id
                              AND d.owner IN ('s:' || p_session_id, 'u:' || v_user))) THEN
        RAISE EXCEPTION 'a data key this write was sealed under was destroyed, or is not '
                        'the session''s (fk_messages_key_id_data_keys)'
            USING ERRCODE = 'foreign_key_violation',
                  CONSTRAINT = 'fk_messages_key_id_data_keys';
    END IF;
END
$$;
