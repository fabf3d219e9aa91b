"""Summaries in the background on a real PostgreSQL: get_context never waits for the LLM,
and one LLM call runs per trigger however many workers and processes claim the job."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import URL

from ctxstore import ContextManager, Message, PostgresStorage
from ctxstore.context.compression import SummarizeOldest
from ctxstore.summaries import Backoff, SummarizeInBackground, SummaryQueue, SummaryWorker
from tests.conformance.contract import timed_history
from tests.integration.summarizers import LOG_ENV
from tests.integration.test_telemetry import Exported, exported  # noqa: F401
from tests.pg_harness import rows

REPO = Path(__file__).resolve().parents[2]
KEEP = 4
TRIGGER = 200


history = timed_history


class Recorder:
    """A summarizer that records its calls and can be made slow or failing."""

    def __init__(self, delay: float = 0.0, fail: int = 0) -> None:
        self.calls: list[int] = []
        self.delay = delay
        self.fail = fail
        self.started = asyncio.Event()

    async def __call__(self, messages: Sequence[Message], previous: str | None) -> str:
        self.calls.append(len(messages))
        self.started.set()
        await asyncio.sleep(self.delay)
        if len(self.calls) <= self.fail:
            raise RuntimeError("the LLM said: 膝盖疼 (a message quoting the conversation)")
        return f"{previous or ''}[{len(messages)}]"


@pytest.fixture
async def storage(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url) as opened:
        yield opened


async def job_rows(storage: PostgresStorage) -> list[tuple[object, ...]]:
    return await rows(
        storage.engine.url,
        "SELECT session_id, until_seq, state, attempts, last_error FROM summary_jobs "
        "ORDER BY session_id",
    )


async def test_get_context_serves_at_once_and_enqueues_one_job(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    summarizer = Recorder(delay=2.0)
    manager = ContextManager(
        storage, strategy=SummarizeInBackground(queue, keep_recent=KEEP, trigger_tokens=TRIGGER)
    )
    await storage.save("s", history(30))
    windows = await asyncio.gather(*(manager.get_context("s") for _ in range(8)))
    assert summarizer.calls == []  # nobody waited for the LLM
    for window in windows:  # no summary yet: every message after none
        assert window.summary is None
        assert len(window.messages) == 30
    assert await job_rows(storage) == [("s", 30 - KEEP - 1, "queued", 0, None)]

    worker = SummaryWorker(queue, summarizer)
    assert await worker.run_once()
    assert not await worker.run_once()  # the one job is done
    assert summarizer.calls == [30 - KEEP]
    assert await job_rows(storage) == []
    window = await manager.get_context("s")
    assert window.summary is not None and window.summary.covers_until == 30 - KEEP - 1
    assert [m.content for m in window.messages] == [m.content for m in history(30)[-KEEP:]]
    assert worker.stats.summarized == 1 and len(worker.stats.lags) == 1


async def test_a_window_after_the_summary_keeps_to_max_tokens(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    await storage.save("s", history(40))
    free = SummarizeInBackground(queue, keep_recent=KEEP, trigger_tokens=10**9)
    bounded = SummarizeInBackground(queue, keep_recent=KEEP, trigger_tokens=10**9, max_tokens=300)
    everything = await free.window(storage, "s", storage.token_counter)
    newest = await bounded.window(storage, "s", storage.token_counter)
    assert len(everything.messages) == 40
    assert 0 < len(newest.messages) < 40 and newest.token_count <= 300
    assert newest.messages == everything.messages[-len(newest.messages) :]
    assert await job_rows(storage) == []  # the trigger never passed


async def test_eight_workers_on_one_session_make_one_llm_call(database_url: URL) -> None:
    """Eight workers, each with a storage and pool of its own (as eight processes have),
    all polling while eight callers pass the trigger at once."""
    summarizer = Recorder(delay=0.5)
    storages = [PostgresStorage.from_url(database_url) for _ in range(8)]
    try:
        await storages[0].save("s", history(60))
        queues = [SummaryQueue(storage) for storage in storages]
        workers = [SummaryWorker(q, summarizer, poll_seconds=0.05) for q in queues]
        stop = asyncio.Event()
        running = [asyncio.create_task(worker.run(stop)) for worker in workers]
        managers = [
            ContextManager(s, strategy=SummarizeInBackground(q, KEEP, TRIGGER))
            for s, q in zip(storages, queues, strict=True)
        ]
        await asyncio.gather(*(manager.get_context("s") for manager in managers))
        for _ in range(100):
            summary = await storages[0].load_summary("s")
            if summary is not None and not await job_rows(storages[0]):
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)  # time for a second call, if any worker were to make one
        stop.set()
        await asyncio.gather(*running)
        assert summarizer.calls == [60 - KEEP]
        assert summary is not None and summary.summary_version == 1
        assert sum(w.stats.summarized for w in workers) == 1
    finally:
        for storage in storages:
            await storage.close()


async def test_a_trigger_passed_while_summarizing_queues_the_rest(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    summarizer = Recorder(delay=0.3)
    strategy = SummarizeInBackground(queue, KEEP, TRIGGER)
    await storage.save("s", history(30))
    await strategy.window(storage, "s", storage.token_counter)
    worker = SummaryWorker(queue, summarizer)
    running = asyncio.create_task(worker.run_once())
    await summarizer.started.wait()
    await storage.append("s", history(30, start=30))
    await strategy.window(storage, "s", storage.token_counter)  # the trigger passes again
    assert await running
    assert await job_rows(storage) == [("s", 60 - KEEP - 1, "queued", 0, None)]
    assert await worker.run_once()
    assert summarizer.calls == [30 - KEEP, 30]
    summary = await storage.load_summary("s")
    assert summary is not None and summary.covers_until == 60 - KEEP - 1


async def test_a_failing_summarizer_is_retried_with_backoff_then_dead(
    storage: PostgresStorage,
) -> None:
    queue = SummaryQueue(storage)
    summarizer = Recorder(fail=99)
    await storage.save("s", history(30))
    await SummarizeInBackground(queue, KEEP, TRIGGER).window(storage, "s", storage.token_counter)
    worker = SummaryWorker(queue, summarizer, max_attempts=3, backoff=Backoff(0.2, 0.2))
    assert await worker.run_once()
    assert not await worker.run_once()  # backing off: not due yet
    row = (await job_rows(storage))[0]
    # The class only: the exception's message quoted the conversation.
    assert row[2:] == ("queued", 1, "RuntimeError")
    for _ in range(2):
        await asyncio.sleep(0.25)
        assert await worker.run_once()
    assert (await job_rows(storage))[0][2:4] == ("dead", 3)
    await asyncio.sleep(0.25)
    assert not await worker.run_once()  # dead: no worker takes it
    assert (worker.stats.retried, worker.stats.dead) == (2, 1)
    assert (await queue.counts()).dead == 1
    assert await queue.requeue_dead() == 1
    summarizer.fail = 0
    assert await worker.run_once()
    assert await job_rows(storage) == []
    assert await storage.load_summary("s") is not None


async def test_a_lease_that_runs_out_is_claimed_again(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    await storage.save("s", history(30))
    await queue.enqueue("s", 20)
    first = await queue.claim(lease_seconds=0.3)
    assert first is not None and first.attempts == 1
    assert await queue.claim(lease_seconds=0.3) is None  # leased
    await asyncio.sleep(0.4)  # the first worker died without a word
    second = await queue.claim(lease_seconds=30)
    assert second is not None and second.attempts == 2
    await queue.finish(first, 20)  # the dead worker's lease is gone: nothing happens
    assert len(await job_rows(storage)) == 1
    await queue.finish(second, 20)
    assert await job_rows(storage) == []


async def test_a_slow_summarizer_keeps_its_lease(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    summarizer = Recorder(delay=1.0)
    await storage.save("s", history(30))
    await queue.enqueue("s", 20)
    worker = SummaryWorker(queue, summarizer, lease_seconds=0.3)
    running = asyncio.create_task(worker.run_once())
    await summarizer.started.wait()
    for _ in range(4):  # three lease lengths while the summarizer runs
        await asyncio.sleep(0.2)
        assert await queue.claim(lease_seconds=30) is None
    assert await running
    assert summarizer.calls == [21]


async def test_a_job_whose_session_is_gone_ends_without_a_call(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    summarizer = Recorder()
    await storage.save("s", history(30))
    await queue.enqueue("s", 20)
    await storage.delete("s")
    worker = SummaryWorker(queue, summarizer)
    assert await worker.run_once()
    assert summarizer.calls == [] and worker.stats.superseded == 1
    assert await job_rows(storage) == []


async def test_a_summary_stored_meanwhile_means_no_call(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    summarizer = Recorder()
    await storage.save("s", history(30))
    await queue.enqueue("s", 20)
    inline = SummarizeOldest(Recorder(), keep_recent=KEEP, trigger_tokens=TRIGGER)
    await inline.window(storage, "s", storage.token_counter)  # covers through 25
    worker = SummaryWorker(queue, summarizer)
    assert await worker.run_once()
    assert summarizer.calls == [] and await job_rows(storage) == []


async def test_erasure_takes_the_users_jobs(storage: PostgresStorage) -> None:
    queue = SummaryQueue(storage)
    await storage.save("mine", history(30), user_id="u-erased")
    await storage.save("theirs", history(30), user_id="u-kept")
    await queue.enqueue("mine", 20)
    await queue.enqueue("theirs", 20)
    await storage.erase_user("u-erased")
    assert [row[0] for row in await job_rows(storage)] == ["theirs"]


async def test_the_in_process_runner_summarizes_while_the_service_runs(
    storage: PostgresStorage,
) -> None:
    queue = SummaryQueue(storage)
    summarizer = Recorder(delay=0.1)
    manager = ContextManager(storage, strategy=SummarizeInBackground(queue, KEEP, TRIGGER))
    await storage.save("s", history(30))
    async with SummaryWorker(queue, summarizer, poll_seconds=60).running():
        await asyncio.sleep(0.2)  # the runner found nothing and waits for its next poll
        await manager.get_context("s")  # wakes the runner: no 60-second poll
        for _ in range(400):
            if await storage.load_summary("s") is not None:
                break
            await asyncio.sleep(0.05)
    assert summarizer.calls == [30 - KEEP]


async def test_telemetry_counts_jobs_lag_and_the_queue(
    storage: PostgresStorage,
    exported: Exported,  # noqa: F811
) -> None:
    queue = SummaryQueue(storage)
    await storage.save("s", history(30))
    await storage.save("t", history(30))
    await queue.enqueue("s", 20)
    await queue.enqueue("t", 20)
    worker = SummaryWorker(queue, Recorder(fail=1), max_attempts=1)
    assert await worker.run_once() and await worker.run_once()
    await queue.counts()
    assert exported.value("ctxstore.summary.jobs", ctxstore_result="summarized").value == 1
    assert exported.value("ctxstore.summary.jobs", ctxstore_result="dead").value == 1
    assert exported.value("ctxstore.summary.lag").count == 1
    this = {"db_client_connection_pool_name": storage.pool_name}  # other tests' queues
    assert exported.value("ctxstore.summary.queue", ctxstore_state="dead", **this).value == 1
    assert exported.value("ctxstore.summary.queue", ctxstore_state="queued", **this).value == 0
    assert exported.value("ctxstore.summary.oldest", **this).value == 0
    spans = [span for span in exported.spans() if span.name == "ctxstore.summarize"]
    assert len(spans) == 2
    for span in spans:
        assert "s" not in (span.attributes or {}).values()  # the session's id is hashed


def worker_process(url: URL, log: Path, *extra: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        LOG_ENV: str(log),
        "CTXSTORE_DATABASE_URL": url.render_as_string(hide_password=False),
        "PYTHONPATH": str(REPO),
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxstore.cli",
            "summarize-worker",
            "--summarizer",
            "tests.integration.summarizers:slow_counted",
            "--poll-seconds",
            "0.1",
            *extra,
        ],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def says_it_runs(process: subprocess.Popen[str]) -> None:
    """Read the worker's stderr up to the line it prints once its signal handlers are set."""
    assert process.stderr is not None
    read: list[str] = []
    while line := process.stderr.readline():
        if "summarize-worker: running" in line:
            return
        read.append(line)
    raise AssertionError(f"the worker ended before it ran: {''.join(read)}")


def cli(url: URL, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXSTORE_DATABASE_URL": url.render_as_string(hide_password=False)}
    return subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", *args],
        env=env,
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
async def test_four_worker_processes_make_one_call_per_trigger_and_stop_on_sigterm(
    storage: PostgresStorage, database_url: URL, tmp_path: Path
) -> None:
    log = tmp_path / "calls.log"
    log.touch()
    for n in range(6):
        await storage.save(f"s{n}", history(30))
    processes = [worker_process(database_url, log) for _ in range(4)]
    try:
        for process in processes:  # its SIGTERM handler is set once it says it runs
            await asyncio.wait_for(asyncio.to_thread(says_it_runs, process), 120)
        queue = SummaryQueue(storage)
        strategy = SummarizeInBackground(queue, KEEP, TRIGGER)
        for _ in range(3):  # every session's trigger passes three times
            await asyncio.gather(
                *(strategy.window(storage, f"s{n}", storage.token_counter) for n in range(6))
            )
        for _ in range(1200):  # the jobs are done in seconds; a loaded machine takes longer
            if not await job_rows(storage):
                break
            await asyncio.sleep(0.1)
        assert await job_rows(storage) == []
    finally:
        for process in processes:
            process.send_signal(signal.SIGTERM)
        outputs = [process.communicate(timeout=60) for process in processes]
    calls = log.read_text().splitlines()
    assert len(calls) == 6, calls  # one per session
    assert len({line.split()[0] for line in calls}) >= 2  # shared among the processes
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
        assert "summarize-worker stopped after" in out and "summarized" in out
    for n in range(6):
        summary = await storage.load_summary(f"s{n}")
        assert summary is not None and summary.summary_version == 1


def test_the_command_reports_and_requeues_and_refuses_a_bad_summarizer(
    database_url: URL,
) -> None:
    status = cli(database_url, "summarize-worker", "--status")
    assert status.returncode == 0, status.stderr
    assert "0 queued, 0 running, 0 dead" in status.stdout
    assert (
        "requeued 0 dead summary jobs"
        in cli(database_url, "summarize-worker", "--requeue-dead").stdout
    )
    for spec, expected in (
        ("tests.integration.summarizers:not_async", "not an async function"),
        ("no_such_module:x", "No module named"),
        ("just-a-name", "use module:name"),
    ):
        refused = cli(database_url, "summarize-worker", "--summarizer", spec)
        assert refused.returncode != 0 and expected in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
    missing = cli(database_url, "summarize-worker")
    assert "needs --summarizer" in missing.stderr
