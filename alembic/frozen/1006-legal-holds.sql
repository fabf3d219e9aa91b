-- Revision 1006: legal holds (issue 51).
--
-- A hold on a user or on one session keeps what it covers from every deletion but the
-- owner's: erasure refuses a held user (SQLSTATE CX002, naming the holds), deleting a
-- held session is refused the same way, and purging skips held sessions (an expired one
-- reads as missing but stays).  Holds are placed and lifted by the owner only
-- (`ctxstore hold`); the app role reads them, in the functions every process calls: the
-- previous release's too, so a hold binds it from this revision on.
--
-- Races: placing a hold takes the user's advisory lock shared (the erasure takes it
-- alone, before its checks), then locks the held sessions' rows.  A purge or a deletion
-- locks a session's row before it checks the holds in a later statement, whose snapshot
-- sees every hold committed before the lock was granted.

CREATE TABLE legal_holds (
    hold_id uuid DEFAULT gen_random_uuid() NOT NULL,
    user_id text,
    session_id text,
    reason text NOT NULL,
    placed_by text NOT NULL,
    placed_at timestamp with time zone DEFAULT now() NOT NULL,
    lifted_by text,
    lifted_at timestamp with time zone,
    CONSTRAINT pk_legal_holds PRIMARY KEY (hold_id),
    CONSTRAINT ck_legal_holds_one_subject CHECK (((user_id IS NULL) <> (session_id IS NULL))),
    CONSTRAINT ck_legal_holds_reason_given CHECK (((char_length(reason) >= 1) AND (char_length(reason) <= 1000))),
    CONSTRAINT ck_legal_holds_lifted_by_someone CHECK (((lifted_at IS NULL) = (lifted_by IS NULL)))
);

ALTER TABLE legal_holds OWNER TO :"owner_role";

CREATE INDEX ix_legal_holds_user_id ON legal_holds USING btree (user_id) WHERE (lifted_at IS NULL);

CREATE INDEX ix_legal_holds_session_id ON legal_holds USING btree (session_id) WHERE (lifted_at IS NULL);

GRANT SELECT ON TABLE legal_holds TO :"app_role";

-- The holds in force on a session (its own, its user's), as one line for an error.
CREATE FUNCTION ctxstore_holds_of_v1(p_user_id text, p_session_ids text[]) RETURNS text
    LANGUAGE sql STABLE
    AS $$
SELECT string_agg(
           format('%s on %s %s (placed by %s at %s: %s)', h.hold_id,
                  CASE WHEN h.user_id IS NULL THEN 'session' ELSE 'user' END,
                  coalesce(h.user_id, h.session_id), h.placed_by,
                  to_char(h.placed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI "UTC"'), h.reason),
           '; ' ORDER BY h.placed_at, h.hold_id)
  FROM legal_holds AS h
 WHERE h.lifted_at IS NULL
   AND (h.user_id = p_user_id OR h.session_id = ANY(p_session_ids))
$$;

ALTER FUNCTION ctxstore_holds_of_v1(p_user_id text, p_session_ids text[]) OWNER TO :"owner_role";

REVOKE ALL ON FUNCTION ctxstore_holds_of_v1(p_user_id text, p_session_ids text[]) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_holds_of_v1(p_user_id text, p_session_ids text[]) TO :"app_role";

CREATE OR REPLACE FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) RETURNS boolean
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_user_id text;
    v_held text;
    v_deleted boolean;
BEGIN
    -- The row locked first: a hold placed meanwhile waits for it, or is seen below.
    UPDATE sessions SET user_id = user_id
     WHERE session_id = p_session_id AND (NOT p_expired_only OR expires_at <= now())
    RETURNING user_id INTO v_user_id;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    v_held := ctxstore_holds_of_v1(v_user_id, ARRAY[p_session_id]);
    IF v_held IS NOT NULL THEN
        IF p_expired_only THEN
            RETURN false;  -- expired, so read as missing, but kept while held
        END IF;
        RAISE EXCEPTION 'session % is under a legal hold: %', p_session_id, v_held
            USING ERRCODE = 'CX002';
    END IF;
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
        v_ids := ARRAY(SELECT s.session_id FROM sessions AS s
                        WHERE s.expires_hour <= now() AND s.expires_at <= now()
                          AND NOT EXISTS (SELECT FROM legal_holds AS h
                                           WHERE h.lifted_at IS NULL
                                             AND (h.session_id = s.session_id
                                                  OR h.user_id = s.user_id))
                        ORDER BY s.expires_hour LIMIT p_batch_size);
    ELSE
        v_ids := ARRAY(SELECT s.session_id FROM sessions AS s
                        WHERE s.updated_at < now() - p_age
                          AND NOT EXISTS (SELECT FROM legal_holds AS h
                                           WHERE h.lifted_at IS NULL
                                             AND (h.session_id = s.session_id
                                                  OR h.user_id = s.user_id))
                        LIMIT p_batch_size);
    END IF;
    IF cardinality(v_ids) = 0 THEN
        RETURN;
    END IF;
    -- Locked, then the holds checked again by the DELETE: its snapshot, taken after the
    -- locks were granted, sees a hold placed meanwhile (placing one locks the rows too).
    UPDATE sessions SET user_id = user_id WHERE session_id = ANY(v_ids);
    FOR v_row IN DELETE FROM sessions AS s
                  WHERE s.session_id = ANY(v_ids)
                    AND (s.expires_at <= now() OR s.updated_at < now() - p_age)
                    AND NOT EXISTS (SELECT FROM legal_holds AS h
                                     WHERE h.lifted_at IS NULL
                                       AND (h.session_id = s.session_id OR h.user_id = s.user_id))
                 RETURNING s.session_id, s.message_count LOOP
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
    v_held text;
    v_row record;
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    -- Writers naming the user hold this lock shared from their start: the erasure waits
    -- for those in flight and holds off new ones, before any row lock (no deadlock).
    -- Placing a hold takes it shared too: the check below sees every hold placed before.
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
    v_held := ctxstore_holds_of_v1(p_user_id, v_holding || ARRAY(
        SELECT s.session_id FROM sessions AS s WHERE s.user_id = p_user_id));
    IF v_held IS NOT NULL THEN
        RAISE EXCEPTION 'user % is under a legal hold: %', p_user_id, v_held
            USING ERRCODE = 'CX002';
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
