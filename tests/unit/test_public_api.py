"""What ``import ctxstore`` offers, and what it costs."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from importlib import import_module

import pytest

import ctxstore
from ctxstore import errors

DRIVERS = ("sqlalchemy", "asyncpg", "redis")


def _loaded_after(code: str) -> dict[str, bool]:
    """Which driver packages a fresh interpreter has loaded after running ``code``."""
    report = f"print(json.dumps({{m: m in sys.modules for m in {DRIVERS!r}}}))"
    probe = f"{code}\nimport json, sys\n{report}"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    loaded: dict[str, bool] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def test_the_memory_backend_loads_no_database_driver() -> None:
    loaded = _loaded_after(
        "import ctxstore\n"
        "from ctxstore import MemoryStorage, Message, ContextBuilder, ContextManager\n"
        "ctxstore.MemoryStorage, ctxstore.History, ctxstore.TokenBudget, ctxstore.Limits"
    )
    assert loaded == dict.fromkeys(DRIVERS, False)


def test_the_postgres_backend_is_imported_on_first_use() -> None:
    loaded = _loaded_after("import ctxstore\nctxstore.PostgresStorage")
    assert loaded["sqlalchemy"] and loaded["asyncpg"]


def test_the_top_level_is_small_enough_to_hold_in_mind() -> None:
    assert len(ctxstore.__all__) < 35


def test_every_public_name_resolves() -> None:
    assert len(ctxstore.__all__) == len(set(ctxstore.__all__))
    for name in ctxstore.__all__:
        assert getattr(ctxstore, name) is not None, name
    assert set(ctxstore.__all__) <= set(dir(ctxstore))
    namespace: dict[str, object] = {}
    exec("from ctxstore import *", namespace)
    assert set(ctxstore.__all__) <= set(namespace)


def test_the_lazy_names_are_the_backends_own() -> None:
    from ctxstore.db.engine import EngineSettings  # noqa: PLC0415
    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415
    from ctxstore.storage.fallback import FallbackStorage  # noqa: PLC0415
    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415
    from ctxstore.storage.redis import RedisStorage  # noqa: PLC0415

    assert ctxstore.PostgresStorage is PostgresStorage
    assert ctxstore.RedisStorage is RedisStorage
    assert ctxstore.FallbackStorage is FallbackStorage
    assert ctxstore.EngineSettings is EngineSettings
    assert ctxstore.Encryption is Encryption
    assert ctxstore.Keyring is Keyring


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        ctxstore.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("expected AttributeError")


def test_a_name_that_moved_says_where_it_lives_now() -> None:
    for name, module in ctxstore._MOVED.items():
        assert name not in ctxstore.__all__, name
        assert getattr(import_module(module), name) is not None, (name, module)
        with pytest.raises(AttributeError, match=f"from {module} import {name}"):
            getattr(ctxstore, name)


def test_every_exception_is_a_ctxstore_error_reached_through_ctxstore_errors() -> None:
    classes = [
        value
        for _, value in inspect.getmembers(errors, inspect.isclass)
        if issubclass(value, BaseException) and value.__module__ == errors.__name__
    ]
    assert len(classes) > 10
    for cls in classes:
        assert issubclass(cls, errors.CtxStoreError), cls
        assert (cls.__name__ in ctxstore.__all__) == (cls is errors.CtxStoreError), cls


def test_no_module_but_ctxstore_errors_defines_a_ctxstore_error() -> None:
    """Every module imported (the adapters and the HTTP service too): the CtxStoreError
    subclasses each defines."""
    code = (
        "import json, pkgutil, importlib, inspect, ctxstore\n"
        "from ctxstore.errors import CtxStoreError\n"
        "found = []\n"
        "for info in pkgutil.walk_packages(ctxstore.__path__, 'ctxstore.'):\n"
        "    if info.name.endswith('__main__'):\n"
        "        continue\n"
        "    module = importlib.import_module(info.name)\n"
        "    found += [f'{info.name}.{name}' for name, value in inspect.getmembers(module)\n"
        "              if inspect.isclass(value) and issubclass(value, CtxStoreError)\n"
        "              and value.__module__ == info.name and info.name != 'ctxstore.errors']\n"
        "print(json.dumps(found))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


def test_size_limits_share_one_class() -> None:
    assert issubclass(errors.MessageTooLargeError, errors.InvalidMessageError)
    assert issubclass(errors.MessageTooLargeError, errors.InputTooLargeError)
    assert issubclass(errors.TooManyMessagesError, errors.InputTooLargeError)
    assert issubclass(errors.InputTooLargeError, errors.InvalidInputError)
    assert issubclass(errors.InputTooLargeError, ValueError)
    error = errors.MessageTooLargeError("content is too large", position=3)
    assert error.position == 3 and str(error) == "message 3: content is too large"
    assert str(errors.TooManyMessagesError()) == (errors.TooManyMessagesError.__doc__ or "").strip()
