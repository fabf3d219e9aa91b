"""Summaries, consultation state with history, user profiles; appends may defer the hash.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _session_key() -> sa.Column[str]:
    return sa.Column("session_id", sa.Text(), nullable=False)


def _state_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("stage", sa.Text(), nullable=False),
        sa.Column("chief_complaint", sa.Text(), nullable=True),
        sa.Column(
            "body_parts",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column(
            "symptoms",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column(
            "red_flags",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column("pain_level", sa.SmallInteger(), nullable=True),
        sa.Column("duration", sa.Text(), nullable=True),
        sa.Column("document", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("format_version", sa.SmallInteger(), nullable=False),
    ]


def _now() -> sa.TextClause:
    return sa.text("now()")


def upgrade() -> None:
    op.alter_column("sessions", "content_hash", existing_type=sa.LargeBinary(), nullable=True)
    op.create_index(op.f("ix_sessions_user_id"), "sessions", ["user_id"])

    op.create_table(
        "summaries",
        _session_key(),
        sa.Column("summary_version", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("covers_until", sa.Integer(), nullable=False),
        sa.Column("token_count", sa.Integer(), nullable=True),
        sa.Column("format_version", sa.SmallInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.CheckConstraint(
            "summary_version >= 1", name=op.f("ck_summaries_summary_version_positive")
        ),
        sa.CheckConstraint("covers_until >= -1", name=op.f("ck_summaries_covers_until_valid")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            ondelete="CASCADE",
            name=op.f("fk_summaries_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint("session_id", "summary_version", name=op.f("pk_summaries")),
    )
    op.create_table(
        "consultation_states",
        _session_key(),
        sa.Column("version", sa.BigInteger(), nullable=False),
        *_state_columns(),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.CheckConstraint("version >= 1", name=op.f("ck_consultation_states_version_positive")),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            ondelete="CASCADE",
            name=op.f("fk_consultation_states_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_consultation_states")),
    )
    op.create_table(
        "consultation_state_history",
        _session_key(),
        sa.Column("version", sa.BigInteger(), nullable=False),
        *_state_columns(),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.session_id"],
            ondelete="CASCADE",
            name=op.f("fk_consultation_state_history_session_id_sessions"),
        ),
        sa.PrimaryKeyConstraint(
            "session_id", "version", name=op.f("pk_consultation_state_history")
        ),
    )
    op.create_table(
        "user_profiles",
        sa.Column("user_id", sa.Text(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("age", sa.SmallInteger(), nullable=True),
        sa.Column("gender", sa.Text(), nullable=True),
        sa.Column("exercise_habit", sa.Text(), nullable=True),
        sa.Column(
            "known_limitations",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column("document", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("format_version", sa.SmallInteger(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=_now(), nullable=False),
        sa.CheckConstraint(
            "char_length(user_id) BETWEEN 1 AND 255", name=op.f("ck_user_profiles_user_id_length")
        ),
        sa.CheckConstraint("version >= 1", name=op.f("ck_user_profiles_version_positive")),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_profiles")),
    )


def downgrade() -> None:
    op.drop_table("user_profiles")
    op.drop_table("consultation_state_history")
    op.drop_table("consultation_states")
    op.drop_table("summaries")
    op.drop_index(op.f("ix_sessions_user_id"), table_name="sessions")
    # Revision 0001 requires a hash.  One byte never equals a 32-byte SHA-256, so the next
    # save of such a session compares the stored digests instead of trusting a hash.
    op.execute("UPDATE sessions SET content_hash = '\\x00'::bytea WHERE content_hash IS NULL")
    op.alter_column("sessions", "content_hash", existing_type=sa.LargeBinary(), nullable=False)
