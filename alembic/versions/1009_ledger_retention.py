"""The ledger of contracts as a retention class of its own: ``ctxstore retention set
ledger DAYS``, applied by ``ctxstore purge-expired``.

Issue 52, item 5.  ``contract_chains`` gains ``first_entry`` (a constant default: no
rewrite), the retention periods' CHECK admits ``ledger`` (added ``NOT VALID``, validated
in a transaction of its own, on a table of a few rows), and ``ctxstore_purge_ledger_v1``
purges a chain (``frozen/1009-ledger-retention.sql`` says how a purged chain
still verifies, and how holds are kept).  The previous release purges no ledger and
writes chains whose ``first_entry`` is the default.

Downgrade: the ledger's period deleted, the CHECK as revision 1007 made it, the function
and the column dropped: a purged chain's head then reads as removed, so a downgrade after
a purge is the owner's to decide, like any downgrade.

Revision ID: 1009
Revises: 1008
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

revision: str = "1009"
down_revision: str | Sequence[str] | None = "1008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)
CHECK = "ck_ctxstore_retention_periods_data_class_known"
KINDS_1007 = "'messages', 'summaries', 'state_history', 'profiles'"


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1009-ledger-retention.sql"))
    with op.get_context().autocommit_block():
        op.execute(f"ALTER TABLE ctxstore_retention_periods VALIDATE CONSTRAINT {CHECK}")


def downgrade() -> None:
    op.execute("DELETE FROM ctxstore_retention_periods WHERE data_class = 'ledger'")
    op.execute(f"ALTER TABLE ctxstore_retention_periods DROP CONSTRAINT {CHECK}")
    op.execute(
        f"ALTER TABLE ctxstore_retention_periods ADD CONSTRAINT {CHECK} "
        f"CHECK (data_class = ANY (ARRAY[{KINDS_1007}]))"
    )
    op.execute("DROP FUNCTION ctxstore_purge_ledger_v1(text, interval, boolean)")
    op.execute("ALTER TABLE contract_chains DROP COLUMN first_entry")
