-- Revision 1008: the ledger of Context Contracts (issue 52).
--
-- What a model saw, kept as the exact bytes the builder returned, chained per session.
-- A contract is stored as a frame of numbered pieces (storage/ledger.py cuts it): the
-- pieces are content-addressed per session, so the messages, summary, state and profile
-- a consultation's contracts share are stored once.  An entry holds its provenance, its
-- frame, the digest of both (`body`), the previous entry's digest and its own:
--   digest = sha256(prev || int8(entry_seq) || int8(recorded_at in microseconds) || body)
--
-- The app role records and reads; it can neither update nor delete: it adds entries
-- through ctxstore_record_contract_v1 (SECURITY DEFINER), which numbers them and links
-- each to the last under the chain's row lock.  Only an erasure removes anything, the
-- erased user's pieces (the words), never the entries: the chains still verify.  The
-- previous release's erase_user does not call ctxstore_erase_ledger_v1; it records no
-- contract either, and with encryption on the pieces die with the user's key anyway.
--
-- The ledger outlives the session (an incident review may come after the session has
-- expired), so no foreign key ties it to the session tables.

CREATE TABLE contract_chains (
    session_id text NOT NULL,
    user_id text,
    entries integer DEFAULT 0 NOT NULL,
    pieces integer DEFAULT 0 NOT NULL,
    last_digest bytea,
    erased_at timestamp with time zone,
    CONSTRAINT pk_contract_chains PRIMARY KEY (session_id)
);

ALTER TABLE contract_chains OWNER TO :"owner_role";

CREATE INDEX ix_contract_chains_user_id ON contract_chains USING btree (user_id);

CREATE TABLE contract_pieces (
    session_id text NOT NULL,
    piece_no integer NOT NULL,
    digest bytea NOT NULL,
    content text,
    key_id bigint,
    sealed bytea,
    CONSTRAINT pk_contract_pieces PRIMARY KEY (session_id, piece_no),
    CONSTRAINT ck_contract_pieces_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_contract_pieces_plain_or_sealed CHECK (((content IS NULL) OR (sealed IS NULL)))
);

ALTER TABLE contract_pieces OWNER TO :"owner_role";

CREATE UNIQUE INDEX ix_contract_pieces_session_id_digest ON contract_pieces USING btree (session_id, digest);

CREATE INDEX ix_contract_pieces_key_id ON contract_pieces USING btree (key_id) WHERE (key_id IS NOT NULL);

CREATE TABLE contract_entries (
    session_id text NOT NULL,
    entry_seq integer NOT NULL,
    turn_id text NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    model text,
    token_encoding text NOT NULL,
    token_count integer NOT NULL,
    session_version bigint NOT NULL,
    summary_version integer NOT NULL,
    state_version bigint NOT NULL,
    profile_version bigint,
    frame integer[] NOT NULL,
    body bytea NOT NULL,
    prev bytea NOT NULL,
    digest bytea NOT NULL,
    CONSTRAINT pk_contract_entries PRIMARY KEY (session_id, entry_seq)
);

ALTER TABLE contract_entries OWNER TO :"owner_role";

CREATE TABLE contract_responses (
    session_id text NOT NULL,
    entry_seq integer NOT NULL,
    response_id text NOT NULL,
    attached_at timestamp with time zone DEFAULT now() NOT NULL,
    digest bytea NOT NULL,
    CONSTRAINT pk_contract_responses PRIMARY KEY (session_id, entry_seq)
);

ALTER TABLE contract_responses OWNER TO :"owner_role";

GRANT SELECT ON TABLE contract_chains TO :"app_role";

GRANT SELECT ON TABLE contract_pieces TO :"app_role";

GRANT SELECT ON TABLE contract_entries TO :"app_role";

GRANT SELECT ON TABLE contract_responses TO :"app_role";

-- One entry: the pieces not stored yet added, the frame numbered, the entry linked to the
-- chain's last.  p_frame: each element's piece digest, in order; p_commas: whether the
-- element began with a comma its piece leaves out; p_digests..p_sealed: the pieces the
-- caller did not know stored (a piece named by the frame and neither stored nor given:
-- CX004, and the caller sends them all).
CREATE FUNCTION ctxstore_record_contract_v1(p_session_id text, p_user_id text, p_turn_id text, p_model text, p_token_encoding text, p_token_count integer, p_session_version bigint, p_summary_version integer, p_state_version bigint, p_profile_version bigint, p_frame bytea[], p_commas boolean[], p_digests bytea[], p_contents text[], p_key_ids bigint[], p_sealed bytea[], p_body bytea, OUT entry_seq integer, OUT recorded_at timestamp with time zone, OUT digest bytea, OUT new_pieces integer) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_variable
DECLARE
    v_chain record;
    v_frame integer[];
    v_prev bytea;
BEGIN
    -- As every write naming the user: an erasure runs wholly before or after this record.
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
    INSERT INTO contract_chains AS c (session_id, user_id) VALUES (p_session_id, p_user_id)
        ON CONFLICT (session_id) DO NOTHING;
    SELECT c.entries, c.pieces, c.last_digest, c.erased_at INTO v_chain
      FROM contract_chains AS c WHERE c.session_id = p_session_id FOR UPDATE;
    IF v_chain.erased_at IS NOT NULL THEN
        RAISE EXCEPTION 'the ledger of session % was erased', p_session_id
            USING ERRCODE = 'CX003';
    END IF;
    INSERT INTO contract_pieces AS p (session_id, piece_no, digest, content, key_id, sealed)
    SELECT p_session_id, v_chain.pieces + row_number() OVER (ORDER BY g.ord),
           g.digest, g.content, g.key_id, g.sealed
      FROM unnest(p_digests, p_contents, p_key_ids, p_sealed)
           WITH ORDINALITY AS g(digest, content, key_id, sealed, ord)
     WHERE NOT EXISTS (SELECT FROM contract_pieces AS s
                        WHERE s.session_id = p_session_id AND s.digest = g.digest);
    GET DIAGNOSTICS new_pieces = ROW_COUNT;
    v_frame := ARRAY(
        SELECT CASE WHEN f.comma THEN -p.piece_no ELSE p.piece_no END
          FROM unnest(p_frame, p_commas) WITH ORDINALITY AS f(digest, comma, ord)
          JOIN contract_pieces AS p ON p.session_id = p_session_id AND p.digest = f.digest
         ORDER BY f.ord);
    IF cardinality(v_frame) <> cardinality(p_frame) THEN
        RAISE EXCEPTION 'a contract frame names a piece not stored nor given' USING ERRCODE = 'CX004';
    END IF;
    entry_seq := v_chain.entries + 1;
    recorded_at := now();
    v_prev := coalesce(v_chain.last_digest, '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea);
    digest := sha256(v_prev || int8send(entry_seq) ||
                     int8send((extract(epoch FROM recorded_at) * 1000000)::bigint) || p_body);
    INSERT INTO contract_entries (session_id, entry_seq, turn_id, recorded_at, model,
                                  token_encoding, token_count, session_version,
                                  summary_version, state_version, profile_version, frame,
                                  body, prev, digest)
    VALUES (p_session_id, entry_seq, p_turn_id, recorded_at, p_model, p_token_encoding,
            p_token_count, p_session_version, p_summary_version, p_state_version,
            p_profile_version, v_frame, p_body, v_prev, digest);
    -- (a session given its user after its first record: its chain is the user's now too)
    UPDATE contract_chains AS c
       SET entries = entry_seq, pieces = v_chain.pieces + new_pieces, last_digest = digest,
           user_id = coalesce(c.user_id, p_user_id)
     WHERE c.session_id = p_session_id;
END
$$;

ALTER FUNCTION ctxstore_record_contract_v1(p_session_id text, p_user_id text, p_turn_id text, p_model text, p_token_encoding text, p_token_count integer, p_session_version bigint, p_summary_version integer, p_state_version bigint, p_profile_version bigint, p_frame bytea[], p_commas boolean[], p_digests bytea[], p_contents text[], p_key_ids bigint[], p_sealed bytea[], p_body bytea, OUT entry_seq integer, OUT recorded_at timestamp with time zone, OUT digest bytea, OUT new_pieces integer) OWNER TO :"owner_role";

REVOKE ALL ON FUNCTION ctxstore_record_contract_v1(p_session_id text, p_user_id text, p_turn_id text, p_model text, p_token_encoding text, p_token_count integer, p_session_version bigint, p_summary_version integer, p_state_version bigint, p_profile_version bigint, p_frame bytea[], p_commas boolean[], p_digests bytea[], p_contents text[], p_key_ids bigint[], p_sealed bytea[], p_body bytea, OUT entry_seq integer, OUT recorded_at timestamp with time zone, OUT digest bytea, OUT new_pieces integer) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_record_contract_v1(p_session_id text, p_user_id text, p_turn_id text, p_model text, p_token_encoding text, p_token_count integer, p_session_version bigint, p_summary_version integer, p_state_version bigint, p_profile_version bigint, p_frame bytea[], p_commas boolean[], p_digests bytea[], p_contents text[], p_key_ids bigint[], p_sealed bytea[], p_body bytea, OUT entry_seq integer, OUT recorded_at timestamp with time zone, OUT digest bytea, OUT new_pieces integer) TO :"app_role";

-- The caller's response id attached to the turn's last entry: once (the same id again is
-- no change), bound to the entry by sha256(entry digest || response id).
CREATE FUNCTION ctxstore_attach_response_v1(p_session_id text, p_turn_id text, p_response_id text, OUT entry_seq integer, OUT response_id text) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_variable
DECLARE
    v_entry record;
BEGIN
    SELECT e.entry_seq, e.digest INTO v_entry FROM contract_entries AS e
     WHERE e.session_id = p_session_id AND e.turn_id = p_turn_id
     ORDER BY e.entry_seq DESC LIMIT 1;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO contract_responses AS r (session_id, entry_seq, response_id, digest)
    VALUES (p_session_id, v_entry.entry_seq, p_response_id,
            sha256(v_entry.digest || convert_to(p_response_id, 'UTF8')))
        ON CONFLICT ON CONSTRAINT pk_contract_responses DO NOTHING;
    SELECT r.entry_seq, r.response_id INTO entry_seq, response_id FROM contract_responses AS r
     WHERE r.session_id = p_session_id AND r.entry_seq = v_entry.entry_seq;
END
$$;

ALTER FUNCTION ctxstore_attach_response_v1(p_session_id text, p_turn_id text, p_response_id text, OUT entry_seq integer, OUT response_id text) OWNER TO :"owner_role";

REVOKE ALL ON FUNCTION ctxstore_attach_response_v1(p_session_id text, p_turn_id text, p_response_id text, OUT entry_seq integer, OUT response_id text) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_attach_response_v1(p_session_id text, p_turn_id text, p_response_id text, OUT entry_seq integer, OUT response_id text) TO :"app_role";

-- An erasure's part in one chain, run by erase_user for each chain of the user (and of the
-- sessions erased with them) once their sessions are erased: the pieces deleted, the chain
-- marked; the entries stay, so they still verify.  A transaction of its own, a chain a
-- call: on Citus it runs on the chain's worker (its p_session_id), where the ledger's
-- owner writes its own shards; a function of another owner may not write the shards a
-- transaction already wrote as the app role, nor reach another node as a role that can't
-- log in.  Under the user's lock, as an erasure; a chain under a hold is kept (CX002).
CREATE FUNCTION ctxstore_erase_ledger_v1(p_session_id text, p_user_id text) RETURNS boolean
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
DECLARE
    v_held text;
    -- a variable: Citus takes no non-IMMUTABLE function in a COALESCE
    v_now timestamptz := now();
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore user ' || p_user_id, 0));
    PERFORM FROM contract_chains AS c WHERE c.session_id = p_session_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    v_held := ctxstore_holds_of_v1(p_user_id, ARRAY[p_session_id]);
    IF v_held IS NOT NULL THEN
        RAISE EXCEPTION 'the ledger of user % is under a legal hold: %', p_user_id, v_held
            USING ERRCODE = 'CX002';
    END IF;
    DELETE FROM contract_pieces AS p WHERE p.session_id = p_session_id;
    UPDATE contract_chains AS c SET erased_at = coalesce(c.erased_at, v_now)
     WHERE c.session_id = p_session_id;
    RETURN true;
END
$$;

ALTER FUNCTION ctxstore_erase_ledger_v1(p_session_id text, p_user_id text) OWNER TO :"owner_role";

REVOKE ALL ON FUNCTION ctxstore_erase_ledger_v1(p_session_id text, p_user_id text) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_erase_ledger_v1(p_session_id text, p_user_id text) TO :"app_role";

CREATE OR REPLACE FUNCTION ctxstore_delete_unused_retired_keys_v1() RETURNS SETOF bigint
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_retired bigint[];
    v_used bigint[];
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    v_retired := ARRAY(SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL
                        ORDER BY key_id FOR UPDATE);
    IF cardinality(v_retired) = 0 THEN
        RETURN;
    END IF;
    -- a new statement, a new snapshot: every row committed before the lock
    v_used := ARRAY(
        SELECT key_id FROM messages WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM summaries WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_states WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_state_history WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM user_profiles WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM graph_channel_values WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM graph_writes WHERE key_id = ANY(v_retired)
        -- ledger pieces keep the key they were sealed under: their digests are its MACs
        UNION SELECT key_id FROM contract_pieces WHERE key_id = ANY(v_retired));
    RETURN QUERY
        DELETE FROM data_keys
         WHERE key_id = ANY(v_retired) AND key_id <> ALL(v_used)
        RETURNING key_id;
END
$$;
