"""Encryption at rest: data keys, and a sealed value and its key on each private row.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-10

``data_keys`` holds one current data key per owner (a user, or a session without one),
wrapped by a master key that never reaches the database.  messages, summaries,
consultation_states, consultation_state_history and user_profiles gain ``key_id`` and
``sealed`` (both NULL on a plaintext row).  Adding nullable columns without a default
changes only the catalog: no table is rewritten.  Encryption stays off until the
application turns it on; existing rows stay readable as they are.

The downgrade refuses while any row is sealed: dropping the columns would destroy it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa
from alembic import op
from alembic.util import load_python_file

# What it used of ctxstore, frozen beside it: a revision imports no ctxstore module.
_frozen = load_python_file(Path(__file__).parents[1] / "frozen", "roles.py")
adopt, MigrationError = _frozen.adopt, _frozen.MigrationError

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
SEALED_TABLES = (
    "messages",
    "summaries",
    "consultation_states",
    "consultation_state_history",
    "user_profiles",
)


def upgrade() -> None:
    op.create_table(
        "data_keys",
        sa.Column("key_id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("owner", sa.Text(), nullable=False),
        sa.Column("master_key_id", sa.Text(), nullable=False),
        sa.Column("wrapped", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("retired_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_data_keys")),
    )
    op.create_index(
        "ix_data_keys_current_owner",
        "data_keys",
        ["owner"],
        unique=True,
        postgresql_where=sa.text("retired_at IS NULL"),
    )
    op.create_index("ix_data_keys_owner", "data_keys", ["owner"])
    adopt(op.execute, "data_keys")  # the owner role's; the app role reads and writes it
    for table in SEALED_TABLES:
        op.add_column(table, sa.Column("key_id", sa.BigInteger(), nullable=True))
        op.add_column(table, sa.Column("sealed", sa.LargeBinary(), nullable=True))
        op.create_check_constraint(
            op.f(f"ck_{table}_sealed_with_key"), table, "(key_id IS NULL) = (sealed IS NULL)"
        )


def downgrade() -> None:
    bind = op.get_bind()
    sealed = {
        table: bind.execute(
            sa.text(f"SELECT count(*) FROM {table} WHERE key_id IS NOT NULL")
        ).scalar_one()
        for table in SEALED_TABLES
    }
    if any(sealed.values()):
        counts = ", ".join(f"{count} in {table}" for table, count in sealed.items() if count)
        raise MigrationError(
            f"cannot downgrade below 0009: sealed rows ({counts}) would be destroyed; "
            "they can only be read with encryption on"
        )
    for table in SEALED_TABLES:
        op.drop_constraint(op.f(f"ck_{table}_sealed_with_key"), table, type_="check")
        op.drop_column(table, "sealed")
        op.drop_column(table, "key_id")
    op.drop_table("data_keys")
