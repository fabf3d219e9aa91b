"""bench_http_wrk: ``ctxstore serve`` against a minimal app doing the same work, with wrk.

Both on the same uvicorn (one worker each, httptools), on one freshly migrated database;
the floor is benchmarks/http_baseline_app.py (Starlette on asyncpg, no authentication,
validation, versions or problems).  wrk (Debian's ``wrk``) drives each in turn,
interleaved, ``ROUNDS`` rounds, the median round kept:

- append a turn (two messages, to 64 sessions per connection group) at 1, 8 and 32
  connections: throughput, and p50 latency; twice: today's body, and the Go service's
  own turn (a 28-character CJK question and its answer, turn ids, Go's nanosecond
  ``+08:00`` times), against the floor and against a floor appending in one statement;
- build a context (ctxstore: the Context Contract within 2,000 tokens; the floor: read
  the same window, as many of the newest rows as ctxstore's contract includes, and count
  their tokens) of a session of a few hundred messages at 8 connections.

Targets (issue 27): append >= 0.7x the floor's throughput at 8 and 32 connections and p50
<= 1.5x at 1; context >= 0.5x.  wrk, the servers and PostgreSQL share the machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import URL

from benchmarks.bench_http import Connection, Server
from benchmarks.common import bench_database, table
from ctxstore.http.auth import new_token

SECONDS = int(os.environ.get("CTXSTORE_BENCH_WRK_SECONDS", "8"))
ROUNDS = int(os.environ.get("CTXSTORE_BENCH_WRK_ROUNDS", "3"))
TURN = {
    "messages": [
        {"role": "user", "content": "我膝盖有下坠感，上楼时更明显", "turn_id": "t1"},
        {
            "role": "assistant",
            "content": "这种感觉持续多久了？是否伴随疼痛或肿胀？",
            "turn_id": "t1",
        },
    ]
}
#: The Go service's turn, as its client sends it (issue 48): time.Time marshalled by Go.
GO_TURN = {
    "messages": [
        {
            "role": "user",
            "content": "医生您好，我最近三天右膝盖一直隐隐作痛，上下楼梯时尤其明显。",
            "turn_id": "turn-7f3c9a2e41b84d0c",
            "timestamp": "2026-12-05T18:31:10.123456789+08:00",
        },
        {
            "role": "assistant",
            "content": "了解。疼痛是在膝盖前方还是内侧？有没有肿胀、发热，或者受过外伤？",
            "turn_id": "turn-7f3c9a2e41b84d0c",
            "timestamp": "2026-12-05T18:31:12.987654321+08:00",
        },
    ]
}
#: (contender, body, its app, what the floor's URL adds) for each append measured.
APPENDS = (
    ("ctxstore", "today", ""),
    ("floor", "today", ""),
    ("ctxstore", "go", ""),
    ("floor", "go", ""),
    ("floor", "go", "?one=1"),
)
BODIES = {"today": TURN, "go": GO_TURN}
CONTEXT = {"turn_id": "t9", "user_message": "还是有点疼", "token_budget": 2000}
LUA = """
local counter = 0
local group = 0
local made = 0
function setup(thread) thread:set("group", made); made = made + 1 end
wrk.method = "POST"
wrk.body = [[{body}]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer {token}"
request = function()
  counter = counter + 1
  local path = "{prefix}" .. group .. "-" .. (counter % 64) .. "{suffix}"
  return wrk.format(nil, path)
end
"""
_RATE = re.compile(r"Requests/sec:\s+([\d.]+)")
_P50 = re.compile(r"50%\s+([\d.]+)(us|ms|s)")
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


class Baseline:
    def __init__(self, url: URL) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        env = {**os.environ, "BASELINE_DATABASE_URL": _dsn(url)}
        command = [
            sys.executable, "-m", "uvicorn", "benchmarks.http_baseline_app:app",
            "--port", str(self.port), "--http", "httptools", "--no-access-log",
            "--log-level", "warning",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("the baseline app did not start")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(60)


def _dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


def wrk(port: int, connections: int, script: Path) -> tuple[float, float]:
    ran = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{SECONDS}s", "--latency", "-s", str(script),
         f"http://127.0.0.1:{port}"],
        capture_output=True, text=True, timeout=SECONDS * 4 + 60, check=True,
    )  # fmt: skip
    rate, p50 = _RATE.search(ran.stdout), _P50.search(ran.stdout)
    if rate is None or p50 is None:
        raise SystemExit(f"wrk printed:\n{ran.stdout}")
    if "Non-2xx" in ran.stdout:
        raise SystemExit(f"errors answered:\n{ran.stdout}")
    return float(rate.group(1)), float(p50.group(1)) * _UNITS[p50.group(2)]


async def included(port: int, token: str, path: str) -> int:
    """How many messages ctxstore's context of the session at ``path`` includes: the
    window the floor reads."""
    connection = await Connection.open(port, token)
    try:
        status, body = await connection.post(path, json.dumps(CONTEXT).encode())
    finally:
        connection.close()
    if status != 200:
        raise SystemExit(f"the context answered {status}: {body[:200]!r}")
    return int(json.loads(body)["meta"]["included_message_count"])


def script(folder: Path, name: str, token: str, body: object, prefix: str, suffix: str) -> Path:
    path = folder / f"{name}.lua"
    text = json.dumps(body, ensure_ascii=False)
    path.write_text(
        LUA.replace("{body}", text)
        .replace("{token}", token)
        .replace("{prefix}", prefix)
        .replace("{suffix}", suffix)
    )
    return path


def main() -> None:
    if shutil.which("wrk") is None:
        raise SystemExit("needs wrk (apt-get install wrk)")
    token, grant = new_token("bench", ["read", "write"])
    folder = Path(tempfile.mkdtemp(prefix="ctxstore-wrk-"))
    results: dict[tuple[str, str, int], list[tuple[float, float]]] = {}
    windows: list[int] = []
    with bench_database() as url:
        ours, floor = Server(url, grant, workers=1), Baseline(url)
        try:
            asyncio.run(ours.ready(token))
            apps = {"ctxstore": ours.port, "floor": floor.port}
            for number in range(ROUNDS):
                print(f"round {number + 1}/{ROUNDS}", flush=True)
                for connections in (1, 8, 32):
                    for name, body, query in APPENDS:
                        prefix = f"/v1/sessions/r{number}-c{connections}-{body}{query[1:4]}-"
                        lua = script(
                            folder, "append", token, BODIES[body], prefix, "/messages" + query
                        )
                        results.setdefault((name + query, body, connections), []).append(
                            wrk(apps[name], connections, lua)
                        )
                # The sessions of the 8-connection append above: hundreds of messages each.
                prefix = f"/v1/sessions/r{number}-c8-today-"
                window = asyncio.run(included(ours.port, token, prefix + "0-0/context"))
                windows.append(window)
                for name, port in apps.items():
                    suffix = "/context" if name == "ctxstore" else f"/context?window={window}"
                    lua = script(folder, "context", token, CONTEXT, prefix, suffix)
                    results.setdefault((name, "context", 8), []).append(wrk(port, 8, lua))
        finally:
            ours.stop()
            floor.stop()
            shutil.rmtree(folder, ignore_errors=True)

    def median(name: str, what: str, connections: int) -> tuple[float, float]:
        runs = results[(name, what, connections)]
        return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)

    rows: list[tuple[str, ...]] = []
    cases = [(body, "append", n) for body in BODIES for n in (1, 8, 32)] + [("", "context", 8)]
    for body, what, connections in cases:
        kind = body or what
        ours_rate, ours_p50 = median("ctxstore", kind, connections)
        floor_rate, floor_p50 = median("floor", kind, connections)
        one = (
            f"{ours_rate / median('floor?one=1', kind, connections)[0]:.2f}x"
            if body == "go"
            else ""
        )
        rows.append(
            (
                f"{what} {body} x{connections}".replace("  ", " "),
                f"{ours_rate:.0f}/s",
                f"{floor_rate:.0f}/s",
                f"{ours_rate / floor_rate:.2f}x",
                one,
                f"{ours_p50:.2f} ms",
                f"{floor_p50:.2f} ms",
                f"{ours_p50 / floor_p50:.2f}x",
            )
        )
    print(f"\nwrk -t1 {SECONDS} s a run, median of {ROUNDS} interleaved rounds")
    print(f"context window (messages ctxstore includes, the floor reads): {windows}")
    print(
        table(
            rows,
            (
                "",
                "ctxstore",
                "floor",
                "throughput",
                "/ one statement",
                "ctxstore p50",
                "floor p50",
                "p50",
            ),
        )
    )


if __name__ == "__main__":
    main()
