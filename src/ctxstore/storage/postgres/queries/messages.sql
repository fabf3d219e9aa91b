-- name: load_session --
-- A whole session in one snapshot, its head sent once: a row at position -1 holding the head (metadata: its version, message_count and user_id; digest: its content hash), then every message in order, its format_version NULL when it is :current.  No head when the session is missing or expired: then the rows (an expired session's messages, until it is purged) are no session's.  The head's branch comes first, so sessions is locked before messages, as everywhere.
SELECT -1 AS seq, NULL AS role, NULL AS content, NULL AS turn_id, NULL AS ts, NULL AS ts_offset,
    NULL AS ts_nanos, NULL AS name,
    jsonb_build_object('version', s.version, 'message_count', s.message_count,
        'user_id', s.user_id) AS metadata,
    s.content_hash AS digest, NULL AS format_version, NULL AS key_id, NULL AS sealed
  FROM sessions AS s
 WHERE s.session_id = :sid AND (s.expires_at IS NULL OR s.expires_at > now())
UNION ALL
SELECT m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.ts_nanos, m.name, m.metadata,
    m.digest, NULLIF(m.format_version, :current), m.key_id, m.sealed
  FROM messages AS m
 WHERE m.session_id = :sid
 ORDER BY seq;

-- name: session_version --
-- Session version.
SELECT version FROM sessions AS s WHERE session_id = :sid AND (s.expires_at IS NULL
    OR s.expires_at > now());

-- name: session_facts --
-- Session facts.
SELECT version, message_count, content_hash,
    NOT (s.expires_at IS NULL OR s.expires_at > now()) AS expired
  FROM sessions AS s WHERE session_id = :sid;

-- name: lock_session_facts --
-- Session facts, the row locked: a sealed append extends the content hash it reads here.
SELECT version, message_count, content_hash,
    NOT (s.expires_at IS NULL OR s.expires_at > now()) AS expired
  FROM sessions AS s WHERE session_id = :sid
   FOR UPDATE;

-- name: append_if_unchanged --
-- Save's fast path: the new messages, only if the session holds exactly the list the caller extended (the new version, else NULL); with the journal write ids it applies.
SELECT ctxstore_append_if_unchanged_v4(
    :sid, :expected, :user_id, :ttl, :known_count, :known_hash, :new_count, :new_hash,
    :turns, :first_ts, :last_ts, :new_rows, :write_ids);

-- name: append --
-- A turn's messages (one ctxstore_message_row_v1 each) at the positions the session row hands out, with the journal write ids it applies: (start, version), both NULL when the session refused them, then the session's version, count, hash and expiry as the refusal saw them.
SELECT ctxstore_append_v7(
    :sid, :expected, :user_id, :ttl, :max_messages, :known_count, :known_hash, :added_hash,
    :extended_hash, :turns, :first_ts, :last_ts, :new_rows, :write_ids);

-- name: lock_session --
-- Lock session.
SELECT message_count, content_hash, version, user_id FROM sessions
 WHERE session_id = :sid AND ((:expected)::bigint IS NULL OR version = :expected)
   FOR UPDATE;

-- name: share_user_lock --
-- A write naming a user holds the user's lock shared from its start; an erasure of the user takes it exclusively (revision 0015).
SELECT pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || :user_id, 0));

-- name: claim_session_id --
-- Creators of one session id for a user take turns (as ctxstore_append_v4 does for v5), so only the first claims it.
SELECT pg_advisory_xact_lock(hashtextextended('ctxstore session ' || :sid, 0));

-- name: create_session --
-- Create session.
INSERT INTO sessions (session_id, user_id, content_hash, expires_at)
VALUES (:sid, :user_id, :empty_hash, now() + (:ttl)::interval)
ON CONFLICT (session_id) DO NOTHING
RETURNING message_count, content_hash, version, user_id;

-- name: any_session_version --
-- Any session version.
SELECT version FROM sessions WHERE session_id = :sid;

-- name: stored_digests --
-- Stored digests.
SELECT seq, digest, metadata, key_id FROM messages WHERE session_id = :sid ORDER BY seq;

-- name: delete_from_position --
-- Delete from position.
DELETE FROM messages WHERE session_id = :sid AND seq >= :start;

-- name: insert_messages --
-- Messages at positions :start + :new_seq, in the locked save's transaction.
SELECT ctxstore_insert_messages_v3(:sid, :start, :new_rows);

-- name: finish_save --
-- Finish save: the version moves only if the list changed.
UPDATE sessions
   SET message_count = :count, content_hash = :hash,
       version = version + CASE WHEN :changed THEN 1 ELSE 0 END,
       updated_at = now(), user_id = coalesce(:user_id, user_id),
       expires_at = now() + (:ttl)::interval, turn_count = :turns,
       first_activity_at = coalesce((:first_ts)::timestamptz, first_activity_at),
       last_activity_at = (SELECT coalesce((:last_ts)::timestamptz, now()))
 WHERE session_id = :sid AND version = :old
RETURNING version;

-- name: session_head --
-- Session head.
SELECT version, message_count, created_at, user_id FROM sessions AS s
 WHERE session_id = :sid AND (s.expires_at IS NULL OR s.expires_at > now());

-- name: session_head_and_documents --
-- A context's first read, in one statement: first the session head with its latest summary (m_), its state (st_) and its user's profile (p_), each NULL when there is none, in a row whose message columns are NULL; then each of the newest :limit messages within :budget, newest first, with the message columns only (the head and the documents are sent once, not on every message).  No row when the session is missing or expired.
SELECT NULL AS seq, NULL AS role, NULL AS content, NULL AS turn_id, NULL AS ts, NULL AS ts_offset,
       NULL AS ts_nanos, NULL AS name, NULL AS metadata, NULL AS digest, NULL AS format_version,
       NULL AS key_id, NULL AS sealed, NULL AS token_count, NULL AS token_encoding,
       s.version, s.message_count, s.created_at, s.user_id,
       m.summary_version AS m_summary_version, m.text AS m_text,
       m.covers_until AS m_covers_until, m.token_count AS m_token_count,
       m.format_version AS m_format_version, m.created_at AS m_created_at,
       m.key_id AS m_key_id, m.sealed AS m_sealed,
       st.document AS st_document, st.format_version AS st_format_version,
       st.version AS st_version, st.updated_at AS st_updated_at, st.key_id AS st_key_id,
       st.sealed AS st_sealed,
       p.document AS p_document, p.format_version AS p_format_version, p.version AS p_version,
       p.updated_at AS p_updated_at, p.key_id AS p_key_id, p.sealed AS p_sealed
  FROM sessions AS s
  LEFT JOIN LATERAL (
      SELECT summary_version, text, covers_until, token_count, format_version, created_at,
             key_id, sealed
        FROM summaries
       WHERE session_id = :sid
       ORDER BY summary_version DESC
       LIMIT 1) AS m ON true
  LEFT JOIN consultation_states AS st ON st.session_id = :sid
  LEFT JOIN user_profiles AS p ON p.user_id = s.user_id
 WHERE s.session_id = :sid AND (s.expires_at IS NULL OR s.expires_at > now())
UNION ALL
SELECT w.seq, w.role, w.content, w.turn_id, w.ts, w.ts_offset, w.ts_nanos, w.name, w.metadata,
       w.digest, w.format_version, w.key_id, w.sealed, w.token_count, w.token_encoding,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
  FROM sessions AS s
 CROSS JOIN LATERAL (
      SELECT seq, role, content, turn_id, ts, ts_offset, ts_nanos, name, metadata, digest,
             format_version, key_id, sealed, token_count, token_encoding
        FROM (
          SELECT n.*, sum(n.usable) OVER (ORDER BY n.seq DESC) - n.usable AS before_me
            FROM (SELECT *, CASE WHEN token_encoding IN (:encoding, :untimed) THEN token_count
                                 ELSE 0 END AS usable
                    FROM messages
                   WHERE session_id = :sid AND seq < s.message_count
                   ORDER BY seq DESC LIMIT :limit) AS n
        ) AS window_rows
       WHERE before_me < :budget) AS w
 WHERE s.session_id = :sid AND (s.expires_at IS NULL OR s.expires_at > now())
 ORDER BY seq DESC NULLS FIRST;

-- name: replica_freshness --
-- Replica freshness.
SELECT s.version, s.message_count, s.created_at, s.user_id,
       (SELECT max(summary_version) FROM summaries WHERE session_id = :sid) AS summary_version,
       (SELECT version FROM consultation_states WHERE session_id = :sid) AS state_version,
       (SELECT version FROM user_profiles AS p WHERE p.user_id = s.user_id) AS profile_version
  FROM sessions AS s
 WHERE s.session_id = :sid AND (s.expires_at IS NULL OR s.expires_at > now());

-- name: newest --
-- Newest messages.
SELECT m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.ts_nanos, m.name, m.metadata,
    m.digest, m.format_version, m.key_id, m.sealed, m.token_count, m.token_encoding
    FROM messages AS m
 WHERE session_id = :sid AND seq < :before
 ORDER BY seq DESC LIMIT :limit;

-- name: newest_of_session --
-- The newest messages of a session, each with the session's user.
SELECT m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.ts_nanos, m.name, m.metadata,
    m.digest, m.format_version, m.key_id, m.sealed, m.token_count, m.token_encoding, s.user_id
  FROM messages AS m JOIN sessions AS s ON s.session_id = m.session_id
 WHERE m.session_id = :sid AND s.session_id = :sid
   AND (s.expires_at IS NULL OR s.expires_at > now())
 ORDER BY m.seq DESC LIMIT :limit;

-- name: newest_within --
-- Newest messages within a budget.
SELECT seq, role, content, turn_id, ts, ts_offset, ts_nanos, name, metadata, digest, format_version,
    key_id, sealed, token_count, token_encoding
  FROM (
    SELECT m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.ts_nanos, m.name, m.metadata,
        m.digest, m.format_version, m.key_id, m.sealed, m.token_count, m.token_encoding,
           sum(m.usable) OVER (ORDER BY m.seq DESC) - m.usable AS before_me
      FROM (SELECT *, CASE WHEN token_encoding IN (:encoding, :untimed) THEN token_count
                           ELSE 0 END AS usable
              FROM messages
             WHERE session_id = :sid AND seq < :before
             ORDER BY seq DESC LIMIT :limit) AS m
) AS window_rows
 WHERE before_me < :budget
 ORDER BY seq DESC;

-- name: span --
-- Message span.
SELECT m.seq, m.role, m.content, m.turn_id, m.ts, m.ts_offset, m.ts_nanos, m.name, m.metadata,
    m.digest, m.format_version, m.key_id, m.sealed FROM messages AS m
 WHERE session_id = :sid AND seq >= :start AND seq < :stop
 ORDER BY seq;

-- name: token_total --
-- Token total.
SELECT count(*) AS messages,
       coalesce(sum(CASE WHEN token_encoding = :encoding THEN token_count
                         ELSE char_length(content) + 16
                              + coalesce(octet_length(sealed) - 65, 0) END), 0) AS tokens
  FROM messages WHERE session_id = :sid AND seq > :after;
