"""bench_http_instructions: the HTTP worker's instructions a request, which load can't move.

wrk's ratios (bench_http_wrk) move with whatever else runs on the machine's two cores.
This counts what the worker itself executes: ``ctxstore serve``'s app and the floor
(benchmarks/http_baseline_app.py) called in process over ASGI (no client sockets; the
database real, freshly migrated), 8 requests at a time, under valgrind's callgrind.  A
request's user-space instructions are the difference between a run of ``LONG`` and one of
``SHORT`` requests, divided by the difference (start-up cancels out); the same inputs give
the same count whatever else the machine does.

- append a turn (the two messages of bench_http_wrk) to 8 sessions per concurrent caller;
- build a context of those sessions (ctxstore: the contract within 2,000 tokens; the
  floor: the same window read, its tokens counted), after the appends.

Needs valgrind (Debian's ``valgrind``).  ``python -m benchmarks.bench_http_instructions``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks.bench_http_wrk import CONTEXT, TURN, _dsn
from benchmarks.common import bench_database, table
from ctxstore.progress import Progress

SHORT, LONG = 200, 600
CONCURRENCY = 8
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
App = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


# -- the driver, run under callgrind ---------------------------------------------------------


def _scope(path: str, body: bytes, token: str | None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
    headers.append((b"content-length", str(len(body)).encode()))
    if token is not None:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    target, _, query = path.partition("?")
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": target, "raw_path": target.encode(),
        "query_string": query.encode(), "root_path": "", "headers": headers,
        "client": ("127.0.0.1", 5555), "server": ("127.0.0.1", 8000), "state": {},
    }  # fmt: skip


async def _call(app: App, path: str, body: bytes, token: str | None) -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(path, body, token), receive, send)
    if sent[0]["status"] >= 300:
        raise SystemExit(f"{path} answered {sent[0]['status']}: {sent[1:]}")


async def _lifespan(app: App) -> asyncio.Queue[dict[str, Any]]:
    incoming: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outgoing: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await incoming.put({"type": "lifespan.startup"})
    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    asyncio.get_running_loop().create_task(app(scope, incoming.get, outgoing.put))
    started = await outgoing.get()
    if started["type"] != "lifespan.startup.complete":
        raise SystemExit(f"the app did not start: {started}")
    return incoming


async def _drive(which: str, what: str, count: int) -> None:
    if which == "ctxstore":
        from ctxstore.http.app import app_from_environment  # noqa: PLC0415

        app: App = app_from_environment()
        token: str | None = os.environ["BENCH_TOKEN"]
        window = ""
    else:
        from benchmarks.http_baseline_app import app as floor  # noqa: PLC0415

        app, token, window = floor, None, "?window=32"
    shutdown = await _lifespan(app)
    turn, context = (json.dumps(body, ensure_ascii=False).encode() for body in (TURN, CONTEXT))

    async def caller(number: int) -> None:
        for request in range(count // CONCURRENCY):
            session = f"/v1/sessions/{which}-{what}-{count}-{number}-{request % 8}"
            await _call(app, session + "/messages", turn, token)
            if what == "context":
                await _call(app, session + "/context" + window, context, token)

    await asyncio.gather(*(caller(number) for number in range(CONCURRENCY)))
    await shutdown.put({"type": "lifespan.shutdown"})
    await asyncio.sleep(0.1)


# -- the orchestration -----------------------------------------------------------------------


def _instructions(which: str, what: str, count: int, env: dict[str, str]) -> int:
    ran = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
         "-m", "benchmarks.bench_http_instructions", "--drive", which, what, str(count)],
        capture_output=True, text=True, env=env, timeout=1800, check=False,
    )  # fmt: skip
    found = _REFS.search(ran.stderr)
    if ran.returncode != 0 or found is None:
        raise SystemExit(f"the {which} run failed:\n{ran.stdout}\n{ran.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("needs valgrind (apt-get install valgrind)")
    from ctxstore.http.auth import new_token  # noqa: PLC0415

    token, grant = new_token("bench", ["read", "write"])
    counts: dict[tuple[str, str], float] = {}
    runs = [(w, what, n) for what in ("append", "context") for w in ("ctxstore", "floor")
            for n in (SHORT, LONG)]  # fmt: skip
    with bench_database() as url:
        env = {
            **os.environ,
            "CTXSTORE_DATABASE_URL": url.render_as_string(hide_password=False),
            "CTXSTORE_HTTP_TOKENS": grant,
            "CTXSTORE_HTTP_ACCESS_LOG": "0",
            "BENCH_TOKEN": token,
            "BASELINE_DATABASE_URL": _dsn(url),
        }
        totals: dict[tuple[str, str, int], int] = {}
        progress = Progress("callgrind runs", len(runs))
        for which, what, count in runs:
            totals[(which, what, count)] = _instructions(which, what, count, env)
            progress.advance()
        progress.finish()
    for which in ("ctxstore", "floor"):
        for what in ("append", "context"):
            long, short = totals[(which, what, LONG)], totals[(which, what, SHORT)]
            counts[(which, what)] = (long - short) / (LONG - SHORT)
    # A context run appends before each build: its build is the difference.
    rows = []
    for what in ("append", "context"):
        ours, floor = (
            counts[(w, what)] - (counts[(w, "append")] if what == "context" else 0)
            for w in ("ctxstore", "floor")
        )
        rows.append((what, f"{ours / 1000:,.0f}k", f"{floor / 1000:,.0f}k", f"{ours / floor:.2f}x"))
    print(f"\nuser-space instructions a request, in process, {CONCURRENCY} at a time")
    print(table(rows, ("", "ctxstore", "floor", "ctxstore / floor")))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--drive"]:
        import uvloop

        uvloop.run(_drive(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    else:
        main()
