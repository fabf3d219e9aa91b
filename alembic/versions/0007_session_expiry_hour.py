"""Every session write a HOT update: purge-expired indexes the expiry hour, not the instant.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01

With a TTL, every write moves expires_at, and an index on it made every update of the
session row a non-HOT one: a new entry in each of the row's indexes and a quarter more
WAL per turn.  A stored generated column holds the hour the session expires in; it
changes once an hour, so the index on it rarely stands in the way.  purge-expired finds
candidates by the hour and checks the instant.  Adding a stored column rewrites the
sessions table (one row per session) under its lock.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
EXPIRES_HOUR = "date_bin('1 hour', expires_at, timestamptz '2000-01-01 00:00:00+00')"


def upgrade() -> None:
    op.add_column(
        "sessions",
        sa.Column(
            "expires_hour",
            sa.DateTime(timezone=True),
            sa.Computed(EXPIRES_HOUR, persisted=True),
            nullable=True,
        ),
    )
    op.drop_index(op.f("ix_sessions_expires_at"), table_name="sessions")
    op.create_index(
        op.f("ix_sessions_expires_hour"),
        "sessions",
        ["expires_hour"],
        postgresql_where=sa.text("expires_hour IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_sessions_expires_hour"), table_name="sessions")
    op.create_index(
        op.f("ix_sessions_expires_at"),
        "sessions",
        ["expires_at"],
        postgresql_where=sa.text("expires_at IS NOT NULL"),
    )
    op.drop_column("sessions", "expires_hour")
