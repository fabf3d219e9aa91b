"""A real primary and streaming replica, started by the tests from the embedded server's
PostgreSQL programs (initdb, pg_ctl, pg_basebackup) on free ports of 127.0.0.1.

Under root both run as the embedded server's account (PostgreSQL refuses root).  The
replica can be paused (``pg_wal_replay_pause``) to make it lag on purpose.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from sqlalchemy import URL

from tests.pooler import free_port


def _account() -> str | None:
    if os.geteuid() != 0:
        return None
    for name in ("embedded_postgres", "postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    pytest.skip("PostgreSQL refuses to run as root and no other account exists here")


class Replicated:
    """``primary`` and ``replica`` URLs (database ``postgres``) of a running pair."""

    def __init__(self) -> None:
        from ctxstore.embedded import bin_dir  # noqa: PLC0415
        from ctxstore.errors import EmbeddedServerUnavailableError  # noqa: PLC0415

        try:
            self.bin = bin_dir()
        except EmbeddedServerUnavailableError as error:
            pytest.skip(f"the replica tests need the embedded server's programs: {error}")
        self.account = _account()
        self.folder = Path(tempfile.mkdtemp(prefix="ctxstore-replica-"))
        if self.account is not None:
            shutil.chown(self.folder, self.account)
        self.primary_port, self.replica_port = free_port(), free_port()
        self.started: list[Path] = []
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _run(self, program: str, *arguments: str) -> None:
        command = [str(self.bin / program), *arguments]
        if self.account is not None:
            command = ["runuser", "-u", self.account, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stdout}\n{done.stderr}")

    def _start(self) -> None:
        primary, replica = self.folder / "primary", self.folder / "replica"
        self._run("initdb", "-D", str(primary), "-U", "postgres", "-A", "trust", "--no-sync")
        with (primary / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                f"port = {self.primary_port}\nlisten_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{self.folder}'\nwal_level = replica\n"
                "max_wal_senders = 4\nfsync = off\n"
            )
        self._pg_ctl(primary)
        self._run(
            "pg_basebackup", "-h", "127.0.0.1", "-p", str(self.primary_port), "-U", "postgres",
            "-D", str(replica), "-R", "-X", "stream", "--no-sync",
        )  # fmt: skip
        with (replica / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(f"port = {self.replica_port}\nhot_standby = on\n")
        self._pg_ctl(replica)

    def _pg_ctl(self, data: Path) -> None:
        self._run("pg_ctl", "-D", str(data), "-l", str(data / "server.log"), "-w", "start")
        self.started.append(data)

    def url(self, *, replica: bool = False, database: str = "postgres") -> URL:
        return URL.create(
            "postgresql+asyncpg",
            username="postgres",
            host="127.0.0.1",
            port=self.replica_port if replica else self.primary_port,
            database=database,
        )

    def stop(self) -> None:
        for data in reversed(self.started):
            try:
                self._run("pg_ctl", "-D", str(data), "-m", "immediate", "-w", "stop")
            except RuntimeError as error:
                print(f"could not stop the server in {data}: {error}")
        self.started.clear()
        shutil.rmtree(self.folder, ignore_errors=True)


def wait_for(check: object, timeout: float = 20.0) -> None:
    """Poll ``check()`` (a callable returning truthy) until it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the replica")
