"""Backend CPU of ``load`` beside a minimal fetch of the same rows (issue 47, item 6).

What PostgreSQL spends serving ``PostgresStorage.load`` of a 10,000-message session (and,
for the small case, of a 100-message one), beside, on the same connection:

- ``minimal fetch``: the same rows' seq, role, content, turn_id and time (ts, ts_offset,
  ts_nanos: what a Go-style time needs);
- ``load's columns``: the message columns a load reads (MESSAGE_COLUMN_ORDER, key_id,
  sealed), all of them, without the session's head.

Target: ``load`` of 10,000 messages <= 1.3x the minimal fetch's backend CPU.  Issue 48's
(item 6) is the CPU sum, the client's (``time.process_time_ns`` in the worker) plus the
backend's: ``load`` of 1,000 and of 10,000 messages <= 1.3x the sum of ``load's columns``
(a raw fetch of the same rows), reported beside it (``--sizes 10000,1000``).

Backend CPU is the first field of ``/proc/<backend pid>/schedstat`` (ns on CPU) read
before and after each sample, the pid from ``SELECT pg_backend_pid()`` on the connection:
each tree's store runs on a pool of one connection, which its fetches use too, so each
ratio compares one backend with itself.  Parallel query is off (its workers' CPU would
escape the reading).  Executor time (total_exec_time per call) comes from
``pg_stat_statements`` when the server has it loaded (``--pg-bin`` starts a scratch
PostgreSQL that does, as bench_turn does); it includes the time the backend waits for the
client to take the rows.  The sessions are CJK consultations (short questions, longer
answers) with Go-style times (nanoseconds, +08:00), in two layouts (LAYOUTS): saved at
once, rows contiguous, where the query's per-row cost shows most, and rows interleaved
with 19 other sessions' as turns appended over time leave them; statistics fresh.

Each source tree's store runs in a worker process of its own (``PYTHONPATH`` first on the
path); the driver sends one sample at a time, every contender of every tree in a new
shuffled order each round, so all figures come from the same minutes.  A run is TRIALS
such rounds in fresh workers; the figures are the median over RUNS runs of each run's
median, with the spread (lowest-highest) over the runs.

Run: ``python -m benchmarks.bench_load_cpu [--tree LABEL=SRC_DIR ...] [--pg-bin DIR]``,
e.g. ``--tree before=/tmp/before-load/src --tree after=src`` (default: this tree only), on
CTXSTORE_BENCH_DATABASE_URL (a server on this machine: its backends' /proc is read), the
embedded PostgreSQL, or with ``--pg-bin /usr/lib/postgresql/15/bin`` a scratch server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import URL, make_url

from benchmarks.common import BENCH_URL_ENV, bench_database, raw_connection, table

ROOT = Path(__file__).resolve().parent.parent
SIZES = (10_000, 100)
TARGET_SIZE, TARGET = 10_000, 1.3
#: Sessions of each size, their rows interleaved on disk (the one loaded is the first).
COPIES = 20
MINIMAL = (
    "SELECT seq, role, content, turn_id, ts, ts_offset, ts_nanos FROM messages"
    " WHERE session_id = $1 ORDER BY seq"
)
COLUMNS = (
    "SELECT seq, role, content, turn_id, ts, ts_offset, ts_nanos, name, metadata, digest,"
    " format_version, key_id, sealed FROM messages WHERE session_id = $1 ORDER BY seq"
)
FETCHES = {"minimal fetch": MINIMAL, "load's columns": COLUMNS}
LOAD = "load"

_ASKED = (
    "右膝走路时有下坠感，上下楼梯更明显，大约一周了，早上起床时僵硬，活动一会儿会好一些。",
    "这两天夜里疼得睡不好，吃了布洛芬能缓解几个小时，之前打篮球时扭到过一次。",
    "没有发烧，膝盖有点肿，按压内侧会痛，蹲下去再站起来的时候最明显。",
)
_ANSWERED = (
    "根据您的描述，膝关节内侧疼痛并在上下楼梯时加重，需要考虑内侧半月板损伤或者内侧副韧带"
    "劳损的可能。请问疼痛时有没有卡住或者打软腿的感觉？膝盖肿胀是受伤后马上出现的，还是"
    "第二天才慢慢肿起来的？建议近期减少爬楼和深蹲，必要时做一次磁共振检查以明确诊断。",
    "夜间疼痛影响睡眠，提示炎症反应比较明显。布洛芬可以短期使用，但请注意饭后服用，有胃病"
    "的话要谨慎。请描述一下疼痛的具体位置：是膝盖正前方、内侧、外侧还是后方？另外，休息后"
    "疼痛能不能减轻？如果出现明显的红肿发热，请尽快到医院就诊。",
)


def history(count: int) -> list[Any]:
    """A consultation of ``count`` messages: CJK questions and longer answers, each with
    a Go-style time (nanoseconds, +08:00) a few seconds after the one before."""
    from ctxstore import Message  # noqa: PLC0415 - the tree's own ctxstore

    start = datetime(2026, 11, 29, 0, 15, 2, tzinfo=UTC)
    messages = []
    for i in range(count):
        moment = start + timedelta(seconds=7 * i) + timedelta(hours=8)
        stamp = f"{moment:%Y-%m-%dT%H:%M:%S}.{(123_456_789 + 7_919 * i) % 10**9:09d}+08:00"
        user = i % 2 == 0
        text = (_ASKED if user else _ANSWERED)[(i // 2) % (len(_ASKED) if user else 2)]
        messages.append(
            Message(
                role="user" if user else "assistant",
                content=f"（第{i}条）{text}",
                turn_id=f"turn_{i // 2:05d}",
                timestamp=stamp,
            )
        )
    return messages


#: How a session's rows lie in the table: written at once (an import: each page holds
#: nothing else, so the per-row cost of the query shows most), or turn by turn among
#: other sessions' turns (each page holds a turn or two of it, as a live session leaves).
LAYOUTS = ("contiguous", "interleaved")


def session(size: int, layout: str, copy: int = 0) -> str:
    return f"load-{size}-{layout}-{copy}"


async def seed(url: URL, sizes: tuple[int, ...]) -> None:
    """For each size: a session saved by ctxstore (contiguous), then COPIES sessions of
    the same history whose rows are interleaved (copied row by row, position by
    position), then VACUUM ANALYZE."""
    from ctxstore import PostgresStorage  # noqa: PLC0415

    storage = PostgresStorage.from_url(url)
    try:
        for size in sizes:
            await storage.save(session(size, "contiguous"), history(size))
        async with storage.driver() as driver:
            columns = {
                table_name: [
                    row["column_name"]
                    for row in await driver.fetch(
                        "SELECT column_name FROM information_schema.columns"
                        " WHERE table_name = $1 AND column_name <> 'session_id'"
                        " AND is_generated = 'NEVER' ORDER BY ordinal_position",
                        table_name,
                    )
                ]
                for table_name in ("sessions", "messages")
            }
            for size in sizes:
                for table_name, order in (("sessions", "k"), ("messages", "seq, k")):
                    listed = ", ".join(columns[table_name])
                    await driver.execute(
                        f"INSERT INTO {table_name} (session_id, {listed})"
                        f" SELECT 'load-{size}-interleaved-' || k, {listed} FROM {table_name},"
                        f" generate_series(0, {COPIES - 1}) AS k"
                        f" WHERE session_id = '{session(size, 'contiguous')}' ORDER BY {order}"
                    )
            await driver.execute("VACUUM ANALYZE")
            # A parallel plan's workers spend CPU no schedstat read here sees: the
            # connections opened from now on plan serially.
            await driver.execute(
                "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET"
                " max_parallel_workers_per_gather = 0', current_database()); END $$"
            )
        for size in sizes:  # the copies load as the saved session does
            for layout in LAYOUTS:
                assert len(await storage.load(session(size, layout))) == size
    finally:
        await storage.close()


# -- a tree's worker: one store, driven one JSON line at a time ---------------------------------


def cpu_ns(pid: int) -> int:
    """Nanoseconds the process has spent on CPU."""
    return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])


async def worker(url: URL) -> None:
    """Samples on request, on the store's one connection: a load or a fetch (FETCHES) of
    a session, its backend CPU and wall time (ns) back."""
    from ctxstore import EngineSettings, PostgresStorage  # noqa: PLC0415
    from ctxstore.storage.postgres import sql  # noqa: PLC0415

    storage = PostgresStorage.from_url(url, settings=EngineSettings(pool_size=1))
    try:
        async with storage.driver() as driver:
            pid = int(await driver.fetchval("SELECT pg_backend_pid()"))
        print(json.dumps({"statements": [sql.LOAD_SESSION.sql]}), flush=True)
        for line in sys.stdin:
            command = json.loads(line)
            if command["op"] == "close":
                return
            what, sid = command["what"], command["session"]
            cpu, started, client = cpu_ns(pid), time.perf_counter_ns(), time.process_time_ns()
            if what == LOAD:
                found = len(await storage.load(sid))
            else:
                async with storage.driver() as driver:
                    found = len(await driver.fetch(FETCHES[what], sid))
            sample = (
                cpu_ns(pid) - cpu,
                time.perf_counter_ns() - started,
                time.process_time_ns() - client,
            )
            assert found == command["size"], (what, sid, found)
            print(json.dumps(sample), flush=True)
    finally:
        await storage.close()


class Worker:
    """A tree's worker process, driven one sample at a time."""

    def __init__(self, label: str, source: str, url: URL) -> None:
        path = os.pathsep.join([str(Path(source).resolve()), str(ROOT)])
        self.label = label
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.bench_load_cpu", "--worker"],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": path},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdin is not None
        self.process.stdin.write(url.render_as_string(hide_password=False) + "\n")
        self.process.stdin.flush()
        self.statements: list[str] = self._reply()["statements"]

    def _reply(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.label} worker died (see its stderr above)")
        return json.loads(line)

    def sample(self, what: str, size: int, layout: str) -> tuple[int, int, int]:
        """Backend CPU, wall time and client CPU (ns) of one ``what`` (LOAD or a FETCHES
        name)."""
        assert self.process.stdin is not None
        command = {"op": "sample", "what": what, "session": session(size, layout), "size": size}
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        cpu, wall, client = self._reply()
        return int(cpu), int(wall), int(client)

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.write(json.dumps({"op": "close"}) + "\n")
            self.process.stdin.close()
            self.process.wait(timeout=60)


def worker_main() -> None:
    url = make_url(sys.stdin.readline().strip())
    asyncio.run(worker(url))


# -- the driver --------------------------------------------------------------------------------


async def statement_times(probe: Any) -> dict[int, tuple[int, float]] | None:
    """pg_stat_statements of this database: calls and total executor ms by query id
    (None: not loaded)."""
    try:
        rows = await probe.fetch(
            "SELECT queryid, calls, total_exec_time FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
    except asyncpg.PostgresError:  # not installed, not preloaded: no executor times
        return None
    found: dict[int, tuple[int, float]] = {}
    for row in rows:
        calls, total = found.get(row["queryid"], (0, 0.0))
        found[row["queryid"]] = (calls + row["calls"], total + row["total_exec_time"])
    return found


async def query_ids(probe: Any, texts: list[str]) -> list[int]:
    """The pg_stat_statements ids of these statements (which it keys by their normalized
    text: constants become parameters), from EXPLAIN VERBOSE (none: not computed)."""
    found = []
    for text in texts:
        explain = await probe.prepare(f"EXPLAIN (VERBOSE, FORMAT JSON) {text}")
        plan = await explain.fetchval(*[None] * len(explain.get_parameters()))
        query_id = json.loads(plan)[0].get("Query Identifier")
        if query_id is not None:
            found.append(int(query_id))
    return found


async def one_run(
    url: URL, trees: dict[str, str], sizes: tuple[int, ...], trials: int, warmup: int
) -> dict[str, dict[str, dict[str, float]]]:
    """Per case (size and layout) and contender: median backend CPU, wall time, client CPU
    and CPU sum (ms), executor ms per call."""
    probe = await raw_connection(url)
    workers: list[Worker] = []
    try:
        with contextlib.suppress(asyncpg.PostgresError):  # else no executor times
            await probe.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        workers = [Worker(label, source, url) for label, source in trees.items()]
        statements = {}
        for w in workers:
            statements[contender(LOAD, w.label)] = await query_ids(probe, w.statements)
            for name, text in FETCHES.items():
                statements[contender(name, w.label)] = await query_ids(probe, [text])
        pairs = [(w, what) for w in workers for what in (*FETCHES, LOAD)]
        results: dict[str, dict[str, dict[str, float]]] = {}
        for size, layout in ((size, layout) for size in sizes for layout in LAYOUTS):
            for w, what in pairs:
                for _ in range(warmup):
                    w.sample(what, size, layout)
            times_before = await statement_times(probe)
            samples: dict[str, list[tuple[int, int, int]]] = {
                contender(what, w.label): [] for w, what in pairs
            }
            for _ in range(trials):
                random.shuffle(pairs)
                for w, what in pairs:
                    samples[contender(what, w.label)].append(w.sample(what, size, layout))
            times_after = await statement_times(probe)
            results[f"{size:,} messages, {layout}"] = {
                name: {
                    "cpu_ms": statistics.median(s[0] for s in values) / 1e6,
                    "wall_ms": statistics.median(s[1] for s in values) / 1e6,
                    "client_ms": statistics.median(s[2] for s in values) / 1e6,
                    "sum_ms": statistics.median(s[0] + s[2] for s in values) / 1e6,
                    "exec_ms": executor_ms(statements[name], times_before, times_after),
                }
                for name, values in sorted(samples.items(), key=lambda item: order(item[0]))
            }
        return results
    finally:
        for w in workers:
            w.close()
        await probe.close()


def contender(what: str, label: str) -> str:
    return f"{what} ({label})"


def order(name: str) -> tuple[str, int]:
    """Each tree's contenders together, the fetches first."""
    what, label = name[:-1].split(" (", 1)
    return label, [*FETCHES, LOAD].index(what)


def executor_ms(
    ids: list[int],
    before: dict[int, tuple[int, float]] | None,
    after: dict[int, tuple[int, float]] | None,
) -> float:
    """Executor ms per call of these statements between the two readings (nan: unknown)."""
    if before is None or after is None:
        return float("nan")
    calls = total = 0.0
    for query_id in ids:
        calls_after, total_after = after.get(query_id, (0, 0.0))
        calls_before, total_before = before.get(query_id, (0, 0.0))
        calls, total = calls + calls_after - calls_before, total + total_after - total_before
    return total / calls if calls else float("nan")


def report(runs: list[dict[str, dict[str, dict[str, float]]]]) -> str:
    def spread(values: list[float], unit: str = "") -> str:
        if any(math.isnan(v) for v in values):  # not measured
            return "n/a"
        middle = statistics.median(values)
        return f"{middle:.3f}{unit} [{min(values):.3f}-{max(values):.3f}]"

    def ratios(
        case: str, name: str, fetch: str = "minimal fetch", key: str = "cpu_ms"
    ) -> list[float]:
        """To ``fetch`` on the same connection (the same tree's worker)."""
        floor = contender(fetch, name[:-1].split(" (", 1)[1])
        return [run[case][name][key] / run[case][floor][key] for run in runs]

    def sums(case: str, name: str) -> list[float]:
        return ratios(case, name, "load's columns", "sum_ms")

    lines = [
        f"median over {len(runs)} runs of each run's median (lowest-highest run in brackets);",
        "each ratio to the minimal fetch on the same connection",
    ]
    verdicts = []
    for case in runs[0]:
        rows: list[tuple[str, ...]] = []
        for name in runs[0][case]:
            rows.append(
                (
                    name,
                    spread([run[case][name]["cpu_ms"] for run in runs]),
                    spread(ratios(case, name), "x"),
                    spread([run[case][name]["exec_ms"] for run in runs]),
                    spread([run[case][name]["wall_ms"] for run in runs]),
                    spread([run[case][name]["client_ms"] for run in runs]),
                    spread([run[case][name]["sum_ms"] for run in runs]),
                    spread(sums(case, name), "x"),
                )
            )
            if name.startswith(f"{LOAD} (") and case.startswith(f"{TARGET_SIZE:,} "):
                ratio = statistics.median(ratios(case, name))
                verdict = "met" if ratio <= TARGET else "MISSED"
                verdicts.append(
                    f"{name}, {case}: {ratio:.2f}x the minimal fetch"
                    f" (target <= {TARGET}x): {verdict}"
                )
            if name.startswith(f"{LOAD} ("):
                ratio = statistics.median(sums(case, name))
                verdict = "met" if ratio <= TARGET else "MISSED"
                verdicts.append(
                    f"{name}, {case}: CPU sum {ratio:.2f}x load's columns"
                    f" (issue 48 target <= {TARGET}x): {verdict}"
                )
        lines += [
            "",
            case,
            table(
                rows,
                (
                    "contender",
                    "backend CPU ms",
                    "/ minimal fetch",
                    "executor ms",
                    "wall ms",
                    "client CPU ms",
                    "CPU sum ms",
                    "sum / load's columns",
                ),
            ),
        ]
    return "\n".join([*lines, "", *verdicts])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=SRC_DIR")
    parser.add_argument("--pg-bin", type=Path, help="start a scratch server from these binaries")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main()
        return
    trees = dict(tree.split("=", 1) for tree in args.tree) or {"this tree": str(ROOT / "src")}
    sizes = tuple(int(size) for size in args.sizes.split(","))
    with ExitStack() as stack:
        if args.pg_bin is not None:
            from benchmarks.bench_turn import Server  # noqa: PLC0415 - the `bench` extra

            server = Server("scratch", args.pg_bin)
            stack.callback(server.stop)
            os.environ[BENCH_URL_ENV] = server.ctxstore_url("postgres")
        url = stack.enter_context(bench_database())
        asyncio.run(seed(url, sizes))
        runs = []
        for index in range(args.runs):
            runs.append(asyncio.run(one_run(url, trees, sizes, args.trials, args.warmup)))
            print(f"run {index + 1} of {args.runs} done", file=sys.stderr)
    print(report(runs))


if __name__ == "__main__":
    main()
