"""ctxstore beside the stores users already know, measured in one run on one PostgreSQL.

- append a turn (2 messages) to sessions of 10, 100, 1,000 and 10,000 messages:
  ctxstore save (full overwrite) of the History that load returned, extended in place;
  ctxstore save of a plain list (the everyday idiom ``messages = await store.load(s);
  messages = messages + [question, answer]; await store.save(s, messages)``: the load is
  untimed, the concatenation and the save are timed); ctxstore append; langchain-postgres
  add_messages; a one-JSONB-row-per-session overwrite; and raw asyncpg inserting the two
  rows (the floor);
- load the whole session, and the context window for 8,000 tokens: ctxstore,
  langchain-postgres messages, raw asyncpg SELECT;
- throughput: 32 sessions doing turns for 10 s, ctxstore beside the raw floor;
- memory: peak RSS growth while loading a 10,000-message session (a fresh process each).

Every figure is the median of TRIALS runs after a warm-up, the contenders run
round-robin so the machine's noise falls on all of them alike, and ratios are computed
within this run.  Writes a table, benchmarks/results/compare.json and compare.png.

Needs the `bench` extra (langchain-postgres, psycopg, matplotlib).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from benchmarks.bench_versions import run_for
from benchmarks.common import (
    append_values,
    bench_database,
    interleaved_medians,
    raw_append,
    raw_connection,
    raw_pool,
    table,
)
from ctxstore import ContextManager, Message, PostgresStorage, TokenBudget

SIZES = (10, 100, 1_000, 10_000)
# CTXSTORE_BENCH_TRIALS: fewer for a quick look; the published figures use 20.
TRIALS = int(os.environ.get("CTXSTORE_BENCH_TRIALS", "20"))
RESULTS = Path(__file__).resolve().parent / "results"
RAW_SELECT = (
    "SELECT seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, format_version "
    "FROM messages WHERE session_id = $1 ORDER BY seq"
)

Action = Callable[[], Awaitable[object]]

SAVE_HISTORY = "ctxstore save"  # the History load returned, extended in place
SAVE_PLAIN = "ctxstore save (plain list)"  # load + [question, answer], a new list
# The same turn as SAVE_PLAIN but extending the History in place: both right after a load,
# whose 10,000 rows leave the next call on this machine slower whatever follows.
SAVE_LOADED = "ctxstore save (History, after load)"
LABELS = {SAVE_HISTORY: "ctxstore save (History)"}


@dataclass(frozen=True)
class Prepared:
    """An action whose ``prepare`` step runs before each timed ``run``, untimed."""

    prepare: Action
    run: Action

    async def __call__(self) -> object:
        await self.prepare()
        return await self.run()


async def round_robin_medians(
    actions: dict[str, Action | Prepared], trials: int, warmup: int = 5
) -> dict[str, float]:
    """Median milliseconds per action, run round-robin (as common.interleaved_medians),
    timing only the ``run`` of a Prepared action."""
    for _ in range(warmup):
        for action in actions.values():
            await action()
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(trials):
        for name, action in actions.items():
            run = action
            if isinstance(action, Prepared):
                await action.prepare()
                run = action.run
            started = time.perf_counter()
            await run()
            samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def content(i: int) -> str:
    if i % 2 == 0:
        return f"第{i}条：膝盖走路时有下坠感，上下楼梯更明显，大约一周了。"
    return f"第{i}条：是否伴随疼痛或肿胀？之前有没有扭伤过？请描述一下具体的感觉。"


def history(count: int) -> list[Message]:
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=content(i),
            turn_id=f"turn_{i // 2:05d}",
            timestamp="2026-11-29T08:15:02.123+08:00",
        )
        for i in range(count)
    ]


def psycopg_conninfo(url: URL) -> str:
    host = url.host or url.query.get("host")
    parts = [f"dbname={url.database}", f"user={url.username or 'postgres'}", f"host={host}"]
    if url.port:
        parts.append(f"port={url.port}")
    if url.password:
        parts.append(f"password={url.password}")
    return " ".join(parts)


class Contenders:
    """Each store, prepared with sessions of every size."""

    def __init__(self, url: URL) -> None:
        self.url = url

    async def setup(self) -> None:
        import psycopg  # noqa: PLC0415
        from langchain_core.messages import AIMessage, HumanMessage  # noqa: PLC0415
        from langchain_postgres import PostgresChatMessageHistory  # noqa: PLC0415

        self.storage = PostgresStorage.from_url(self.url)
        self.manager = ContextManager(self.storage)
        self.raw = await raw_connection(self.url)
        self.pg = await psycopg.AsyncConnection.connect(psycopg_conninfo(self.url), autocommit=True)
        await PostgresChatMessageHistory.acreate_tables(self.pg, "lc_messages")
        await self.raw.execute(
            "CREATE TABLE jsonb_sessions (session_id text PRIMARY KEY, doc jsonb NOT NULL);"
            "CREATE TABLE raw_messages (session_id text, seq int, role text, content text,"
            " PRIMARY KEY (session_id, seq))"
        )
        self.human, self.ai = HumanMessage, AIMessage
        self.histories: dict[int, list[Message]] = {}  # as load() returned them
        self.documents: dict[int, list[dict[str, Any]]] = {}
        self.lc: dict[int, Any] = {}
        self.raw_next: dict[int, int] = {}
        for size in SIZES:
            messages = history(size)
            await self.storage.save(f"save-{size}", messages)
            await self.storage.save(f"plain-{size}", messages)
            await self.storage.save(f"loaded-{size}", messages)
            await self.storage.save(f"append-{size}", messages)
            await self.storage.save(f"load-{size}", messages)
            self.histories[size] = await self.storage.load(f"save-{size}")
            self.documents[size] = [m.model_dump(mode="json") for m in messages]
            await self.raw.execute(
                "INSERT INTO jsonb_sessions VALUES ($1, $2::jsonb)",
                f"jsonb-{size}",
                json.dumps(self.documents[size], ensure_ascii=False),
            )
            await self.raw.executemany(
                "INSERT INTO raw_messages VALUES ($1, $2, $3, $4)",
                [(f"raw-{size}", i, m.role, m.content) for i, m in enumerate(messages)],
            )
            self.raw_next[size] = size
            lc = PostgresChatMessageHistory(
                "lc_messages", str(uuid.uuid4()), async_connection=self.pg
            )
            await lc.aadd_messages(
                [
                    (HumanMessage if m.role == "user" else AIMessage)(content=m.content)
                    for m in messages
                ]
            )
            self.lc[size] = lc

    async def close(self) -> None:
        await self.storage.close()
        await self.raw.close()
        await self.pg.close()

    def turn(self, size: int, n: int) -> list[Message]:
        return [
            Message(
                role="user",
                content=content(size + n),
                turn_id=f"new_{n}",
                timestamp="2026-11-29T09:00:00+08:00",
            ),
            Message(
                role="assistant",
                content=content(size + n + 1),
                turn_id=f"new_{n}",
                timestamp="2026-11-29T09:00:05+08:00",
            ),
        ]

    def appenders(self, size: int) -> dict[str, Action | Prepared]:
        counter = [0]
        loaded: list[list[Message]] = [[], []]

        def next_turn() -> list[Message]:
            counter[0] += 1
            return self.turn(size, counter[0])

        async def ctx_save() -> None:
            # what a service does: extend the history it loaded, save the whole list
            self.histories[size].extend(next_turn())
            await self.storage.save(f"save-{size}", self.histories[size])

        async def load_plain() -> None:
            loaded[0] = await self.storage.load(f"plain-{size}")

        async def ctx_save_plain() -> None:
            # the everyday idiom: a new plain list (History + list is a list)
            messages = loaded[0] + next_turn()
            assert type(messages) is list  # not a History: the general path is measured
            await self.storage.save(f"plain-{size}", messages)

        async def load_history() -> None:
            loaded[1] = await self.storage.load(f"loaded-{size}")

        async def ctx_save_loaded() -> None:
            loaded[1].extend(next_turn())
            await self.storage.save(f"loaded-{size}", loaded[1])

        async def ctx_append() -> None:
            await self.storage.append(f"append-{size}", next_turn())

        async def langchain() -> None:
            pair = next_turn()
            await self.lc[size].aadd_messages(
                [self.human(content=pair[0].content), self.ai(content=pair[1].content)]
            )

        async def jsonb_overwrite() -> None:
            self.documents[size] += [m.model_dump(mode="json") for m in next_turn()]
            await self.raw.execute(
                "UPDATE jsonb_sessions SET doc = $2::jsonb WHERE session_id = $1",
                f"jsonb-{size}",
                json.dumps(self.documents[size], ensure_ascii=False),
            )

        async def raw_insert() -> None:
            pair = next_turn()
            seq = self.raw_next[size]
            self.raw_next[size] += 2
            await self.raw.execute(
                "INSERT INTO raw_messages VALUES ($1, $2, $3, $4), ($1, $5, $6, $7)",
                f"raw-{size}",
                seq,
                pair[0].role,
                pair[0].content,
                seq + 1,
                pair[1].role,
                pair[1].content,
            )

        return {
            SAVE_HISTORY: ctx_save,
            SAVE_PLAIN: Prepared(load_plain, ctx_save_plain),
            SAVE_LOADED: Prepared(load_history, ctx_save_loaded),
            "ctxstore append": ctx_append,
            "langchain add_messages": langchain,
            "jsonb overwrite": jsonb_overwrite,
            "raw asyncpg insert": raw_insert,
        }

    def windows(self) -> dict[str, Action]:
        """The 8,000-token window at every size, round-robin among themselves."""

        def window(size: int) -> Action:
            async def run() -> None:
                await self.manager.get_context(f"load-{size}", TokenBudget(8000))

            return run

        return {str(size): window(size) for size in SIZES}

    def loaders(self, size: int) -> dict[str, Action]:
        async def ctx_load() -> None:
            assert len(await self.storage.load(f"load-{size}")) == size

        async def langchain() -> None:
            assert len(await self.lc[size].aget_messages()) >= size

        async def raw_select() -> None:
            assert len(await self.raw.fetch(RAW_SELECT, f"load-{size}")) == size

        return {
            "ctxstore load": ctx_load,
            "langchain messages": langchain,
            "raw asyncpg select": raw_select,
        }


async def throughput(url: URL, storage: PostgresStorage, seconds: float) -> dict[str, float]:
    manager = ContextManager(storage)
    pair = history(2)
    arrays = append_values(pair)
    fresh = b"".join(m.digest() for m in pair)
    pool = await raw_pool(url, 10)
    versions = [0] * 32

    async def ours(index: int) -> None:
        await manager.add_messages(f"tp-{index}", pair)

    async def floor(index: int) -> None:
        async with pool.acquire() as conn:
            versions[index] = await raw_append(
                conn, f"raw-tp-{index}", arrays, fresh, versions[index]
            )

    try:
        raw_first = await run_for(seconds / 2, floor)
        mine = await run_for(seconds, ours)
        raw_second = await run_for(seconds / 2, floor)
    finally:
        await pool.close()
    return {"ctxstore": mine, "raw asyncpg": (raw_first + raw_second) / 2}


MEMORY_PROBE = """
import asyncio, json, sys
url, kind, session = sys.argv[1], sys.argv[2], sys.argv[3]

def status(field):
    with open("/proc/self/status") as lines:
        for line in lines:
            if line.startswith(field):
                return int(line.split()[1])

def reset_peak():
    with open("/proc/self/clear_refs", "w") as control:
        control.write("5")  # resets VmHWM, the peak RSS, to the current RSS

async def main():
    if kind == "ctxstore":
        from ctxstore import PostgresStorage
        async with PostgresStorage.from_url(url) as storage:
            await storage.load("load-100")
            reset_peak()
            before = status("VmRSS:")
            messages = await storage.load(session)
            after = status("VmHWM:")
    else:
        import asyncpg
        from sqlalchemy import make_url
        u = make_url(url)
        host = u.host or u.query.get("host")
        conn = await asyncpg.connect(
            user=u.username, host=host, port=u.port, database=u.database
        )
        await conn.fetch("SELECT 1")
        reset_peak()
        before = status("VmRSS:")
        messages = await conn.fetch(sys.argv[4], session)
        after = status("VmHWM:")
        await conn.close()
    print(json.dumps({"rows": len(messages), "peak_kib": after - before}))
asyncio.run(main())
"""


def peak_rss(url: URL, kind: str) -> dict[str, Any]:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            MEMORY_PROBE,
            url.render_as_string(False),
            kind,
            "load-10000",
            RAW_SELECT,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ},
    )
    return dict(json.loads(result.stdout))


async def main(url: URL, throughput_seconds: float) -> dict[str, Any]:
    contenders = Contenders(url)
    await contenders.setup()
    try:
        appends: dict[int, dict[str, float]] = {}
        loads: dict[int, dict[str, float]] = {}
        for size in SIZES:
            group = contenders.appenders(size)
            # The JSONB overwrite writes the whole session each turn (megabytes of WAL at
            # 10,000 messages): measured on its own so its flushes don't slow the others.
            heavy = {"jsonb overwrite": group.pop("jsonb overwrite")}
            appends[size] = await round_robin_medians(group, trials=TRIALS)
            appends[size].update(await round_robin_medians(heavy, trials=TRIALS))
            loads[size] = await interleaved_medians(contenders.loaders(size), trials=TRIALS)
        windows = await interleaved_medians(contenders.windows(), trials=TRIALS)
        for size in SIZES:
            loads[size]["ctxstore window 8k"] = windows[str(size)]
        rates = await throughput(url, contenders.storage, throughput_seconds)
    finally:
        await contenders.close()
    memory = {kind: peak_rss(url, kind) for kind in ("ctxstore", "raw")}
    return {"appends": appends, "loads": loads, "throughput": rates, "memory": memory}


def report(results: dict[str, Any]) -> str:
    appends, loads = results["appends"], results["loads"]
    lines = ["append a turn (2 messages), median ms"]
    systems = list(appends[SIZES[0]])
    lines.append(
        table(
            [
                (LABELS.get(name, name), *(f"{appends[size][name]:.3f}" for size in SIZES))
                for name in systems
            ],
            ("store", *(f"{size:,} msgs" for size in SIZES)),
        )
    )
    lines.append("\nload, median ms")
    lines.append(
        table(
            [(name, *(f"{loads[size][name]:.3f}" for size in SIZES)) for name in loads[SIZES[0]]],
            ("reader", *(f"{size:,} msgs" for size in SIZES)),
        )
    )
    save = {size: appends[size][SAVE_HISTORY] for size in SIZES}
    plain = {size: appends[size][SAVE_PLAIN] for size in SIZES}
    loaded = {size: appends[size][SAVE_LOADED] for size in SIZES}
    ratios = [
        ("save at 10,000 / at 10 (target <= 1.5)", save[10_000] / save[10]),
        *(
            (
                f"plain-list save / History save, both after a load, at {size:,}"
                + (" (target <= 1.2)" if size == 10_000 else ""),
                plain[size] / loaded[size],
            )
            for size in SIZES
        ),
        *(
            (
                f"save / langchain add_messages at {size:,} (target <= 1)",
                save[size] / appends[size]["langchain add_messages"],
            )
            for size in SIZES
        ),
        *(
            (
                f"append / raw insert at {size:,}",
                appends[size]["ctxstore append"] / appends[size]["raw asyncpg insert"],
            )
            for size in SIZES
        ),
        (
            "load of 1,000 / raw select (target <= 1.5)",
            loads[1_000]["ctxstore load"] / loads[1_000]["raw asyncpg select"],
        ),
        (
            "langchain load of 1,000 / raw select",
            loads[1_000]["langchain messages"] / loads[1_000]["raw asyncpg select"],
        ),
        (
            "window at 10,000 / at 100 (target <= 2)",
            loads[10_000]["ctxstore window 8k"] / loads[100]["ctxstore window 8k"],
        ),
        (
            "throughput / raw floor (target >= 0.6)",
            results["throughput"]["ctxstore"] / results["throughput"]["raw asyncpg"],
        ),
    ]
    lines.append("\nratios (same run)")
    lines.append(table([(name, f"{value:.2f}") for name, value in ratios], ("ratio", "value")))
    rates = results["throughput"]
    lines.append(
        f"\nthroughput, 32 sessions: ctxstore {rates['ctxstore']:,.0f} turns/s, "
        f"raw asyncpg {rates['raw asyncpg']:,.0f} turns/s"
    )
    memory = results["memory"]
    lines.append(
        "peak RSS growth loading 10,000 messages: "
        + ", ".join(f"{kind} {value['peak_kib'] / 1024:.1f} MiB" for kind, value in memory.items())
    )
    return "\n".join(lines)


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for name in results["appends"][SIZES[0]]:
        left.plot(SIZES, [results["appends"][s][name] for s in SIZES], marker="o", label=name)
    for name in results["loads"][SIZES[0]]:
        right.plot(SIZES, [results["loads"][s][name] for s in SIZES], marker="o", label=name)
    for axis, title in ((left, "append a turn (2 messages)"), (right, "load")):
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_xlabel("messages stored in the session")
        axis.set_ylabel("median ms")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


if __name__ == "__main__":
    seconds = float(os.environ.get("CTXSTORE_BENCH_THROUGHPUT_SECONDS", "10"))
    with bench_database() as database_url:
        results = asyncio.run(main(database_url, seconds))
    RESULTS.mkdir(exist_ok=True)
    text = report(results)
    print(text)
    serializable = {
        key: {str(k): v for k, v in value.items()} if isinstance(value, dict) else value
        for key, value in results.items()
    }
    (RESULTS / "compare.json").write_text(json.dumps(serializable, indent=2), encoding="utf-8")
    chart(results, RESULTS / "compare.png")
    print(f"\nwrote {RESULTS / 'compare.json'} and {RESULTS / 'compare.png'}")
