-- ctxstore's schema: every table, type, function, view and grant, as of the head revision.
--
-- This file is the schema a reviewer reads; the 1.0 baseline revision
-- (alembic/versions/1000_baseline.py) creates exactly it, and tests/migrations proves
-- that a database upgraded from the last pre-release (0.x, revision 0026) ends up the
-- same.  A later revision changes this file in the same commit (see "Changing the
-- schema" in docs/design.md); tests/migrations/test_schema_file.py fails when the two
-- disagree.
--
-- Roles and settings are psql variables, so `psql -v owner_role=... -f schema.sql`
-- applies it as it stands:
--   owner_role      owns every object; the migrations run as a member of it
--   app_role        the service: DML on the session tables, EXECUTE on the write functions
--   analytics_role  SELECT on the analytics views, EXECUTE on the report functions
--   min_group_size  the smallest group an analytics report shows (k-anonymity)
-- The roles exist before this runs (ctxstore db upgrade creates them NOLOGIN).
--
-- Function names end in _vN: a release that changes a function's signature or meaning
-- adds _vN+1 beside _vN, and the release after drops _vN (docs/design.md, "One live
-- version of each function").

-- The migrating role acts as the owner (ALTER ... OWNER TO needs the membership).
GRANT :"owner_role" TO CURRENT_USER;

-- SQL functions may name views defined further down (as pg_dump does).
SET check_function_bodies = false;
-- ======================================================================================
-- Types
-- ======================================================================================

CREATE TYPE ctxstore_message_row_v1 AS (
	seq integer,
	role text,
	content text,
	turn_id text,
	ts text,
	ts_offset integer,
	name text,
	metadata text,
	digest bytea,
	token_count integer,
	format_version smallint,
	token_encoding text,
	key_id bigint,
	sealed bytea,
	ts_nanos smallint
);

ALTER TYPE ctxstore_message_row_v1 OWNER TO :"owner_role";

-- ======================================================================================
-- Tables
-- Every table of a session is keyed by session_id first (Citus distributes them by it).
-- ======================================================================================

CREATE TABLE sessions (
    session_id text NOT NULL,
    user_id text,
    version bigint DEFAULT 0 NOT NULL,
    message_count integer DEFAULT 0 NOT NULL,
    content_hash bytea,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone,
    turn_count integer DEFAULT 0 NOT NULL,
    first_activity_at timestamp with time zone DEFAULT now() NOT NULL,
    last_activity_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_hour timestamp with time zone GENERATED ALWAYS AS (date_bin('01:00:00'::interval, expires_at, '2000-01-01 00:00:00+00'::timestamp with time zone)) STORED,
    CONSTRAINT ck_sessions_message_count_non_negative CHECK ((message_count >= 0)),
    CONSTRAINT ck_sessions_session_id_length CHECK (((char_length(session_id) >= 1) AND (char_length(session_id) <= 255)))
);

ALTER TABLE sessions OWNER TO :"owner_role";

ALTER TABLE ONLY sessions
    ADD CONSTRAINT pk_sessions PRIMARY KEY (session_id);

CREATE INDEX ix_sessions_expires_hour ON sessions USING btree (expires_hour) WHERE (expires_hour IS NOT NULL);

CREATE INDEX ix_sessions_first_activity_at ON sessions USING btree (first_activity_at);

CREATE INDEX ix_sessions_user_id_created_at ON sessions USING btree (user_id, created_at DESC, session_id DESC);

CREATE TABLE messages (
    session_id text NOT NULL,
    seq integer NOT NULL,
    role text NOT NULL,
    content text NOT NULL,
    turn_id text,
    ts timestamp with time zone,
    ts_offset integer,
    name text,
    metadata jsonb,
    digest bytea NOT NULL,
    token_count integer,
    format_version smallint NOT NULL,
    token_encoding text,
    key_id bigint,
    sealed bytea,
    ts_nanos smallint,
    CONSTRAINT ck_messages_metadata_object CHECK (((metadata IS NULL) OR (jsonb_typeof(metadata) = 'object'::text))),
    CONSTRAINT ck_messages_role_known CHECK (((format_version <> 2) OR (role = ANY (ARRAY['user'::text, 'assistant'::text, 'system'::text, 'tool'::text])))),
    CONSTRAINT ck_messages_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_messages_seq_non_negative CHECK ((seq >= 0)),
    CONSTRAINT ck_messages_ts_nanos_below_a_microsecond CHECK ((ts_nanos IS NULL) OR (ts_nanos BETWEEN 1 AND 999 AND ts IS NOT NULL))
);

ALTER TABLE messages OWNER TO :"owner_role";

ALTER TABLE ONLY messages
    ADD CONSTRAINT pk_messages PRIMARY KEY (session_id, seq);

CREATE INDEX ix_messages_key_id ON messages USING btree (key_id) WHERE (key_id IS NOT NULL);

CREATE TABLE summaries (
    session_id text NOT NULL,
    summary_version integer NOT NULL,
    text text NOT NULL,
    covers_until integer NOT NULL,
    token_count integer,
    format_version smallint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    CONSTRAINT ck_summaries_covers_until_valid CHECK ((covers_until >= '-1'::integer)),
    CONSTRAINT ck_summaries_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_summaries_summary_version_positive CHECK ((summary_version >= 1))
);

ALTER TABLE summaries OWNER TO :"owner_role";

ALTER TABLE ONLY summaries
    ADD CONSTRAINT pk_summaries PRIMARY KEY (session_id, summary_version);

CREATE INDEX ix_summaries_key_id ON summaries USING btree (key_id) WHERE (key_id IS NOT NULL);

CREATE TABLE consultation_states (
    session_id text NOT NULL,
    version bigint NOT NULL,
    stage text NOT NULL,
    chief_complaint text,
    body_parts text[] DEFAULT '{}'::text[] NOT NULL,
    symptoms text[] DEFAULT '{}'::text[] NOT NULL,
    red_flags text[] DEFAULT '{}'::text[] NOT NULL,
    pain_level smallint,
    duration text,
    document jsonb NOT NULL,
    format_version smallint NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    red_flag_count integer DEFAULT 0 NOT NULL,
    symptom_count integer DEFAULT 0 NOT NULL,
    body_part_count integer DEFAULT 0 NOT NULL,
    has_chief_complaint boolean DEFAULT false NOT NULL,
    has_symptom_duration boolean DEFAULT false NOT NULL,
    CONSTRAINT ck_consultation_states_sealed_state_has_no_free_text CHECK (((key_id IS NULL) OR ((chief_complaint IS NULL) AND (duration IS NULL) AND (body_parts = '{}'::text[]) AND (symptoms = '{}'::text[]) AND (red_flags = '{}'::text[])))),
    CONSTRAINT ck_consultation_states_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_consultation_states_version_positive CHECK ((version >= 1))
);

ALTER TABLE consultation_states OWNER TO :"owner_role";

ALTER TABLE ONLY consultation_states
    ADD CONSTRAINT pk_consultation_states PRIMARY KEY (session_id);

CREATE INDEX ix_consultation_states_key_id ON consultation_states USING btree (key_id) WHERE (key_id IS NOT NULL);

CREATE TABLE consultation_state_history (
    session_id text NOT NULL,
    version bigint NOT NULL,
    stage text NOT NULL,
    chief_complaint text,
    body_parts text[] DEFAULT '{}'::text[] NOT NULL,
    symptoms text[] DEFAULT '{}'::text[] NOT NULL,
    red_flags text[] DEFAULT '{}'::text[] NOT NULL,
    pain_level smallint,
    duration text,
    document jsonb NOT NULL,
    format_version smallint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    red_flag_count integer DEFAULT 0 NOT NULL,
    symptom_count integer DEFAULT 0 NOT NULL,
    body_part_count integer DEFAULT 0 NOT NULL,
    has_chief_complaint boolean DEFAULT false NOT NULL,
    has_symptom_duration boolean DEFAULT false NOT NULL,
    CONSTRAINT ck_consultation_state_history_sealed_state_has_no_free_text CHECK (((key_id IS NULL) OR ((chief_complaint IS NULL) AND (duration IS NULL) AND (body_parts = '{}'::text[]) AND (symptoms = '{}'::text[]) AND (red_flags = '{}'::text[])))),
    CONSTRAINT ck_consultation_state_history_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL)))
);

ALTER TABLE consultation_state_history OWNER TO :"owner_role";

ALTER TABLE ONLY consultation_state_history
    ADD CONSTRAINT pk_consultation_state_history PRIMARY KEY (session_id, version);

CREATE INDEX ix_consultation_state_history_key_id ON consultation_state_history USING btree (key_id) WHERE (key_id IS NOT NULL);

CREATE TABLE user_profiles (
    user_id text NOT NULL,
    version bigint NOT NULL,
    age smallint,
    gender text,
    exercise_habit text,
    known_limitations text[] DEFAULT '{}'::text[] NOT NULL,
    document jsonb NOT NULL,
    format_version smallint NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    key_id bigint,
    sealed bytea,
    CONSTRAINT ck_user_profiles_sealed_with_key CHECK (((key_id IS NULL) = (sealed IS NULL))),
    CONSTRAINT ck_user_profiles_user_id_length CHECK (((char_length(user_id) >= 1) AND (char_length(user_id) <= 255))),
    CONSTRAINT ck_user_profiles_version_positive CHECK ((version >= 1))
);

ALTER TABLE user_profiles OWNER TO :"owner_role";

ALTER TABLE ONLY user_profiles
    ADD CONSTRAINT pk_user_profiles PRIMARY KEY (user_id);

CREATE INDEX ix_user_profiles_key_id ON user_profiles USING btree (key_id) WHERE (key_id IS NOT NULL);

CREATE TABLE data_keys (
    key_id bigint NOT NULL,
    owner text NOT NULL,
    master_key_id text NOT NULL,
    wrapped bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    retired_at timestamp with time zone
);

ALTER TABLE data_keys OWNER TO :"owner_role";

ALTER TABLE data_keys ALTER COLUMN key_id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME data_keys_key_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

ALTER TABLE ONLY data_keys
    ADD CONSTRAINT pk_data_keys PRIMARY KEY (key_id);

CREATE UNIQUE INDEX ix_data_keys_current_owner ON data_keys USING btree (owner) WHERE (retired_at IS NULL);

CREATE INDEX ix_data_keys_owner ON data_keys USING btree (owner);

CREATE TABLE applied_session_writes (
    session_id text NOT NULL,
    write_id uuid NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE applied_session_writes OWNER TO :"owner_role";

ALTER TABLE ONLY applied_session_writes
    ADD CONSTRAINT pk_applied_session_writes PRIMARY KEY (session_id, write_id);

CREATE INDEX ix_applied_session_writes_applied_at ON applied_session_writes USING btree (applied_at);

CREATE TABLE applied_profile_writes (
    user_id text NOT NULL,
    write_id uuid NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE applied_profile_writes OWNER TO :"owner_role";

ALTER TABLE ONLY applied_profile_writes
    ADD CONSTRAINT pk_applied_profile_writes PRIMARY KEY (user_id, write_id);

CREATE INDEX ix_applied_profile_writes_applied_at ON applied_profile_writes USING btree (applied_at);

CREATE TABLE summary_jobs (
    session_id text NOT NULL,
    until_seq integer NOT NULL,
    state text DEFAULT 'queued'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    run_after timestamp with time zone DEFAULT now() NOT NULL,
    lease_token uuid,
    lease_until timestamp with time zone,
    enqueued_at timestamp with time zone DEFAULT now() NOT NULL,
    last_error text,
    CONSTRAINT ck_summary_jobs_lease CHECK (((state = 'running'::text) = (lease_token IS NOT NULL))),
    CONSTRAINT ck_summary_jobs_state CHECK ((state = ANY (ARRAY['queued'::text, 'running'::text, 'dead'::text])))
);

ALTER TABLE summary_jobs OWNER TO :"owner_role";

ALTER TABLE ONLY summary_jobs
    ADD CONSTRAINT pk_summary_jobs PRIMARY KEY (session_id);

CREATE INDEX ix_summary_jobs_due ON summary_jobs USING btree (run_after) WHERE (state <> 'dead'::text);

CREATE TABLE graph_checkpoints (
    session_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    parent_checkpoint_id text,
    checkpoint_type text NOT NULL,
    checkpoint bytea NOT NULL,
    metadata jsonb NOT NULL,
    messages_count integer,
    messages_archive text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_graph_checkpoints_messages CHECK (((messages_archive IS NULL) OR (messages_count IS NOT NULL)))
);

ALTER TABLE graph_checkpoints OWNER TO :"owner_role";

ALTER TABLE ONLY graph_checkpoints
    ADD CONSTRAINT pk_graph_checkpoints PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id);

CREATE INDEX ix_graph_checkpoints_run_id ON graph_checkpoints USING btree (((metadata ->> 'run_id'::text)));

CREATE TABLE graph_channel_values (
    session_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    channel text NOT NULL,
    version text NOT NULL,
    value_type text NOT NULL,
    value bytea,
    key_id bigint
);

ALTER TABLE graph_channel_values OWNER TO :"owner_role";

ALTER TABLE ONLY graph_channel_values
    ADD CONSTRAINT pk_graph_channel_values PRIMARY KEY (session_id, checkpoint_ns, channel, version);

CREATE TABLE graph_writes (
    session_id text NOT NULL,
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    task_id text NOT NULL,
    idx integer NOT NULL,
    channel text NOT NULL,
    value_type text NOT NULL,
    value bytea NOT NULL,
    task_path text NOT NULL,
    key_id bigint
);

ALTER TABLE graph_writes OWNER TO :"owner_role";

ALTER TABLE ONLY graph_writes
    ADD CONSTRAINT pk_graph_writes PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id, task_id, idx);

CREATE TABLE ctxstore_roles (
    kind text NOT NULL,
    role_name text NOT NULL,
    CONSTRAINT ck_ctxstore_roles_kind_known CHECK ((kind = ANY (ARRAY['owner'::text, 'app'::text, 'analytics'::text])))
);

ALTER TABLE ctxstore_roles OWNER TO :"owner_role";

ALTER TABLE ONLY ctxstore_roles
    ADD CONSTRAINT pk_ctxstore_roles PRIMARY KEY (kind);

CREATE TABLE ctxstore_analytics_settings (
    singleton boolean DEFAULT true NOT NULL,
    min_group_size integer NOT NULL,
    CONSTRAINT ck_ctxstore_analytics_settings_min_group_size_at_least_two CHECK ((min_group_size >= 2)),
    CONSTRAINT ck_ctxstore_analytics_settings_one_row CHECK (singleton)
);

ALTER TABLE ctxstore_analytics_settings OWNER TO :"owner_role";

ALTER TABLE ONLY ctxstore_analytics_settings
    ADD CONSTRAINT pk_ctxstore_analytics_settings PRIMARY KEY (singleton);

-- How long each kind of data is kept (revision 1007), set by the owner (`ctxstore
-- retention set`), applied by `ctxstore purge-expired`; no row: kept until the session
-- expires or the user is erased.
CREATE TABLE ctxstore_retention_periods (
    data_class text NOT NULL,
    keep_for interval NOT NULL,
    set_by text NOT NULL,
    set_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT pk_ctxstore_retention_periods PRIMARY KEY (data_class),
    CONSTRAINT ck_ctxstore_retention_periods_data_class_known CHECK ((data_class = ANY (ARRAY['messages'::text, 'summaries'::text, 'state_history'::text, 'profiles'::text, 'ledger'::text]))),
    CONSTRAINT ck_ctxstore_retention_periods_keep_for_a_day_or_more CHECK ((keep_for >= '1 day'::interval))
);

ALTER TABLE ctxstore_retention_periods OWNER TO :"owner_role";

CREATE TABLE ctxstore_pseudonym_key (
    singleton boolean DEFAULT true NOT NULL,
    inner_pad bytea NOT NULL,
    outer_pad bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT ck_ctxstore_pseudonym_key_one_row CHECK (singleton),
    CONSTRAINT ck_ctxstore_pseudonym_key_pads_64_bytes CHECK (((octet_length(inner_pad) = 64) AND (octet_length(outer_pad) = 64)))
);

ALTER TABLE ctxstore_pseudonym_key OWNER TO :"owner_role";

ALTER TABLE ONLY ctxstore_pseudonym_key
    ADD CONSTRAINT pk_ctxstore_pseudonym_key PRIMARY KEY (singleton);

CREATE TABLE analytics_value_cells (
    kind text NOT NULL,
    day date NOT NULL,
    value text NOT NULL,
    consultations integer NOT NULL,
    CONSTRAINT ck_analytics_value_cells_consultations_positive CHECK ((consultations > 0))
);

ALTER TABLE analytics_value_cells OWNER TO :"owner_role";

ALTER TABLE ONLY analytics_value_cells
    ADD CONSTRAINT pk_analytics_value_cells PRIMARY KEY (kind, day, value);

CREATE TABLE analytics_refreshed_days (
    day date NOT NULL,
    sessions integer NOT NULL,
    fingerprint numeric NOT NULL,
    min_group_size integer NOT NULL,
    refreshed_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE analytics_refreshed_days OWNER TO :"owner_role";

ALTER TABLE ONLY analytics_refreshed_days
    ADD CONSTRAINT pk_analytics_refreshed_days PRIMARY KEY (day);

CREATE TABLE analytics_months (
    month date NOT NULL,
    consultations integer NOT NULL,
    with_red_flags integer,
    min_group_size integer NOT NULL,
    fingerprint text NOT NULL,
    published_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT pk_analytics_months PRIMARY KEY (month),
    CONSTRAINT ck_analytics_months_first_of_month CHECK ((EXTRACT(day FROM month) = (1)::numeric)),
    CONSTRAINT ck_analytics_months_consultations_positive CHECK ((consultations > 0))
);

ALTER TABLE analytics_months OWNER TO :"owner_role";

CREATE TABLE analytics_month_kinds (
    month date NOT NULL,
    kind text NOT NULL,
    shown_values integer NOT NULL,
    withheld_values integer,
    withheld_consultations integer,
    CONSTRAINT pk_analytics_month_kinds PRIMARY KEY (month, kind),
    CONSTRAINT fk_analytics_month_kinds_month_analytics_months FOREIGN KEY (month) REFERENCES analytics_months(month) ON DELETE CASCADE
);

ALTER TABLE analytics_month_kinds OWNER TO :"owner_role";

CREATE TABLE analytics_month_cells (
    kind text NOT NULL,
    month date NOT NULL,
    value text NOT NULL,
    consultations integer NOT NULL,
    CONSTRAINT pk_analytics_month_cells PRIMARY KEY (kind, month, value),
    CONSTRAINT ck_analytics_month_cells_consultations_positive CHECK ((consultations > 0)),
    CONSTRAINT fk_analytics_month_cells_month_analytics_months FOREIGN KEY (month) REFERENCES analytics_months(month) ON DELETE CASCADE
);

ALTER TABLE analytics_month_cells OWNER TO :"owner_role";

-- Legal holds (revision 1006), placed and lifted by the owner (`ctxstore hold`): what a
-- hold covers, no purge, deletion or erasure removes.  The app role reads them.
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

-- The ledger of contracts (revision 1008): what each recorded call received, chained
-- per session (src/ctxstore/storage/ledger.py).  The app role reads; it adds entries
-- through ctxstore_record_contract_v1 only.
CREATE TABLE contract_chains (
    session_id text NOT NULL,
    user_id text,
    entries integer DEFAULT 0 NOT NULL,
    pieces integer DEFAULT 0 NOT NULL,
    last_digest bytea,
    erased_at timestamp with time zone,
    first_entry integer DEFAULT 1 NOT NULL,
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

-- Alembic's own (it creates the table before the first revision runs).
CREATE TABLE IF NOT EXISTS alembic_version (
    version_num character varying(32) NOT NULL,
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

ALTER TABLE alembic_version OWNER TO :"owner_role";

-- ======================================================================================
-- References between tables
-- ======================================================================================

ALTER TABLE ONLY consultation_state_history
    ADD CONSTRAINT fk_consultation_state_history_key_id_data_keys FOREIGN KEY (key_id) REFERENCES data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY consultation_state_history
    ADD CONSTRAINT fk_consultation_state_history_session_id_sessions FOREIGN KEY (session_id) REFERENCES sessions(session_id) ON DELETE CASCADE;

ALTER TABLE ONLY consultation_states
    ADD CONSTRAINT fk_consultation_states_key_id_data_keys FOREIGN KEY (key_id) REFERENCES data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY consultation_states
    ADD CONSTRAINT fk_consultation_states_session_id_sessions FOREIGN KEY (session_id) REFERENCES sessions(session_id) ON DELETE CASCADE;

ALTER TABLE ONLY graph_channel_values
    ADD CONSTRAINT fk_graph_channel_values_key_id_data_keys FOREIGN KEY (key_id) REFERENCES data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY graph_channel_values
    ADD CONSTRAINT fk_graph_channel_values_session_id_sessions FOREIGN KEY (session_id) REFERENCES sessions(session_id) ON DELETE CASCADE;

ALTER TABLE ONLY graph_checkpoints
    ADD CONSTRAINT fk_graph_checkpoints_session_id_sessions FOREIGN KEY (session_id) REFERENCES sessions(session_id) ON DELETE CASCADE;

ALTER TABLE ONLY graph_writes
    ADD CONSTRAINT fk_graph_writes_key_id_data_keys FOREIGN KEY (key_id) REFERENCES data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY graph_writes
    ADD CONSTRAINT fk_graph_writes_session_id_sessions FOREIGN KEY (session_id) REFERENCES sessions(session_id) ON DELETE CASCADE;

ALTER TABLE ONLY messages
    ADD CONSTRAINT fk_messages_key_id_data_keys FOREIGN KEY (key_id) REFERENCES data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY summaries
    ADD CONSTRAINT fk_summaries_key_id_data_keys FOREIGN KEY (key_id) REFERENCES data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;

ALTER TABLE ONLY summaries
    ADD CONSTRAINT fk_summaries_session_id_sessions FOREIGN KEY (session_id) REFERENCES sessions(session_id) ON DELETE CASCADE;

ALTER TABLE ONLY user_profiles
    ADD CONSTRAINT fk_user_profiles_key_id_data_keys FOREIGN KEY (key_id) REFERENCES data_keys(key_id) DEFERRABLE INITIALLY DEFERRED;

-- ======================================================================================
-- Functions: the writes (each takes the session row lock first; see docs/design.md)
-- ======================================================================================

CREATE FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) RETURNS record
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

ALTER FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) OWNER TO :"owner_role";

-- Kept until release 1.1 (docs/design.md, "One live version of each function"):
-- ctxstore_append_v7 called it until revision 1002.
CREATE FUNCTION ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) RETURNS record
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_seq);
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
           m.ts::timestamptz, m.ts_offset, m.name, m.metadata, m.digest,
           m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed,
           m.ts_nanos
      FROM unnest(
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed, p_ts_nanos) AS m(seq, role, content, turn_id, ts,
               ts_offset, name, metadata, digest, token_count, format_version,
               token_encoding, key_id, sealed, ts_nanos);
            IF p_key_id[1] IS NOT NULL THEN
                PERFORM ctxstore_require_keys_v1(p_key_id, 'messages');
            END IF;
            IF cardinality(p_write_ids) > 0 THEN
            INSERT INTO applied_session_writes (session_id, write_id)
            SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
            ON CONFLICT DO NOTHING;
        END IF;
            RETURN;
        END IF;
    END IF;
    -- A new session, one that can't take the messages, another user's, or a race.
    IF p_user_id IS NOT NULL THEN
        -- creators of one session id take turns, so only the first claims it
        PERFORM pg_advisory_xact_lock(hashtextextended('ctxstore session ' || p_session_id, 0));
    END IF;
    
    IF p_user_id IS NOT NULL AND EXISTS (
        SELECT FROM sessions AS s
         WHERE s.session_id = p_session_id AND s.user_id <> p_user_id
           AND (s.expires_at IS NULL OR s.expires_at > now())
           FOR UPDATE) THEN
        RAISE EXCEPTION 'session % belongs to another user', quote_literal(p_session_id)
            USING ERRCODE = 'CX001';
    END IF;
    SELECT a.start, a.version INTO start, version
      FROM ctxstore_append_v2(p_session_id, p_expected, p_user_id, p_ttl, p_max_messages,
               p_known_count, p_known_hash, p_added_hash, p_extended_hash, p_turns,
               p_first_ts, p_last_ts, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed) AS a;
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
        IF cardinality(p_write_ids) > 0 THEN
            INSERT INTO applied_session_writes (session_id, write_id)
            SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
END
$$;

ALTER FUNCTION ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) OWNER TO :"owner_role";

-- Kept until release 1.1 (docs/design.md, "One live version of each function"):
-- ctxstore_append_v6 calls it.
CREATE FUNCTION ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
            -- A row this UPDATE didn't see may have committed since: only a row that is
            -- there and can't take the messages ends the call (the caller reads why); one
            -- that can is extended on the next turn of the loop.
            IF p_expected IS NOT NULL
               OR EXISTS (SELECT FROM sessions AS s
                           WHERE s.session_id = p_session_id
                             AND (s.message_count + v_added > p_max_messages
                                  OR s.expires_at <= now())) THEN
                RETURN;
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
        PERFORM ctxstore_insert_messages_v1(p_session_id, start, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed);
    END IF;
END
$$;

ALTER FUNCTION ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) OWNER TO :"owner_role";

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

-- Kept until release 1.1 (docs/design.md, "One live version of each function"):
-- the previous release's save calls it.
CREATE FUNCTION ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) RETURNS bigint
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
        PERFORM ctxstore_insert_messages_v2(p_session_id, p_known_count, 
        p_seq, p_role, p_content, p_turn_id, p_ts, p_ts_offset, p_name, p_metadata,
        p_digest, p_token_count, p_format_version, p_token_encoding, p_key_id, p_sealed, p_ts_nanos);
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

ALTER FUNCTION ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) OWNER TO :"owner_role";

-- Kept until release 1.1 (docs/design.md, "One live version of each function"):
-- the previous release's save calls it.
CREATE FUNCTION ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) RETURNS void
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

ALTER FUNCTION ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) OWNER TO :"owner_role";

-- Kept until release 1.1 (docs/design.md, "One live version of each function"):
-- ctxstore_append_v2 calls it.
CREATE FUNCTION ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) RETURNS void
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

ALTER FUNCTION ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) RETURNS void
    LANGUAGE plpgsql
    AS $$
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
$$;

ALTER FUNCTION ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
$$;

ALTER FUNCTION ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) RETURNS record
    LANGUAGE plpgsql
    AS $$
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
           SET version = c.version + 1, (stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed) = (p_stage, p_chief_complaint, p_body_parts, p_symptoms, p_red_flags, p_pain_level, p_duration, p_red_flag_count, p_symptom_count, p_body_part_count, p_has_chief_complaint, p_has_symptom_duration, p_document, p_format_version, p_key_id, p_sealed), updated_at = now()
         WHERE c.session_id = p_session_id AND (p_expected IS NULL OR c.version = p_expected)
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL AND (p_expected IS NULL OR p_expected = 0) THEN
        INSERT INTO consultation_states AS c (session_id, version, stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed)
        VALUES (p_session_id, 1, p_stage, p_chief_complaint, p_body_parts, p_symptoms, p_red_flags, p_pain_level, p_duration, p_red_flag_count, p_symptom_count, p_body_part_count, p_has_chief_complaint, p_has_symptom_duration, p_document, p_format_version, p_key_id, p_sealed)
        ON CONFLICT (session_id) DO NOTHING
        RETURNING c.version, c.updated_at INTO version, updated_at;
    END IF;
    IF version IS NULL THEN
        RETURN;
    END IF;
    INSERT INTO consultation_state_history (session_id, version, stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count, has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed, created_at)
    VALUES (p_session_id, version, p_stage, p_chief_complaint, p_body_parts, p_symptoms, p_red_flags, p_pain_level, p_duration, p_red_flag_count, p_symptom_count, p_body_part_count, p_has_chief_complaint, p_has_symptom_duration, p_document, p_format_version, p_key_id, p_sealed, updated_at);
    PERFORM ctxstore_require_keys_v1(ARRAY[p_key_id], 'consultation_states');
END
$$;

ALTER FUNCTION ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) RETURNS bigint
    LANGUAGE plpgsql
    AS $$
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
$$;

ALTER FUNCTION ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) OWNER TO :"owner_role";

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

CREATE FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) RETURNS boolean
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

ALTER FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) RETURNS SETOF integer
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

ALTER FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) RETURNS record
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

ALTER FUNCTION ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) RETURNS TABLE(session_id text, user_id text)
    LANGUAGE plpgsql
    AS $$
#variable_conflict use_column
DECLARE
    v_ids text[];
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
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
$$;

ALTER FUNCTION ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) OWNER TO :"owner_role";

CREATE FUNCTION ctxstore_delete_unused_retired_keys_v1() RETURNS SETOF bigint
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

ALTER FUNCTION ctxstore_delete_unused_retired_keys_v1() OWNER TO :"owner_role";

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

-- One chain's entries recorded over p_keep_for ago purged (or, p_dry_run, only counted),
-- or the chain kept under a hold: (entries, held).  `purge-expired` finds the chains and
-- calls this for each: on Citus it runs on the chain's worker (its p_session_id), where
-- the ledger's owner writes its own shards.
CREATE FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) RETURNS record
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
#variable_conflict use_column
DECLARE
    v_cutoff timestamptz := now() - p_keep_for;
    v_chain record;
    v_last integer;
BEGIN
    -- the row locked first; the holds read by the next statement, on a new snapshot
    UPDATE contract_chains AS c SET first_entry = c.first_entry WHERE c.session_id = p_session_id
    RETURNING c.user_id, c.first_entry INTO v_chain;
    entries := 0;
    held := false;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    held := ctxstore_holds_of_v1(v_chain.user_id, ARRAY[p_session_id]) IS NOT NULL;
    v_last := (SELECT max(e.entry_seq) FROM contract_entries AS e
                WHERE e.session_id = p_session_id AND e.recorded_at < v_cutoff);
    entries := coalesce(v_last - v_chain.first_entry + 1, 0);
    IF held OR p_dry_run OR entries = 0 THEN
        RETURN;
    END IF;
    DELETE FROM contract_responses AS r
     WHERE r.session_id = p_session_id AND r.entry_seq <= v_last;
    DELETE FROM contract_entries AS e WHERE e.session_id = p_session_id AND e.entry_seq <= v_last;
    DELETE FROM contract_pieces AS p
     WHERE p.session_id = p_session_id
       AND p.piece_no <> ALL (ARRAY(
           SELECT DISTINCT abs(f.n) FROM contract_entries AS e, unnest(e.frame) AS f(n)
            WHERE e.session_id = p_session_id));
    UPDATE contract_chains AS c SET first_entry = v_last + 1 WHERE c.session_id = p_session_id;
END
$$;

ALTER FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) OWNER TO :"owner_role";

-- ======================================================================================
-- Functions: the analytics reports (SECURITY DEFINER, for the analytics role)
-- ======================================================================================

CREATE FUNCTION analytics_min_group_size_v1() RETURNS TABLE(min_group_size integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    RETURN QUERY SELECT st.min_group_size FROM ctxstore_analytics_settings AS st;
END
$$;

ALTER FUNCTION analytics_min_group_size_v1() OWNER TO :"owner_role";

CREATE FUNCTION analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(consultations bigint, messages bigint, avg_turns numeric, red_flag_rate numeric, summarized_share numeric, median_minutes numeric, p90_minutes numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               CASE WHEN count(*) >= $3 THEN round(avg(c.turn_count), 2) END,
               CASE WHEN count(*) FILTER (WHERE c.has_red_flags) >= $3 AND count(*) - count(*) FILTER (WHERE c.has_red_flags) >= $3 THEN round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4) END,
               CASE WHEN count(*) >= $3 THEN round(avg((c.summary_version > 0)::int), 4) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.5) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.9) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
    $q$ USING since, until, v_k;
END
$_$;

ALTER FUNCTION analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

CREATE FUNCTION analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(stage text, reached bigint, ended_here bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_funnel_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_funnel_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT f.stage, f.reached, f.ended_here FROM analytics_stage_funnel AS f;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT h.stage,
               count(DISTINCT h.consultation),
               count(DISTINCT h.consultation) FILTER (WHERE h.is_current)
          FROM analytics_stage_history AS h
         WHERE ($1 IS NULL OR h.first_activity >= $1)
                 AND ($2 IS NULL OR h.first_activity < $2)
         GROUP BY h.stage
    $q$ USING since, until;
END
$_$;

ALTER FUNCTION analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

CREATE FUNCTION analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(from_stage text, to_stage text, transitions bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_transitions_v2: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_transitions_v2: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT t.from_stage, t.to_stage, t.transitions
                       FROM analytics_stage_transitions AS t
                      ORDER BY t.transitions DESC, t.from_stage NULLS FIRST, t.to_stage;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT steps.from_stage, steps.to_stage, count(*)
          FROM (SELECT lag(h.stage) OVER (PARTITION BY h.consultation ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM analytics_stage_history AS h
                 WHERE ($1 IS NULL OR h.first_activity >= $1)
                 AND ($2 IS NULL OR h.first_activity < $2)) AS steps
         WHERE steps.from_stage IS DISTINCT FROM steps.to_stage
         GROUP BY steps.from_stage, steps.to_stage
         ORDER BY count(*) DESC, steps.from_stage NULLS FIRST, steps.to_stage
    $q$ USING since, until;
END
$_$;

ALTER FUNCTION analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

CREATE FUNCTION analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(final_stage text, consultations bigint, median_minutes numeric, p90_minutes numeric, avg_turns numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_durations_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_durations_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT c.stage,
               count(*),
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.5) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.9) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round(avg(c.turn_count), 2) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY c.stage
         ORDER BY count(*) DESC, c.stage NULLS LAST
    $q$ USING since, until, v_k;
END
$_$;

ALTER FUNCTION analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

CREATE FUNCTION analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(period timestamp with time zone, consultations bigint, with_red_flags bigint, rate numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_red_flags_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_red_flags_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF bucket IS NULL OR bucket NOT IN ('day', 'week') THEN
        RAISE EXCEPTION 'analytics_red_flags_v3: bucket must be day or week, not %', bucket
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT date_trunc($3, c.first_activity, 'UTC'),
               count(*),
               CASE WHEN count(*) FILTER (WHERE c.has_red_flags) >= $4 AND count(*) - count(*) FILTER (WHERE c.has_red_flags) >= $4 THEN count(*) FILTER (WHERE c.has_red_flags) END,
               CASE WHEN count(*) FILTER (WHERE c.has_red_flags) >= $4 AND count(*) - count(*) FILTER (WHERE c.has_red_flags) >= $4 THEN round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
         GROUP BY 1 ORDER BY 1
    $q$ USING since, until, bucket, v_k;
END
$_$;

ALTER FUNCTION analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

CREATE FUNCTION analytics_frequencies_v3(kind text, since timestamp with time zone DEFAULT NULL::timestamp with time zone, until timestamp with time zone DEFAULT NULL::timestamp with time zone) RETURNS TABLE(value text, consultations bigint)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF kind IS NULL OR kind NOT IN ('chief_complaint', 'body_part', 'symptom', 'red_flag', 'symptom_duration') THEN
        RAISE EXCEPTION 'analytics_frequencies_v3: unknown kind %', kind
            USING ERRCODE = '22023', HINT = 'use one of chief_complaint, body_part, symptom, red_flag, symptom_duration';
    END IF;
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_frequencies_v3: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_frequencies_v3: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    -- The cells the last refresh stored, each shown again only if it passes today's k.
    RETURN QUERY
    SELECT c.value, sum(c.consultations)::bigint
      FROM public.analytics_value_cells AS c
      JOIN public.analytics_refreshed_days AS d ON d.day = c.day
     WHERE c.kind = analytics_frequencies_v3.kind
       AND (analytics_frequencies_v3.since IS NULL OR c.day >= (analytics_frequencies_v3.since AT TIME ZONE 'UTC')::date)
       AND (analytics_frequencies_v3.until IS NULL OR c.day < (analytics_frequencies_v3.until AT TIME ZONE 'UTC')::date)
       AND c.consultations >= (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st) AND d.sessions - c.consultations >= (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
     GROUP BY c.value;
END
$$;

ALTER FUNCTION analytics_frequencies_v3(kind text, since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

CREATE FUNCTION analytics_check_months_v1(caller text, since date, until date) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    IF since <> date_trunc('month', since::timestamp)::date THEN
        RAISE EXCEPTION '%: since must be the first day of a month, not %', caller, since
            USING ERRCODE = '22023',
                  HINT = 'these figures are published per calendar month, the only period they have';
    END IF;
    IF until <> date_trunc('month', until::timestamp)::date THEN
        RAISE EXCEPTION '%: until must be the first day of a month, not %', caller, until
            USING ERRCODE = '22023',
                  HINT = 'these figures are published per calendar month, the only period they have';
    END IF;
END
$$;

ALTER FUNCTION analytics_check_months_v1(caller text, since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_month_values_v1(since date DEFAULT NULL::date, until date DEFAULT NULL::date) RETURNS TABLE(kind text, month date, value text, consultations integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM public.analytics_check_months_v1('analytics_month_values_v1', since, until);
    -- Only months published with today's k: a month awaiting its refresh after k changed
    -- shows nothing until then.
    RETURN QUERY
    SELECT c.kind, c.month, c.value, c.consultations
      FROM public.analytics_month_cells AS c
      JOIN public.analytics_months AS m ON m.month = c.month
     WHERE m.min_group_size = (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
       AND (analytics_month_values_v1.since IS NULL OR c.month >= analytics_month_values_v1.since)
       AND (analytics_month_values_v1.until IS NULL OR c.month < analytics_month_values_v1.until);
END
$$;

ALTER FUNCTION analytics_month_values_v1(since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_month_withheld_v1(since date DEFAULT NULL::date, until date DEFAULT NULL::date) RETURNS TABLE(kind text, month date, consultations integer, shown_values integer, withheld_values integer, withheld_consultations integer)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM public.analytics_check_months_v1('analytics_month_withheld_v1', since, until);
    RETURN QUERY
    SELECT w.kind, w.month, m.consultations, w.shown_values, w.withheld_values,
           w.withheld_consultations
      FROM public.analytics_month_kinds AS w
      JOIN public.analytics_months AS m ON m.month = w.month
     WHERE m.min_group_size = (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
       AND (analytics_month_withheld_v1.since IS NULL OR w.month >= analytics_month_withheld_v1.since)
       AND (analytics_month_withheld_v1.until IS NULL OR w.month < analytics_month_withheld_v1.until);
END
$$;

ALTER FUNCTION analytics_month_withheld_v1(since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_red_flag_months_v1(since date DEFAULT NULL::date, until date DEFAULT NULL::date) RETURNS TABLE(month date, consultations integer, with_red_flags integer, share numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $$
BEGIN
    PERFORM public.analytics_check_months_v1('analytics_red_flag_months_v1', since, until);
    RETURN QUERY
    SELECT m.month, m.consultations, m.with_red_flags,
           round(m.with_red_flags::numeric / m.consultations, 4)
      FROM public.analytics_months AS m
     WHERE m.min_group_size = (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)
       AND (analytics_red_flag_months_v1.since IS NULL OR m.month >= analytics_red_flag_months_v1.since)
       AND (analytics_red_flag_months_v1.until IS NULL OR m.month < analytics_red_flag_months_v1.until);
END
$$;

ALTER FUNCTION analytics_red_flag_months_v1(since date, until date) OWNER TO :"owner_role";

CREATE FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) RETURNS TABLE(consultations bigint, messages bigint, avg_turns numeric, summarized_share numeric, median_minutes numeric, p90_minutes numeric)
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'public', 'pg_temp'
    AS $_$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN
    IF since <> date_trunc('day', since, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v4: since must be a whole day (UTC midnight), not %', since
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    IF until <> date_trunc('day', until, 'UTC') THEN
        RAISE EXCEPTION 'analytics_overview_v4: until must be a whole day (UTC midnight), not %', until
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;
    -- No red-flag rate: two windows a day apart would difference to the day's red flags.
    -- The red-flag share is per published month (analytics_red_flag_months_v1).
    RETURN QUERY EXECUTE $q$
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               CASE WHEN count(*) >= $3 THEN round(avg(c.turn_count), 2) END,
               CASE WHEN count(*) >= $3 THEN round(avg((c.summary_version > 0)::int), 4) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.5) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END,
               CASE WHEN count(*) >= $3 THEN round((percentile_cont(0.9) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric, 1) END
          FROM analytics_consultation_details AS c
         WHERE ($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)
    $q$ USING since, until, v_k;
END
$_$;

ALTER FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) OWNER TO :"owner_role";

-- ======================================================================================
-- Views: what the analytics role reads (no clinical free text)
-- ======================================================================================

CREATE VIEW analytics_body_part_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS body_part, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'body_part'::text
  GROUP BY v.value;

ALTER TABLE analytics_body_part_frequencies OWNER TO :"owner_role";

CREATE VIEW analytics_complaint_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS chief_complaint, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'chief_complaint'::text
  GROUP BY v.value;

ALTER TABLE analytics_complaint_frequencies OWNER TO :"owner_role";

CREATE VIEW analytics_consultation_details WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(s.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    c.stage,
    (COALESCE(c.red_flag_count, 0) > 0) AS has_red_flags,
    COALESCE(c.red_flag_count, 0) AS red_flag_count,
    COALESCE(c.symptom_count, 0) AS symptom_count,
    COALESCE(c.body_part_count, 0) AS body_part_count,
    COALESCE(c.has_chief_complaint, false) AS has_chief_complaint,
    COALESCE(c.has_symptom_duration, false) AS has_symptom_duration,
    c.pain_level,
    s.message_count,
    s.turn_count,
    s.first_activity_at AS first_activity,
    EXTRACT(epoch FROM (s.last_activity_at - s.first_activity_at)) AS duration_seconds,
    COALESCE(( SELECT max(su.summary_version) AS max
           FROM summaries su
          WHERE (su.session_id = s.session_id)), 0) AS summary_version,
    COALESCE(c.version, (0)::bigint) AS state_version
   FROM ((sessions s
     CROSS JOIN ctxstore_pseudonym_key k)
     LEFT JOIN consultation_states c ON ((c.session_id = s.session_id)));

ALTER TABLE analytics_consultation_details OWNER TO :"owner_role";

CREATE VIEW analytics_consultations WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(s.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    c.stage,
    COALESCE(c.symptom_count, 0) AS symptom_count,
    COALESCE(c.body_part_count, 0) AS body_part_count,
    COALESCE(c.has_chief_complaint, false) AS has_chief_complaint,
    COALESCE(c.has_symptom_duration, false) AS has_symptom_duration,
    c.pain_level,
    s.message_count,
    s.turn_count,
    ((s.first_activity_at AT TIME ZONE 'UTC'::text))::date AS first_day,
        CASE
            WHEN ((s.last_activity_at - s.first_activity_at) < '00:05:00'::interval) THEN 'under 5 min'::text
            WHEN ((s.last_activity_at - s.first_activity_at) < '00:15:00'::interval) THEN '5-15 min'::text
            WHEN ((s.last_activity_at - s.first_activity_at) < '01:00:00'::interval) THEN '15-60 min'::text
            WHEN ((s.last_activity_at - s.first_activity_at) < '1 day'::interval) THEN '1-24 h'::text
            WHEN ((s.last_activity_at - s.first_activity_at) >= '1 day'::interval) THEN 'over 1 day'::text
            ELSE NULL::text
        END AS duration_bucket,
    COALESCE(( SELECT max(su.summary_version) AS max
           FROM summaries su
          WHERE (su.session_id = s.session_id)), 0) AS summary_version,
    COALESCE(c.version, (0)::bigint) AS state_version
   FROM ((sessions s
     CROSS JOIN ctxstore_pseudonym_key k)
     LEFT JOIN consultation_states c ON ((c.session_id = s.session_id)));

ALTER TABLE analytics_consultations OWNER TO :"owner_role";

CREATE VIEW analytics_monthly_values WITH (security_barrier='true') AS
 SELECT v.kind, v.month, v.value, v.consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations);

ALTER TABLE analytics_monthly_values OWNER TO :"owner_role";

CREATE VIEW analytics_monthly_withheld WITH (security_barrier='true') AS
 SELECT w.kind, w.month, w.consultations, w.shown_values, w.withheld_values,
    w.withheld_consultations
   FROM analytics_month_withheld_v1() w(kind, month, consultations, shown_values, withheld_values, withheld_consultations);

ALTER TABLE analytics_monthly_withheld OWNER TO :"owner_role";

CREATE VIEW analytics_monthly_red_flags WITH (security_barrier='true') AS
 SELECT r.month, r.consultations, r.with_red_flags, r.share
   FROM analytics_red_flag_months_v1() r(month, consultations, with_red_flags, share);

ALTER TABLE analytics_monthly_red_flags OWNER TO :"owner_role";

CREATE VIEW analytics_red_flag_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS red_flag, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'red_flag'::text
  GROUP BY v.value;

ALTER TABLE analytics_red_flag_frequencies OWNER TO :"owner_role";

CREATE VIEW analytics_red_flags_daily WITH (security_barrier='true') AS
 SELECT date_trunc('day'::text, s.first_activity_at, 'UTC'::text) AS day,
    count(*) AS consultations,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN count(*) FILTER (WHERE (c.red_flag_count > 0))
            ELSE NULL::bigint
        END AS with_red_flags,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN round(((count(*) FILTER (WHERE (c.red_flag_count > 0)))::numeric / (count(*))::numeric), 4)
            ELSE NULL::numeric
        END AS rate
   FROM ((sessions s
     LEFT JOIN consultation_states c ON ((c.session_id = s.session_id)))
     CROSS JOIN ctxstore_analytics_settings st)
  GROUP BY (date_trunc('day'::text, s.first_activity_at, 'UTC'::text)), st.min_group_size;

ALTER TABLE analytics_red_flags_daily OWNER TO :"owner_role";

CREATE VIEW analytics_red_flags_weekly WITH (security_barrier='true') AS
 SELECT date_trunc('week'::text, s.first_activity_at, 'UTC'::text) AS week,
    count(*) AS consultations,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN count(*) FILTER (WHERE (c.red_flag_count > 0))
            ELSE NULL::bigint
        END AS with_red_flags,
        CASE
            WHEN ((count(*) FILTER (WHERE (c.red_flag_count > 0)) >= st.min_group_size) AND ((count(*) - count(*) FILTER (WHERE (c.red_flag_count > 0))) >= st.min_group_size)) THEN round(((count(*) FILTER (WHERE (c.red_flag_count > 0)))::numeric / (count(*))::numeric), 4)
            ELSE NULL::numeric
        END AS rate
   FROM ((sessions s
     LEFT JOIN consultation_states c ON ((c.session_id = s.session_id)))
     CROSS JOIN ctxstore_analytics_settings st)
  GROUP BY (date_trunc('week'::text, s.first_activity_at, 'UTC'::text)), st.min_group_size;

ALTER TABLE analytics_red_flags_weekly OWNER TO :"owner_role";

CREATE VIEW analytics_stage_changes WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(steps.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    steps.version,
    steps.from_stage,
    steps.to_stage
   FROM (( SELECT h.session_id,
            h.version,
            lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version) AS from_stage,
            h.stage AS to_stage
           FROM consultation_state_history h) steps
     CROSS JOIN ctxstore_pseudonym_key k)
  WHERE (steps.from_stage IS DISTINCT FROM steps.to_stage);

ALTER TABLE analytics_stage_changes OWNER TO :"owner_role";

CREATE VIEW analytics_stage_funnel WITH (security_barrier='true') AS
 SELECT r.stage,
    count(*) AS reached,
    count(*) FILTER (WHERE (c.stage = r.stage)) AS ended_here
   FROM (( SELECT DISTINCT consultation_state_history.session_id,
            consultation_state_history.stage
           FROM consultation_state_history) r
     JOIN consultation_states c ON ((c.session_id = r.session_id)))
  GROUP BY r.stage;

ALTER TABLE analytics_stage_funnel OWNER TO :"owner_role";

CREATE VIEW analytics_stage_history WITH (security_barrier='true') AS
 SELECT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(h.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    h.version,
    h.stage,
    (h.version = c.version) AS is_current,
    date_trunc('day'::text, s.first_activity_at, 'UTC'::text) AS first_activity
   FROM (((consultation_state_history h
     JOIN sessions s ON ((s.session_id = h.session_id)))
     LEFT JOIN consultation_states c ON ((c.session_id = h.session_id)))
     CROSS JOIN ctxstore_pseudonym_key k);

ALTER TABLE analytics_stage_history OWNER TO :"owner_role";

CREATE VIEW analytics_stage_reached WITH (security_barrier='true') AS
 SELECT DISTINCT encode(sha256((k.outer_pad || sha256((k.inner_pad || convert_to(h.session_id, 'UTF8'::name))))), 'hex'::text) AS consultation,
    h.stage
   FROM (consultation_state_history h
     CROSS JOIN ctxstore_pseudonym_key k);

ALTER TABLE analytics_stage_reached OWNER TO :"owner_role";

CREATE VIEW analytics_stage_transitions WITH (security_barrier='true') AS
 SELECT steps.from_stage,
    steps.to_stage,
    count(*) AS transitions
   FROM ( SELECT lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version) AS from_stage,
            h.stage AS to_stage
           FROM consultation_state_history h) steps
  WHERE (steps.from_stage IS DISTINCT FROM steps.to_stage)
  GROUP BY steps.from_stage, steps.to_stage;

ALTER TABLE analytics_stage_transitions OWNER TO :"owner_role";

CREATE VIEW analytics_suppression WITH (security_barrier='true') AS
 SELECT ctxstore_analytics_settings.min_group_size
   FROM ctxstore_analytics_settings;

ALTER TABLE analytics_suppression OWNER TO :"owner_role";

CREATE VIEW analytics_symptom_duration_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS symptom_duration, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'symptom_duration'::text
  GROUP BY v.value;

ALTER TABLE analytics_symptom_duration_frequencies OWNER TO :"owner_role";

CREATE VIEW analytics_symptom_frequencies WITH (security_barrier='true') AS
 SELECT v.value AS symptom, sum(v.consultations) AS consultations
   FROM analytics_month_values_v1() v(kind, month, value, consultations)
  WHERE v.kind = 'symptom'::text
  GROUP BY v.value;

ALTER TABLE analytics_symptom_frequencies OWNER TO :"owner_role";

-- ======================================================================================
-- Who may do what
-- ======================================================================================

GRANT ALL ON SCHEMA public TO :"owner_role";
GRANT USAGE ON SCHEMA public TO :"app_role";
GRANT USAGE ON SCHEMA public TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_durations_v3(since timestamp with time zone, until timestamp with time zone) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_frequencies_v3(kind text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_funnel_v2(since timestamp with time zone, until timestamp with time zone) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_min_group_size_v1() FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_min_group_size_v1() TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_overview_v3(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION analytics_red_flags_v3(bucket text, since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;

REVOKE ALL ON FUNCTION analytics_check_months_v1(caller text, since date, until date) FROM PUBLIC;

REVOKE ALL ON FUNCTION analytics_month_values_v1(since date, until date) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_month_values_v1(since date, until date) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_month_withheld_v1(since date, until date) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_month_withheld_v1(since date, until date) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_red_flag_months_v1(since date, until date) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_red_flag_months_v1(since date, until date) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_overview_v4(since timestamp with time zone, until timestamp with time zone) TO :"analytics_role";

REVOKE ALL ON FUNCTION analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION analytics_transitions_v2(since timestamp with time zone, until timestamp with time zone) TO :"analytics_role";

REVOKE ALL ON FUNCTION ctxstore_append_if_unchanged_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_append_if_unchanged_v4(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[]) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_insert_messages_v3(p_session_id text, p_start integer, p_rows ctxstore_message_row_v1[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_insert_messages_v3(p_session_id text, p_start integer, p_rows ctxstore_message_row_v1[]) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_append_if_unchanged_v3(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_known_count integer, p_known_hash bytea, p_new_count integer, p_new_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[]) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_append_v2(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], OUT start integer, OUT version bigint) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_append_v6(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint, p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer, p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer, p_first_ts timestamp with time zone, p_last_ts timestamp with time zone, p_rows ctxstore_message_row_v1[], p_write_ids text[], OUT start integer, OUT version bigint, OUT current_version bigint, OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_delete_session_v1(p_session_id text, p_expired_only boolean) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_holds_of_v1(p_user_id text, p_session_ids text[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_holds_of_v1(p_user_id text, p_session_ids text[]) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_record_contract_v1(p_session_id text, p_user_id text, p_turn_id text, p_model text, p_token_encoding text, p_token_count integer, p_session_version bigint, p_summary_version integer, p_state_version bigint, p_profile_version bigint, p_frame bytea[], p_commas boolean[], p_digests bytea[], p_contents text[], p_key_ids bigint[], p_sealed bytea[], p_body bytea, OUT entry_seq integer, OUT recorded_at timestamp with time zone, OUT digest bytea, OUT new_pieces integer) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_record_contract_v1(p_session_id text, p_user_id text, p_turn_id text, p_model text, p_token_encoding text, p_token_count integer, p_session_version bigint, p_summary_version integer, p_state_version bigint, p_profile_version bigint, p_frame bytea[], p_commas boolean[], p_digests bytea[], p_contents text[], p_key_ids bigint[], p_sealed bytea[], p_body bytea, OUT entry_seq integer, OUT recorded_at timestamp with time zone, OUT digest bytea, OUT new_pieces integer) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_attach_response_v1(p_session_id text, p_turn_id text, p_response_id text, OUT entry_seq integer, OUT response_id text) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_attach_response_v1(p_session_id text, p_turn_id text, p_response_id text, OUT entry_seq integer, OUT response_id text) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_erase_ledger_v1(p_session_id text, p_user_id text) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_erase_ledger_v1(p_session_id text, p_user_id text) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) FROM PUBLIC;

GRANT ALL ON FUNCTION ctxstore_purge_ledger_v1(p_session_id text, p_keep_for interval, p_dry_run boolean, OUT entries integer, OUT held boolean) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_delete_unused_retired_keys_v1() FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_delete_unused_retired_keys_v1() TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_erase_user_sessions_v2(p_user_id text, OUT session_ids text[], OUT messages bigint, OUT summaries bigint, OUT states bigint, OUT state_changes bigint) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_insert_messages_v1(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[]) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_insert_messages_v2(p_session_id text, p_start integer, p_seq integer[], p_role text[], p_content text[], p_turn_id text[], p_ts text[], p_ts_offset integer[], p_name text[], p_metadata jsonb[], p_digest bytea[], p_token_count integer[], p_format_version smallint[], p_token_encoding text[], p_key_id bigint[], p_sealed bytea[], p_ts_nanos smallint[]) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_insert_summary_v1(p_session_id text, p_expected integer, p_text text, p_covers_until integer, p_token_count integer, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT summary_version integer, OUT text text, OUT covers_until integer, OUT token_count integer, OUT format_version smallint, OUT created_at timestamp with time zone, OUT key_id bigint, OUT sealed bytea) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, p_age interval) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_require_keys_v1(p_key_ids bigint[], p_table text) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_sessions_to_reencrypt_v1(p_after text, p_batch_size integer) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_write_profile_v1(p_user_id text, p_expected bigint, p_age smallint, p_gender text, p_exercise_habit text, p_known_limitations text[], p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea) TO :"app_role";

REVOKE ALL ON FUNCTION ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) FROM PUBLIC;
GRANT ALL ON FUNCTION ctxstore_write_state_v2(p_session_id text, p_expected bigint, p_stage text, p_chief_complaint text, p_body_parts text[], p_symptoms text[], p_red_flags text[], p_pain_level smallint, p_duration text, p_red_flag_count integer, p_symptom_count integer, p_body_part_count integer, p_has_chief_complaint boolean, p_has_symptom_duration boolean, p_document jsonb, p_format_version smallint, p_key_id bigint, p_sealed bytea, OUT version bigint, OUT updated_at timestamp with time zone) TO :"app_role";

GRANT SELECT ON TABLE alembic_version TO :"app_role";

GRANT SELECT ON TABLE legal_holds TO :"app_role";

GRANT SELECT ON TABLE contract_chains TO :"app_role";

GRANT SELECT ON TABLE contract_pieces TO :"app_role";

GRANT SELECT ON TABLE contract_entries TO :"app_role";

GRANT SELECT ON TABLE contract_responses TO :"app_role";

GRANT SELECT ON TABLE ctxstore_retention_periods TO :"app_role";

GRANT SELECT ON TABLE analytics_body_part_frequencies TO :"analytics_role";

GRANT SELECT ON TABLE analytics_complaint_frequencies TO :"analytics_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE consultation_states TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE sessions TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE summaries TO :"app_role";

GRANT SELECT ON TABLE analytics_consultations TO :"analytics_role";

GRANT SELECT ON TABLE analytics_monthly_values TO :"analytics_role";

GRANT SELECT ON TABLE analytics_monthly_withheld TO :"analytics_role";

GRANT SELECT ON TABLE analytics_monthly_red_flags TO :"analytics_role";

GRANT SELECT ON TABLE analytics_red_flag_frequencies TO :"analytics_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE consultation_state_history TO :"app_role";

GRANT SELECT ON TABLE analytics_stage_changes TO :"analytics_role";

GRANT SELECT ON TABLE analytics_stage_funnel TO :"analytics_role";

GRANT SELECT ON TABLE analytics_stage_history TO :"analytics_role";

GRANT SELECT ON TABLE analytics_stage_reached TO :"analytics_role";

GRANT SELECT ON TABLE analytics_stage_transitions TO :"analytics_role";

GRANT SELECT ON TABLE analytics_suppression TO :"analytics_role";

GRANT SELECT ON TABLE analytics_symptom_duration_frequencies TO :"analytics_role";

GRANT SELECT ON TABLE analytics_symptom_frequencies TO :"analytics_role";

GRANT SELECT,INSERT,DELETE ON TABLE applied_profile_writes TO :"app_role";

GRANT SELECT,INSERT,DELETE ON TABLE applied_session_writes TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE data_keys TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE graph_channel_values TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE graph_checkpoints TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE graph_writes TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE messages TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE summary_jobs TO :"app_role";

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE user_profiles TO :"app_role";

-- ======================================================================================
-- This database's settings and roles
-- ======================================================================================

INSERT INTO ctxstore_roles (kind, role_name) VALUES
    ('owner', :'owner_role'),
    ('app', :'app_role'),
    ('analytics', :'analytics_role');

INSERT INTO ctxstore_analytics_settings (min_group_size) VALUES (:min_group_size);

-- The analytics pseudonyms' HMAC key, as its two pads: random, never leaves the database.
DO $$
DECLARE
    padded bytea := sha256(convert_to(gen_random_uuid()::text || gen_random_uuid()::text
                                      || gen_random_uuid()::text, 'UTF8'))
                    || decode(repeat('00', 32), 'hex');
    ipad bytea := padded;
    opad bytea := padded;
BEGIN
    FOR i IN 0..63 LOOP
        ipad := set_byte(ipad, i, get_byte(padded, i) # 54);
        opad := set_byte(opad, i, get_byte(padded, i) # 92);
    END LOOP;
    INSERT INTO ctxstore_pseudonym_key (inner_pad, outer_pad) VALUES (ipad, opad);
END
$$;

-- Only this database's roles connect; no temporary objects for analytics.
SELECT set_config('ctxstore.owner_role', :'owner_role', false),
       set_config('ctxstore.app_role', :'app_role', false),
       set_config('ctxstore.analytics_role', :'analytics_role', false);
DO $$
DECLARE
    owner text := quote_ident(current_setting('ctxstore.owner_role'));
    app text := quote_ident(current_setting('ctxstore.app_role'));
    analytics text := quote_ident(current_setting('ctxstore.analytics_role'));
    here text := quote_ident(current_database());
BEGIN
    EXECUTE format('REVOKE CONNECT, TEMPORARY ON DATABASE %s FROM PUBLIC', here);
    EXECUTE format('GRANT CONNECT ON DATABASE %s TO %s, %s, %s', here, owner, app, analytics);
    EXECUTE format('GRANT TEMPORARY ON DATABASE %s TO %s, %s', here, owner, app);
END
$$;

RESET check_function_bodies;
