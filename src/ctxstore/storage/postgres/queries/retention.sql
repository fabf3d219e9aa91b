-- name: retention_periods --
-- The owner's retention periods (revision 1007), by kind of data.
SELECT data_class, keep_for, set_by, set_at FROM ctxstore_retention_periods ORDER BY data_class;

-- name: set_retention_period --
-- The owner keeps :data_class for :keep_for from now on, recorded with who and when.
INSERT INTO ctxstore_retention_periods (data_class, keep_for, set_by)
VALUES (:data_class, :keep_for, :set_by)
ON CONFLICT (data_class) DO UPDATE
   SET keep_for = excluded.keep_for, set_by = excluded.set_by, set_at = now()
RETURNING data_class, keep_for, set_by, set_at;

-- name: unset_retention_period --
-- The owner keeps :data_class with no period again (until its session expires).
DELETE FROM ctxstore_retention_periods WHERE data_class = :data_class RETURNING data_class;

-- name: lock_sessions --
-- The sessions :session_ids locked: by a hold being placed on one, and by a retention batch before it checks the holds, so either the check sees the hold or the hold waits for the batch.
UPDATE sessions SET user_id = user_id WHERE session_id = ANY(:session_ids);

-- name: sessions_with_old_summaries --
-- Retention of summaries: the next :batch_size sessions after :after (by id) holding a summary version written before :keep_for ago.
SELECT DISTINCT session_id FROM summaries
 WHERE created_at < now() - (:keep_for)::interval AND session_id > :after
 ORDER BY session_id LIMIT :batch_size;

-- name: count_old_summaries --
-- Retention of summaries: the versions written before :keep_for ago but each session's latest, of sessions a legal hold covers (:held) or not: what a purge removes, or keeps under a hold.
SELECT count(*) FROM summaries AS t JOIN sessions AS s USING (session_id)
 WHERE t.created_at < now() - (:keep_for)::interval
   AND t.summary_version < (SELECT max(l.summary_version) FROM summaries AS l
                             WHERE l.session_id = t.session_id)
   AND EXISTS (SELECT FROM legal_holds AS h
                WHERE h.lifted_at IS NULL
                  AND (h.session_id = s.session_id OR h.user_id = s.user_id)) = :held;

-- name: purge_old_summaries --
-- Retention of summaries: of the locked sessions :session_ids, the versions count_old_summaries counts as removable.
DELETE FROM summaries AS t USING sessions AS s
 WHERE s.session_id = t.session_id AND t.session_id = ANY(:session_ids)
   AND t.created_at < now() - (:keep_for)::interval
   AND t.summary_version < (SELECT max(l.summary_version) FROM summaries AS l
                             WHERE l.session_id = t.session_id)
   AND NOT EXISTS (SELECT FROM legal_holds AS h
                    WHERE h.lifted_at IS NULL
                      AND (h.session_id = s.session_id OR h.user_id = s.user_id))
RETURNING t.session_id;

-- name: sessions_with_old_state_changes --
-- Retention of state history: the next :batch_size sessions after :after (by id) holding a state change recorded before :keep_for ago.
SELECT DISTINCT session_id FROM consultation_state_history
 WHERE created_at < now() - (:keep_for)::interval AND session_id > :after
 ORDER BY session_id LIMIT :batch_size;

-- name: count_old_state_changes --
-- Retention of state history: the changes recorded before :keep_for ago but each session's latest, of sessions a legal hold covers (:held) or not.
SELECT count(*) FROM consultation_state_history AS t JOIN sessions AS s USING (session_id)
 WHERE t.created_at < now() - (:keep_for)::interval
   AND t.version < (SELECT max(l.version) FROM consultation_state_history AS l
                     WHERE l.session_id = t.session_id)
   AND EXISTS (SELECT FROM legal_holds AS h
                WHERE h.lifted_at IS NULL
                  AND (h.session_id = s.session_id OR h.user_id = s.user_id)) = :held;

-- name: purge_old_state_changes --
-- Retention of state history: of the locked sessions :session_ids, the changes count_old_state_changes counts as removable.
DELETE FROM consultation_state_history AS t USING sessions AS s
 WHERE s.session_id = t.session_id AND t.session_id = ANY(:session_ids)
   AND t.created_at < now() - (:keep_for)::interval
   AND t.version < (SELECT max(l.version) FROM consultation_state_history AS l
                     WHERE l.session_id = t.session_id)
   AND NOT EXISTS (SELECT FROM legal_holds AS h
                    WHERE h.lifted_at IS NULL
                      AND (h.session_id = s.session_id OR h.user_id = s.user_id))
RETURNING t.session_id;

-- name: old_profiles --
-- Retention of profiles: the next :batch_size users after :after whose profile was last written before :keep_for ago.
SELECT user_id FROM user_profiles
 WHERE updated_at < now() - (:keep_for)::interval AND user_id > :after
 ORDER BY user_id LIMIT :batch_size;

-- name: lock_profiles --
-- Retention of profiles: the batch's profiles locked before the holds and the users' sessions are checked (placing a hold on a user locks the profile too).
UPDATE user_profiles SET user_id = user_id WHERE user_id = ANY(:user_ids);

-- name: held_users --
-- Retention of profiles: of :user_ids, the users under a legal hold (their profiles stay).
SELECT DISTINCT user_id FROM legal_holds
 WHERE lifted_at IS NULL AND user_id = ANY(:user_ids);

-- name: active_users --
-- Retention of profiles: of :user_ids, the users who wrote a session within :keep_for (their profiles stay).
SELECT DISTINCT user_id FROM sessions
 WHERE user_id = ANY(:user_ids) AND updated_at >= now() - (:keep_for)::interval;

-- name: purge_profiles --
-- Retention of profiles: the locked profiles :user_ids, still not written within :keep_for.
DELETE FROM user_profiles
 WHERE user_id = ANY(:user_ids) AND updated_at < now() - (:keep_for)::interval
RETURNING user_id;
