"""LangGraph checkpoints: a graph's thread is a ctxstore session.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-04

Issue 30: ``ctxstore.adapters.langgraph.CtxstoreSaver`` keeps LangGraph's checkpoints
beside the session whose ``session_id`` is the graph's ``thread_id``.  The root graph's
``messages`` channel is the session's messages, appended as the delta of each checkpoint;
a checkpoint only records how many of them it holds (``messages_count``), or, once a fork
or an edit rewrote the session, which archived list holds them (``messages_archive``, a
``graph_channel_values`` version).  Every other channel value is a versioned blob,
written when its version changes; ``graph_writes`` holds the pending writes of a step.

Every row hangs off its session (``ON DELETE CASCADE``): deleting the thread, the session
or the user's data deletes the checkpoints too, and on Citus the tables are distributed
beside ``sessions``.  Blobs and writes are sealed under the session's data key when the
storage encrypts (``key_id``; NULL: plaintext).  The app role reads and writes them; the
analytics role never sees them.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0024"
down_revision: str | Sequence[str] | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SESSION_FK = "REFERENCES sessions (session_id) ON DELETE CASCADE"
_KEY_FK = "REFERENCES data_keys (key_id) DEFERRABLE INITIALLY DEFERRED"

_TABLES = (
    f"""
CREATE TABLE graph_checkpoints (
    session_id text NOT NULL CONSTRAINT fk_graph_checkpoints_session_id_sessions {_SESSION_FK},
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    parent_checkpoint_id text,
    checkpoint_type text NOT NULL,
    checkpoint bytea NOT NULL,
    metadata jsonb NOT NULL,
    messages_count integer,
    messages_archive text,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pk_graph_checkpoints PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id),
    CONSTRAINT ck_graph_checkpoints_messages CHECK (
        messages_archive IS NULL OR messages_count IS NOT NULL)
)""",
    f"""
CREATE TABLE graph_channel_values (
    session_id text NOT NULL
        CONSTRAINT fk_graph_channel_values_session_id_sessions {_SESSION_FK},
    checkpoint_ns text NOT NULL,
    channel text NOT NULL,
    version text NOT NULL,
    value_type text NOT NULL,
    value bytea,
    key_id bigint CONSTRAINT fk_graph_channel_values_key_id_data_keys {_KEY_FK},
    CONSTRAINT pk_graph_channel_values PRIMARY KEY (session_id, checkpoint_ns, channel, version)
)""",
    f"""
CREATE TABLE graph_writes (
    session_id text NOT NULL CONSTRAINT fk_graph_writes_session_id_sessions {_SESSION_FK},
    checkpoint_ns text NOT NULL,
    checkpoint_id text NOT NULL,
    task_id text NOT NULL,
    idx integer NOT NULL,
    channel text NOT NULL,
    value_type text NOT NULL,
    value bytea NOT NULL,
    task_path text NOT NULL,
    key_id bigint CONSTRAINT fk_graph_writes_key_id_data_keys {_KEY_FK},
    CONSTRAINT pk_graph_writes PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id, task_id, idx)
)""",
)

_ROLES = """
DO $$
DECLARE
    v_owner text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'owner'));
    v_app text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'app'));
    v_table text;
BEGIN
    FOREACH v_table IN ARRAY ARRAY['graph_checkpoints', 'graph_channel_values', 'graph_writes']
    LOOP
        IF v_owner IS NOT NULL THEN
            EXECUTE 'ALTER TABLE ' || v_table || ' OWNER TO ' || v_owner;
        END IF;
        IF v_app IS NOT NULL THEN
            EXECUTE 'GRANT SELECT, INSERT, UPDATE, DELETE ON ' || v_table || ' TO ' || v_app;
        END IF;
    END LOOP;
END
$$"""


def upgrade() -> None:
    for table in _TABLES:
        op.execute(table)
    # list() across threads and delete_for_runs look checkpoints up by run.
    op.execute(
        "CREATE INDEX ix_graph_checkpoints_run_id ON graph_checkpoints ((metadata ->> 'run_id'))"
    )
    op.execute(_ROLES)


def downgrade() -> None:
    op.execute("DROP TABLE graph_writes, graph_channel_values, graph_checkpoints")
