"""scripts/lint-migrations: squawk on the SQL each checked revision really runs.

Example revisions go into a copy of alembic/ on top of its head (the real tree is never
touched): bad ones (a constraint without NOT VALID, an index built without CONCURRENTLY
on messages, NOT VALID validated in the same transaction, a backfill in the ALTER's
transaction) must be reported rule by rule, and good ones (the same changes done the way
issue 47 asks) must pass, which also proves the linter sees the transactions the
revisions really ran in.  The linter runs as CI runs it, a subprocess, on the tests'
PostgreSQL server.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.migrations.checked_revisions import (
    NOT_CHECKED,
    checked_revisions,
    head_of,
    ordered_revisions,
    revision_source,
    scripts_with,
)
from tests.pg_harness import PgTestServer

ROOT = Path(__file__).resolve().parents[2]
LINTER = ROOT / "scripts" / "lint-migrations"
BACKFILL_RULE = "ctxstore/backfill-in-ddl-transaction"


def squawk_or_skip() -> None:
    """Skip, saying why, where the linter would find no squawk (it looks the same way)."""
    candidates = [os.environ.get("SQUAWK"), str(ROOT / ".tools/node_modules/.bin/squawk")]
    if not any(c and os.access(c, os.X_OK) for c in candidates) and not shutil.which("squawk"):
        pytest.skip(
            "no squawk (scripts/install-squawk puts it in .tools/, as .ci/run does; or set SQUAWK)"
        )


def lint(
    server: PgTestServer, tmp_path: Path, *arguments: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the linter; its result and its JSON report ({} when it wrote none)."""
    report = tmp_path / "lint.json"
    done = subprocess.run(
        [
            sys.executable,
            str(LINTER),
            "--server-url",
            server.url.render_as_string(hide_password=False),
            "--json",
            str(report),
            *arguments,
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    print(done.stdout, done.stderr)
    found = json.loads(report.read_text(encoding="utf-8")) if report.exists() else {}
    return done, found


def rules_of(report: dict[str, Any], revision: str) -> list[str]:
    return sorted(finding["rule"] for finding in report[revision]["findings"])


def statements_of(report: dict[str, Any], revision: str, start: str) -> list[dict[str, Any]]:
    """The statements ``revision`` ran that start with ``start``."""
    return [s for s in report[revision]["statements"] if s["sql"].strip().startswith(start)]


def transaction_of(report: dict[str, Any], revision: str, start: str) -> int | None:
    """The transaction the one statement starting with ``start`` ran in (None: none)."""
    [statement] = statements_of(report, revision, start)
    transaction: int | None = statement["transaction"]
    return transaction


# Each bad revision does on messages what issue 47 forbids; each statement breaks one rule.
BAD_WITHOUT_NOT_VALID = """
    op.execute("ALTER TABLE messages ADD CONSTRAINT ck_messages_lint_seq CHECK (seq < 2000000000)")
    op.execute("CREATE INDEX ix_messages_lint_role ON messages (role)")
"""
BAD_IN_ONE_TRANSACTION = """
    op.execute(
        "ALTER TABLE messages ADD CONSTRAINT ck_messages_lint_role CHECK (role <> '') NOT VALID"
    )
    op.execute("ALTER TABLE messages VALIDATE CONSTRAINT ck_messages_lint_role")
    op.execute("ALTER TABLE messages ADD COLUMN lint_note text")
    op.execute("UPDATE messages SET lint_note = role")
"""
# The same changes done as issue 47 asks: NOT VALID, then VALIDATE in a later transaction
# (the next revision's: one outside any transaction would be left half-done by a failed
# run, squawk's prefer-robust-stmts); the index CONCURRENTLY and the backfill in batches,
# each its own transaction, outside the DDL's.
GOOD_CONSTRAINT = """
    op.execute(
        "ALTER TABLE messages ADD CONSTRAINT ck_messages_lint_seq CHECK (seq < 2000000000) "
        "NOT VALID"
    )
    op.execute("ALTER TABLE messages ADD COLUMN lint_note text")
"""
GOOD_VALIDATE_INDEX_AND_BACKFILL = """
    op.execute("ALTER TABLE messages VALIDATE CONSTRAINT ck_messages_lint_seq")
    with op.get_context().autocommit_block():
        op.execute(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS ix_messages_lint_role ON messages (role)"
        )
        while op.get_bind().execute(BATCH).rowcount:
            pass
"""
BATCH = """
from sqlalchemy import text

BATCH = text(
    "UPDATE messages SET lint_note = role WHERE ctid = ANY(ARRAY("
    "SELECT ctid FROM messages WHERE lint_note IS NULL LIMIT 1000))"
)
"""
UNDO = "pass  # the linter checks upgrades only"


def with_examples(tmp_path: Path, kind: str) -> Path:
    """A copy of alembic/ with two example revisions of ``kind`` on top of its head."""
    first, second = {
        "bad": (BAD_WITHOUT_NOT_VALID, BAD_IN_ONE_TRANSACTION),
        "good": (GOOD_CONSTRAINT, GOOD_VALIDATE_INDEX_AND_BACKFILL),
    }[kind]
    head = head_of()
    return scripts_with(
        tmp_path,
        {
            f"{kind}_1": revision_source(f"{kind}_1", head, first, UNDO),
            f"{kind}_2": revision_source(f"{kind}_2", f"{kind}_1", second, UNDO, BATCH),
        },
    )


def test_the_checked_revisions_of_the_tree_are_computed_and_pass(
    pg_server: PgTestServer, tmp_path: Path
) -> None:
    """Every revision but the pre-release ones and the baseline is checked (none today)."""
    tree = ordered_revisions()
    checked = checked_revisions()
    print(f"revisions in the tree: {len(tree)}, checked: {checked or 'none'}")
    assert checked == [revision for revision in tree if revision not in NOT_CHECKED]
    assert {f"{n:04d}" for n in range(1, 27)} | {"1000"} <= NOT_CHECKED
    if checked:
        squawk_or_skip()
    done, report = lint(pg_server, tmp_path)
    assert f"revisions to lint: {', '.join(checked) or 'none'} " in done.stdout
    assert done.returncode == 0
    assert {revision: rules_of(report, revision) for revision in report} == {
        revision: [] for revision in checked
    }


def test_squawk_reports_each_bad_revision_rule_by_rule(
    pg_server: PgTestServer, tmp_path: Path
) -> None:
    """Found as checked revisions without being named: any revision after the head is."""
    squawk_or_skip()
    location = with_examples(tmp_path, "bad")
    assert checked_revisions(location) == [*checked_revisions(), "bad_1", "bad_2"]

    done, report = lint(pg_server, tmp_path, "--script-location", str(location))

    assert done.returncode == 1
    assert rules_of(report, "bad_1") == [
        "constraint-missing-not-valid",
        "require-concurrent-index-creation",
    ]
    assert rules_of(report, "bad_2") == ["constraint-missing-not-valid", BACKFILL_RULE]
    flagged = [finding["statement"] for finding in report["bad_1"]["findings"]]
    assert flagged == [
        "ALTER TABLE messages ADD CONSTRAINT ck_messages_lint_seq CHECK (seq < 2000000000)",
        "CREATE INDEX ix_messages_lint_role ON messages (role)",
    ]
    assert "== bad_1: " in done.stdout and "constraint-missing-not-valid" in done.stdout


def test_the_good_revisions_pass_and_run_where_the_linter_says(
    pg_server: PgTestServer, tmp_path: Path
) -> None:
    """Named with --revisions: the VALIDATE ran in a later transaction than the ALTER,
    the index and the backfill outside any, as recorded, which is why they pass."""
    squawk_or_skip()
    location = with_examples(tmp_path, "good")

    done, report = lint(
        pg_server, tmp_path, "--script-location", str(location), "--revisions", "good_2,good_1"
    )

    assert done.returncode == 0, done.stdout
    assert rules_of(report, "good_1") == [] and rules_of(report, "good_2") == []
    alter = transaction_of(report, "good_1", "ALTER TABLE messages ADD CONSTRAINT")
    assert alter is not None
    assert transaction_of(report, "good_1", "ALTER TABLE messages ADD COLUMN") == alter
    validate = transaction_of(report, "good_2", "ALTER TABLE messages VALIDATE")
    assert validate is not None and validate != alter
    assert transaction_of(report, "good_2", "CREATE INDEX CONCURRENTLY") is None
    backfills = statements_of(report, "good_2", "UPDATE messages")
    assert backfills and all(statement["transaction"] is None for statement in backfills)


def test_a_revision_not_in_the_tree_is_refused(pg_server: PgTestServer, tmp_path: Path) -> None:
    done, _report = lint(pg_server, tmp_path, "--revisions", "no_such_revision")
    assert done.returncode == 2
    assert "no_such_revision" in done.stderr
