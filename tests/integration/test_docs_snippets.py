"""Every Python block of docs/*.md runs as pasted, as a program of its own, and prints
what it is expected to; every shell block runs too, or is a deployment recipe named here
with what it needs (issue 28: docs that run).

Each Python block runs in a fresh namespace (``python snippet.py``), with
``CTXSTORE_DATABASE_URL`` naming a database at the head revision, as ``ctxstore dev``
prints it; each shell block in ``bash -e`` from the repository's root with the same
variable.  A new block fails ``test_every_block_is_accounted_for`` until it is listed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import URL

from ctxstore.db.migrations import alembic_config, head_revision

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
_SHELL = re.compile(r"^```(?:sh|bash)\n(.*?)^```", re.M | re.S)

#: (page, block index on the page) -> what the block prints.
EXPECTED: dict[tuple[str, int], str] = {
    ("guide.md", 0): "True 1\n",
    ("guide.md", 1): "2 1 1 1 3\n",
    ("guide.md", 2): "['My knee hurts.', 'Since when?']\n",
    ("guide.md", 3): "['My knee hurts.']\n",
    ("guide.md", 4): "8 True True\n",  # keep_recent=8, the rest summarized
    ("guide.md", 5): "1\n",
    ("context-contract.md", 0): "1 True\n",
    ("legacy-formats.md", 0): "ctx:session:docs-go-layout ['膝盖']\n",
    ("models.md", 0): "o200k_base\nTrue 30\nTrue 4\n",
    ("langgraph.md", 0): "['My knee hurts.', 'Since when? (My knee hurts.)']\n",
    ("production.md", 0): "PostgresStorage\n",
    ("production.md", 1): "at head True\n",
    ("telemetry.md", 0): "",
    ("ledger.md", 0): "True chatcmpl-123\n",
}


#: Shell blocks the suite runs: (page, index) -> a line their output must hold.
SHELL_RUN: dict[tuple[str, int], str] = {
    ("guide.md", 2): '"consultations": 200',
    # ``downgrade -1`` from head says where it went: the head's down_revision, or base
    ("guide.md", 3): "is at revision "
    + str(
        ScriptDirectory.from_config(alembic_config()).get_revision(head_revision()).down_revision
        or "base"
    ),
    ("models.md", 0): "recounted",
    ("ledger.md", 0): "ledger intact",
}
#: Shell blocks that deploy something this suite can't be: what each needs.
SHELL_RECIPES: dict[tuple[str, int], str] = {
    ("citus.md", 0): "a Citus coordinator (tests/citus runs the same commands on one)",
    ("guide.md", 0): "an install from a clone, then a server that runs until stopped",
    ("guide.md", 1): "a running ctxstore serve and its token (tests/http/test_live.py)",
    ("guide.md", 4): "a PgBouncer, a migrator login and a replica (tests/integration)",
    ("http.md", 0): "an install from a clone, then a server that runs until stopped",
    ("install.md", 0): "a clone's parent folder (scripts/check-package installs the wheel)",
    ("models.md", 1): "a summarizer of your own (tests/integration/test_summaries.py runs one)",
    ("telemetry.md", 0): "an install from a clone",
    ("threat-model.md", 0): "a real user's id and the migrator's login",
    ("turn-cost.md", 0): "a second checkout of the repository to compare with",
}


def blocks(pattern: re.Pattern[str] = _BLOCK) -> list[tuple[str, int, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for index, code in enumerate(pattern.findall(page.read_text("utf-8"))):
            found.append((page.name, index, code))
    return found


def test_every_block_is_accounted_for() -> None:
    assert {(page, index) for page, index, _ in blocks()} == set(EXPECTED)
    shell = {(page, index) for page, index, _ in blocks(_SHELL)}
    assert shell == set(SHELL_RUN) | set(SHELL_RECIPES)
    assert not set(SHELL_RUN) & set(SHELL_RECIPES)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("page", "index", "code"),
    [block for block in blocks(_SHELL) if block[:2] in SHELL_RUN],
    ids=[f"{p}-{i}" for p, i, _ in blocks(_SHELL) if (p, i) in SHELL_RUN],
)
def test_the_shell_block_runs_as_pasted(
    page: str, index: int, code: str, database_url: URL
) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "CTXSTORE_DATABASE_URL": database_url.render_as_string(hide_password=False),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", code],
        cwd=DOCS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert SHELL_RUN[(page, index)] in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("page", "index", "code"), blocks(), ids=[f"{p}-{i}" for p, i, _ in blocks()]
)
def test_the_block_runs_as_pasted(
    page: str,
    index: int,
    code: str,
    database_url: URL,
    redis_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CTXSTORE_DATABASE_URL", database_url.render_as_string(hide_password=False))
    monkeypatch.setenv("CTXSTORE_REDIS_URL", redis_url)
    monkeypatch.delenv("CTXSTORE_REPLICA_DATABASE_URL", raising=False)
    exec(compile(code, str(DOCS / page), "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out == EXPECTED[(page, index)]
