"""The docs site's API reference (docs/api.md) covers the public API with typed signatures
(issue 48, item 5): every name of ``ctxstore.__all__`` and every exception of
``ctxstore.errors``, rendered by mkdocstrings with each signature's annotations."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

import ctxstore

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "api.md"
_DIRECTIVE = re.compile(r"^::: ([\w.]+)$", re.M)


def _documented() -> dict[str, object]:
    """Each ``::: path`` of the reference: the object it names, by its path."""
    found: dict[str, object] = {}
    for path in _DIRECTIVE.findall(REFERENCE.read_text(encoding="utf-8")):
        try:
            found[path] = importlib.import_module(path)
        except ImportError:
            module, _, name = path.rpartition(".")
            found[path] = getattr(importlib.import_module(module), name)
    return found


def test_every_public_name_has_an_entry_in_the_reference() -> None:
    """Its own ``::: module.Name``, or a module documented whole that defines it."""
    documented = _documented()
    modules = [found for found in documented.values() if isinstance(found, ModuleType)]
    for name in ctxstore.__all__:
        public = getattr(ctxstore, name)
        entries = [documented[path] for path in documented if path.rpartition(".")[2] == name]
        entries += [vars(module)[name] for module in modules if name in vars(module)]
        assert any(entry is public for entry in entries), f"docs/api.md lacks {name}"


def test_the_errors_module_is_documented_whole() -> None:
    assert "ctxstore.errors" in _documented()


class _ConfigLoader(yaml.SafeLoader):
    """mkdocs.yml as text: its ``!!python/name:`` tags (the Mermaid fence's formatter) are
    read as the names they give, not imported."""


_ConfigLoader.add_multi_constructor(
    "tag:yaml.org,2002:python/name:", lambda _loader, suffix, _node: suffix
)


def _mkdocs_config() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load(  # a SafeLoader with one tag more
        (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_ConfigLoader
    )
    return loaded


def _python_handler_options() -> dict[str, Any]:
    config = _mkdocs_config()
    plugin = next(p["mkdocstrings"] for p in config["plugins"] if isinstance(p, dict))
    options: dict[str, Any] = plugin["handlers"]["python"]["options"]
    return options


def test_signatures_are_shown_with_their_types() -> None:
    options = _python_handler_options()
    assert options["show_signature_annotations"] is True
    assert options["separate_signature"] is True
    assert options["merge_init_into_class"] is True  # a class's signature is its __init__'s


@pytest.mark.slow
def test_the_site_builds_strictly_with_typed_signatures(tmp_path: Path) -> None:
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs extra is not installed")
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs is not None
    # Not --quiet: mkdocs then neither shows nor counts the warnings --strict fails on.
    built = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr[-3000:]
    page = (tmp_path / "api.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", page)
    assert "expected_version: int | None = None" in text.replace("&nbsp;", " ")
    _every_link_opens_a_file(tmp_path)
    diagrams = (tmp_path / "http.html").read_text(encoding="utf-8")
    assert '<pre class="mermaid"><code>sequenceDiagram' in diagrams


def _every_link_opens_a_file(site: Path) -> None:
    """From file://, a link to a folder opens a listing: every link between pages names
    a file that exists."""
    broken = []
    for page in site.glob("*.html"):
        if page.name == "404.html":  # a server's page: its links are from the site's root
            continue
        for target in re.findall(r'href="([^"#?]+)', page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).is_file():
                broken.append(f"{page.name} -> {target}")
    assert not broken, broken[:10]


def test_the_site_is_browsable_from_files() -> None:
    assert _mkdocs_config()["use_directory_urls"] is False
