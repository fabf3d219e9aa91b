"""Sealed rows reference their data key: a write can't seal under a destroyed key.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01

A process caches an owner's current data key; if another process erases the user
(destroying the key) meanwhile, a write sealed under the cached key would be committed
and never be readable again.  A foreign key from each sealed row's ``key_id`` to
``data_keys`` makes that commit fail instead (the store then drops its cached key and
writes again under a fresh one), and makes an erasure fail rather than leave a row
sealed under a key it destroyed.

The constraints are checked at commit (DEFERRABLE INITIALLY DEFERRED): an erasure and a
session delete destroy keys and rows in either order within one transaction.  Plaintext
rows (key_id NULL) are not checked.  A partial index per table keeps the check of a key's
deletion an index lookup; plaintext rows stay out of it.

Rows written under a destroyed key before this revision (unreadable already) would fail
validation: the constraint is then left NOT VALID (enforced for every new row, not for
those) and the count is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
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

log = logging.getLogger("alembic.runtime.migration")


def upgrade() -> None:
    bind = op.get_bind()
    for table in SEALED_TABLES:
        op.create_index(
            f"ix_{table}_key_id",
            table,
            ["key_id"],
            postgresql_where=sa.text("key_id IS NOT NULL"),
        )
        name = f"fk_{table}_key_id_data_keys"
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY (key_id) "
            "REFERENCES data_keys (key_id) DEFERRABLE INITIALLY DEFERRED NOT VALID"
        )
        orphans = bind.execute(
            sa.text(
                f"SELECT count(*) FROM {table} AS t WHERE t.key_id IS NOT NULL "
                "AND NOT EXISTS (SELECT FROM data_keys AS d WHERE d.key_id = t.key_id)"
            )
        ).scalar_one()
        if orphans:
            log.warning(
                "%s: %d row(s) sealed under destroyed data keys (unreadable); %s left "
                "NOT VALID: enforced for new rows only",
                table,
                orphans,
                name,
            )
        else:
            op.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}")


def downgrade() -> None:
    for table in SEALED_TABLES:
        op.drop_constraint(f"fk_{table}_key_id_data_keys", table, type_="foreignkey")
        op.drop_index(f"ix_{table}_key_id", table_name=table)
