"""The save's writes take message rows, as the append does: one encoding for every write.

``ctxstore_append_if_unchanged_v4`` (the save's one-statement path) and
``ctxstore_insert_messages_v3`` (its locked path) take a turn's messages as one
``ctxstore_message_row_v1`` each, as ``ctxstore_append_v7`` does, instead of fifteen
arrays (``frozen/1003-save-rows.sql``). They are new versions beside ``_v3`` and ``_v2``,
which the previous release's processes go on calling during a rolling deploy; release 1.1
drops those. Only functions are created: no table is locked.

Revision ID: 1003
Revises: 1002
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

revision: str = "1003"
down_revision: str | Sequence[str] | None = "1002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1003-save-rows.sql"))


def downgrade() -> None:
    op.execute(
        "DROP FUNCTION ctxstore_append_if_unchanged_v4(text, bigint, text, interval, integer, "
        "bytea, integer, bytea, integer, timestamptz, timestamptz, ctxstore_message_row_v1[], "
        "text[])"
    )
    op.execute(
        "DROP FUNCTION ctxstore_insert_messages_v3(text, integer, ctxstore_message_row_v1[])"
    )
