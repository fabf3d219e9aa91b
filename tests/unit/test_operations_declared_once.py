"""The storage operations, declared by the VersionedStorage Protocol, are the ones Store
and FallbackStorage offer, each with the Protocol's very parameters (issue 48, item 2).

mypy already holds both to the Protocol's types; this holds the rest at test time: no
operation offered by one and not the others, no parameter renamed, reordered, made
keyword-only or given another default on one side.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from ctxstore import FallbackStorage, MemoryStorage, PostgresStorage, RedisStorage, Store
from ctxstore.storage.base import ContextStorage, VersionedStorage


def operations(kind: type) -> dict[str, Callable[..., Any]]:
    """The public methods of ``kind``, by name (properties and dunders left out)."""
    return {
        name: member
        for name, member in inspect.getmembers(kind, inspect.isfunction)
        if not name.startswith("_")
    }


def declared() -> dict[str, Callable[..., Any]]:
    found = operations(VersionedStorage)
    assert set(operations(ContextStorage)) <= set(found)
    return found


def parameters(method: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    """Each parameter's name, kind and default: what a caller's call depends on."""
    return [
        (parameter.name, parameter.kind, parameter.default)
        for parameter in inspect.signature(method).parameters.values()
    ]


@pytest.mark.parametrize("kind", [Store, FallbackStorage])
def test_every_declared_operation_is_offered_with_its_parameters(kind: type) -> None:
    offered = operations(kind)
    for name, method in declared().items():
        assert name in offered, f"{kind.__name__} lacks {name}"
        assert parameters(offered[name]) == parameters(method), f"{kind.__name__}.{name}"


def test_what_both_offer_is_declared() -> None:
    """Beyond the Protocol, each offers what is its own (a fallback's journal and probes,
    a store's applied write ids): an operation both have is a declared one."""
    shared = set(operations(Store)) & set(operations(FallbackStorage))
    assert shared - set(declared()) == set()


@pytest.mark.parametrize("backend", [MemoryStorage, PostgresStorage, RedisStorage])
def test_backends_implement_the_hooks_not_the_operations(backend: type) -> None:
    """A backend overrides Store's private hooks only: the rules (limits, ids, tracing)
    stay in Store's one public method per operation."""
    overridden = {name for name in declared() if name in vars(backend) and name != "close"}
    assert overridden == set()
