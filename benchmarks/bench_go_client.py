"""bench_go_client: the Go client's Save and Load against the in-process Python call and
against the seed's Redis storage, in one run (issue 26).

The same 20-message consultation (nanosecond timestamps, +08:00), as the Go service's
untagged struct keeps it:

- Go ``ctxstore.Storage.Save`` / ``Load`` over HTTP to ``ctxstore serve`` (1 worker);
- Python ``PostgresStorage.save`` / ``load`` in this process, on the same database;
- Go ``redisStorage``: ``json.Marshal`` + ``SET``, ``GET`` + ``json.Unmarshal``.

Saves alternate 19 and 20 messages over 50 sessions (each save rewrites or extends what
is stored, as a service's turns do); loads read one 20-message session.  Go's figures
come from ``go test -bench`` in clients/go; Python's are timed here the same way (mean
per call over the same count).  Each is run ``ROUNDS`` times interleaved and the median
round kept.  Everything shares one 2-core machine: compare the figures with each other.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from benchmarks.bench_http import Server
from benchmarks.common import bench_database, table
from ctxstore import Message, PostgresStorage
from ctxstore.http.auth import new_token

CALLS = int(os.environ.get("CTXSTORE_BENCH_GO_CALLS", "300"))
ROUNDS = int(os.environ.get("CTXSTORE_BENCH_GO_ROUNDS", "3"))
REDIS_ADDR = os.environ.get("CTXSTORE_BENCH_REDIS_ADDR", "127.0.0.1:6379")
CLIENT = Path(__file__).resolve().parents[1] / "clients" / "go"
_LINE = re.compile(r"Benchmark(\w+)/(save|load)-\d+\s+\d+\s+([\d.]+) ns/op")


def session() -> list[Message]:
    start = datetime(2026, 11, 29, 8, 15, 2, 123456, tzinfo=timezone(timedelta(hours=8)))
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=f"我膝盖有下坠感，第{i}句",
            turn_id=f"turn_{i // 2:04d}",
            timestamp=f"{(start + timedelta(seconds=i)).isoformat()[:26]}789+08:00",
        )
        for i in range(20)
    ]


def go_round(go: str, base_url: str, token: str, folder: Path) -> dict[tuple[str, str], float]:
    env = {
        **os.environ,
        "CTXSTORE_URL": base_url,
        "CTXSTORE_TOKEN": token,
        "CTXSTORE_BENCH_REDIS_ADDR": REDIS_ADDR,
        "GOCACHE": str(folder / "cache"),
        "GOPATH": str(folder / "path"),
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "CGO_ENABLED": "0",
    }
    ran = subprocess.run(
        [go, "test", "-run", "^$", "-bench", ".", "-benchtime", f"{CALLS}x", "./..."],
        cwd=CLIENT, env=env, capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    found = {(name, op): float(ns) / 1e6 for name, op, ns in _LINE.findall(ran.stdout)}
    if len(found) != 4:
        raise SystemExit(f"go test -bench printed:\n{ran.stdout}\n{ran.stderr}")
    return found


async def python_round(storage: PostgresStorage) -> dict[str, float]:
    messages = session()
    started = time.perf_counter()
    for i in range(CALLS):
        await storage.save(f"py-bench-{i % 50}", messages[: 20 - (i % 2)])
    saved = (time.perf_counter() - started) / CALLS * 1000
    await storage.save("py-bench-load", messages)
    started = time.perf_counter()
    for _ in range(CALLS):
        assert len(await storage.load("py-bench-load")) == 20
    loaded = (time.perf_counter() - started) / CALLS * 1000
    return {"save": saved, "load": loaded}


def main() -> None:
    go = shutil.which("go")
    if go is None:
        raise SystemExit("needs `go` (apt-get install golang-go)")
    token, grant = new_token("bench", ["read", "write"])
    folder = Path(tempfile.mkdtemp(prefix="ctxstore-bench-go-"))
    rounds_go: list[dict[tuple[str, str], float]] = []
    rounds_py: list[dict[str, float]] = []
    with bench_database() as url:
        server = Server(url, grant, workers=1)
        try:
            asyncio.run(server.ready(token))

            async def python() -> dict[str, float]:
                async with PostgresStorage.from_url(url) as storage:
                    return await python_round(storage)

            for number in range(ROUNDS):
                print(f"round {number + 1}/{ROUNDS}: go ...", flush=True)
                rounds_go.append(go_round(go, f"http://127.0.0.1:{server.port}", token, folder))
                print(f"round {number + 1}/{ROUNDS}: python ...", flush=True)
                rounds_py.append(asyncio.run(python()))
        finally:
            server.stop()
            shutil.rmtree(folder, ignore_errors=True)

    def median_go(name: str, op: str) -> float:
        return statistics.median(r[(name, op)] for r in rounds_go)

    rows: list[tuple[str, ...]] = []
    for op in ("save", "load"):
        client = median_go("StorageSaveLoad", op)
        redis = median_go("RedisSaveLoad", op)
        python = statistics.median(r[op] for r in rounds_py)
        rows.append(
            (
                op,
                f"{client:.2f} ms",
                f"{python:.2f} ms",
                f"{redis:.2f} ms",
                f"{client / python:.2f}x",
                f"{client / redis:.1f}x",
            )
        )
    print(f"\n{CALLS} calls a round, median of {ROUNDS} rounds, mean ms per call")
    print(
        table(
            rows,
            ("op", "Go client (HTTP)", "Python in-process", "Go redisStorage",
             "client / Python", "client / Redis"),
        )
    )  # fmt: skip


if __name__ == "__main__":
    main()
