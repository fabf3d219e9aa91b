"""The frameworks are optional: ctxstore never imports them unless an adapter is used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

FRAMEWORKS = ("langchain_core", "langsmith", "agents", "openai", "langgraph")


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return result.stdout.strip().splitlines()[-1]


def test_ctxstore_and_its_backends_import_no_framework() -> None:
    code = (
        "import ctxstore, ctxstore.adapters, ctxstore.cli\n"
        "ctxstore.PostgresStorage, ctxstore.RedisStorage, ctxstore.FallbackStorage\n"
        "import json, sys\n"
        f"print(json.dumps([m for m in {FRAMEWORKS!r} if m in sys.modules]))"
    )
    assert json.loads(_run(code)) == []


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [
        ("langchain", "langchain_core", "langchain"),
        ("agents", "agents", "agents"),
        ("langgraph", "langgraph", "langgraph"),
    ],
)
def test_an_adapter_without_its_framework_says_which_extra(
    adapter: str, framework: str, extra: str
) -> None:
    code = (
        "import sys, json\n"
        f"sys.modules[{framework!r}] = None  # as if it were not installed\n"
        "from ctxstore.errors import ConfigurationError\n"
        "try:\n"
        f"    import ctxstore.adapters.{adapter}\n"
        "except ImportError as error:\n"
        "    print(json.dumps([type(error).__name__, isinstance(error, ConfigurationError),"
        " str(error)]))\n"
    )
    name, is_configuration_error, message = json.loads(_run(code))

    assert (name, is_configuration_error) == ("MissingExtraError", True)
    assert f"pip install 'ctxstore[{extra}]'" in message
