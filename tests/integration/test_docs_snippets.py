"""Every Python block of docs/*.md runs as pasted, as a program of its own, and prints
what it is expected to (issue 28: docs that run).

Each runs in a fresh namespace (``python snippet.py``), with ``CTXSTORE_DATABASE_URL``
naming a database at the head revision, as ``ctxstore dev`` prints it.  A new block
fails ``test_every_block_is_run`` until its output is written down here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import URL

DOCS = Path(__file__).resolve().parents[2] / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)

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
    ("production.md", 0): "PostgresStorage\n",
    ("telemetry.md", 0): "",
}


def blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for index, code in enumerate(_BLOCK.findall(page.read_text("utf-8"))):
            found.append((page.name, index, code))
    return found


def test_every_block_is_run() -> None:
    assert {(page, index) for page, index, _ in blocks()} == set(EXPECTED)


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
