"""A pytest plugin that runs a framework's own tests on ctxstore's adapters.

Loaded by ``scripts/framework-suites`` (``-p framework_suites_plugin``) into a pytest run
inside an extracted sdist.  It replaces only the construction of the peer's session or
history: the names a test module imports (``SQLiteSession``, ``AsyncSQLiteSession``,
``SQLAlchemySession``, ``InMemoryChatMessageHistory``, ``PostgresChatMessageHistory``)
are bound, for each test, to stand-ins whose constructor builds the ctxstore adapter on
this test's storage.  Every assertion stays the framework's.

Each stand-in is a subclass of the adapter that accepts the peer's constructor arguments
and ignores what only the peer needs (a SQLite path, an engine, a table name, a
connection), plus the peer's lifecycle methods that are not part of the interface
(``close``; langchain-postgres's table creation): see ``_agents_stand_ins`` and
``_langchain_stand_ins``.  Sessions built in one test share that test's storage (as
SQLite sessions on one file do); each test gets a storage of its own (memory) or an
emptied database (PostgreSQL).

Configured by environment variables the script sets:

- ``CTXSTORE_SUITES_BACKEND``: ``postgres`` or ``memory``;
- ``CTXSTORE_SUITES_DATABASE_URL``: the database at the head revision (postgres);
- ``CTXSTORE_SUITES_EXTRA_NAMES``: more peer names to replace (``SimpleListSession``);
- ``CTXSTORE_SUITES_REPORT``: a file that gets one JSON line per test: its node id, its
  outcome and whether it built a ctxstore adapter.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import secrets
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

BACKEND = os.environ.get("CTXSTORE_SUITES_BACKEND", "memory")
DATABASE_URL = os.environ.get("CTXSTORE_SUITES_DATABASE_URL", "")
REPORT = os.environ.get("CTXSTORE_SUITES_REPORT", "")

#: The peer names bound to stand-ins in each test module (and, for imports made inside a
#: test, in the SDK's public packages).
_AGENTS_NAMES = (
    "SQLiteSession",
    "AsyncSQLiteSession",
    "SQLAlchemySession",
    # The runner tests' list-backed session (tests/utils/simple_session.py); only where
    # the script asks for it: tests/memory subclasses it to inject failures.
    *os.environ.get("CTXSTORE_SUITES_EXTRA_NAMES", "").split(),
)
_AGENTS_PACKAGES = ("agents", "agents.memory", "agents.extensions.memory")
_LANGCHAIN_NAMES = ("InMemoryChatMessageHistory", "PostgresChatMessageHistory")


class _TestStorage:
    """This test's storage, built on first use; ``used``: an adapter was built on it."""

    def __init__(self) -> None:
        self.storage: Any = None
        self.used = False
        self._lock = threading.Lock()

    def get(self) -> Any:
        with self._lock:
            self.used = True
            if self.storage is None:
                if BACKEND == "postgres":
                    from ctxstore.db.engine import EngineSettings  # noqa: PLC0415
                    from ctxstore.storage.postgres import PostgresStorage  # noqa: PLC0415

                    self.storage = PostgresStorage.from_url(
                        DATABASE_URL, settings=EngineSettings(pool_size=4)
                    )
                else:
                    from ctxstore.storage.memory import MemoryStorage  # noqa: PLC0415

                    self.storage = MemoryStorage()
            return self.storage

    def close(self) -> None:
        if self.storage is None:
            return
        from ctxstore.adapters import call_blocking  # noqa: PLC0415

        with contextlib.suppress(Exception):
            call_blocking(self.storage, self.storage.close)
        self.storage = None
        gc.collect()  # connections a closed test loop opened: their sockets close here


_current = _TestStorage()


def _storage() -> Any:
    return _current.get()


def _agents_stand_ins() -> dict[str, Any]:
    from ctxstore.adapters import call_blocking  # noqa: PLC0415
    from ctxstore.adapters.agents import CtxstoreSession  # noqa: PLC0415

    class StandIn(CtxstoreSession):
        """The peer's constructor (and ``from_url``); what only the peer needs (a path,
        an engine, a URL, table names) is ignored."""

        def __init__(
            self, session_id: str, *_peer: Any, session_settings: Any = None, **_options: Any
        ) -> None:
            super().__init__(session_id, _storage(), session_settings=session_settings)

        @classmethod
        def from_url(
            cls, session_id: str, *_peer: Any, session_settings: Any = None, **_options: Any
        ) -> StandIn:
            return cls(session_id, session_settings=session_settings)

    class SQLiteSession(StandIn):
        def close(self) -> None:
            """The peer closes its SQLite connections; the harness closes the storage."""

    class AsyncSQLiteSession(StandIn):
        async def close(self) -> None:
            """The peer closes its aiosqlite connection; the harness closes the storage."""

    class PeerEngine:
        """``SQLAlchemySession.engine``, which the SDK's fixtures dispose of and hand to a
        second session on the same tables: the stand-ins share the test's storage."""

        async def dispose(self) -> None:
            """The harness closes the storage."""

    class SQLAlchemySession(StandIn):
        engine = PeerEngine()

        async def close(self) -> None:
            """The peer disposes of its engine; the harness closes the storage."""

    class SimpleListSession(StandIn):
        """The SDK's runner tests' list-backed session: ``(session_id, history)``, and
        ``saved_items``, the stored items, read synchronously.  Each of the peer's
        instances is its own list, whatever its id (a test "rehydrates" a session as a
        second instance of the same id given the first one's items): so each stand-in is
        its own ctxstore session, its id the given one with a unique suffix."""

        def __init__(
            self,
            session_id: str = "test",
            history: list[Any] | None = None,
            *,
            session_settings: Any = None,
        ) -> None:
            own_id = f"{session_id}-{secrets.token_hex(4)}"
            super().__init__(own_id, session_settings=session_settings)
            if history:
                call_blocking(self.storage, super().add_items, list(history))

        @property
        def saved_items(self) -> list[Any]:
            # The peer's attribute is its list: reading it runs no get_items a test's
            # subclass overrides (to count or fail reads).
            return call_blocking(self.storage, super().get_items)

    return {
        "SimpleListSession": SimpleListSession,
        "SQLiteSession": SQLiteSession,
        "AsyncSQLiteSession": AsyncSQLiteSession,
        "SQLAlchemySession": SQLAlchemySession,
    }


def _langchain_stand_ins() -> dict[str, Any]:
    from langchain_core.messages import BaseMessage  # noqa: PLC0415

    from ctxstore.adapters.langchain import CtxstoreChatMessageHistory  # noqa: PLC0415

    class InMemoryChatMessageHistory(CtxstoreChatMessageHistory):
        """``InMemoryChatMessageHistory(messages=...)``: a new session holding them.  The
        peer is a pydantic model, equal to another with the same messages; so is this."""

        def __init__(self, messages: list[BaseMessage] | None = None, **_fields: Any) -> None:
            super().__init__(f"suite-{secrets.token_hex(8)}", _storage())
            if messages:
                self.add_messages(messages)

        def __eq__(self, other: object) -> bool:
            if not isinstance(other, CtxstoreChatMessageHistory):
                return NotImplemented
            return self.messages == other.messages

        __hash__ = None  # type: ignore[assignment]

    class PostgresChatMessageHistory(CtxstoreChatMessageHistory):
        """``PostgresChatMessageHistory(table_name, session_id, sync_connection=...)``; the
        table and the connection are the peer's: ctxstore has its own schema and pool."""

        def __init__(self, _table_name: str, session_id: str, /, **_connections: Any) -> None:
            super().__init__(session_id, _storage())

        @staticmethod
        def create_tables(*_args: Any) -> None:
            """The peer's DDL: the harness migrated the database already."""

        @staticmethod
        def drop_table(*_args: Any) -> None:
            """The peer's DDL: each run starts on an empty database."""

        @staticmethod
        async def acreate_tables(*_args: Any) -> None:
            """The peer's DDL: the harness migrated the database already."""

        @staticmethod
        async def adrop_table(*_args: Any) -> None:
            """The peer's DDL: each run starts on an empty database."""

    return {
        "InMemoryChatMessageHistory": InMemoryChatMessageHistory,
        "PostgresChatMessageHistory": PostgresChatMessageHistory,
    }


@contextlib.contextmanager
def _no_connection() -> Iterator[None]:
    """langchain-postgres's ``syncpg_client()``: the peer's psycopg connection, which the
    stand-in does not use (none is opened: its test database may not exist here)."""
    yield None


@contextlib.asynccontextmanager
async def _no_async_connection() -> AsyncIterator[None]:
    """langchain-postgres's ``asyncpg_client()``, likewise."""
    yield None


_stand_ins: dict[str, Any] = {}


def _stand_in_for(name: str) -> Any:
    if not _stand_ins:
        if "agents" in sys.modules or _importable("agents"):
            _stand_ins.update(_agents_stand_ins())
        if _importable("langchain_core"):
            _stand_ins.update(_langchain_stand_ins())
    return _stand_ins[name]


def _importable(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def _empty_database() -> None:
    """Every ctxstore table emptied (session ids repeat across the suite's tests)."""
    import psycopg  # noqa: PLC0415

    with psycopg.connect(DATABASE_URL, autocommit=True) as connection:
        tables = [
            row[0]
            for row in connection.execute(
                "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public' "
                "AND tablename <> 'alembic_version'"
            )
        ]
        if tables:
            connection.execute(f"TRUNCATE {', '.join(tables)} CASCADE")  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _ctxstore_adapter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Bind the peer's names in the test's module to stand-ins building the adapter."""
    module = request.module
    names = [name for name in (*_AGENTS_NAMES, *_LANGCHAIN_NAMES) if hasattr(module, name)]
    for name in names:
        monkeypatch.setattr(module, name, _stand_in_for(name))
    if any(name in _AGENTS_NAMES for name in names) or "agents" in module.__name__:
        for package_name in _AGENTS_PACKAGES:
            package = sys.modules.get(package_name)
            for name in _AGENTS_NAMES:
                if package is not None and name in vars(package):
                    monkeypatch.setattr(package, name, _stand_in_for(name))
    if "PostgresChatMessageHistory" in names:
        for name, replacement in (
            ("syncpg_client", _no_connection),
            ("asyncpg_client", _no_async_connection),
        ):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, replacement)
    if BACKEND == "postgres":
        _empty_database()
    yield
    _adapter_built[request.node.nodeid] = _current.used
    _current.close()
    _current.used = False


#: Test node id -> whether it built a ctxstore adapter.
_adapter_built: dict[str, bool] = {}
#: Test node id -> passed, failed or skipped (a failure in any phase is a failure).
_outcomes: dict[str, str] = {}
_deselected: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    previous = _outcomes.get(report.nodeid)
    if report.failed:
        _outcomes[report.nodeid] = "failed"
    elif report.skipped and previous != "failed":
        _outcomes[report.nodeid] = "skipped"
    elif report.when == "call" and report.passed and previous is None:
        _outcomes[report.nodeid] = "passed"


def pytest_deselected(items: list[pytest.Item]) -> None:
    _deselected.extend(item.nodeid for item in items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    del session
    if not REPORT:
        return
    with open(REPORT, "w", encoding="utf-8") as out:
        for nodeid, outcome in _outcomes.items():
            built = _adapter_built.get(nodeid, False)
            out.write(json.dumps({"test": nodeid, "outcome": outcome, "adapter": built}) + "\n")
        for nodeid in _deselected:
            out.write(json.dumps({"test": nodeid, "outcome": "deselected"}) + "\n")
