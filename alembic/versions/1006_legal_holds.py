"""Legal holds: what a hold covers, no purge, deletion or erasure removes.

Issue 51, item 4: a hold on a user or on a session, placed and lifted by the owner
(``ctxstore hold``), recorded with who and when.  The new table ``legal_holds`` is
small; the app role may read it, not write it.  The three functions every process calls
to delete (``ctxstore_delete_session_v1``, ``ctxstore_purge_batch_v1``,
``ctxstore_erase_user_sessions_v2``) are replaced in place, signatures unchanged, to
respect holds: the previous release's processes call them too, and a hold must bind them
from the moment it is placed, not from their upgrade.  What they do for a session under
no hold is what they did.  ``frozen/1006-legal-holds.sql`` says how the races are closed.

Downgrade: the three functions as revision 1001 left them, then the holds (and the
function reading them) dropped: a downgrade lifts every hold, so it is the owner's to
decide, like any downgrade.

Revision ID: 1006
Revises: 1005
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

revision: str = "1006"
down_revision: str | Sequence[str] | None = "1005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)

REPLACED = (
    "ctxstore_delete_session_v1",
    "ctxstore_purge_batch_v1",
    "ctxstore_erase_user_sessions_v2",
)


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1006-legal-holds.sql"))


def downgrade() -> None:
    _definitions.execute(
        statement
        for statement in _definitions.statements("1001-messages-without-session-key.sql")
        if statement.startswith(tuple(f"CREATE OR REPLACE FUNCTION {name}(" for name in REPLACED))
    )
    op.execute("DROP FUNCTION ctxstore_holds_of_v1(text, text[])")
    op.execute("DROP TABLE legal_holds")
