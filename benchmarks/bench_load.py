"""Load and delta-save timings of two source trees, alternately, on one server (issue 23).

- ``load`` of 1,000 and of 10,000 messages beside a raw asyncpg fetch of the same rows
  (target: <= 1.4x);
- at 10,000 messages, saving a plain list that extends the loaded one
  (``loaded + [question, answer]``) beside saving the loaded History extended in place,
  both right after an untimed load (target: <= 1.1x).

Each tree runs in a fresh process (``PYTHONPATH`` first on the path) against the same
database, ROUNDS times, alternating which goes first; within a process the actions run
round-robin.  A figure is the median over rounds of each round's median.

Run: ``python -m benchmarks.bench_load [--tree LABEL=SRC_DIR ...]``, e.g. with
``--tree before=/tmp/main/src --tree after=src`` (default: this tree only), on the
embedded PostgreSQL or CTXSTORE_BENCH_DATABASE_URL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import URL, make_url

from benchmarks.common import bench_database, table

SIZES = (1_000, 10_000)
ROUNDS = int(os.environ.get("CTXSTORE_BENCH_ROUNDS", "3"))
TRIALS = int(os.environ.get("CTXSTORE_BENCH_TRIALS", "20"))
ROOT = Path(__file__).resolve().parent.parent
RAW_SELECT = (
    "SELECT seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, format_version "
    "FROM messages WHERE session_id = $1 ORDER BY seq"
)
PLAIN, LOADED = "save plain list at 10,000", "save loaded History at 10,000"


async def worker(url: URL, label: str) -> dict[str, float]:
    """One tree's medians (ms); run in a process whose ctxstore is that tree's."""
    import time  # noqa: PLC0415

    from benchmarks.bench_compare import content, history  # noqa: PLC0415
    from benchmarks.common import raw_connection  # noqa: PLC0415
    from ctxstore import Message, PostgresStorage  # noqa: PLC0415

    async with PostgresStorage.from_url(url) as storage:
        raw = await raw_connection(url)
        try:
            for name in ("plain", "loaded"):
                await storage.save(f"{label}-{name}", history(10_000))
            turn = [0]

            def next_turn() -> list[Any]:
                turn[0] += 2
                question = Message(role="user", content=content(turn[0]))
                return [question, Message(role="assistant", content=content(turn[0] + 1))]

            async def plain() -> float:
                loaded = await storage.load(f"{label}-plain")  # untimed
                started = time.perf_counter()
                await storage.save(f"{label}-plain", loaded + next_turn())
                return time.perf_counter() - started

            async def extended_history() -> float:
                loaded = await storage.load(f"{label}-loaded")  # untimed
                started = time.perf_counter()
                loaded.extend(next_turn())
                await storage.save(f"{label}-loaded", loaded)
                return time.perf_counter() - started

            def timed(size: int, *, raw_fetch: bool) -> Any:
                async def run() -> float:
                    started = time.perf_counter()
                    if raw_fetch:
                        found = len(await raw.fetch(RAW_SELECT, f"load-{size}"))
                    else:
                        found = len(await storage.load(f"load-{size}"))
                    elapsed = time.perf_counter() - started
                    assert found == size
                    return elapsed

                return run

            actions = {PLAIN: plain, LOADED: extended_history}
            for size in SIZES:
                actions[f"load {size:,}"] = timed(size, raw_fetch=False)
                actions[f"raw fetch {size:,}"] = timed(size, raw_fetch=True)
            samples: dict[str, list[float]] = {name: [] for name in actions}
            for trial in range(TRIALS + 3):
                for name, action in actions.items():
                    elapsed = await action()
                    if trial >= 3:  # warm-up
                        samples[name].append(elapsed)
        finally:
            await raw.close()
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


async def prepare(url: URL) -> None:
    from benchmarks.bench_compare import history  # noqa: PLC0415
    from ctxstore import PostgresStorage  # noqa: PLC0415

    async with PostgresStorage.from_url(url) as storage:
        for size in SIZES:
            await storage.save(f"load-{size}", history(size))


def run_tree(url: URL, label: str, source: str) -> dict[str, float]:
    path = os.pathsep.join([str(Path(source).resolve()), str(ROOT)])
    result = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_load", "--worker", label],
        input=url.render_as_string(hide_password=False),
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
    )
    return dict(json.loads(result.stdout.splitlines()[-1]))


def report(results: dict[str, dict[str, float]]) -> str:
    names = list(next(iter(results.values())))
    lines = [
        f"median ms (median over {ROUNDS} alternating rounds of {TRIALS} trials each)",
        table(
            [(name, *(f"{r[name]:.3f}" for r in results.values())) for name in names],
            ("action", *results),
        ),
        "",
    ]
    ratios = [(f"load {size:,} / raw fetch (target <= 1.4)", size, 1.4) for size in SIZES]
    rows = []
    for title, size, target in ratios:
        values = [r[f"load {size:,}"] / r[f"raw fetch {size:,}"] for r in results.values()]
        rows.append((title, *(f"{v:.2f}x {'met' if v <= target else 'MISSED'}" for v in values)))
    saves = [r[PLAIN] / r[LOADED] for r in results.values()]
    rows.append(
        (
            "plain-list save / History save at 10,000 (target <= 1.1)",
            *(f"{v:.2f}x {'met' if v <= 1.1 else 'MISSED'}" for v in saves),
        )
    )
    lines.append(table(rows, ("ratio", *results)))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=SRC_DIR")
    parser.add_argument("--worker", metavar="LABEL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        url = make_url(sys.stdin.read().strip())
        print(json.dumps(asyncio.run(worker(url, args.worker))))
        return
    trees = dict(tree.split("=", 1) for tree in args.tree) or {"this tree": str(ROOT / "src")}
    with bench_database() as url:
        asyncio.run(prepare(url))
        rounds: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
        order = list(trees)
        for index in range(ROUNDS):
            for label in order if index % 2 == 0 else reversed(order):
                rounds[label].append(run_tree(url, label, trees[label]))
                print(f"round {index + 1}: {label} done", file=sys.stderr)
    results = {
        label: {name: statistics.median(r[name] for r in runs) for name in runs[0]}
        for label, runs in rounds.items()
    }
    print(report(results))


if __name__ == "__main__":
    main()
