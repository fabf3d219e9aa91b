"""/metrics: the storage pool's gauges and wait histogram, process and Python runtime
metrics (one worker, and several), the summary queue read from the database, and
conflicts and storage errors by type.  A real server where it matters (the pool, the
workers), the app in this process where a clock or a missing database is needed."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Iterator

import asyncpg
import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import URL

from ctxstore.http.app import create_app
from ctxstore.http.metrics import QUEUE_CACHE_SECONDS, SummaryQueueGauges
from ctxstore.storage.postgres import PostgresStorage
from ctxstore.summaries.queue import SummaryQueue
from tests.http.conftest import settings_for
from tests.http.live import LiveServer, Tokens, serving
from tests.http.test_shutdown import _children

pytestmark = pytest.mark.postgres

POOL_SIZE = 2
#: The server's storage calls may wait this long (s): the pool test holds them on a lock.
SERVER_ENV = {"CTXSTORE_HTTP_POOL_SIZE": str(POOL_SIZE), "CTXSTORE_HTTP_OPERATION_TIMEOUT": "120"}
#: How long a condition the test waits for may take to hold on a loaded machine (s).
DEADLINE = 60.0
TURN = [{"role": "user", "content": "膝盖还是疼"}]
#: The age of the oldest of these jobs, by the database's clock now.
OLDEST = (
    "SELECT extract(epoch FROM now() - min(enqueued_at))::float8 FROM summary_jobs "
    "WHERE session_id = ANY($1)"
)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def pids_of(samples: Samples, name: str) -> set[int]:
    return {int(dict(labels)["pid"]) for found, labels in samples if found == name}


def asyncpg_url(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="module")
def server(module_database_url: URL, tokens: Tokens) -> Iterator[LiveServer]:
    yield from serving(module_database_url, tokens, env=SERVER_ENV)


@pytest.fixture
async def http(server: LiveServer, tokens: Tokens) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(
        base_url=server.base_url, headers=tokens.header(), timeout=DEADLINE * 2
    ) as client:
        yield client


@pytest.fixture
async def database(module_database_url: URL) -> AsyncIterator[asyncpg.Connection]:
    connection = await asyncpg.connect(asyncpg_url(module_database_url))
    try:
        yield connection
    finally:
        await connection.close()


async def scrape(http: httpx.AsyncClient) -> Samples:
    answer = await http.get("/metrics")
    assert answer.status_code == 200, answer.text
    return parse(answer.text)


async def _blocked_on_a_lock(database: asyncpg.Connection, count: int) -> None:
    """Until ``count`` of the server's connections wait for a row lock."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        await database.execute("SELECT pg_stat_clear_snapshot()")
        waiting = await database.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = 'ctxstore-http' AND wait_event_type = 'Lock'"
        )
        if waiting >= count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"fewer than {count} of the server's calls ever waited for the lock")


async def test_pool_gauges_count_the_calls_holding_and_waiting_for_connections(
    http: httpx.AsyncClient, database: asyncpg.Connection, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    assert (await http.post(path, json={"messages": TURN})).status_code == 201
    before = await scrape(http)
    holder = database.transaction()
    await holder.start()
    appends: list[asyncio.Task[httpx.Response]] = []
    try:
        # Every append of the session waits for its row: POOL_SIZE of them hold the
        # pool's connections while they wait, the one more waits for a connection.
        await database.execute("SELECT 1 FROM sessions WHERE session_id = $1 FOR UPDATE", sid)
        appends = [
            asyncio.create_task(http.post(path, json={"messages": TURN}))
            for _ in range(POOL_SIZE + 1)
        ]
        await _blocked_on_a_lock(database, POOL_SIZE)
        deadline = time.monotonic() + DEADLINE
        held = await scrape(http)
        while value(held, "ctxstore_db_pool_waiting", pool="primary") != 1:
            assert time.monotonic() < deadline, "the third append never waited for the pool"
            held = await scrape(http)
    finally:
        await holder.rollback()
        answers = await asyncio.gather(*appends)
    assert [answer.status_code for answer in answers] == [200] * (POOL_SIZE + 1)
    assert value(held, "ctxstore_db_pool_in_use", pool="primary") == POOL_SIZE
    assert value(held, "ctxstore_db_pool_idle", pool="primary") == 0
    assert value(held, "ctxstore_db_pool_size", pool="primary") == POOL_SIZE
    assert value(held, "ctxstore_db_pool_max_size", pool="primary") == POOL_SIZE

    after = await scrape(http)
    assert value(after, "ctxstore_db_pool_in_use", pool="primary") == 0
    assert value(after, "ctxstore_db_pool_waiting", pool="primary") == 0
    assert value(after, "ctxstore_db_pool_idle", pool="primary") == POOL_SIZE
    waits = "ctxstore_db_pool_wait_seconds_count"
    # The third append's wait at least (a scrape's read of the queue may have waited too).
    assert (value(after, waits, pool="primary") or 0) > (value(before, waits, pool="primary") or 0)
    assert value(after, "ctxstore_db_pool_wait_seconds_bucket", pool="primary", le="+Inf") == (
        value(after, waits, pool="primary")
    )
    assert ("ctxstore_db_pool_size", frozenset({("pool", "replica")})) not in after


async def test_process_and_python_metrics_of_one_worker(http: httpx.AsyncClient) -> None:
    samples = await scrape(http)
    assert (value(samples, "process_resident_memory_bytes") or 0) > 10_000_000
    assert (value(samples, "process_cpu_seconds_total") or 0) > 0
    assert (value(samples, "process_open_fds") or 0) > 0
    assert value(samples, "process_start_time_seconds") is not None
    assert value(samples, "python_gc_objects_collected_total", generation="0") is not None
    assert any(name == "python_info" for name, _ in samples)


async def test_the_summary_queue_is_its_jobs_waiting_and_the_age_of_the_oldest(
    http: httpx.AsyncClient, database: asyncpg.Connection, module_database_url: URL
) -> None:
    # The only test of this module that enqueues: its database has these jobs only.
    names = [f"queued-{number}" for number in range(3)]
    async with PostgresStorage.from_url(module_database_url) as store:
        queue = SummaryQueue(store)
        for name in names:
            await queue.enqueue(name, 2)
    try:
        ages: list[float] = []
        for _ in range(2):
            # Past the cache: the scrape reads the table again.
            await asyncio.sleep(QUEUE_CACHE_SECONDS + 0.1)
            earliest = await database.fetchval(OLDEST, names)
            samples = await scrape(http)
            latest = await database.fetchval(OLDEST, names)
            assert value(samples, "ctxstore_summary_queue_jobs", state="queued") == len(names)
            assert value(samples, "ctxstore_summary_queue_jobs", state="running") == 0
            oldest = value(samples, "ctxstore_summary_queue_oldest_seconds")
            # Read by the database's clock, between the two reads around the scrape.
            assert oldest is not None
            assert 0 <= earliest <= oldest <= latest
            ages.append(oldest)
        assert ages[1] > ages[0]  # read again: older by the database's clock
    finally:
        await database.execute("DELETE FROM summary_jobs WHERE session_id = ANY($1)", names)


async def test_conflicts_are_counted_by_type(http: httpx.AsyncClient, sid: str) -> None:
    path = f"/v1/sessions/{sid}/messages"
    route = "/v1/sessions/{session_id}/messages"
    before = await scrape(http)
    created = await http.post(path, json={"messages": TURN, "user_id": "patient-1"})
    assert created.status_code == 201
    stale = await http.post(path, json={"messages": TURN}, headers={"If-Match": '"9"'})
    assert stale.status_code == 412
    other = await http.post(path, json={"messages": TURN, "user_id": "patient-2"})
    assert other.status_code == 409
    after = await scrape(http)
    for kind in ("precondition-failed", "session-owner"):
        name = "ctxstore_http_conflicts_total"
        counted = (value(after, name, route=route, type=kind) or 0) - (
            value(before, name, route=route, type=kind) or 0
        )
        assert counted == 1, kind


async def test_the_queue_is_read_at_most_once_per_cache_period(database_url: URL) -> None:
    now = 1000.0
    counted = CollectorRegistry()
    errors = Counter("errors", "Failed reads", registry=counted)
    async with PostgresStorage.from_url(database_url) as store:
        gauges = SummaryQueueGauges(store, errors, clock=lambda: now)

        async def queued() -> float:
            await gauges.refresh()
            registry = CollectorRegistry()
            registry.register(gauges)
            found = registry.get_sample_value("ctxstore_summary_queue_jobs", {"state": "queued"})
            assert found is not None
            return found

        assert await queued() == 0
        await SummaryQueue(store).enqueue("cached", 1)
        now += QUEUE_CACHE_SECONDS - 0.001
        assert await queued() == 0  # the read before, not another
        now += 0.001
        assert await queued() == 1
    assert counted.get_sample_value("errors_total") == 0


async def test_a_database_that_does_not_answer_leaves_the_queue_out_and_counts_it(
    tokens: Tokens,
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = URL.create("postgresql+asyncpg", "ctxuser", "pw", "127.0.0.1", port, "ctxstore_absent")
    store = PostgresStorage.from_url(url, operation_timeout=3)
    try:
        app = create_app(settings_for(url, tokens, access_log=False), store=store)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://ctxstore.test",
            headers=tokens.header(),
        ) as client:
            assert (await client.get("/v1/sessions/s/messages")).status_code == 503
            samples = await scrape(client)
    finally:
        await store.close()
    assert value(samples, "ctxstore_summary_queue_read_errors_total") == 1
    assert not any(name.startswith("ctxstore_summary_queue_jobs") for name, _ in samples)
    assert value(samples, "ctxstore_http_storage_errors_total", type="storage-unavailable") == 1
    assert value(samples, "ctxstore_db_pool_in_use", pool="primary") == 0
    assert value(samples, "ctxstore_db_pool_size", pool="primary") == 0


async def test_each_worker_reports_its_process_and_its_pool(
    database_url: URL, tokens: Tokens
) -> None:
    live = LiveServer.on(database_url, tokens, workers=2, env=SERVER_ENV).start()
    try:
        async with httpx.AsyncClient(
            base_url=live.base_url, headers=tokens.header(), timeout=DEADLINE
        ) as http:
            deadline = time.monotonic() + DEADLINE
            samples = await scrape(http)
            # Each worker writes its figures as it starts: both, once both have.
            while len(pids_of(samples, "process_resident_memory_bytes")) < 2:
                assert time.monotonic() < deadline, "a worker's process metrics never came"
                await asyncio.sleep(0.1)
                samples = await scrape(http)
        assert live.process is not None
        workers = set(_children(live.process.pid))
        for name in ("process_resident_memory_bytes", "process_cpu_seconds_total"):
            pids = pids_of(samples, name)
            assert len(pids) == 2
            assert pids <= workers, (pids, workers)
        # The pools' gauges add up across the workers, Python's version is said once.
        assert value(samples, "ctxstore_db_pool_max_size", pool="primary") == 2 * POOL_SIZE
        assert sum(1 for name, _ in samples if name == "python_info") == 1
        assert live.terminate() == 0, live.log()
        assert "Traceback" not in live.log()
    finally:
        live.close()
