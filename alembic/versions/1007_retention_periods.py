"""Retention periods by kind of data: how long messages, summaries, state history and
profiles are kept, set by the owner, applied by ``ctxstore purge-expired``.

Issue 51, item 3.  A new table, small, with no reference to the session tables:
``frozen/1007-retention-periods.sql`` says what each kind's period removes.  The app role
reads it (the purge runs as the app role); only the owner sets it.  The previous
release's purge reads no period: it purges as it did.

Downgrade: the table dropped, with the periods set.

Revision ID: 1007
Revises: 1006
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

revision: str = "1007"
down_revision: str | Sequence[str] | None = "1006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1007-retention-periods.sql"))


def downgrade() -> None:
    op.execute("DROP TABLE ctxstore_retention_periods")
