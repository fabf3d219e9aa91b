-- name: legacy_messages_of_session --
-- Legacy messages of a session.
SELECT s.version AS session_version, m.seq, m.role, m.content, m.turn_id, m.ts,
    m.ts_offset, m.ts_nanos, m.name, m.metadata, m.digest, m.format_version, m.key_id, m.sealed
  FROM sessions AS s JOIN messages AS m ON m.session_id = s.session_id
 WHERE s.session_id = :sid AND m.format_version <> :current
 ORDER BY m.seq;

-- name: claim_session --
-- Claim session.
UPDATE sessions SET content_hash = NULL
 WHERE session_id = :sid AND version = :version
RETURNING 1;

-- name: rewrite_messages --
-- Rewrite messages: the rows' columns as arrays, cast as parameters (Citus refuses a STABLE
-- cast, text to timestamptz, of a column in an UPDATE).
UPDATE messages AS t
   SET (role, content, turn_id, ts, ts_offset, name, metadata, digest, token_count,
       format_version, token_encoding, key_id, sealed, ts_nanos) = (m.role, m.content,
       m.turn_id, m.ts, m.ts_offset, m.name, m.metadata, m.digest, m.token_count,
       m.format_version, m.token_encoding, m.key_id, m.sealed, m.ts_nanos)
  FROM unnest((:new_seq)::int[], (:new_role)::TEXT[], (:new_content)::TEXT[],
      (:new_turn_id)::TEXT[], (:new_ts)::text[]::TIMESTAMP WITH TIME ZONE[],
      (:new_ts_offset)::INTEGER[], (:new_name)::TEXT[], (:new_metadata)::JSONB[],
      (:new_digest)::BYTEA[], (:new_token_count)::INTEGER[],
      (:new_format_version)::SMALLINT[], (:new_token_encoding)::TEXT[],
      (:new_key_id)::BIGINT[], (:new_sealed)::BYTEA[], (:new_ts_nanos)::SMALLINT[])
      AS m(seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, token_count,
      format_version, token_encoding, key_id, sealed, ts_nanos)
 WHERE t.session_id = :sid AND t.seq = m.seq;

-- name: sessions_with_legacy_messages --
-- Sessions with legacy messages.
SELECT DISTINCT session_id FROM messages WHERE format_version <> :current
 ORDER BY session_id;

-- name: count_legacy_messages --
-- Count legacy messages.
SELECT count(*) FROM messages WHERE format_version <> :current;

-- name: legacy_states_consultation_states --
-- Legacy rows of consultation_states.
SELECT session_id, version, document, format_version FROM consultation_states
 WHERE format_version <> :current AND (session_id, version) > (:after_session, :after_version)
 ORDER BY session_id, version LIMIT :batch_size;

-- name: legacy_states_consultation_state_history --
-- Legacy rows of consultation_state_history.
SELECT session_id, version, document, format_version FROM consultation_state_history
 WHERE format_version <> :current AND (session_id, version) > (:after_session, :after_version)
 ORDER BY session_id, version LIMIT :batch_size;

-- name: rewrite_state_consultation_states --
-- Rewrite a row of consultation_states.
WITH locked AS (SELECT FROM sessions WHERE session_id = :sid FOR NO KEY UPDATE)
UPDATE consultation_states SET (stage, chief_complaint, body_parts, symptoms,
    red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count,
    has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed) = (
    :stage, :chief_complaint, :body_parts, :symptoms, :red_flags, :pain_level, :duration,
    :red_flag_count, :symptom_count, :body_part_count, :has_chief_complaint,
    :has_symptom_duration, :document, :format_version, :key_id, :sealed)
 WHERE session_id = :sid AND version = :version AND format_version = :old_format
   AND EXISTS (SELECT FROM locked);

-- name: rewrite_state_consultation_state_history --
-- Rewrite a row of consultation_state_history.
WITH locked AS (SELECT FROM sessions WHERE session_id = :sid FOR NO KEY UPDATE)
UPDATE consultation_state_history SET (stage, chief_complaint, body_parts, symptoms,
    red_flags, pain_level, duration, red_flag_count, symptom_count, body_part_count,
    has_chief_complaint, has_symptom_duration, document, format_version, key_id, sealed) = (
    :stage, :chief_complaint, :body_parts, :symptoms, :red_flags, :pain_level, :duration,
    :red_flag_count, :symptom_count, :body_part_count, :has_chief_complaint,
    :has_symptom_duration, :document, :format_version, :key_id, :sealed)
 WHERE session_id = :sid AND version = :version AND format_version = :old_format
   AND EXISTS (SELECT FROM locked);

-- name: count_legacy_states_consultation_states --
-- Count legacy rows of consultation_states.
SELECT count(*) FROM consultation_states WHERE format_version <> :current;

-- name: count_legacy_states_consultation_state_history --
-- Count legacy rows of consultation_state_history.
SELECT count(*) FROM consultation_state_history WHERE format_version <> :current;

-- name: infinite_timestamps --
-- Messages stored with an infinite time.
SELECT session_id, seq, ts = 'infinity' AS late, ts_offset FROM messages
 WHERE ts IN ('infinity', '-infinity') AND (session_id, seq) > (:after_session, :after_seq)
 ORDER BY session_id, seq LIMIT :batch_size;

-- name: count_infinite_timestamps --
-- Count infinite message times.
SELECT count(*) FROM messages WHERE ts IN ('infinity', '-infinity');

-- name: repair_timestamp --
-- Repair an infinite message time.
WITH locked AS (SELECT FROM sessions WHERE session_id = :sid FOR NO KEY UPDATE)
UPDATE messages SET ts = (:ts)::text::timestamptz
 WHERE session_id = :sid AND seq = :seq AND ts IN ('infinity', '-infinity')
   AND EXISTS (SELECT FROM locked);

-- name: repair_activity_times --
-- Repair infinite session activity times.
UPDATE sessions
   SET first_activity_at = CASE WHEN first_activity_at = '-infinity'
                                THEN timestamptz '0001-01-01 00:00:00.000001+00'
                                WHEN first_activity_at = 'infinity'
                                THEN timestamptz '9999-12-31 23:59:59.999998+00'
                                ELSE first_activity_at END,
       last_activity_at = CASE WHEN last_activity_at = '-infinity'
                               THEN timestamptz '0001-01-01 00:00:00.000001+00'
                               WHEN last_activity_at = 'infinity'
                               THEN timestamptz '9999-12-31 23:59:59.999998+00'
                               ELSE last_activity_at END
 WHERE first_activity_at IN ('infinity', '-infinity')
    OR last_activity_at IN ('infinity', '-infinity');

-- name: carry_expiry --
-- Carry expiry.
UPDATE sessions SET expires_at = now() + (:ttl)::interval
 WHERE session_id = :sid AND version = :version;

-- name: analytics_min_group_size --
-- The analytics k: a free-text value shows for at least this many consultations.
SELECT min_group_size FROM ctxstore_analytics_settings;

-- name: month_sessions --
-- Each UTC calendar month before :before and its consultations (by first activity).
SELECT date_trunc('month', s.first_activity_at AT TIME ZONE 'UTC')::date AS month,
       count(*) AS sessions
  FROM sessions AS s
 WHERE s.first_activity_at < :before
 GROUP BY 1;

-- name: published_months --
-- Each published month, the k it was published with and what it was computed from.
SELECT month, min_group_size, fingerprint FROM analytics_months;

-- name: day_states --
-- The consultations first active from :start to :end, with their current states.
SELECT s.session_id, c.version, c.document, c.format_version, c.updated_at, c.key_id,
       c.sealed
  FROM sessions AS s
  LEFT JOIN consultation_states AS c ON c.session_id = s.session_id
 WHERE s.first_activity_at >= :start AND s.first_activity_at < :end;

-- name: forget_month --
-- A month's published figures gone (its cells and withheld counts cascade).
DELETE FROM analytics_months WHERE month = :month;

-- name: publish_month --
-- A month's consultations, its red-flag count (NULL when withheld), the k used and a
-- fingerprint of the consultations it was computed from.
INSERT INTO analytics_months (month, consultations, with_red_flags, min_group_size,
                              fingerprint)
VALUES (:month, :consultations, :with_red_flags, :k, :fingerprint);

-- name: publish_month_kinds --
-- What a month shows and withholds of each kind of free text.
INSERT INTO analytics_month_kinds (month, kind, shown_values, withheld_values,
                                   withheld_consultations)
SELECT :month, w.kind, w.shown_values, w.withheld_values, w.withheld_consultations
  FROM unnest(CAST(:kinds AS text[]), CAST(:shown AS integer[]), CAST(:withheld AS integer[]),
              CAST(:withheld_consultations AS integer[]))
       AS w(kind, shown_values, withheld_values, withheld_consultations);

-- name: publish_month_cells --
-- A month's shown value cells.
INSERT INTO analytics_month_cells (kind, month, value, consultations)
SELECT cell.kind, :month, cell.value, cell.consultations
  FROM unnest(CAST(:kinds AS text[]), CAST(:values AS text[]), CAST(:counts AS integer[]))
       AS cell(kind, value, consultations);

-- name: count_to_recount --
-- Messages whose stored count is under neither of the labels :encoding and :untimed.
SELECT count(*) FROM messages
 WHERE token_encoding IS NULL OR token_encoding NOT IN (:encoding, :untimed);

-- name: sessions_to_recount --
-- Sessions with a message whose stored count is under neither :encoding nor :untimed.
SELECT DISTINCT session_id FROM messages
 WHERE token_encoding IS NULL OR token_encoding NOT IN (:encoding, :untimed)
 ORDER BY session_id;

-- name: store_recount --
-- Counts under another label replaced by the new counts and labels (not one written meanwhile).
UPDATE messages AS m SET token_count = r.token_count, token_encoding = r.label
  FROM unnest((:seqs)::int[], (:counts)::int[], (:labels)::text[]) AS r(seq, token_count, label)
 WHERE m.session_id = :sid AND m.seq = r.seq
   AND m.token_encoding IS DISTINCT FROM r.label;
