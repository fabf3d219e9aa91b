-- name: insert_summary --
-- The next summary version: all its columns but session_id, summary_version NULL when refused (summary_facts says why).
SELECT ctxstore_insert_summary_v1(
    :sid, :expected, :text, :covers_until, :token_count, :format_version, :key_id, :sealed);

-- name: summary_facts --
-- Summary facts.
SELECT s.message_count,
       (SELECT coalesce(max(summary_version), 0) FROM summaries WHERE session_id = :sid)
         AS latest
  FROM sessions AS s WHERE s.session_id = :sid AND (s.expires_at IS NULL
      OR s.expires_at > now());

-- name: latest_summary --
-- Latest summary, and the user of its session (whose keys may seal it).
SELECT m.summary_version, m.text, m.covers_until, m.token_count, m.format_version,
       m.created_at, m.key_id, m.sealed, s.user_id
  FROM summaries AS m JOIN sessions AS s ON s.session_id = m.session_id
 WHERE m.session_id = :sid AND s.session_id = :sid
   AND (s.expires_at IS NULL OR s.expires_at > now())
 ORDER BY m.summary_version DESC LIMIT 1;

-- name: summary_at --
-- A summary version, and the user of its session.
SELECT m.summary_version, m.text, m.covers_until, m.token_count, m.format_version,
       m.created_at, m.key_id, m.sealed, s.user_id
  FROM summaries AS m JOIN sessions AS s ON s.session_id = m.session_id
 WHERE m.session_id = :sid AND s.session_id = :sid AND m.summary_version = :summary_version
   AND (s.expires_at IS NULL OR s.expires_at > now());

-- name: write_state --
-- A state version and its history row: (version, updated_at), both NULL when refused (state_facts says why).
SELECT ctxstore_write_state_v2(
    :sid, :expected, :stage, :chief_complaint, :body_parts, :symptoms, :red_flags,
    :pain_level, :duration, :red_flag_count, :symptom_count, :body_part_count,
    :has_chief_complaint, :has_symptom_duration, :document, :format_version, :key_id, :sealed);

-- name: state_facts --
-- State facts.
SELECT (SELECT version FROM consultation_states WHERE session_id = :sid) AS version
  FROM sessions AS s WHERE session_id = :sid AND (s.expires_at IS NULL
      OR s.expires_at > now());

-- name: current_state --
-- Current state, and the user of its session.
SELECT c.document, c.format_version, c.version, c.updated_at, c.key_id, c.sealed, s.user_id
  FROM consultation_states AS c JOIN sessions AS s ON s.session_id = c.session_id
 WHERE c.session_id = :sid AND s.session_id = :sid
   AND (s.expires_at IS NULL OR s.expires_at > now());

-- name: state_history --
-- State history, each row with the user of its session.
SELECT h.document, h.format_version, h.version, h.created_at AS updated_at, h.key_id,
       h.sealed, s.user_id
  FROM consultation_state_history AS h JOIN sessions AS s ON s.session_id = h.session_id
 WHERE h.session_id = :sid AND s.session_id = :sid
   AND (s.expires_at IS NULL OR s.expires_at > now())
 ORDER BY h.version;

-- name: write_profile --
-- A profile version: the new version, NULL when refused (profile_version says why).
SELECT ctxstore_write_profile_v1(
    :user_id, :expected, :age, :gender, :exercise_habit, :known_limitations, :document,
    :format_version, :key_id, :sealed);

-- name: delete_profile --
-- Delete profile.
DELETE FROM user_profiles WHERE user_id = :user_id;

-- name: profile_version --
-- Profile version.
SELECT version FROM user_profiles WHERE user_id = :user_id;

-- name: current_profile --
-- Current profile.
SELECT document, format_version, version, updated_at, key_id, sealed FROM user_profiles
 WHERE user_id = :user_id;

-- name: lock_live_session --
-- The live session row, locked as the summary and state functions lock it: a sealed write without an expected version takes turns here.
SELECT FROM sessions AS s WHERE session_id = :sid AND (s.expires_at IS NULL
    OR s.expires_at > now())
   FOR NO KEY UPDATE;

-- name: lock_profile --
-- The profile row, locked: a sealed profile write without an expected version takes turns here.
SELECT version FROM user_profiles WHERE user_id = :user_id FOR UPDATE;
