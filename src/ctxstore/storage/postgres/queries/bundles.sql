-- name: lock_user_for_import --
-- An import holds the user's lock exclusively, as an erasure does: no write naming the user runs until it commits.
SELECT pg_advisory_xact_lock(hashtextextended('ctxstore user ' || :user_id, 0));

-- name: user_has_profile --
-- Whether the store holds the user's profile already (an import refuses then).
SELECT count(*) > 0 FROM user_profiles WHERE user_id = :user_id;

-- name: user_has_live_session --
-- Whether the store holds a live session of the user already (an import refuses then): asked apart from the profile, as Citus plans no expression of two EXISTS over a reference and a distributed table (SQLSTATE 42601).
SELECT count(*) > 0 FROM sessions
 WHERE user_id = :user_id AND (expires_at IS NULL OR expires_at > now());

-- name: import_session --
-- A bundled session's row with its version and times as exported (its messages follow); nothing when the id is taken.
INSERT INTO sessions (session_id, user_id, version, created_at, updated_at, expires_at,
                      first_activity_at, last_activity_at)
VALUES (:sid, :user_id, :version, :created_at, :updated_at, now() + (:ttl)::interval,
        :created_at, :updated_at)
ON CONFLICT (session_id) DO NOTHING
RETURNING session_id;

-- name: finish_import_session --
-- The imported session's messages counted and hashed, and its activity, as a save leaves them.
UPDATE sessions
   SET message_count = :count, content_hash = :hash, turn_count = :turns,
       first_activity_at = coalesce((:first_ts)::timestamptz, first_activity_at),
       last_activity_at = coalesce((:last_ts)::timestamptz, last_activity_at)
 WHERE session_id = :sid;

-- name: import_summary --
-- A bundled summary version, as exported.
INSERT INTO summaries (session_id, summary_version, text, covers_until, token_count,
                       format_version, created_at, key_id, sealed)
VALUES (:sid, :summary_version, :text, :covers_until, :token_count, :format_version,
        :created_at, :key_id, :sealed);

-- name: import_state --
-- A bundled current state, its version and time as exported.
INSERT INTO consultation_states (session_id, version, updated_at, stage, chief_complaint,
    body_parts, symptoms, red_flags, pain_level, duration, document, format_version, key_id,
    sealed, red_flag_count, symptom_count, body_part_count, has_chief_complaint,
    has_symptom_duration)
VALUES (:sid, :version, :at, :stage, :chief_complaint, :body_parts, :symptoms, :red_flags,
    :pain_level, :duration, :document, :format_version, :key_id, :sealed, :red_flag_count,
    :symptom_count, :body_part_count, :has_chief_complaint, :has_symptom_duration);

-- name: import_state_change --
-- A bundled state change, its version and time as exported.
INSERT INTO consultation_state_history (session_id, version, created_at, stage,
    chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, document,
    format_version, key_id, sealed, red_flag_count, symptom_count, body_part_count,
    has_chief_complaint, has_symptom_duration)
VALUES (:sid, :version, :at, :stage, :chief_complaint, :body_parts, :symptoms, :red_flags,
    :pain_level, :duration, :document, :format_version, :key_id, :sealed, :red_flag_count,
    :symptom_count, :body_part_count, :has_chief_complaint, :has_symptom_duration);

-- name: import_profile --
-- A bundled profile, its version and time as exported; nothing when the user has one.
INSERT INTO user_profiles (user_id, version, updated_at, age, gender, exercise_habit,
    known_limitations, document, format_version, key_id, sealed)
VALUES (:user_id, :version, :updated_at, :age, :gender, :exercise_habit,
    :known_limitations, :document, :format_version, :key_id, :sealed)
ON CONFLICT (user_id) DO NOTHING
RETURNING user_id;
