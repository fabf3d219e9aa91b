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
RETURNING key_id, owner, master_key_id;

-- name: vacuum_privileges --
-- After an erasure: of the tables it touched, those the role may not VACUUM or ANALYZE (it owns neither them nor the database, nor has MAINTAIN on PostgreSQL 17+), and whether it is a superuser.
SELECT ARRAY(
    SELECT t.name FROM unnest((:tables)::text[]) WITH ORDINALITY AS t(name, position)
      JOIN pg_class AS c ON c.oid = to_regclass(t.name)
     WHERE NOT pg_has_role(c.relowner, 'USAGE')
       AND NOT pg_has_role((SELECT datdba FROM pg_database
                             WHERE datname = current_database()), 'USAGE')
       AND NOT CASE WHEN current_setting('server_version_num')::int >= 170000
                    THEN has_table_privilege(c.oid, 'MAINTAIN') ELSE false END
     ORDER BY t.position) AS refused,
    (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser;

-- name: vacuum_erased --
-- After an erasure committed, outside a transaction: fresh statistics and no dead row version (nor index entry) left of the erased rows, in every table an erasure deletes from.
VACUUM (ANALYZE, INDEX_CLEANUP ON) sessions, messages, summaries, consultation_states,
    consultation_state_history, user_profiles, data_keys, graph_checkpoints,
    graph_channel_values, graph_writes;

-- name: statistics_of_emptied_tables --
-- Of :tables, those VACUUM found empty that still have statistics: ANALYZE leaves a table it finds empty with those of its last rows.
SELECT t.name FROM unnest((:tables)::text[]) WITH ORDINALITY AS t(name, position)
  JOIN pg_class AS c ON c.oid = to_regclass(t.name)
  JOIN pg_namespace AS n ON n.oid = c.relnamespace
 WHERE c.reltuples = 0
   AND EXISTS (SELECT FROM pg_stats AS s
                WHERE s.schemaname = n.nspname AND s.tablename = c.relname)
 ORDER BY t.position;

-- name: clear_statistics --
-- The statistics of :tables, deleted (a superuser's: after an erasure emptied them).
DELETE FROM pg_statistic WHERE starelid = ANY((:tables)::text[]::regclass[]);

-- name: purge_expired_batch --
-- purge-expired: one batch of expired sessions, their message counts.
SELECT message_count FROM ctxstore_purge_batch_v1(:batch_size, NULL) AS message_count;

-- name: purge_old_batch --
-- Retention: one batch of sessions whose last write is older than :age, their message counts.
SELECT message_count FROM ctxstore_purge_batch_v1(:batch_size,
    (:age)::interval) AS message_count;

-- name: list_sessions --
-- A page of a user's live sessions, newest first, from just after the keyset position :after_created_at, :after_session_id (NULL: the top): one scan of ix_sessions_user_id_created_at in its order (no sort, whatever the depth); each with its current stage and its latest summary's version, and that summary's text or seal only :with_summaries (sealed text is not even read otherwise).
SELECT s.session_id, s.created_at, s.updated_at, s.message_count, c.stage,
       coalesce(m.summary_version, 0) AS summary_version,
       m.covers_until AS summary_covers_until, m.token_count AS summary_token_count,
       m.format_version AS summary_format_version, m.created_at AS summary_created_at,
       m.key_id AS summary_key_id, m.text AS summary_text, m.sealed AS summary_sealed
  FROM sessions AS s
  LEFT JOIN consultation_states AS c ON c.session_id = s.session_id
  LEFT JOIN LATERAL (
        SELECT l.summary_version, l.covers_until, l.token_count, l.format_version,
               l.created_at, l.key_id,
               CASE WHEN :with_summaries THEN l.text END AS text,
               CASE WHEN :with_summaries THEN l.sealed END AS sealed
          FROM summaries AS l
         WHERE l.session_id = s.session_id
         ORDER BY l.summary_version DESC
         LIMIT 1) AS m ON true
 WHERE s.user_id = :user_id
   AND (s.created_at, s.session_id)
       < (coalesce((:after_created_at)::timestamptz, 'infinity'),
          coalesce((:after_session_id)::text, ''))
   AND s.updated_at >= coalesce((:updated_since)::timestamptz, '-infinity')
   AND (s.expires_at IS NULL OR s.expires_at > now())
   AND ((:stage)::text IS NULL OR c.stage = :stage)
 ORDER BY s.created_at DESC, s.session_id DESC
 LIMIT :limit;
