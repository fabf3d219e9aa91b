"""Faults for tests: a small local TCP proxy that can refuse, black-hole or drop the
replies of connections, and a redis-server of a test's own to SIGKILL.

The proxy listens on 127.0.0.1 and forwards to a server on a TCP port or a Unix socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import URL

Mode = Literal["forward", "refuse", "blackhole", "deaf"]


class TcpProxy:
    def __init__(self, *, unix_path: str | None = None, host: str = "", port: int = 0) -> None:
        self._unix_path = unix_path
        self._host, self._port = host, port
        self.mode: Mode = "forward"
        #: Requests holding these bytes turn the proxy deaf once forwarded (deaf_after).
        self._deaf_marker: bytes | None = None
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    def forward(self) -> None:
        self.mode, self._deaf_marker = "forward", None

    def blackhole(self) -> None:
        """Connections stay open but nothing gets through, either way (a dead network)."""
        self.mode = "blackhole"

    def deaf(self) -> None:
        """Requests reach the server; its replies are dropped (a reply lost in flight)."""
        self.mode = "deaf"

    def deaf_after(self, marker: bytes) -> None:
        """Forward; the first request holding ``marker`` still reaches the server, and
        from its reply on the proxy is deaf: the server acted, the client never hears."""
        self._deaf_marker = marker

    def refuse(self) -> None:
        """Close every connection, and every new one at once (a server that went away)."""
        self.mode = "refuse"
        for writer in list(self._writers):
            writer.close()

    async def stop(self) -> None:
        self.refuse()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()

    async def _upstream(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._unix_path:
            return await asyncio.open_unix_connection(self._unix_path)
        return await asyncio.open_connection(self._host, self._port)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.mode == "refuse":
            writer.close()
            return
        self._writers.add(writer)
        try:
            if self.mode == "blackhole":
                await reader.read()  # swallow everything until the client gives up
                return
            up_reader, up_writer = await self._upstream()
            self._writers.add(up_writer)
            pumps = [
                asyncio.ensure_future(self._pump(reader, up_writer)),
                asyncio.ensure_future(self._pump(up_reader, writer, replies=True)),
            ]
            self._tasks.update(pumps)
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for pump in pumps:
                pump.cancel()
            up_writer.close()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
            self._writers.discard(writer)

    async def _pump(
        self, source: asyncio.StreamReader, target: asyncio.StreamWriter, *, replies: bool = False
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
            while data := await source.read(65536):
                if self.mode == "refuse":
                    return
                if self.mode == "blackhole" or (self.mode == "deaf" and replies):
                    continue  # dropped on the floor (deaf: the server still acts on it)
                target.write(data)
                await target.drain()
                if not replies and self._deaf_marker is not None and self._deaf_marker in data:
                    self._deaf_marker, self.mode = None, "deaf"


def socket_target(url: URL) -> dict[str, Any]:
    """TcpProxy's upstream arguments for the server ``url`` names (TCP or Unix socket)."""
    if url.host:
        return {"host": url.host, "port": url.port or 5432}
    socket_dir = str(url.query["host"])
    (path,) = [
        path
        for path in glob.glob(os.path.join(socket_dir, ".s.PGSQL.*"))
        if not path.endswith(".lock")
    ]
    return {"unix_path": path}


def through(proxy_port: int, url: URL) -> URL:
    """``url``'s database, reached through a proxy listening on ``proxy_port``."""
    return URL.create(
        "postgresql+asyncpg",
        username=url.username,
        password=url.password,
        host="127.0.0.1",
        port=proxy_port,
        database=url.database,
    )


# -- a redis-server of a test's own ---------------------------------------------------------

REDIS_SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class RedisServer:
    """A redis-server of the test's own, SIGKILLed and started again on its directory."""

    def __init__(self, directory: Path, *options: str) -> None:
        self.directory, self.options = directory, options
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                str(REDIS_SERVER),
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--dir", str(self.directory),
                *self.options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


@contextmanager
def redis_server(*options: str) -> Iterator[RedisServer]:
    directory = Path(tempfile.mkdtemp(prefix="ctxstore-redis-"))
    server = RedisServer(directory, *options)
    server.start()
    try:
        yield server
    finally:
        if server.process is not None and server.process.poll() is None:
            server.kill()
        shutil.rmtree(directory, ignore_errors=True)


def redis_version() -> tuple[int, int]:
    found = subprocess.run(
        [str(REDIS_SERVER), "--version"], capture_output=True, text=True, check=True
    ).stdout
    major, minor = found.split("v=")[1].split(".")[:2]
    return int(major), int(minor)
