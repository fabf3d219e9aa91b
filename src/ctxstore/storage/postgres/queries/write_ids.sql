-- name: record_session_writes --
-- In the transaction of a session write: the journal write ids it applied (revision 0020).
INSERT INTO applied_session_writes (session_id, write_id)
SELECT :sid, w FROM unnest((:write_ids)::text[]::uuid[]) AS w
ON CONFLICT DO NOTHING;

-- name: record_profile_writes --
-- In the transaction of a profile write: the journal write ids it applied.
INSERT INTO applied_profile_writes (user_id, write_id)
SELECT :user_id, w FROM unnest((:write_ids)::text[]::uuid[]) AS w
ON CONFLICT DO NOTHING;

-- name: applied_session_writes --
-- Which of :write_ids a write to the session applied.
SELECT write_id FROM applied_session_writes
 WHERE session_id = :sid AND write_id = ANY((:write_ids)::text[]::uuid[]);

-- name: applied_profile_writes --
-- Which of :write_ids a write to the profile applied.
SELECT write_id FROM applied_profile_writes
 WHERE user_id = :user_id AND write_id = ANY((:write_ids)::text[]::uuid[]);

-- name: erase_session_write_ids --
-- Erasure: the write ids recorded for the user's sessions (ids and times only).
DELETE FROM applied_session_writes WHERE session_id = ANY((:session_ids)::text[]);

-- name: erase_profile_write_ids --
-- Erasure: the write ids recorded for the user's profile.
DELETE FROM applied_profile_writes WHERE user_id = :user_id;

-- name: forget_session_writes_batch --
-- purge-expired: a batch of session write ids recorded before :age ago; how many went.
WITH gone AS (
    DELETE FROM applied_session_writes
     WHERE (session_id, write_id) IN (
         SELECT session_id, write_id FROM applied_session_writes
          WHERE applied_at < now() - (:age)::interval
          LIMIT :batch_size)
    RETURNING 1
)
SELECT count(*) FROM gone;

-- name: forget_profile_writes_batch --
-- purge-expired: a batch of profile write ids recorded before :age ago; how many went.
WITH gone AS (
    DELETE FROM applied_profile_writes
     WHERE (user_id, write_id) IN (
         SELECT user_id, write_id FROM applied_profile_writes
          WHERE applied_at < now() - (:age)::interval
          LIMIT :batch_size)
    RETURNING 1
)
SELECT count(*) FROM gone;
