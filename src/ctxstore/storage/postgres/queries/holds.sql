-- name: hold_user_lock --
-- Placing a hold on the user (or on one of their sessions): the user's advisory lock, shared as writers take it; an erasure takes it alone before it checks the holds, so it runs wholly before or after this hold.
SELECT pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || :user_id, 0));

-- name: lock_held_user_sessions --
-- Placing a hold on the user: their sessions' rows locked, as a purge locks them before it checks the holds (it waits for this hold, or this for its batch).
UPDATE sessions SET user_id = user_id WHERE user_id = :user_id;

-- name: lock_held_profile --
-- Placing a hold on the user: their profile's row locked, as a retention purge locks it before it checks the holds.
UPDATE user_profiles SET user_id = user_id WHERE user_id = :user_id;

-- name: session_user_id --
-- Placing a hold on a session: its user, whose lock comes before the row's.
SELECT user_id FROM sessions WHERE session_id = :session_id;

-- name: place_hold --
-- A hold on a user (:user_id) or a session (:session_id), with why and who.
INSERT INTO legal_holds (user_id, session_id, reason, placed_by)
VALUES (:user_id, :session_id, :reason, :placed_by)
RETURNING hold_id, user_id, session_id, reason, placed_by, placed_at, lifted_by, lifted_at;

-- name: lift_hold --
-- A hold in force lifted, with who and when; nothing when there is no such hold in force.
UPDATE legal_holds SET lifted_by = :lifted_by, lifted_at = now()
 WHERE hold_id = :hold_id AND lifted_at IS NULL
RETURNING hold_id, user_id, session_id, reason, placed_by, placed_at, lifted_by, lifted_at;

-- name: list_holds --
-- The holds in force, oldest first (:lifted_too: the lifted ones too).
SELECT hold_id, user_id, session_id, reason, placed_by, placed_at, lifted_by, lifted_at
  FROM legal_holds
 WHERE lifted_at IS NULL OR :lifted_too
 ORDER BY placed_at, hold_id;

-- name: held_coverage --
-- What a hold on the user :user_id or the session :session_id covers now.
SELECT count(*) AS sessions, coalesce(sum(message_count), 0) AS messages
  FROM sessions
 WHERE user_id = :user_id OR session_id = :session_id;

-- name: purge_due --
-- purge-expired --dry-run, and its progress: the sessions a purge would delete now (expired, or idle over :age when given), but those under a legal hold, with their messages: the batches' own conditions.
SELECT count(*) AS sessions, coalesce(sum(s.message_count), 0) AS messages
  FROM sessions AS s
 WHERE ((s.expires_hour <= now() AND s.expires_at <= now())
        OR s.updated_at < now() - (:age)::interval)
   AND NOT EXISTS (SELECT FROM legal_holds AS h
                    WHERE h.lifted_at IS NULL
                      AND (h.session_id = s.session_id OR h.user_id = s.user_id));

-- name: purge_held --
-- The sessions a purge would delete now but keeps, under a legal hold, with their messages.
SELECT count(*) AS sessions, coalesce(sum(s.message_count), 0) AS messages
  FROM sessions AS s
 WHERE ((s.expires_hour <= now() AND s.expires_at <= now())
        OR s.updated_at < now() - (:age)::interval)
   AND EXISTS (SELECT FROM legal_holds AS h
                WHERE h.lifted_at IS NULL
                  AND (h.session_id = s.session_id OR h.user_id = s.user_id));

-- name: lock_held_chains --
-- Placing a hold: the ledger chains it covers locked, as a ledger purge locks a chain before it checks the holds.
UPDATE contract_chains SET first_entry = first_entry
 WHERE user_id = :user_id OR session_id = :session_id;
