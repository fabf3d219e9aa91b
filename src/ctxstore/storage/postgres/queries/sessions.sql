-- name: purge_if_expired --
-- The session, with its own data key, if it has expired: an expired session is a missing one.
SELECT ctxstore_delete_session_v1(:sid, true);

-- name: delete_session --
-- The session, everything cascading from it and its own data key (the profile and the user's key stay).
SELECT ctxstore_delete_session_v1(:sid, false);

-- name: erase_user_sessions --
-- Every session of a user or holding a row sealed under its keys, counted and deleted with everything cascading from it.
SELECT session_ids, messages, summaries, states, state_changes
  FROM ctxstore_erase_user_sessions_v2(:user_id);

-- name: erase_user_profile --
-- Erase user profile.
DELETE FROM user_profiles WHERE user_id = :user_id;

-- name: erase_user_keys --
-- Erase user keys.
DELETE FROM data_keys
 WHERE owner = 'u:' || :user_id
    OR owner IN (SELECT 's:' || session_id FROM unnest((:session_ids)::text[]) AS session_id)
RETURNING key_id, owner;

-- name: purge_expired_batch --
-- purge-expired: one batch of expired sessions, their message counts.
SELECT message_count FROM ctxstore_purge_batch_v1(:batch_size, NULL) AS message_count;

-- name: purge_old_batch --
-- Retention: one batch of sessions whose last write is older than :age, their message counts.
SELECT message_count FROM ctxstore_purge_batch_v1(:batch_size,
    (:age)::interval) AS message_count;

-- name: count_expired --
-- Count expired.
SELECT count(*) FROM sessions WHERE expires_hour <= now() AND expires_at <= now();

-- name: count_old --
-- Count old.
SELECT count(*) FROM sessions WHERE updated_at < now() - (:age)::interval;
