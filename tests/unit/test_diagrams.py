"""The docs' diagrams (```mermaid blocks) name only what exists: routes the OpenAPI
document has, commands the CLI parses, the fallback's real modes.  A rename that leaves a
diagram behind fails here."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import get_args

import pytest

from ctxstore.cli import build_parser
from ctxstore.storage.failover import Mode

DOCS = Path(__file__).resolve().parents[2] / "docs"
_MERMAID = re.compile(r"^```mermaid\n(.*?)^```", re.M | re.S)
_KINDS = ("sequenceDiagram", "flowchart ", "stateDiagram-v2")
_ROUTE = re.compile(r"\b(GET|PUT|POST|PATCH|DELETE|HEAD) (/[\w/{}.-]*)")
_COMMAND = re.compile(r"\bctxstore ((?:[a-z][\w-]*|--[\w-]+)(?: (?:[a-z][\w-]*|--[\w-]+))*)")


def diagrams() -> list[tuple[str, str]]:
    return [
        (page.name, code)
        for page in sorted(DOCS.glob("*.md"))
        for code in _MERMAID.findall(page.read_text(encoding="utf-8"))
    ]


def test_the_pages_that_need_one_have_their_diagrams() -> None:
    pages = {page for page, _ in diagrams()}
    # a turn over HTTP, the deployment's topology, the fallback journal
    assert {"http.md", "production.md", "design.md"} <= pages


@pytest.mark.parametrize(("page", "code"), diagrams(), ids=[p for p, _ in diagrams()])
def test_a_diagram_names_only_what_exists(page: str, code: str) -> None:
    assert code.startswith(_KINDS), f"{page}: a diagram kind this test knows: {code[:40]!r}"
    paths = json.loads((DOCS / "openapi.json").read_text(encoding="utf-8"))["paths"]
    for method, named in _ROUTE.findall(code):
        path = named.rstrip(".")
        assert path in paths, f"{page}: {path} is no route of docs/openapi.json"
        assert method.lower() in paths[path], f"{page}: {method} {path} is not served"
    for command in _COMMAND.findall(code):
        words = shlex.split(command)
        # A command as the diagram names it parses (options that take values aside).
        parser_words = [w for w in words if not w.startswith("--")]
        build_parser().parse_known_args(parser_words)
    if code.startswith("stateDiagram-v2"):  # the one state diagram: the fallback's modes
        named = set(re.findall(r"^\s*(\w+) -->", code, re.M))
        named |= set(re.findall(r"--> (\w+)", code))
        assert named == set(get_args(Mode)), f"{page}: the fallback's modes are {get_args(Mode)}"
