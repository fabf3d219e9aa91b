"""Each storage operation is declared once, by VersionedStorage (storage/store.py), and
Store and FallbackStorage offer exactly those, with their very parameters (issue 48,
item 2): the one-hook operations are inherited, routed by their Route; the few that are
more than one hook (erase_user, reader, iter_messages) are the only ones either defines.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from ctxstore import FallbackStorage, MemoryStorage, PostgresStorage, RedisStorage, Store
from ctxstore.errors import NotSupportedError
from ctxstore.storage.base import ContextStorage
from ctxstore.storage.ledger import ContractRecord, Provenance
from ctxstore.storage.store import Route, VersionedStorage


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


#: The operations that are more than one hook: each side defines its own.
MULTI_HOOK = {"erase_user", "reader", "iter_messages", "export_user", "import_user", "close"}
#: Operations VersionedStorage builds on another one, once, for every side.
BUILT_ON = {"iter_sessions": "list_sessions"}


@pytest.mark.parametrize("kind", [Store, FallbackStorage])
def test_only_the_multi_hook_operations_are_defined_twice(kind: type) -> None:
    redefined = {name for name in declared() if name in vars(kind)}
    assert redefined - {"newest"} <= MULTI_HOOK  # the fallback's newest checks its copy


class Recording(MemoryStorage):
    """Records the Route each public method hands ``_call``."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: list[Route] = []

    def _call(self, route: Route, subject: str, action: Any, journal: Any = None) -> Any:
        self.routes.append(route)
        return super()._call(route, subject, action, journal)


#: The ledger's operations: on the primary alone, as a listing (the memory store keeps none).
LEDGER = {"record_contract", "read_contract", "list_contracts", "attach_response"}
LEDGER_RECORD = ContractRecord(
    "{}", Provenance("s", "t1", None, "cl100k_base", 1, 1, 0, 0, None), None
)


async def unsupported(call: Awaitable[Any]) -> None:
    with pytest.raises(NotSupportedError):
        await call


async def first_of(items: Any) -> Any:
    async for item in items:
        return item
    return None


async def test_each_operation_hands_over_its_own_route() -> None:
    """A Route named after its operation (or the one it is built on), journaled when it
    writes, keyed by a user id exactly when its subject is one, across sessions exactly
    when it reads many: what the fallback routes by is right."""
    store = Recording()
    calls: dict[str, Callable[[], Any]] = {
        "save": lambda: store.save("s", [{"role": "user", "content": "hi"}]),
        "append": lambda: store.append("s", [{"role": "user", "content": "more"}]),
        "load": lambda: store.load("s"),
        "newest": lambda: store.newest("s", 1),
        "version": lambda: store.version("s"),
        "exists": lambda: store.exists("s"),
        "save_summary": lambda: store.save_summary("s", "short", covers_until=0),
        "load_summary": lambda: store.load_summary("s"),
        "save_state": lambda: store.save_state("s", {"stage": "intake"}),
        "load_state": lambda: store.load_state("s"),
        "state_history": lambda: store.state_history("s"),
        "save_profile": lambda: store.save_profile("u", {"age": 41}),
        "load_profile": lambda: store.load_profile("u"),
        "delete_profile": lambda: store.delete_profile("u"),
        "snapshot": lambda: store.snapshot("s"),
        "list_sessions": lambda: store.list_sessions("u"),
        "iter_sessions": lambda: first_of(store.iter_sessions("u")),
        "delete": lambda: store.delete("s"),
        "record_contract": lambda: unsupported(store.record_contract(LEDGER_RECORD)),
        "read_contract": lambda: unsupported(store.read_contract("s", "t1")),
        "list_contracts": lambda: unsupported(store.list_contracts("s")),
        "attach_response": lambda: unsupported(store.attach_response("s", "t1", "r1")),
    }
    assert set(calls) == set(declared()) - MULTI_HOOK
    writes = {"save", "append", "delete", "save_summary", "save_state", "save_profile"}
    listings = {"list_sessions", "iter_sessions"}
    for name, call in calls.items():
        store.routes.clear()
        await call()
        (route,) = store.routes
        assert route.name == BUILT_ON.get(name, name)
        assert (route.journaled is not None) == (name in writes | {"delete_profile"})
        assert route.of_user == (name.endswith("_profile") or name in listings)
        assert route.across_sessions == (name in listings | LEDGER)
