"""Sessions and one row per message.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("user_id", sa.Text(), nullable=True),
        sa.Column("version", sa.BigInteger(), server_default=sa.text("0"), nullable=False),
        sa.Column("message_count", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("content_hash", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint(
            "char_length(session_id) BETWEEN 1 AND 255", name=op.f("ck_sessions_session_id_length")
        ),
        sa.CheckConstraint("message_count >= 0", name=op.f("ck_sessions_message_count_non_negative")),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_sessions")),
    )
    op.create_table(
        "messages",
        sa.Column("session_id", sa.Text(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("role", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("turn_id", sa.Text(), nullable=True),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ts_offset", sa.Integer(), nullable=True),
        sa.Column("name", sa.Text(), nullable=True),
        sa.Column("metadata", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("digest", sa.LargeBinary(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=True),
        sa.Column("format_version", sa.SmallInteger(), nullable=False),
        sa.CheckConstraint("seq >= 0", name=op.f("ck_messages_seq_non_negative")),
        sa.CheckConstraint(
            "format_version <> 2 OR role IN ('user', 'assistant', 'system', 'tool')",
            name=op.f("ck_messages_role_known"),
        ),
        sa.CheckConstraint(
            "metadata IS NULL OR jsonb_typeof(metadata) = 'object'",
            name=op.f("ck_messages_metadata_object"),
        ),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.session_id"], ondelete="CASCADE",
            name=op.f("fk_messages_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint("session_id", "seq", name=op.f("pk_messages")),
    )


def downgrade() -> None:
    op.drop_table("messages")
    op.drop_table("sessions")
