"""Summaries off the request path, and the encodings of today's models (issue 29).

In one run, on one database:

1. ``get_context`` latency with the summary trigger passed, with a summarizer that takes
   2 s (as an LLM call does): ``SummarizeOldest`` (inline: the turn waits for the call)
   against ``SummarizeInBackground`` (enqueue, serve at once); each trial on a session of
   its own, freshly past its trigger;
2. LLM calls per trigger with 8 workers (each with its own storage and pool, as 8
   processes have) polling one queue while 8 callers pass one session's trigger at once;
3. the token count of the demo's knee consultation (its messages, as the Context
   Contract carries them) under cl100k_base and o200k_base.

Run: python -m benchmarks.bench_summaries [--trials N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import ContextManager, Message, PostgresStorage
from ctxstore.commands.demo import knee_consultation
from ctxstore.context.compression import SummarizeOldest
from ctxstore.summaries import SummarizeInBackground, SummaryQueue, SummaryWorker
from ctxstore.tokens import TokenCounter

LLM_SECONDS = 2.0
KEEP, TRIGGER = 4, 200


class SlowSummarizer:
    """Takes LLM_SECONDS, as an LLM call does, and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, messages: Sequence[Message], previous: str | None) -> str:
        self.calls += 1
        await asyncio.sleep(LLM_SECONDS)
        return f"{previous or ''}[{len(messages)} messages]"


def history() -> list[Message]:
    return [
        Message(
            role="user" if n % 2 == 0 else "assistant",
            content=f"第{n}轮：膝盖疼了一周，上下楼梯时明显，休息后好一些。",
            turn_id=f"t{n}",
            timestamp="2026-12-04T09:00:00+08:00",
        )
        for n in range(40)
    ]


async def latencies(url: URL, trials: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {"inline": [], "background": []}
    async with PostgresStorage.from_url(url) as storage:
        queue = SummaryQueue(storage)
        summarizer = SlowSummarizer()
        managers = {
            "inline": ContextManager(storage, strategy=SummarizeOldest(summarizer, KEEP, TRIGGER)),
            "background": ContextManager(
                storage, strategy=SummarizeInBackground(queue, KEEP, TRIGGER)
            ),
        }
        for trial in range(trials):
            for name, manager in managers.items():  # interleaved
                session = f"{name}-{trial}"
                await storage.save(session, history())
                started = time.perf_counter()
                await manager.get_context(session)
                timings[name].append(time.perf_counter() - started)
                # Gone before part 2: its job then ends with no call (superseded).
                await storage.delete(session)
    return timings


async def calls_per_trigger(url: URL, sessions: int) -> list[int]:
    """For each of ``sessions`` sessions: the LLM calls 8 workers made for its trigger."""
    counts = []
    storages = [PostgresStorage.from_url(url) for _ in range(8)]
    try:
        queues = [SummaryQueue(storage) for storage in storages]
        for session in range(sessions):
            summarizer = SlowSummarizer()
            session_id = f"eight-{session}"
            await storages[0].save(session_id, history())
            workers = [SummaryWorker(q, summarizer, poll_seconds=0.05) for q in queues]
            stop = asyncio.Event()
            running = [asyncio.create_task(worker.run(stop)) for worker in workers]
            await asyncio.gather(
                *(
                    SummarizeInBackground(q, KEEP, TRIGGER).window(s, session_id, s.token_counter)
                    for s, q in zip(storages, queues, strict=True)
                )
            )
            for _ in range(600):  # the summary is stored once one worker's call ends
                if await storages[0].load_summary(session_id) is not None:
                    break
                await asyncio.sleep(0.05)
            await asyncio.sleep(0.5)  # room for a second call, were any worker to make one
            stop.set()
            await asyncio.gather(*running)
            counts.append(summarizer.calls)
    finally:
        for storage in storages:
            await storage.close()
    return counts


def encodings_of_the_demo() -> list[tuple[str, ...]]:
    messages = knee_consultation()
    rows: list[tuple[str, ...]] = []
    for name in ("cl100k_base", "o200k_base"):
        counter = TokenCounter(name)
        costs = [counter.message_cost(m) for m in messages]
        content = sum(counter.count(m.content) for m in messages)
        rows.append((name, str(len(messages)), str(sum(c or 0 for c in costs)), str(content)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=5, help="triggers for the 8 workers")
    args = parser.parse_args()
    with bench_database() as url:
        timings = asyncio.run(latencies(url, args.trials))
        counts = asyncio.run(calls_per_trigger(url, args.sessions))
    inline, background = (statistics.median(timings[k]) for k in ("inline", "background"))
    print(
        f"\nget_context with the trigger passed, summarizer of {LLM_SECONDS:.0f} s, "
        f"{args.trials} trials each, medians:"
    )
    print(
        table(
            [
                ("inline (SummarizeOldest)", f"{inline * 1000:,.1f}"),
                ("background (SummarizeInBackground)", f"{background * 1000:,.1f}"),
                ("ratio", f"{inline / background:,.0f}x"),
            ],
            ("strategy", "ms"),
        )
    )
    print(f"\nLLM calls per trigger, 8 workers on one session: {counts}")
    print("\nthe demo's knee consultation (docs: ctxstore demo):")
    print(
        table(
            encodings_of_the_demo(),
            ("encoding", "messages", "contract tokens (elements)", "content tokens"),
        )
    )


if __name__ == "__main__":
    main()
