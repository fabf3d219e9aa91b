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

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0024"
down_revision: str | Sequence[str] | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# With op.create_table, on Citus each table is distributed beside sessions before its keys
# are added (ctxstore.db.distribute.KeptDistributed): a key from a plain table to the
# sharded sessions would be refused.
def _session_key(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["session_id"],
        ["sessions.session_id"],
        ondelete="CASCADE",
        name=op.f(f"fk_{table}_session_id_sessions"),
    )


def _data_key(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["key_id"],
        ["data_keys.key_id"],
        deferrable=True,
        initially="DEFERRED",
        name=op.f(f"fk_{table}_key_id_data_keys"),
    )


def _create_tables() -> None:
    op.create_table(
        "graph_checkpoints",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", sa.Text(), nullable=False),
        sa.Column("parent_checkpoint_id", sa.Text(), nullable=True),
        sa.Column("checkpoint_type", sa.Text(), nullable=False),
        sa.Column("checkpoint", sa.LargeBinary(), nullable=False),
        sa.Column("metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("messages_count", sa.Integer(), nullable=True),
        sa.Column("messages_archive", sa.Text(), nullable=True),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "messages_archive IS NULL OR messages_count IS NOT NULL",
            name=op.f("ck_graph_checkpoints_messages"),
        ),
        _session_key("graph_checkpoints"),
        sa.PrimaryKeyConstraint(
            "session_id", "checkpoint_ns", "checkpoint_id", name=op.f("pk_graph_checkpoints")
        ),
    )
    op.create_table(
        "graph_channel_values",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("value_type", sa.Text(), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=True),
        sa.Column("key_id", sa.BigInteger(), nullable=True),
        _session_key("graph_channel_values"),
        _data_key("graph_channel_values"),
        sa.PrimaryKeyConstraint(
            "session_id",
            "checkpoint_ns",
            "channel",
            "version",
            name=op.f("pk_graph_channel_values"),
        ),
    )
    op.create_table(
        "graph_writes",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("checkpoint_ns", sa.Text(), nullable=False),
        sa.Column("checkpoint_id", sa.Text(), nullable=False),
        sa.Column("task_id", sa.Text(), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("channel", sa.Text(), nullable=False),
        sa.Column("value_type", sa.Text(), nullable=False),
        sa.Column("value", sa.LargeBinary(), nullable=False),
        sa.Column("task_path", sa.Text(), nullable=False),
        sa.Column("key_id", sa.BigInteger(), nullable=True),
        _session_key("graph_writes"),
        _data_key("graph_writes"),
        sa.PrimaryKeyConstraint(
            "session_id",
            "checkpoint_ns",
            "checkpoint_id",
            "task_id",
            "idx",
            name=op.f("pk_graph_writes"),
        ),
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
    _create_tables()
    # list() across threads and delete_for_runs look checkpoints up by run.
    op.execute(
        "CREATE INDEX ix_graph_checkpoints_run_id ON graph_checkpoints ((metadata ->> 'run_id'))"
    )
    op.execute(_ROLES)


def downgrade() -> None:
    op.execute("DROP TABLE graph_writes, graph_channel_values, graph_checkpoints")
