"""`ctxstore serve` as a real subprocess on a free 127.0.0.1 port, for the live tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import URL

from ctxstore.http.auth import new_token

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Tokens:
    """One token per scope set, and the grant lines the server is started with."""

    full: str
    read: str
    write: str
    admin: str
    grants: str

    @classmethod
    def make(cls) -> Tokens:
        made = {
            name: new_token(name, scopes)
            for name, scopes in (
                ("full", ("read", "write", "admin")),
                ("reader", ("read",)),
                ("writer", ("write",)),
                ("ops", ("admin",)),
            )
        }
        grants = "\n".join(line for _, line in made.values())
        return cls(
            full=made["full"][0],
            read=made["reader"][0],
            write=made["writer"][0],
            admin=made["ops"][0],
            grants=grants,
        )

    def header(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.full}"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class LiveServer:
    database_url: str
    tokens: Tokens
    workers: int = 1
    extra_args: tuple[str, ...] = ()
    #: Environment variables the server gets besides the database URL and the tokens.
    env: dict[str, str] = field(default_factory=dict)
    scheme: str = "http"
    #: The CA file the readiness probe trusts (https only).
    verify: ssl.SSLContext | bool = True
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path = field(
        default_factory=lambda: Path(tempfile.mkstemp(prefix="ctxstore-serve-", suffix=".log")[1])
    )

    @classmethod
    def on(cls, url: URL, tokens: Tokens, **options: object) -> LiveServer:
        return cls(url.render_as_string(hide_password=False), tokens, **options)  # type: ignore[arg-type]

    @property
    def base_url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LiveServer:
        env = {
            **os.environ,
            "CTXSTORE_DATABASE_URL": self.database_url,
            "CTXSTORE_HTTP_TOKENS": self.tokens.grants,
            **self.env,
        }
        command = [
            sys.executable,
            "-m",
            "ctxstore.cli",
            "serve",
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            "--graceful-timeout",
            "20",
            *self.extra_args,
        ]
        with self.log_path.open("wb") as log:
            # Its own process group: kill() reaches the workers of a --workers N server too.
            self.process = subprocess.Popen(
                command, cwd=REPO, env=env, stdout=log, stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"ctxstore serve exited at start:\n{self.log()}")
            try:
                answer = httpx.get(
                    f"{self.base_url}/healthz",
                    headers=self.tokens.header(),
                    timeout=2,
                    verify=self.verify,
                )
                if answer.status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.kill()
        raise AssertionError(f"ctxstore serve did not answer within {timeout} s:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM, then the exit code (killed and an AssertionError past ``timeout``)."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"no exit {timeout} s after SIGTERM:\n{self.log()}") from None

    def kill(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def close(self) -> None:
        self.kill()
        self.log_path.unlink(missing_ok=True)


def serving(url: URL, tokens: Tokens, **options: object) -> Iterator[LiveServer]:
    """A module's server fixture body: started, yielded, then stopped gracefully (exit 0,
    no traceback logged)."""
    live = LiveServer.on(url, tokens, **options).start()
    try:
        yield live
        assert live.terminate() == 0, live.log()
        assert "Traceback" not in live.log()
    finally:
        live.close()
