"""The framework adapters beside each framework's own PostgreSQL store, in one run.

- LangChain: ``CtxstoreChatMessageHistory`` against langchain-postgres's
  ``PostgresChatMessageHistory`` (psycopg), both asynchronous (``aadd_messages``,
  ``aget_messages``) and synchronous (``add_messages``, ``messages``);
- OpenAI Agents SDK: ``CtxstoreSession`` against the SDK's ``SQLAlchemySession``
  (asyncpg, ``create_tables=True``).

On sessions of 10, 1,000 and 10,000 stored messages, each measures appending one turn
(a user and an assistant message) and reading the last 20 messages: the Agents SDK
asks ``get_items(limit=20)``; LangChain's interface has no limit, so the peer reads
every message and keeps the last 20, and ctxstore reads with ``window=20``.  Reads are
measured on exactly N stored messages, then the appends (the session grows by two per
turn).  Every figure is the median of TRIALS runs, contenders round-robin; all on one
database of $CTXSTORE_BENCH_DATABASE_URL's server (else the embedded one), dropped
after.  Writes a table and benchmarks/results/adapters.json.

Needs the `bench` extra (langchain-postgres, psycopg, openai-agents[sqlalchemy]).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import PostgresStorage
from ctxstore.adapters import call_blocking

SIZES = (10, 1_000, 10_000)
WINDOW = 20
# CTXSTORE_BENCH_TRIALS: fewer for a quick look; the published figures use 40.
TRIALS = int(os.environ.get("CTXSTORE_BENCH_TRIALS", "40"))
RESULTS = Path(__file__).resolve().parent / "results"

Action = Callable[[], Any]


def content(i: int) -> str:
    if i % 2 == 0:
        return f"Message {i}: my knee feels unstable on stairs, about a week now. 膝盖不稳。"
    return f"Message {i}: any pain or swelling? Did you twist it before? Please describe it."


def psycopg_conninfo(url: URL) -> str:
    host = url.host or url.query.get("host")
    parts = [f"dbname={url.database}", f"user={url.username or 'postgres'}", f"host={host}"]
    if url.port:
        parts.append(f"port={url.port}")
    if url.password:
        parts.append(f"password={url.password}")
    return " ".join(parts)


def medians(actions: dict[str, Action], trials: int, warmup: int = 3) -> dict[str, float]:
    """Median ms per action, the actions round-robin (RUN awaits the asynchronous ones)."""
    for _ in range(warmup):
        for action in actions.values():
            RUN(action)
    samples: dict[str, list[float]] = {name: [] for name in actions}
    for _ in range(trials):
        for name, action in actions.items():
            # Untimed: the garbage of one contender's reads (10,000 objects for a peer
            # reading everything) is not collected during the next one's timed call.
            gc.collect()
            started = time.perf_counter()
            RUN(action)
            samples[name].append(time.perf_counter() - started)
    return {name: sorted(values)[len(values) // 2] * 1000 for name, values in samples.items()}


class _Runner:
    """Runs an action: a plain call, or a coroutine function on the bench's event loop
    (one loop for the whole run, so the async contenders keep their connections)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __call__(self, action: Action) -> Any:
        result = action()
        if isinstance(result, Awaitable):
            return self.loop.run_until_complete(_awaited(result))
        return result


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


RUN = _Runner()


class LangChainContenders:
    def __init__(self, url: URL) -> None:
        import psycopg  # noqa: PLC0415
        from langchain_core.messages import AIMessage, HumanMessage  # noqa: PLC0415
        from langchain_postgres import PostgresChatMessageHistory  # noqa: PLC0415

        from ctxstore.adapters.langchain import CtxstoreChatMessageHistory  # noqa: PLC0415

        self.human, self.ai = HumanMessage, AIMessage
        self.peer_class, self.ours_class = PostgresChatMessageHistory, CtxstoreChatMessageHistory
        self.async_storage = PostgresStorage.from_url(url)  # used from RUN's loop
        self.sync_storage = PostgresStorage.from_url(url)  # used from synchronous code
        self.peer_async = RUN(
            lambda: psycopg.AsyncConnection.connect(psycopg_conninfo(url), autocommit=True)
        )
        self.peer_sync = psycopg.connect(psycopg_conninfo(url), autocommit=True)
        PostgresChatMessageHistory.create_tables(self.peer_sync, "lc_messages")
        self.ids = {size: (f"lc-{size}", str(uuid.uuid4())) for size in SIZES}
        self.turns = 0

    def setup(self) -> None:
        for size, (ours, peer) in self.ids.items():
            history = self.ours_class(ours, self.sync_storage)
            peer_history = self.peer_class("lc_messages", peer, sync_connection=self.peer_sync)
            for start in range(0, size, 1000):
                batch = [
                    (self.human if i % 2 == 0 else self.ai)(content(i))
                    for i in range(start, min(size, start + 1000))
                ]
                history.add_messages(batch)
                peer_history.add_messages(batch)

    def turn(self) -> list[Any]:
        self.turns += 1
        return [self.human(content(2 * self.turns)), self.ai(content(2 * self.turns + 1))]

    def readers(self, size: int) -> list[dict[str, Action]]:
        ours, peer = self.ids[size]
        ours_async = self.ours_class(ours, self.async_storage, window=WINDOW)
        ours_sync = self.ours_class(ours, self.sync_storage, window=WINDOW)
        ours_all = self.ours_class(ours, self.async_storage)
        peer_async = self.peer_class("lc_messages", peer, async_connection=self.peer_async)
        peer_sync = self.peer_class("lc_messages", peer, sync_connection=self.peer_sync)

        async def peer_last() -> list[Any]:
            return (await peer_async.aget_messages())[-WINDOW:]

        return [
            {
                "ctxstore aget_messages": ours_async.aget_messages,
                "langchain-postgres aget_messages": peer_last,
                # the interface's own semantics, for reference: every message
                "ctxstore aget_messages, no window (all)": ours_all.aget_messages,
            },
            {
                "ctxstore messages (sync)": lambda: ours_sync.messages,
                "langchain-postgres messages (sync)": lambda: peer_sync.messages[-WINDOW:],
            },
        ]

    def appenders(self, size: int) -> list[dict[str, Action]]:
        ours, peer = self.ids[size]
        ours_async = self.ours_class(ours, self.async_storage)
        ours_sync = self.ours_class(ours, self.sync_storage)
        peer_async = self.peer_class("lc_messages", peer, async_connection=self.peer_async)
        peer_sync = self.peer_class("lc_messages", peer, sync_connection=self.peer_sync)
        return [
            {
                "ctxstore aadd_messages": lambda: ours_async.aadd_messages(self.turn()),
                "langchain-postgres aadd_messages": lambda: peer_async.aadd_messages(self.turn()),
            },
            {
                "ctxstore add_messages (sync)": lambda: ours_sync.add_messages(self.turn()),
                "langchain-postgres add_messages (sync)": lambda: peer_sync.add_messages(
                    self.turn()
                ),
            },
        ]

    def close(self) -> None:
        RUN(self.async_storage.close)
        call_blocking(self.sync_storage, self.sync_storage.close)
        RUN(self.peer_async.close)
        self.peer_sync.close()


class AgentsContenders:
    def __init__(self, url: URL) -> None:
        from agents.extensions.memory import SQLAlchemySession  # noqa: PLC0415
        from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415

        from ctxstore.adapters.agents import CtxstoreSession  # noqa: PLC0415

        self.storage = PostgresStorage.from_url(url)
        self.engine = create_async_engine(url.set(drivername="postgresql+asyncpg"))
        self.ours = {size: CtxstoreSession(f"ag-{size}", self.storage) for size in SIZES}
        self.peer = {
            size: SQLAlchemySession(f"ag-{size}", engine=self.engine, create_tables=True)
            for size in SIZES
        }
        self.turns = 0

    def setup(self) -> None:
        for size in SIZES:
            for start in range(0, size, 1000):
                batch = [
                    {"role": "user" if i % 2 == 0 else "assistant", "content": content(i)}
                    for i in range(start, min(size, start + 1000))
                ]
                RUN(lambda batch=batch, size=size: self.ours[size].add_items(batch))
                RUN(lambda batch=batch, size=size: self.peer[size].add_items(batch))

    def turn(self) -> list[Any]:
        self.turns += 1
        return [
            {"role": "user", "content": content(2 * self.turns)},
            {"role": "assistant", "content": content(2 * self.turns + 1)},
        ]

    def readers(self, size: int) -> list[dict[str, Action]]:
        return [
            {
                "ctxstore get_items": lambda: self.ours[size].get_items(limit=WINDOW),
                "SQLAlchemySession get_items": lambda: self.peer[size].get_items(limit=WINDOW),
            }
        ]

    def appenders(self, size: int) -> list[dict[str, Action]]:
        return [
            {
                "ctxstore add_items": lambda: self.ours[size].add_items(self.turn()),
                "SQLAlchemySession add_items": lambda: self.peer[size].add_items(self.turn()),
            }
        ]

    def close(self) -> None:
        RUN(self.storage.close)
        RUN(self.engine.dispose)


def measure(contenders: LangChainContenders | AgentsContenders) -> dict[str, dict[int, float]]:
    figures: dict[str, dict[int, float]] = {}
    for size in SIZES:
        # Each group (asynchronous, synchronous) round-robin among itself: like with like.
        for kind, groups in (
            ("read last 20", contenders.readers(size)),
            ("append a turn", contenders.appenders(size)),
        ):
            for actions in groups:
                for name, ms in medians(actions, TRIALS).items():
                    figures.setdefault(f"{kind}: {name}", {})[size] = ms
    return figures


def verdicts(figures: dict[str, dict[int, float]]) -> list[str]:
    """ctxstore against its peer in each pairing, at each size, and its own flatness."""
    lines = []
    for label, ours in figures.items():
        if "ctxstore" not in label or "(all)" in label:
            continue
        kind, name = label.split(": ", 1)
        for peer_label, theirs in figures.items():
            if peer_label.startswith(kind + ":") and "ctxstore" not in peer_label:
                sync = "(sync)" in name
                if sync != ("(sync)" in peer_label):
                    continue
                ratios = ", ".join(f"{ours[s] / theirs[s]:.2f}" for s in SIZES)
                lines.append(f"{label} / {peer_label.split(': ', 1)[1]} at {SIZES}: {ratios}")
        lines.append(f"{label}: 10,000 vs 10 messages: {ours[SIZES[-1]] / ours[SIZES[0]]:.2f}x")
    return lines


def main() -> None:
    with bench_database() as url:
        print(f"trials: {TRIALS} per figure; sizes: {SIZES}; window: {WINDOW}")
        results: dict[str, dict[str, dict[int, float]]] = {}
        for framework, build in (("LangChain", LangChainContenders), ("Agents", AgentsContenders)):
            contenders = build(url)
            try:
                started = time.perf_counter()
                contenders.setup()
                print(f"{framework}: sessions filled in {time.perf_counter() - started:.1f} s")
                results[framework] = measure(contenders)
            finally:
                contenders.close()
            rows = [
                (label, *(f"{figures[size]:.3f}" for size in SIZES))
                for label, figures in results[framework].items()
            ]
            header = ("ms per operation (median)", *(f"{size:,} msgs" for size in SIZES))
            print(f"\n{framework}\n{table(rows, header)}")
            print("\n".join(verdicts(results[framework])))
        RUN.loop.close()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "adapters.json").write_text(json.dumps(results, indent=2))
    print(f"\nwrote {RESULTS / 'adapters.json'}")


if __name__ == "__main__":
    main()
