-- name: enqueue_summary_job --
-- A session's summary due through :until_seq; a waiting job only reaches further.
INSERT INTO summary_jobs AS j (session_id, until_seq) VALUES (:sid, :until_seq)
ON CONFLICT (session_id) DO UPDATE SET until_seq = excluded.until_seq
 WHERE j.until_seq < excluded.until_seq AND j.state <> 'dead';

-- name: due_summary_jobs --
-- Jobs a worker may claim: queued and due, or running on a lease that ran out.
SELECT session_id FROM summary_jobs
 WHERE (state = 'queued' AND run_after <= now())
    OR (state = 'running' AND lease_until < now())
 ORDER BY run_after LIMIT :limit;

-- name: claim_summary_job --
-- The job leased to :token if it is still claimable (one claimer wins; the rest get no row).
UPDATE summary_jobs
   SET state = 'running', attempts = attempts + 1, lease_token = :token,
       lease_until = now() + make_interval(secs => :lease_seconds)
 WHERE session_id = :sid
   AND ((state = 'queued' AND run_after <= now())
        OR (state = 'running' AND lease_until < now()))
RETURNING session_id, until_seq, attempts, enqueued_at, lease_until;

-- name: renew_summary_lease --
-- The lease of :token moved on while its summarizer runs (no row: the lease was lost).
UPDATE summary_jobs SET lease_until = now() + make_interval(secs => :lease_seconds)
 WHERE session_id = :sid AND lease_token = :token
RETURNING 1;

-- name: finish_summary_job --
-- Done through :done_until: gone, unless a trigger since asks for more (then queued again).
WITH done AS (
    DELETE FROM summary_jobs
     WHERE session_id = :sid AND lease_token = :token AND until_seq <= :done_until
    RETURNING 1
)
UPDATE summary_jobs
   SET state = 'queued', attempts = 0, run_after = now(), lease_token = NULL,
       lease_until = NULL, enqueued_at = now(), last_error = NULL
 WHERE session_id = :sid AND lease_token = :token AND NOT EXISTS (SELECT FROM done);

-- name: fail_summary_job --
-- An attempt failed: due again after :backoff_seconds, or dead when its attempts are used up.
UPDATE summary_jobs
   SET state = CASE WHEN attempts >= :max_attempts THEN 'dead' ELSE 'queued' END,
       run_after = now() + make_interval(secs => :backoff_seconds),
       lease_token = NULL, lease_until = NULL, last_error = :error
 WHERE session_id = :sid AND lease_token = :token
RETURNING state;

-- name: summary_job_counts --
-- Jobs by state, and the age of the oldest one still to run.
SELECT count(*) FILTER (WHERE state = 'queued') AS queued,
       count(*) FILTER (WHERE state = 'running') AS running,
       count(*) FILTER (WHERE state = 'dead') AS dead,
       coalesce(extract(epoch FROM now() - min(enqueued_at) FILTER (WHERE state <> 'dead')),
                0)::float8 AS oldest
  FROM summary_jobs;

-- name: requeue_dead_summary_jobs --
-- Dead jobs given their attempts back (after the summarizer was fixed).
UPDATE summary_jobs
   SET state = 'queued', attempts = 0, run_after = now(), last_error = NULL
 WHERE state = 'dead';

-- name: erase_summary_jobs --
-- Erasure: the summary jobs of the user's sessions (ids, counts and times only).
DELETE FROM summary_jobs WHERE session_id = ANY((:session_ids)::text[]);
