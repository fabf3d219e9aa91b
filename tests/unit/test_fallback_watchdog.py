"""The fallback history's watchdog: where a call waits, and what counts as progress."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

from tests.fallback_history import FinishedCalls, await_chain


@asynccontextmanager
async def held(lock: asyncio.Lock) -> AsyncIterator[None]:
    async with lock:
        yield


async def waits_for(lock: asyncio.Lock) -> None:
    async with held(lock):
        pass


async def test_the_await_chain_goes_into_an_async_context_manager() -> None:
    lock = asyncio.Lock()
    await lock.acquire()
    task = asyncio.create_task(waits_for(lock))
    await asyncio.sleep(0)
    names = [step.rsplit(" ", 1)[1] for step in await_chain(task)]
    lock.release()
    await task
    assert names[:3] == ["waits_for", "__aenter__", "held"]


class Primary:
    limits = "the primary's limits"

    async def answers(self) -> int:
        return 7

    async def fails(self) -> None:
        raise TimeoutError


async def test_the_primary_counts_each_call_it_finished_answered_or_failed() -> None:
    primary = FinishedCalls(Primary())
    assert primary.limits == "the primary's limits"
    assert await primary.answers() == 7
    with pytest.raises(TimeoutError):
        await primary.fails()
    assert primary.finished == 2
