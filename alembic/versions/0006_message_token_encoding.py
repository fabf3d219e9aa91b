"""Messages record the encoding of their stored token count.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01

Counts written before this revision were made with the writer's encoding, which nothing
recorded: they stay NULL here, so readers recount those messages rather than trust a
count that may come from another encoding.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("messages", sa.Column("token_encoding", sa.Text(), nullable=True))


def downgrade() -> None:
    op.drop_column("messages", "token_encoding")
