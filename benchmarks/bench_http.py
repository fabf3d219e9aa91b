"""bench_http: the HTTP service (`ctxstore serve`) against in-process calls, in one run.

32 concurrent clients, one consultation session each, on one freshly migrated database:

- append a turn (2 messages): ``PostgresStorage.append`` in this process, then
  ``POST /v1/sessions/{id}/messages`` against the server with 1 worker;
- build a context (token budget 2,000, two knowledge items, a 40-message history, a
  state and a profile): ``ContextBuilder.build``, then ``POST .../context``;
- throughput of appends: in-process, and over HTTP with 1 and with 2 workers;
- for reference, the same append with one client at a time (no queueing).

Latencies are p50 and p99 per call; every mode runs ``ROUNDS`` rounds interleaved and
reports the median round, so drift on a shared machine hits all modes alike.  The HTTP
client is a minimal keep-alive HTTP/1.1 client on asyncio (httpx would cost more CPU
than the server on a 2-core machine, and it shares the cores).  The server and the
clients share the machine with PostgreSQL: compare the figures with each other.
Prints a table and writes benchmarks/results/http.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import ContextBuilder, Message, PostgresStorage
from ctxstore.http.auth import new_token

CLIENTS = 32
PER_CLIENT = int(os.environ.get("CTXSTORE_BENCH_HTTP_PER_CLIENT", "40"))
ROUNDS = int(os.environ.get("CTXSTORE_BENCH_HTTP_ROUNDS", "3"))
BUDGET = 2000
RESULTS = Path(__file__).resolve().parent / "results" / "http.json"
KNOWLEDGE = [
    {
        "title": "膝关节不稳的常见原因",
        "content": "膝盖打软或下坠感常见于前交叉韧带损伤、半月板损伤或股四头肌无力。",
        "source": "rehab-kb/knee/instability",
        "relevance_score": 0.92,
    },
    {
        "title": "何时需要就医",
        "content": "膝关节交锁、明显肿胀、无法负重时应尽快就医。",
        "source": "rehab-kb/red-flags",
        "relevance_score": 0.71,
    },
]


def turn(index: int) -> list[dict[str, Any]]:
    stamp = f"2026-11-29T08:{index % 60:02d}:02.123+08:00"
    return [
        {
            "role": "user",
            "content": f"第{index}轮：膝盖有下坠感",
            "turn_id": f"t{index}",
            "timestamp": stamp,
        },
        {
            "role": "assistant",
            "content": "是否伴随疼痛或肿胀？",
            "turn_id": f"t{index}",
            "timestamp": stamp,
        },
    ]


# -- a minimal keep-alive HTTP/1.1 client --------------------------------------------------


class Connection:
    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.auth = f"Authorization: Bearer {token}\r\n".encode()
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @classmethod
    async def open(cls, port: int, token: str) -> Connection:
        connection = cls(port, token)
        connection.reader, connection.writer = await asyncio.open_connection("127.0.0.1", port)
        return connection

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
        ).encode()
        for _ in range(2):
            if self.writer is None or self.writer.is_closing():
                self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            assert self.reader is not None
            self.writer.write(head + self.auth + b"\r\n" + body)
            first = await self.reader.readline()
            if first:
                break
            # The server closed the idle connection (keep-alive timeout) before reading
            # the request: nothing was processed, send it again on a new one.
            self.writer.close()
            self.writer = None
        else:
            raise ConnectionError("the server closed the connection twice")
        status = int(first.split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


# -- the server ----------------------------------------------------------------------------


class Server:
    def __init__(self, url: URL, grants: str, workers: int) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        env = {
            **os.environ,
            "CTXSTORE_DATABASE_URL": url.render_as_string(hide_password=False),
            "CTXSTORE_HTTP_TOKENS": grants,
        }
        command = [sys.executable, "-m", "ctxstore.cli", "serve", "--port", str(self.port)]
        command += ["--workers", str(workers), "--no-access-log"]
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )

    async def ready(self, token: str) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                assert self.process.stderr is not None
                raise SystemExit(f"ctxstore serve exited: {self.process.stderr.read().decode()}")
            try:
                connection = await Connection.open(self.port, token)
                connection.close()
                return
            except OSError:
                await asyncio.sleep(0.2)
        raise SystemExit("ctxstore serve did not start within 60 s")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(60)


# -- measuring -------------------------------------------------------------------------------


@dataclass
class Run:
    latencies: list[float]
    seconds: float

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000


async def measure(clients: int, call: Callable[[int, int], Awaitable[None]]) -> Run:
    latencies: list[float] = []

    async def client(index: int) -> None:
        for step in range(PER_CLIENT):
            started = time.perf_counter()
            await call(index, step)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(client(index) for index in range(clients)))
    return Run(latencies, time.perf_counter() - started)


def median_run(runs: list[Run]) -> Run:
    return sorted(runs, key=lambda run: run.percentile(0.5))[len(runs) // 2]


async def prepare(store: PostgresStorage) -> None:
    """Each client's session: 20 turns, a state and a profile."""
    for index in range(CLIENTS):
        session, user = f"bench-{index}", f"user-{index}"
        await store.save_profile(user, {"age": 30 + index % 20, "gender": "female"})
        for step in range(20):
            await store.append(session, turn(step), user_id=user)
        await store.save_state(session, {"stage": "collecting_details", "duration": "一周"})


async def run(url: URL) -> dict[str, Any]:
    token, grant = new_token("bench", ["read", "write"])
    results: dict[str, list[Run]] = {}
    async with PostgresStorage.from_url(url) as store:
        await prepare(store)
        builder = ContextBuilder(store)
        counter = iter(range(10**9))

        async def direct_append(index: int, _step: int) -> None:
            await store.append(f"bench-{index}", [Message(**m) for m in turn(next(counter))])

        async def direct_context(index: int, step: int) -> None:
            contract = await builder.build(
                f"bench-{index}", f"q{step}", "那我现在应该怎么锻炼？", KNOWLEDGE, BUDGET
            )
            contract.to_json()

        servers = {workers: Server(url, grant, workers) for workers in (1, 2)}
        try:
            for server in servers.values():
                await server.ready(token)
            connections = {
                workers: [await Connection.open(server.port, token) for _ in range(CLIENTS)]
                for workers, server in servers.items()
            }

            def http_append(workers: int) -> Callable[[int, int], Awaitable[None]]:
                async def call(index: int, _step: int) -> None:
                    body = json.dumps({"messages": turn(next(counter))}).encode()
                    status, _ = await connections[workers][index].post(
                        f"/v1/sessions/bench-{index}/messages", body
                    )
                    assert status == 200, status

                return call

            def http_context(workers: int) -> Callable[[int, int], Awaitable[None]]:
                async def call(index: int, step: int) -> None:
                    body = json.dumps(
                        {
                            "turn_id": f"q{step}",
                            "user_message": "那我现在应该怎么锻炼？",
                            "token_budget": BUDGET,
                            "retrieved_knowledge": KNOWLEDGE,
                        }
                    ).encode()
                    status, _ = await connections[workers][index].post(
                        f"/v1/sessions/bench-{index}/context", body
                    )
                    assert status == 200, status

                return call

            modes: dict[str, tuple[int, Callable[[int, int], Awaitable[None]]]] = {
                "append, in-process": (CLIENTS, direct_append),
                "append, HTTP 1 worker": (CLIENTS, http_append(1)),
                "append, HTTP 2 workers": (CLIENTS, http_append(2)),
                "context, in-process": (CLIENTS, direct_context),
                "context, HTTP 1 worker": (CLIENTS, http_context(1)),
                "context, HTTP 2 workers": (CLIENTS, http_context(2)),
                "append, in-process, 1 client": (1, direct_append),
                "append, HTTP 1 worker, 1 client": (1, http_append(1)),
            }
            for clients, call in modes.values():  # warm-up: pools, tokenizer, caches
                await measure(clients, call)
            for _ in range(ROUNDS):
                for name, (clients, call) in modes.items():
                    results.setdefault(name, []).append(await measure(clients, call))
            for pool in connections.values():
                for connection in pool:
                    connection.close()
        finally:
            for server in servers.values():
                server.stop()
    return report({name: median_run(runs) for name, runs in results.items()})


def report(runs: dict[str, Run]) -> dict[str, Any]:
    rows = [
        (
            name,
            f"{run.percentile(0.5):.2f}",
            f"{run.percentile(0.99):.2f}",
            f"{run.throughput:,.0f}",
        )
        for name, run in runs.items()
    ]
    print(f"\n{CLIENTS} concurrent clients (unless 1), {PER_CLIENT} calls each, median of {ROUNDS}")
    print(table(rows, ("mode", "p50 ms", "p99 ms", "calls/s")))
    direct = runs["append, in-process"].throughput
    ratios = {
        workers: runs[f"append, HTTP {workers} worker{'s' if workers > 1 else ''}"].throughput
        / direct
        for workers in (1, 2)
    }
    p50 = runs["append, HTTP 1 worker"].percentile(0.5)
    alone = runs["append, HTTP 1 worker, 1 client"].percentile(0.5)
    print(
        f"\nHTTP append p50 (target <= 2 ms): {p50:.2f} ms with {CLIENTS} clients, "
        f"{alone:.2f} ms with 1 client"
    )
    print(
        "append throughput vs in-process (target with 2 workers >= 0.5x): "
        f"1 worker {ratios[1]:.2f}x, 2 workers {ratios[2]:.2f}x"
    )
    document = {
        "clients": CLIENTS,
        "calls_per_client": PER_CLIENT,
        "rounds": ROUNDS,
        "modes": {
            name: {
                "p50_ms": round(run.percentile(0.5), 3),
                "p99_ms": round(run.percentile(0.99), 3),
                "calls_per_second": round(run.throughput, 1),
                "mean_ms": round(statistics.fmean(run.latencies) * 1000, 3),
            }
            for name, run in runs.items()
        },
        "append_throughput_vs_in_process": {str(k): round(v, 3) for k, v in ratios.items()},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS}")
    return document


def main() -> None:
    with bench_database() as url:
        asyncio.run(run(url))


if __name__ == "__main__":
    main()
