"""A real PgBouncer in transaction pooling mode in front of the test server.

Debian's ``pgbouncer`` (``.ci/run`` installs it when missing), started on a free port of
127.0.0.1 with two server connections per database, handed out round robin: consecutive
transactions of one client land on different server connections, as they do under load.
PgBouncer refuses to run as root; under root it runs as the embedded server's account.
"""

from __future__ import annotations

import asyncio
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import URL

PGBOUNCER = shutil.which("pgbouncer") or (
    "/usr/sbin/pgbouncer" if os.path.exists("/usr/sbin/pgbouncer") else None
)
#: Server connections per database: few, so that clients share them.
SERVER_CONNECTIONS = 2


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _upstream(url: URL) -> tuple[str, int]:
    """host (or socket folder) and port of the server ``url`` names."""
    if url.host:
        return url.host, url.port or 5432
    socket_dir = str(url.query["host"])
    sockets = [p for p in glob.glob(os.path.join(socket_dir, ".s.PGSQL.*")) if "lock" not in p]
    return socket_dir, int(sockets[0].rsplit(".", 1)[1])


def _run_as(host: str) -> str | None:
    """The account to run PgBouncer as (None: this one): under root, the server's own
    when it listens on a private socket folder (the embedded server), else postgres."""
    if os.geteuid() != 0:
        return None
    if host.startswith("/") and (owner := Path(host).stat().st_uid) != 0:
        return pwd.getpwuid(owner).pw_name
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    pytest.skip("PgBouncer refuses to run as root and no other account exists here")


class PgBouncer:
    """One PgBouncer process; ``url(database_url)`` is that database through it."""

    def __init__(self, server_url: URL, *, ignore_startup_parameters: str = "") -> None:
        if PGBOUNCER is None:
            pytest.skip(
                "pgbouncer is not installed (Debian: apt-get install pgbouncer; .ci/run "
                "installs it): the pooler tests need a real PgBouncer"
            )
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="ctxstore-pgbouncer-"))
        host, port = _upstream(server_url)
        user = server_url.username or "postgres"
        password = f" password={server_url.password}" if server_url.password else ""
        (self.folder / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={host} port={port} user={user}{password}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = any\n"
            "pool_mode = transaction\n"
            f"default_pool_size = {SERVER_CONNECTIONS}\n"
            "max_client_conn = 500\n"
            "server_round_robin = 1\n"
            f"min_pool_size = {SERVER_CONNECTIONS}\n"
            # A common setting that lets clients' timeouts through (and drops them).
            + (
                f"ignore_startup_parameters = {ignore_startup_parameters}\n"
                if ignore_startup_parameters
                else ""
            )
            + f"logfile = {self.folder / 'pgbouncer.log'}\n"
            f"pidfile = {self.folder / 'pgbouncer.pid'}\n",
            encoding="utf-8",
        )
        account = _run_as(host)
        command = [PGBOUNCER, str(self.folder / "pgbouncer.ini")]
        if account is not None:
            shutil.chown(self.folder, account)
            os.chmod(self.folder, 0o755)
            command = ["runuser", "-u", account, "--", *command]
        # It logs to stderr too: a pipe nobody reads would fill and stop it mid-run.
        self.process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self._wait_until_listening()

    def _wait_until_listening(self) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.log()
                raise RuntimeError(f"pgbouncer exited: {log}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"pgbouncer did not listen on {self.port}: {self.log()}")

    def log(self) -> str:
        path = self.folder / "pgbouncer.log"
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    def url(self, database_url: URL, *, marked: bool = True) -> URL:
        """``database_url``'s database through this pooler (``marked``: with
        ``?pooling=transaction``, as a deployment behind PgBouncer configures it)."""
        return URL.create(
            "postgresql+asyncpg",
            username=database_url.username,
            password=database_url.password,
            host="127.0.0.1",
            port=self.port,
            database=database_url.database,
            query={"pooling": "transaction"} if marked else {},
        )

    def warm(self, database_url: URL) -> None:
        """Open every server connection of ``database_url``'s pool now (PgBouncer opens
        them lazily): consecutive transactions of one client then alternate between them."""

        async def hold_both() -> None:
            target = self.url(database_url, marked=False)
            connections = [
                await asyncpg.connect(
                    host="127.0.0.1",
                    port=self.port,
                    user=target.username,
                    database=target.database,
                    statement_cache_size=0,
                )
                for _ in range(SERVER_CONNECTIONS)
            ]
            transactions = [connection.transaction() for connection in connections]
            for transaction, connection in zip(transactions, connections, strict=True):
                await transaction.start()
                await connection.execute("SELECT 1")
            for transaction, connection in zip(transactions, connections, strict=True):
                await transaction.commit()
                await connection.close()

        asyncio.run(hold_both())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)
