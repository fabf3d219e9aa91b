"""A sealed append extends only the content hash stored; rotation deletes keys safely.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-05

Issue 46: ``rotate-keys --reencrypt`` re-seals a session and rewrites its content hash
(a keyed chain) under a fresh key without moving its version, since no content changed.
``ctxstore_append_v7`` recognised the version and, finding a hash other than the one the
writer extended, stored NULL: a sealed session without its chain, unreadable for good.

Now a sealed append (its rows carry a key id) to a session whose hash is not the one the
writer extended is refused, nothing written, with the session's version, count and hash,
as any other refusal (``ctxstore_append_v5`` on): the writer resumes the chain stored and
tries again, and its caller sees no conflict.  The fast path checks it in its UPDATE (so a
rotation committing while the UPDATE waits for the row is seen); the slower path refuses
from a plain read where it can (a refusal stays read-only: no lock, no commit to flush),
else locks the session row and checks again (before v6's lock on the session id: the fast
path's UPDATE may already hold the row), so the hash can't move before v6's UPDATE.  The
signature and results are v7's: processes of the previous release get the fix too.

Its rows must be sealed under a key the session may hold, its own or its user's, where v7
checked only that the keys exist (in its own body: a call begun before a downgrade finds
nothing it needs dropped).  A writer whose cache still names the owner of a session that
expired or was deleted, and was started afresh for someone else, is refused as if its key
were destroyed, forgets its keys and seals again, instead of leaving a row the session's
reads refuse.

``ctxstore_delete_unused_retired_keys_v1``, the end of a rotation, assumed writers seal
under current keys only; a writer's cache may hold a retired one, and a row it committed
between the lookup of keys in use and the DELETE failed the whole rotation on the foreign
key.  It now locks the retired keys first (a writer's commit checks its key under a share
lock: one that committed before is seen in use; one after finds its key gone and seals
again, ``DataKeyDestroyedError``), and counts the LangGraph tables' rows as uses too.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from alembic import op

revision: str = "0026"
down_revision: str | Sequence[str] | None = "0025"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

APPEND = """
CREATE OR REPLACE FUNCTION ctxstore_append_v7(p_session_id text, p_expected bigint,
    p_user_id text, p_ttl interval, p_max_messages integer, p_known_count integer,
    p_known_hash bytea, p_added_hash bytea, p_extended_hash bytea, p_turns integer,
    p_first_ts timestamptz, p_last_ts timestamptz, p_rows ctxstore_message_row_v1[],
    p_write_ids text[],
    OUT start integer, OUT version bigint, OUT current_version bigint,
    OUT current_count integer, OUT current_hash bytea, OUT current_expired boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_added integer := cardinality(p_rows);
    v_sealed boolean := (p_rows[1]).key_id IS NOT NULL;
    v_user text;
    v_pass integer;
    -- variables, not now() in the CASE: Citus refuses non-IMMUTABLE functions there
    v_first timestamptz := coalesce(p_first_ts, now());
    v_last timestamptz := coalesce(p_last_ts, now());
BEGIN
    IF p_user_id IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock_shared(hashtextextended('ctxstore user ' || p_user_id, 0));
    END IF;
    IF p_expected IS DISTINCT FROM 0 THEN
        UPDATE sessions AS s
           SET expires_at = now() + p_ttl,
               turn_count = s.turn_count + p_turns,
               first_activity_at = CASE WHEN s.message_count = 0 THEN v_first
                                        ELSE s.first_activity_at END,
               last_activity_at = v_last,
               message_count = s.message_count + v_added,
               content_hash = CASE WHEN s.message_count = 0 THEN p_added_hash
                                   WHEN s.message_count = p_known_count
                                    AND s.content_hash = p_known_hash
                                   THEN p_extended_hash END,
               version = s.version + 1,
               user_id = coalesce(s.user_id, p_user_id),
               updated_at = now()
         WHERE s.session_id = p_session_id
           AND (p_expected IS NULL OR s.version = p_expected)
           AND (p_user_id IS NULL OR s.user_id IS NULL OR s.user_id = p_user_id)
           AND s.message_count + v_added <= p_max_messages
           AND (s.expires_at IS NULL OR s.expires_at > now())
           -- a sealed chain is extended from the very hash stored, never left unknown
           AND (NOT v_sealed OR s.message_count = 0
                OR (s.message_count = p_known_count
                    AND s.content_hash IS NOT DISTINCT FROM p_known_hash))
        RETURNING s.message_count - v_added, s.version, s.user_id INTO start, version, v_user;
        IF FOUND THEN
            INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset,
                                  name, metadata, digest, token_count, format_version,
                                  token_encoding, key_id, sealed, ts_nanos)
            SELECT p_session_id, start + m.seq, m.role, m.content, m.turn_id,
                   m.ts::timestamptz, m.ts_offset, m.name, m.metadata::jsonb, m.digest,
                   m.token_count, m.format_version, m.token_encoding, m.key_id, m.sealed,
                   m.ts_nanos
              FROM unnest(p_rows) AS m;
            IF cardinality(p_write_ids) > 0 THEN
                INSERT INTO applied_session_writes (session_id, write_id)
                SELECT p_session_id, w::uuid FROM unnest(p_write_ids) AS w
                ON CONFLICT DO NOTHING;
            END IF;
        END IF;
    END IF;
    IF version IS NULL THEN
        IF v_sealed AND p_expected IS DISTINCT FROM 0 THEN
            -- Refused as it stands, read only (a refusal writes nothing, not even a
            -- lock).  Else locked and read again, so that its hash stays what is checked
            -- here until v6 extends it: before v6's lock on the session id, as the UPDATE
            -- above may already hold the row (one it waited for, then found changed).
            FOR v_pass IN 1..2 LOOP
                IF v_pass = 1 THEN
                    SELECT s.version, s.message_count, s.content_hash,
                           NOT (s.expires_at IS NULL OR s.expires_at > now())
                      INTO current_version, current_count, current_hash, current_expired
                      FROM sessions AS s WHERE s.session_id = p_session_id;
                ELSE
                    SELECT s.version, s.message_count, s.content_hash,
                           NOT (s.expires_at IS NULL OR s.expires_at > now())
                      INTO current_version, current_count, current_hash, current_expired
                      FROM sessions AS s WHERE s.session_id = p_session_id
                       FOR NO KEY UPDATE;
                END IF;
                IF FOUND AND current_count > 0 AND NOT current_expired
                   AND (current_count IS DISTINCT FROM p_known_count
                        OR current_hash IS DISTINCT FROM p_known_hash) THEN
                    RETURN;  -- refused, nothing written: the writer resumes the stored chain
                END IF;
            END LOOP;
            current_version := NULL;
            current_count := NULL;
            current_hash := NULL;
            current_expired := NULL;
        END IF;
        -- A new session, one that can't take the messages, another user's, or a race: v6.
        SELECT a.start, a.version, a.current_version, a.current_count, a.current_hash,
               a.current_expired
          INTO start, version, current_version, current_count, current_hash, current_expired
          FROM ctxstore_append_v6(p_session_id, p_expected, p_user_id, p_ttl,
                   p_max_messages, p_known_count, p_known_hash, p_added_hash,
                   p_extended_hash, p_turns, p_first_ts, p_last_ts,
                   ARRAY(SELECT m.seq FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.role FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.content FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.turn_id FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.ts FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.ts_offset FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.name FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.metadata::jsonb FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.digest FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.token_count FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.format_version FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.token_encoding FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.key_id FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.sealed FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   ARRAY(SELECT m.ts_nanos FROM unnest(p_rows) WITH ORDINALITY AS m
                          ORDER BY m.ordinality),
                   p_write_ids) AS a;
        IF version IS NULL OR NOT v_sealed THEN
            RETURN;  -- refused (nothing written), or plaintext: nothing more to check
        END IF;
        -- a statement of its own: Citus runs it on the session's shard, not as a subquery
        SELECT s.user_id INTO v_user FROM sessions AS s WHERE s.session_id = p_session_id;
    END IF;
    -- The keys exist and are the session's own or its user's; else, as a destroyed key
    -- (the writer forgets its keys and seals again).  Checked here, not in a function of
    -- its own: a call begun before a downgrade must not find it dropped.
    IF v_sealed AND EXISTS (
        SELECT FROM unnest(p_rows) AS m
         WHERE NOT EXISTS (SELECT FROM data_keys AS d
                            WHERE d.key_id = m.key_id
                              AND d.owner IN ('s:' || p_session_id, 'u:' || v_user))) THEN
        RAISE EXCEPTION 'a data key this write was sealed under was destroyed, or is not '
                        'the session''s (fk_messages_key_id_data_keys)'
            USING ERRCODE = 'foreign_key_violation',
                  CONSTRAINT = 'fk_messages_key_id_data_keys';
    END IF;
END
$$"""

DELETE_UNUSED_RETIRED_KEYS = """
CREATE OR REPLACE FUNCTION ctxstore_delete_unused_retired_keys_v1()
RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
    v_retired bigint[];
    v_used bigint[];
BEGIN
    PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
    v_retired := ARRAY(SELECT key_id FROM data_keys WHERE retired_at IS NOT NULL
                        ORDER BY key_id FOR UPDATE);
    IF cardinality(v_retired) = 0 THEN
        RETURN;
    END IF;
    -- a new statement, a new snapshot: every row committed before the lock
    v_used := ARRAY(
        SELECT key_id FROM messages WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM summaries WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_states WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM consultation_state_history WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM user_profiles WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM graph_channel_values WHERE key_id = ANY(v_retired)
        UNION SELECT key_id FROM graph_writes WHERE key_id = ANY(v_retired));
    RETURN QUERY
        DELETE FROM data_keys
         WHERE key_id = ANY(v_retired) AND key_id <> ALL(v_used)
        RETURNING key_id;
END
$$"""


def _as_landed(filename: str, name: str) -> str:
    """A landed revision's SQL ``name`` (a module attribute, or a key of its FUNCTIONS),
    as CREATE OR REPLACE: what the downgrade restores."""
    spec = importlib.util.spec_from_file_location(filename, Path(__file__).with_name(filename))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = getattr(module, name, None) or module.FUNCTIONS[name]
    return str(text).replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)


# CREATE OR REPLACE keeps each function's owner and grants.
def upgrade() -> None:
    op.execute(APPEND)
    op.execute(DELETE_UNUSED_RETIRED_KEYS)


def downgrade() -> None:
    op.execute(_as_landed("0025_append_v7_one_array_of_rows.py", "APPEND"))
    op.execute(_as_landed("0011_writes_as_functions.py", "ctxstore_delete_unused_retired_keys_v1"))
