"""The README's Python snippets run as pasted, in order, and print what they say.

A newcomer pastes them into a file and runs it: each block here runs in a fresh
namespace of its own, as ``python snippet.py`` would, the PostgreSQL one with
``CTXSTORE_DATABASE_URL`` set to a database at the head revision (what ``ctxstore dev``
prints).  The shell blocks are the commands that run this very suite (``make test``) and
the demo (``.ci/run`` runs ``make demo``), and install lines for other machines.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy import URL

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.M | re.S)


def blocks(language: str) -> list[str]:
    return [body for lang, body in _BLOCK.findall(README.read_text("utf-8")) if lang == language]


def run_snippet(code: str) -> None:
    exec(compile(code, str(README), "exec"), {"__name__": "__main__"})


def test_the_readme_has_the_snippets_this_module_runs() -> None:
    assert len(blocks("python")) == 2
    assert all(lang in ("python", "sh") for lang, _ in _BLOCK.findall(README.read_text("utf-8")))
    assert len(README.read_text("utf-8").splitlines()) <= 150  # a front door, not a manual


def test_the_in_memory_hello_world(capsys: pytest.CaptureFixture[str]) -> None:
    run_snippet(blocks("python")[0])
    assert capsys.readouterr().out == "1 ['我膝盖有下坠感', '这种感觉持续多久了？']\n"


def test_the_postgresql_hello_world(
    database_url: URL, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CTXSTORE_DATABASE_URL", database_url.render_as_string(hide_password=False))
    snippet = blocks("python")[1]
    run_snippet(snippet)
    run_snippet(snippet)  # again, as a newcomer would: it starts afresh each time
    out = capsys.readouterr().out.splitlines()
    assert out == ["conflict; the session is at version 1", "1 collecting_details"] * 2
