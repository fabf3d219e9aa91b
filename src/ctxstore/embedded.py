"""PostgreSQL as a pip dependency (the ``embedded`` extra, package ``pgserver``).

For newcomers and tests on machines without a PostgreSQL server or Docker.  The server
listens on a Unix socket inside its data folder only, so it never collides with a
server on port 5432.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

from ctxstore.errors import EmbeddedServerUnavailableError

SUPPORTED_PYTHONS = ((3, 11), (3, 12))

_ALTERNATIVES = (
    "Use a PostgreSQL you already have: set CTXSTORE_DATABASE_URL (or pass --database-url) "
    "to postgresql://user:password@host:5432/dbname, or start one with Docker: "
    "`docker compose up -d db` in the ctxstore repository."
)


def _load_pgserver() -> Any:
    version = sys.version_info[:2]
    if version not in SUPPORTED_PYTHONS:
        raise EmbeddedServerUnavailableError(
            f"the embedded PostgreSQL (the pgserver package) ships wheels for CPython 3.11 "
            f"and 3.12 only, and this is Python {version[0]}.{version[1]}. {_ALTERNATIVES}"
        )
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (CI, containers); harmless.
            warnings.simplefilter("ignore")
            import pgserver  # noqa: PLC0415 - optional dependency, imported on demand
    except ImportError as error:
        raise EmbeddedServerUnavailableError(
            "the embedded PostgreSQL needs the `embedded` extra: "
            f"pip install 'ctxstore[embedded]'. {_ALTERNATIVES}"
        ) from error
    return pgserver


class EmbeddedPostgres:
    """A PostgreSQL server in ``data_dir``, started on demand.

    ``keep_running=True`` leaves the server up when this process exits (the next start
    reuses it); otherwise the last process using it stops it.
    """

    def __init__(self, data_dir: str | Path, *, keep_running: bool = False) -> None:
        self.data_dir = Path(data_dir).expanduser().resolve()
        self._keep_running = keep_running
        self._server: Any = None

    def start(self) -> str:
        """Start (or attach to) the server; return an asyncpg URL of its ``postgres`` db."""
        pgserver = _load_pgserver()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._server = pgserver.get_server(
                self.data_dir, cleanup_mode=None if self._keep_running else "stop"
            )
        except Exception as error:
            raise EmbeddedServerUnavailableError(
                f"the embedded PostgreSQL in {self.data_dir} did not start: {error}. "
                f"{_ALTERNATIVES}"
            ) from error
        return self.url()

    def url(self, database: str = "postgres") -> str:
        if self._server is None:
            raise EmbeddedServerUnavailableError("the embedded PostgreSQL is not started")
        socket_dir = self._server.get_postmaster_info().socket_dir
        return f"postgresql+asyncpg://postgres@/{database}?host={quote(str(socket_dir))}"

    def stop(self) -> None:
        if self._server is not None and not self._keep_running:
            self._server.cleanup()
        self._server = None

    def __enter__(self) -> EmbeddedPostgres:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
