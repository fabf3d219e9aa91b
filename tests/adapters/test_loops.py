"""One storage, many callers: the adapters run every call on the loop that serves the
storage (ctxstore/adapters/loops.py), on a real PostgreSQL whose connections belong to
one loop."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")

from langchain_core.messages import AIMessage, HumanMessage
from sqlalchemy import URL

from ctxstore import PostgresStorage
from ctxstore.adapters import call_blocking
from ctxstore.adapters.langchain import CtxstoreChatMessageHistory
from ctxstore.adapters.loops import on_home_loop, settled


async def test_a_call_from_another_loop_runs_on_the_storages_loop(
    pg: PostgresStorage, sid: str
) -> None:
    history = CtxstoreChatMessageHistory(sid, pg)
    await history.aadd_messages([HumanMessage("from the test's loop")])

    def elsewhere() -> list[object]:
        async def run() -> list[object]:
            await history.aadd_messages([AIMessage("from another loop")])
            return list(await history.aget_messages())

        return asyncio.run(run())

    seen = await asyncio.to_thread(elsewhere)

    assert seen == [HumanMessage("from the test's loop"), AIMessage("from another loop")]
    assert await history.aget_messages() == seen


async def test_synchronous_first_then_asynchronous(sync_pg: PostgresStorage, sid: str) -> None:
    """The portal serves the storage; the test's loop hands its calls over."""
    history = CtxstoreChatMessageHistory(sid, sync_pg)
    await asyncio.to_thread(history.add_messages, [HumanMessage("sync")])

    await history.aadd_messages([AIMessage("async")])

    assert await history.aget_messages() == [HumanMessage("sync"), AIMessage("async")]
    assert history.messages == [HumanMessage("sync"), AIMessage("async")]


def test_asyncio_run_twice_with_one_storage(module_database_url: URL, sid: str) -> None:
    """A closed home loop is not waited for: the next loop takes over with fresh
    connections (the old loop's ones cannot be used or closed any more)."""
    storage = PostgresStorage.from_url(module_database_url)
    history = CtxstoreChatMessageHistory(sid, storage)
    try:
        asyncio.run(history.aadd_messages([HumanMessage("first run")]))
        asyncio.run(history.aadd_messages([AIMessage("second run")]))
        assert asyncio.run(history.aget_messages()) == [
            HumanMessage("first run"),
            AIMessage("second run"),
        ]
    finally:
        asyncio.run(storage.close())


def test_threads_share_one_synchronous_storage(sync_pg: PostgresStorage, sid: str) -> None:
    history = CtxstoreChatMessageHistory(sid, sync_pg)

    def worker(name: str) -> None:
        for n in range(5):
            history.add_messages([HumanMessage(f"{name}-{n}")])

    threads = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    stored = sorted(str(m.content) for m in call_blocking(sync_pg, history.aget_messages))
    assert stored == sorted(f"t{i}-{n}" for i in range(4) for n in range(5))


async def test_settled_finishes_the_work_then_reports_the_cancellation() -> None:
    finished = asyncio.Event()

    async def work() -> str:
        await asyncio.sleep(0.05)
        finished.set()
        return "done"

    task = asyncio.create_task(settled(work()))
    await asyncio.sleep(0.01)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()  # twice: still waits

    with pytest.raises(asyncio.CancelledError):
        await task
    assert finished.is_set()
    assert await settled(work()) == "done"


class _Storage:
    """Any object serves as the key of a storage's loop."""


def test_a_handed_over_call_outlives_the_loop_that_served_the_storage() -> None:
    """Issue 30: a call handed to the storage's home loop was lost (CancelledError, or a
    hang) when that loop ended while the call ran."""
    storage = _Storage()
    started, finished = threading.Event(), threading.Event()
    outcomes: list[object] = []

    async def slow() -> str:
        started.set()
        await asyncio.sleep(0.3)
        finished.set()
        return "landed"

    def caller() -> None:
        try:
            outcomes.append(asyncio.run(on_home_loop(storage, slow)))
        except BaseException as error:  # the test reports what happened
            outcomes.append(error)

    async def first_home() -> None:
        await on_home_loop(storage, lambda: asyncio.sleep(0))  # this loop serves it now
        threading.Thread(target=caller, daemon=True).start()
        await asyncio.to_thread(started.wait, 5)  # the other loop's call is running

    asyncio.run(first_home())  # ... and this loop ends under it
    deadline = time.monotonic() + 5
    while not outcomes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert outcomes == ["landed"]
    assert finished.is_set()


def test_threads_with_their_own_loops_share_one_storage(module_database_url: URL) -> None:
    """Issue 30: four threads, each running its own loops (as Runner.run_sync does) on
    its own session over one PostgresStorage, hung in 4 of 5 runs."""
    storage = PostgresStorage.from_url(module_database_url)
    sessions = [f"loops-{uuid.uuid4().hex[:8]}-{index}" for index in range(4)]
    failures: list[BaseException] = []

    def worker(session_id: str) -> None:
        history = CtxstoreChatMessageHistory(session_id, storage)
        try:
            for turn in range(5):
                asyncio.run(history.aadd_messages([HumanMessage(f"{session_id} {turn}")]))
        except BaseException as error:  # reported below
            failures.append(error)

    threads = [threading.Thread(target=worker, args=(sid,), daemon=True) for sid in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        assert not any(thread.is_alive() for thread in threads), "a thread hung"
        assert failures == []
        for session_id in sessions:
            stored = call_blocking(storage, storage.load, session_id)
            assert [m.content for m in stored] == [f"{session_id} {turn}" for turn in range(5)]
    finally:
        for session_id in sessions:
            call_blocking(storage, storage.delete, session_id)
        call_blocking(storage, storage.close)
