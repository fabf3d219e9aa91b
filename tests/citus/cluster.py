"""A throwaway Citus cluster: one coordinator and two workers on free local ports.

Each node is an ``initdb`` data folder of Debian's PostgreSQL 15 (the machine's Citus build
is for it) started with ``pg_ctl`` as the ``postgres`` OS user when run as root (PostgreSQL
refuses root), with ``shared_preload_libraries = 'citus'``.  A database is created on every
node with the extension, and the coordinator is told about the workers: that database is
then one Citus cluster.  Used by tests/citus and benchmarks/bench_citus.py; it never
touches the server on 5432.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
from sqlalchemy import URL

PG_BIN = Path(os.environ.get("CTXSTORE_CITUS_PG_BIN", "/usr/lib/postgresql/15/bin"))
HOST = "127.0.0.1"
#: Set to 1 to keep the nodes' data folders and logs after the run (for a post-mortem).
KEEP_ENV = "CTXSTORE_CITUS_KEEP"
#: Small enough that a test database is created and truncated quickly, more than one
#: shard per worker so placement still matters.
SHARD_COUNT = 4

_SETTINGS = """
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'citus'
max_connections = 300
citus.shard_count = {shards}
"""
# Test servers: durability off (the data folder is thrown away).  Benchmarks keep it on: a
# commit's cost is part of what they compare.
_NOT_DURABLE = """
fsync = off
synchronous_commit = off
full_page_writes = off
"""


def unavailable_reason() -> str | None:
    """Why no Citus cluster can be started here (None: it can)."""
    pg_config = PG_BIN / "pg_config"
    if not (PG_BIN / "initdb").is_file() or not pg_config.is_file():
        return f"no PostgreSQL 15 server binaries in {PG_BIN}"
    try:
        libdir = subprocess.run(
            [str(pg_config), "--pkglibdir"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as error:
        return f"{pg_config} --pkglibdir failed: {error}"
    if not (Path(libdir) / "citus.so").is_file():
        return (
            f"Citus is not installed ({libdir}/citus.so missing); these tests are optional: "
            "install the Citus extension for PostgreSQL 15 to run them (docs/testing.md)"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres OS user to run the nodes as"
        if shutil.which("runuser") is None:
            return "running as root without runuser to start the nodes as postgres"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _as_server_user(command: Sequence[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return list(command)


def _run(command: Sequence[str]) -> None:
    done = subprocess.run(_as_server_user(command), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {done.stdout}{done.stderr}")


@dataclass
class CitusCluster:
    """Start with :meth:`start`, stop (and delete every data folder) with :meth:`stop`."""

    workers: int = 2
    shard_count: int = SHARD_COUNT
    durable: bool = False
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ctxstore-citus-")))
    ports: list[int] = field(default_factory=list)
    _running: list[Path] = field(default_factory=list)

    @property
    def coordinator_port(self) -> int:
        return self.ports[0]

    @property
    def worker_ports(self) -> list[int]:
        return self.ports[1:]

    def url(self, database: str = "postgres") -> URL:
        return URL.create(
            "postgresql+asyncpg", username="postgres", host=HOST, port=self.ports[0],
            database=database,
        )  # fmt: skip

    def start(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        template = self.root / "template"
        _run(
            [str(PG_BIN / "initdb"), "-D", str(template), "-U", "postgres", "-A", "trust",
             "--no-sync", "-E", "UTF8", "--locale", "C.UTF-8"]
        )  # fmt: skip
        with (template / "postgresql.conf").open("a") as conf:
            conf.write(_SETTINGS.format(shards=self.shard_count))
            if not self.durable:
                conf.write(_NOT_DURABLE)
        try:
            for index in range(1 + self.workers):
                folder = self.root / f"node{index}"
                _run(["cp", "-a", str(template), str(folder)])
                port = _free_port()
                _run(
                    [str(PG_BIN / "pg_ctl"), "-D", str(folder), "-l", str(folder / "log"),
                     "-w", "-t", "60", "-o", f"-p {port} -k {folder}", "start"]
                )  # fmt: skip
                self._running.append(folder)
                self.ports.append(port)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for folder in self._running:
            subprocess.run(
                _as_server_user(
                    [str(PG_BIN / "pg_ctl"), "-D", str(folder), "-m", "immediate", "-w", "stop"]
                ),
                capture_output=True,
                check=False,
            )
        self._running.clear()
        if os.environ.get(KEEP_ENV) == "1":
            print(f"kept the Citus nodes' data folders and logs in {self.root} ({KEEP_ENV}=1)")
            return
        for _attempt in range(5):  # a stopping server may still be writing its last files
            shutil.rmtree(self.root, ignore_errors=True)
            if not self.root.exists():
                break
            time.sleep(0.2)

    async def _on(self, port: int, database: str, *statements: str) -> None:
        connection = await asyncpg.connect(host=HOST, port=port, user="postgres", database=database)
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    async def create_database(self, name: str) -> URL:
        """``name`` on every node with the extension, the workers added: one cluster."""
        await asyncio.gather(
            *(self._on(port, "postgres", f'CREATE DATABASE "{name}"') for port in self.ports)
        )
        await asyncio.gather(
            *(self._on(port, name, "CREATE EXTENSION citus") for port in self.ports)
        )
        await self._on(
            self.coordinator_port,
            name,
            f"SELECT citus_set_coordinator_host('{HOST}', {self.coordinator_port})",
            *(f"SELECT citus_add_node('{HOST}', {port})" for port in self.worker_ports),
        )
        return self.url(name)

    async def drop_database(self, name: str) -> None:
        await asyncio.gather(
            *(
                self._on(port, "postgres", f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                for port in self.ports
            )
        )
