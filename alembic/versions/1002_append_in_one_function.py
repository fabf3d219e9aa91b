"""ctxstore_append_v7 in one function: no call through v6, v2 and insert_messages_v1.

To read what an append does, one read four functions; the steps v7 took through
``ctxstore_append_v6``, ``ctxstore_append_v2`` and ``ctxstore_insert_messages_v1`` are now
its own (``frozen/1002-append-in-one-function.sql``), with the same signature and results,
so the previous release's processes call it unchanged. A new session's messages are
inserted with their nanoseconds at once, not updated after.

The three it called stay, kept by the retirement rule until release 1.1 drops them: a call
of the old v7 begun before this revision commits may still reach them. Only functions
change: no table is locked.

Revision ID: 1002
Revises: 1001
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic.util import load_python_file

revision: str = "1002"
down_revision: str | Sequence[str] | None = "1001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1002-append-in-one-function.sql"))


def downgrade() -> None:
    _definitions.execute(
        _definitions.replacing_definitions("schema-baseline.sql", ["ctxstore_append_v7"])
    )
