-- name: graph_checkpoints --
-- A thread's checkpoints, newest first (NULL namespace: every one), with the session's version.
SELECT c.checkpoint_ns, c.checkpoint_id, c.parent_checkpoint_id, c.checkpoint_type,
       c.checkpoint, c.metadata, c.messages_count, c.messages_archive,
       (SELECT s.version FROM sessions AS s WHERE s.session_id = c.session_id) AS session_version
  FROM graph_checkpoints AS c
 WHERE c.session_id = :sid
   AND (:ns::text IS NULL OR c.checkpoint_ns = :ns)
   AND (:checkpoint_id::text IS NULL OR c.checkpoint_id = :checkpoint_id)
   AND (:before::text IS NULL OR c.checkpoint_id < :before)
   AND c.metadata @> :filter::jsonb
 ORDER BY c.checkpoint_id DESC
 LIMIT :limit;

-- name: graph_threads --
-- The threads that hold checkpoints matching the filter (for a list over every thread).
SELECT DISTINCT session_id FROM graph_checkpoints WHERE metadata @> :filter::jsonb;

-- name: graph_channel_values --
-- A thread's channel values at the given (namespace, channel, version)s.
SELECT v.checkpoint_ns, v.channel, v.version, v.value_type, v.value, v.key_id
  FROM graph_channel_values AS v
  JOIN unnest(:namespaces::text[], :channels::text[], :versions::text[]) AS w (ns, channel, version)
    ON v.checkpoint_ns = w.ns AND v.channel = w.channel AND v.version = w.version
 WHERE v.session_id = :sid;

-- name: graph_pending_writes --
-- The pending writes of a thread's given checkpoints, in the order a step applies them.
SELECT w.checkpoint_ns, w.checkpoint_id, w.task_id, w.idx, w.channel, w.value_type, w.value,
       w.key_id, w.task_path
  FROM graph_writes AS w
  JOIN unnest(:namespaces::text[], :checkpoint_ids::text[]) AS c (ns, checkpoint_id)
    ON w.checkpoint_ns = c.ns AND w.checkpoint_id = c.checkpoint_id
 WHERE w.session_id = :sid
 ORDER BY w.task_path, w.task_id, w.idx;

-- name: graph_put_values --
-- Channel values of a thread, each (namespace, channel, version) written once (as a checkpoint's are).
INSERT INTO graph_channel_values
       (session_id, checkpoint_ns, channel, version, value_type, value, key_id)
SELECT :sid::text, :ns::text, v.channel, v.version, v.value_type, v.value, :key_id::bigint
  FROM unnest(:channels::text[], :versions::text[], :value_types::text[], :payloads::bytea[])
       AS v (channel, version, value_type, value)
    ON CONFLICT (session_id, checkpoint_ns, channel, version) DO NOTHING;

-- name: graph_put_checkpoint --
-- A checkpoint and the channel values it brings (one statement: a turn's hot path).
WITH new_values AS (
    INSERT INTO graph_channel_values
           (session_id, checkpoint_ns, channel, version, value_type, value, key_id)
    SELECT :sid::text, :ns::text, v.channel, v.version, v.value_type, v.value, :key_id::bigint
      FROM unnest(:channels::text[], :versions::text[], :value_types::text[],
                  :payloads::bytea[]) AS v (channel, version, value_type, value)
        ON CONFLICT (session_id, checkpoint_ns, channel, version) DO NOTHING
)
INSERT INTO graph_checkpoints
       (session_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, checkpoint_type,
        checkpoint, metadata, messages_count, messages_archive)
VALUES (:sid, :ns, :checkpoint_id, :parent_id, :checkpoint_type, :checkpoint, :metadata::jsonb,
        :messages_count, :messages_archive)
    ON CONFLICT (session_id, checkpoint_ns, checkpoint_id) DO UPDATE
   SET parent_checkpoint_id = excluded.parent_checkpoint_id,
       checkpoint_type = excluded.checkpoint_type, checkpoint = excluded.checkpoint,
       metadata = excluded.metadata, messages_count = excluded.messages_count,
       messages_archive = excluded.messages_archive;

-- name: graph_put_writes --
-- A task's writes to LangGraph's special channels: each replaces the one stored at its index.
INSERT INTO graph_writes AS w
       (session_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value_type, value,
        task_path, key_id)
SELECT :sid::text, :ns::text, :checkpoint_id::text, :task_id::text, n.idx, n.channel,
       n.value_type, n.value, :task_path::text, :key_id::bigint
  FROM unnest(:idxs::integer[], :channels::text[], :value_types::text[], :payloads::bytea[])
       AS n (idx, channel, value_type, value)
    ON CONFLICT (session_id, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE
   SET channel = excluded.channel, value_type = excluded.value_type, value = excluded.value,
       task_path = excluded.task_path, key_id = excluded.key_id;

-- name: graph_add_writes --
-- A task's writes: those already stored at their index are kept (a retried task's are the same).
INSERT INTO graph_writes
       (session_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, value_type, value,
        task_path, key_id)
SELECT :sid::text, :ns::text, :checkpoint_id::text, :task_id::text, n.idx, n.channel,
       n.value_type, n.value, :task_path::text, :key_id::bigint
  FROM unnest(:idxs::integer[], :channels::text[], :value_types::text[], :payloads::bytea[])
       AS n (idx, channel, value_type, value)
    ON CONFLICT (session_id, checkpoint_ns, checkpoint_id, task_id, idx) DO NOTHING;

-- name: graph_archive_messages --
-- Root checkpoints holding more of the session's messages than a rewrite keeps: read from :archive.
UPDATE graph_checkpoints SET messages_archive = :archive
 WHERE session_id = :sid AND checkpoint_ns = '' AND messages_archive IS NULL
   AND messages_count > :kept;

-- name: graph_delete_checkpoints --
-- The given (namespace, checkpoint id)s of a thread and their pending writes.
WITH gone AS (
    DELETE FROM graph_checkpoints AS c
     USING unnest(:namespaces::text[], :checkpoint_ids::text[]) AS g (ns, checkpoint_id)
     WHERE c.session_id = :sid AND c.checkpoint_ns = g.ns AND c.checkpoint_id = g.checkpoint_id
    RETURNING c.checkpoint_ns, c.checkpoint_id
)
DELETE FROM graph_writes AS w
 USING gone
 WHERE w.session_id = :sid AND w.checkpoint_ns = gone.checkpoint_ns
   AND w.checkpoint_id = gone.checkpoint_id;

-- name: graph_delete_values --
-- The given (namespace, channel, version)s of a thread's channel values.
DELETE FROM graph_channel_values AS v
 USING unnest(:namespaces::text[], :channels::text[], :versions::text[]) AS g (ns, channel, version)
 WHERE v.session_id = :sid AND v.checkpoint_ns = g.ns AND v.channel = g.channel
   AND v.version = g.version;

-- name: graph_run_checkpoints --
-- The checkpoints the given runs made, by thread.
SELECT session_id, checkpoint_ns, checkpoint_id FROM graph_checkpoints
 WHERE metadata ->> 'run_id' = ANY(:run_ids::text[]);
