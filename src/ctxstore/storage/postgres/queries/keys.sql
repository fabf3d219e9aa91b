-- name: current_data_key --
-- Current data key.
SELECT key_id, owner, master_key_id, wrapped FROM data_keys
 WHERE owner = :owner AND retired_at IS NULL;

-- name: create_data_key --
-- Create data key.
INSERT INTO data_keys (owner, master_key_id, wrapped) VALUES (:owner, :master_key_id, :wrapped)
ON CONFLICT (owner) WHERE retired_at IS NULL DO NOTHING
RETURNING key_id, owner, master_key_id, wrapped;

-- name: data_keys_by_id --
-- Data keys by id.
SELECT key_id, owner, master_key_id, wrapped FROM data_keys WHERE key_id = ANY(:ids);

-- name: session_user --
-- The user of a live session (an expired one is a missing one: its next write starts it afresh).
SELECT user_id FROM sessions AS s
 WHERE session_id = :sid AND (s.expires_at IS NULL OR s.expires_at > now());

-- name: count_to_rewrap --
-- Count keys to re-wrap.
SELECT count(*) FROM data_keys WHERE master_key_id <> :current;

-- name: rewrap_batch --
-- Keys to re-wrap.
SELECT key_id, owner, master_key_id, wrapped FROM data_keys
 WHERE master_key_id <> :current ORDER BY key_id LIMIT :batch_size FOR UPDATE SKIP LOCKED;

-- name: rewrap --
-- Re-wrap key.
UPDATE data_keys SET master_key_id = :master_key_id, wrapped = :wrapped WHERE key_id = :id;

-- name: data_keys_by_master_key --
-- How many data keys each master key wraps (rotate-keys --status).
SELECT master_key_id, count(*) AS data_keys FROM data_keys GROUP BY master_key_id
 ORDER BY master_key_id;

-- name: any_retired --
-- Any retired key.
SELECT EXISTS (SELECT FROM data_keys WHERE retired_at IS NOT NULL);

-- name: retire_all --
-- Retire keys.
UPDATE data_keys SET retired_at = now() WHERE retired_at IS NULL;

-- name: count_sessions --
-- Count sessions to re-encrypt.
SELECT count(*) FROM sessions AS s
 WHERE EXISTS (SELECT FROM messages AS t
                WHERE t.session_id = s.session_id AND (t.key_id IS NULL
                    OR t.key_id IN (SELECT key_id FROM data_keys
                    WHERE retired_at IS NOT NULL)))
    OR EXISTS (SELECT FROM summaries AS t
                WHERE t.session_id = s.session_id AND (t.key_id IS NULL
                    OR t.key_id IN (SELECT key_id FROM data_keys
                    WHERE retired_at IS NOT NULL)))
    OR EXISTS (SELECT FROM consultation_states AS t
                WHERE t.session_id = s.session_id AND (t.key_id IS NULL
                    OR t.key_id IN (SELECT key_id FROM data_keys
                    WHERE retired_at IS NOT NULL)))
    OR EXISTS (SELECT FROM consultation_state_history AS t
                WHERE t.session_id = s.session_id AND (t.key_id IS NULL
                    OR t.key_id IN (SELECT key_id FROM data_keys
                    WHERE retired_at IS NOT NULL)));

-- name: sessions_batch --
-- rotate-keys: a batch of sessions to re-encrypt after :after, locked.
SELECT session_id, user_id FROM ctxstore_sessions_to_reencrypt_v1(:after, :batch_size)
 ORDER BY session_id;

-- name: session_messages --
-- Messages to re-encrypt.
SELECT seq, role, content, turn_id, ts, ts_offset, ts_nanos, name, metadata, digest, format_version,
       key_id, sealed FROM messages WHERE session_id = :sid ORDER BY seq;

-- name: reseal_messages --
-- Re-seal messages (the name moves inside the sealed value).
UPDATE messages AS t SET content = '', name = NULL, metadata = NULL, digest = m.digest,
       key_id = :key_id, sealed = m.sealed
  FROM unnest((:seqs)::int[], (:digests)::bytea[], (:sealed)::bytea[]) AS m(seq, digest,
      sealed)
 WHERE t.session_id = :sid AND t.seq = m.seq;

-- name: set_content_hash --
-- Set content hash.
UPDATE sessions SET content_hash = :hash WHERE session_id = :sid;

-- name: session_summaries --
-- Summaries to re-encrypt.
SELECT summary_version, text, key_id, sealed, format_version, covers_until, token_count,
       created_at FROM summaries AS t WHERE t.session_id = :sid AND (t.key_id IS NULL
           OR t.key_id IN (SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL));

-- name: reseal_summary --
-- Re-seal summary.
UPDATE summaries SET text = '', key_id = :key_id, sealed = :sealed
 WHERE session_id = :sid AND summary_version = :version;

-- name: reencrypt_consultation_states --
-- Consultation_states to re-encrypt.
SELECT version, document, key_id, sealed FROM consultation_states AS t
 WHERE t.session_id = :sid AND (t.key_id IS NULL OR t.key_id IN (SELECT key_id
     FROM data_keys WHERE retired_at IS NOT NULL));

-- name: reseal_consultation_states --
-- Re-seal consultation_states.
UPDATE consultation_states SET document = 'null'::jsonb, key_id = :key_id, sealed = :sealed,
    chief_complaint = NULL, body_parts = '{}', symptoms = '{}', red_flags = '{}', duration = NULL
 WHERE session_id = :sid AND version = :version;

-- name: reencrypt_consultation_state_history --
-- Consultation_state_history to re-encrypt.
SELECT version, document, key_id, sealed FROM consultation_state_history AS t
 WHERE t.session_id = :sid AND (t.key_id IS NULL OR t.key_id IN (SELECT key_id
     FROM data_keys WHERE retired_at IS NOT NULL));

-- name: reseal_consultation_state_history --
-- Re-seal consultation_state_history.
UPDATE consultation_state_history SET document = 'null'::jsonb, key_id = :key_id,
    sealed = :sealed, chief_complaint = NULL, body_parts = '{}', symptoms = '{}',
    red_flags = '{}', duration = NULL
 WHERE session_id = :sid AND version = :version;

-- name: profiles_batch --
-- Profiles to re-encrypt.
SELECT user_id, version, document, key_id, sealed FROM user_profiles AS t
 WHERE user_id > :after AND (t.key_id IS NULL OR t.key_id IN (SELECT key_id FROM data_keys
     WHERE retired_at IS NOT NULL))
 ORDER BY user_id LIMIT :batch_size FOR UPDATE SKIP LOCKED;

-- name: reseal_profile --
-- Re-seal profile.
UPDATE user_profiles SET document = 'null'::jsonb, age = NULL, gender = NULL,
       exercise_habit = NULL, known_limitations = '{}', key_id = :key_id, sealed = :sealed
 WHERE user_id = :user_id;

-- name: delete_unused_retired --
-- rotate-keys: retired keys no row is sealed under any more, deleted.
SELECT key_id FROM ctxstore_delete_unused_retired_keys_v1() AS key_id;

-- name: count_retired --
-- Count retired keys.
SELECT count(*) FROM data_keys WHERE retired_at IS NOT NULL;
