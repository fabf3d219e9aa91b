"""The ledger of Context Contracts: what each recorded LLM call received, chained per
session.

Issue 52.  Four new tables (``contract_chains``, ``contract_pieces``,
``contract_entries``, ``contract_responses``), empty at first, and three functions, the
app role's only way to write them (``frozen/1008-contract-ledger.sql`` says how a
contract is kept and chained).  ``ctxstore_delete_unused_retired_keys_v1`` is
replaced in place, signature unchanged, to keep a key that seals a ledger piece, in the
previous release's processes too.  The previous release records nothing, so it reads
and writes as before; its erasures leave the ledger alone.

Downgrade: the function as the baseline left it, then the ledger dropped, with every
entry recorded: it is the owner's to decide, like any downgrade.

Revision ID: 1008
Revises: 1007
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

revision: str = "1008"
down_revision: str | Sequence[str] | None = "1007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1008-contract-ledger.sql"))


def downgrade() -> None:
    _definitions.execute(
        _definitions.replacing_definitions(
            "schema-baseline.sql", ["ctxstore_delete_unused_retired_keys_v1"]
        )
    )
    op.execute("DROP FUNCTION ctxstore_erase_ledger_v1(text, text)")
    op.execute("DROP FUNCTION ctxstore_attach_response_v1(text, text, text)")
    op.execute(
        "DROP FUNCTION ctxstore_record_contract_v1(text, text, text, text, text, integer, "
        "bigint, integer, bigint, bigint, bytea[], boolean[], bytea[], text[], bigint[], "
        "bytea[], bytea)"
    )
    for table in ("contract_responses", "contract_entries", "contract_pieces", "contract_chains"):
        op.execute(f"DROP TABLE {table}")
