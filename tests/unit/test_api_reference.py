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


def _python_handler_options() -> dict[str, Any]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
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
    subprocess.run(
        [mkdocs, "build", "--strict", "--quiet", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        check=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    page = (tmp_path / "api" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", page)
    assert "expected_version: int | None = None" in text.replace("&nbsp;", " ")
