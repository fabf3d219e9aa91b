"""Messages without their foreign key to sessions: the deletes and inserts do its work.

The key cost every turn two referential-integrity queries and a row lock record on the
session row the append had just updated (docs/design.md, "What the hot table pays for, per
turn"). What it guarded, no message outliving its session, the functions now guard
(``frozen/1001-messages-without-session-key.sql``): a delete removes the session's messages
after its row, and an insert holds the session row, so a delete waits for it or it finds no
row (a race of 10,000 rounds in ``tests/migrations/test_1001_messages_without_session_key``).

Upgrade, in one transaction: the functions replaced in place (same signatures: the
previous release's processes call them unchanged), then the key dropped. Dropping it takes
both tables' ACCESS EXCLUSIVE lock for a catalog change; they are taken sessions first, as
an append takes them, or the two deadlock.

Downgrade: the key back ``NOT VALID`` (checked for new rows from then on) with the baseline's
functions, which rely on its cascade; then, each in its own transaction, the messages left
without a session deleted and the key validated, neither blocking the writers.

Revision ID: 1001
Revises: 1000
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

revision: str = "1001"
down_revision: str | Sequence[str] | None = "1000"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)
KEY = "fk_messages_session_id_sessions"
REPLACED = (
    "ctxstore_insert_messages_v2",
    "ctxstore_insert_messages_v1",
    "ctxstore_delete_session_v1",
    "ctxstore_purge_batch_v1",
    "ctxstore_erase_user_sessions_v2",
)


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1001-messages-without-session-key.sql"))
    op.execute("LOCK TABLE sessions, messages IN ACCESS EXCLUSIVE MODE")
    op.execute(f"ALTER TABLE messages DROP CONSTRAINT {KEY}")


def downgrade() -> None:
    op.execute("LOCK TABLE sessions, messages IN SHARE ROW EXCLUSIVE MODE")
    op.execute(
        f"ALTER TABLE messages ADD CONSTRAINT {KEY} FOREIGN KEY (session_id) "
        "REFERENCES sessions (session_id) ON DELETE CASCADE NOT VALID"
    )
    _definitions.execute(_definitions.replacing_definitions("schema-baseline.sql", REPLACED))
    with op.get_context().autocommit_block():
        # Only a direct write could have left one; the key now refuses any new one.
        op.execute(
            "DELETE FROM messages AS m "
            "WHERE NOT EXISTS (SELECT FROM sessions AS s WHERE s.session_id = m.session_id)"
        )
        op.execute(f"ALTER TABLE messages VALIDATE CONSTRAINT {KEY}")
