"""Issue 25: the fallback journal on a Redis that can lose it, killed for real.

Each case starts its own redis-server on a free port (with Redis's defaults: RDB save
points, no AOF; or with ``appendonly yes`` and an fsync policy), cuts PostgreSQL off with
a TCP proxy, writes through FallbackStorage, SIGKILLs redis-server and starts it again
on the same directory.  Before, a Redis with its defaults lost every journaled write of
the outage silently, ``reconcile()`` never returned and ``load()`` answered 0 messages.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import EngineSettings, Message, PostgresStorage, RedisStorage
from ctxstore.errors import StorageUnavailableError
from ctxstore.storage.fallback import FallbackStorage
from tests.faults import REDIS_SERVER, RedisServer, TcpProxy, redis_server, redis_version

pytestmark = pytest.mark.skipif(
    REDIS_SERVER is None, reason="redis-server is not installed (apt-get install redis-server)"
)


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


@pytest.fixture
async def primary(proxied: tuple[TcpProxy, URL]) -> AsyncIterator[tuple[TcpProxy, URL]]:
    yield proxied


def through_proxy(url: URL) -> PostgresStorage:
    settings = EngineSettings(connect_timeout=1.0, pool_timeout=2.0)
    return PostgresStorage.from_url(url, operation_timeout=3, settings=settings)


def fallback(url: URL, server: RedisServer, **options: Any) -> FallbackStorage:
    secondary = RedisStorage.from_url(server.url, prefix="t:session")
    return FallbackStorage(through_proxy(url), secondary, probe_interval=0, **options)


async def test_a_redis_with_its_defaults_refuses_the_outages_writes(
    primary: tuple[TcpProxy, URL], database_url: URL
) -> None:
    proxy, url = primary
    with redis_server() as server:  # RDB save points, no AOF: Redis's defaults
        async with fallback(url, server) as store:
            await store.save("s", msgs("before"))
            proxy.refuse()
            with pytest.raises(StorageUnavailableError, match="appendonly") as refused:
                await store.append("s", msgs("during"))
            assert "journal_loss='accept'" in str(refused.value)
            assert store.stats.refused == 1 and "without AOF" in store.stats.journal
            assert await store.journal.size() == 0  # nothing acknowledged, nothing kept
            proxy.forward()
    async with PostgresStorage.from_url(database_url) as direct:
        assert await direct.load("s") == msgs("before")


async def test_an_aof_fsynced_every_second_is_refused_without_waitaof(
    primary: tuple[TcpProxy, URL],
) -> None:
    proxy, url = primary
    with redis_server("--appendonly", "yes", "--appendfsync", "everysec") as server:
        async with fallback(url, server) as store:
            proxy.refuse()
            if redis_version() >= (7, 2):  # WAITAOF: each entry acknowledged once fsynced
                await store.append("s", msgs("during"))
                assert "WAITAOF" in store.stats.journal
            else:
                with pytest.raises(StorageUnavailableError, match="appendfsync everysec"):
                    await store.append("s", msgs("during"))
                print(f"redis-server {redis_version()}: no WAITAOF, so everysec is refused")
            proxy.forward()


async def test_an_aof_fsynced_always_keeps_every_acknowledged_write_through_sigkill(
    primary: tuple[TcpProxy, URL], database_url: URL
) -> None:
    proxy, url = primary
    with redis_server("--appendonly", "yes", "--appendfsync", "always") as server:
        async with fallback(url, server) as store:
            await store.save("s", msgs("before"))
            proxy.refuse()
            for index in range(20):
                await store.append("s", msgs(f"during {index}"))
            await store.save_state("s", {"stage": "assessing"})
            assert "appendfsync always" in store.stats.journal
        server.kill()  # the process ended while degraded; then Redis dies too
        server.start()
        proxy.forward()
        async with fallback(url, server) as restarted:
            report = await restarted.reconcile()
            assert (report.replayed, report.lost, report.remaining) == (21, 0, 0)
            assert not restarted.degraded
    async with PostgresStorage.from_url(database_url) as direct:
        expected = msgs("before", *(f"during {index}" for index in range(20)))
        assert await direct.load("s") == expected
        state = await direct.load_state("s")
        assert state is not None and state.value.stage == "assessing"


async def test_accepted_loss_is_reported_and_recovery_finishes(
    primary: tuple[TcpProxy, URL], database_url: URL
) -> None:
    """journal_loss='accept' on Redis's defaults: the SIGKILL loses the outage's entries;
    the same process sees them vanish, reports them, returns from reconcile() and reads
    the primary's history again, not an empty one."""
    proxy, url = primary
    with redis_server("--save", "") as server:
        async with fallback(url, server, journal_loss="accept") as store:
            await store.save("s", msgs("before", "kept"))
            proxy.refuse()
            for index in range(5):
                await store.append("s", msgs(f"lost {index}"))
            await store.save_state("s", {"stage": "assessing"})
            assert store.stats.journaled == 6 and "without AOF" in store.stats.journal
            assert store.journal_at_risk  # what telemetry's journal_at_risk gauge shows
            server.kill()
            server.start()
            proxy.forward()
            started = time.monotonic()
            try:
                report = await store.reconcile(within=30)
            except StorageUnavailableError:  # the pooled connections Redis's restart closed
                report = await store.reconcile(within=30)
            assert time.monotonic() - started < 30
            assert (report.lost, report.remaining) == (6, 0)
            assert not store.degraded
            assert len(store.stats.lost_entries) == 6
            assert store.lost == 6
            assert {entry.split()[1] for entry in store.stats.lost_entries} == {"session:s"}
            assert await store.load("s") == msgs("before", "kept")
    async with PostgresStorage.from_url(database_url) as direct:
        assert await direct.load("s") == msgs("before", "kept")
        assert await direct.load_state("s") is None


async def test_a_write_whose_journal_reply_was_lost_is_never_replayed_after_later_ones(
    primary: tuple[TcpProxy, URL], database_url: URL
) -> None:
    """Issue 25: Redis made a journal entry durable, then its reply was lost: the caller
    was told the write failed, yet the entry was replayed later, after that caller's
    next writes.  Now the key's next write first finds that entry and removes it."""
    proxy, url = primary
    with redis_server("--appendonly", "yes", "--appendfsync", "always") as server:
        redis_proxy = TcpProxy(host="127.0.0.1", port=server.port)
        redis_port = await redis_proxy.start()
        try:
            secondary = RedisStorage.from_url(f"redis://127.0.0.1:{redis_port}/0", prefix="t:s")
            async with FallbackStorage(through_proxy(url), secondary, probe_interval=0) as store:
                await store.save("s", msgs("a"))
                proxy.refuse()
                await store.append("s", msgs("b"))
                redis_proxy.deaf_after(b"XADD")  # the journal's write: done, never answered
                with pytest.raises(StorageUnavailableError):
                    await store.save_state("s", {"stage": "told it failed"})
                redis_proxy.forward()
                assert await store.journal.size() == 2  # the unanswered entry is there
                await store.append("s", msgs("c"))  # the caller's next write
                assert store.stats.discarded == 1
                proxy.forward()
                report = await store.reconcile()
                assert (report.remaining, report.lost) == (0, 0)
        finally:
            await redis_proxy.stop()
    async with PostgresStorage.from_url(database_url) as direct:
        assert await direct.load("s") == msgs("a", "b", "c")
        assert await direct.load_state("s") is None
