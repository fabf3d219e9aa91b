"""Summary jobs on Citus: distributed beside ``sessions``, each claim a single-shard
UPDATE, one LLM call per trigger across workers, and erased with their user."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.summaries import SummarizeInBackground, SummaryQueue, SummaryWorker
from tests.citus.conftest import query
from tests.conformance.contract import timed_history


def history(count: int) -> list[Message]:
    return timed_history(count, text="第{n}轮：膝盖疼了一周。")


async def test_jobs_are_claimed_once_and_summarized_once(database_url: URL) -> None:
    calls: list[int] = []

    async def summarizer(messages: Sequence[Message], previous: str | None) -> str:
        calls.append(len(messages))
        await asyncio.sleep(0.2)
        return f"[{len(messages)}]"

    storages = [PostgresStorage.from_url(database_url) for _ in range(4)]
    try:
        for n in range(6):
            await storages[0].save(f"cj{n}", history(30), user_id=f"cju{n % 2}")
        queues = [SummaryQueue(storage) for storage in storages]
        for storage, queue in zip(storages, queues, strict=True):  # 4 callers, 6 sessions
            strategy = SummarizeInBackground(queue, keep_recent=4, trigger_tokens=100)
            for n in range(6):
                await strategy.window(storage, f"cj{n}", storage.token_counter)
        [(waiting,)] = await query(database_url, "SELECT count(*) FROM summary_jobs")
        assert waiting == 6
        workers = [SummaryWorker(queue, summarizer) for queue in queues]
        while any(await asyncio.gather(*(worker.run_once() for worker in workers))):
            pass
        assert calls == [26] * 6
        for n in range(6):
            summary = await storages[0].load_summary(f"cj{n}")
            assert summary is not None and summary.summary_version == 1
        [(left,)] = await query(database_url, "SELECT count(*) FROM summary_jobs")
        assert left == 0

        await queues[0].enqueue("cj0", 29)  # a later trigger, then the user is erased
        await queues[0].enqueue("cj1", 29)
        await storages[0].erase_user("cju0", vacuum=False)
        kept = await query(database_url, "SELECT session_id FROM summary_jobs")
        assert [row[0] for row in kept] == ["cj1"]
    finally:
        for storage in storages:
            await storage.close()
