"""FallbackStorage's journal against a real PostgreSQL cut off by a local TCP proxy.

Each case is one way the fallback used to lose or resurrect data (issue "Nothing lost,
nothing resurrected"); each now ends with the primary holding exactly what the callers
were told, the journal empty and the secondary's copies gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import EngineSettings, Limits, MemoryStorage, Message, PostgresStorage, RedisStorage
from ctxstore.errors import MessageTooLargeError, SessionNotFoundError, StorageUnavailableError
from ctxstore.storage.fallback import FallbackStorage
from ctxstore.storage.journal import Journal, Operation, Position
from ctxstore.storage.replay import Outcome, Replayer
from tests.faults import TcpProxy


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


def through_proxy(url: URL, **options: Any) -> PostgresStorage:
    settings = EngineSettings(connect_timeout=1.0, pool_timeout=2.0)
    return PostgresStorage.from_url(url, operation_timeout=3, settings=settings, **options)


@pytest.fixture
async def direct(database_url: URL) -> AsyncIterator[PostgresStorage]:
    """The primary as another worker (or an auditor) sees it, never cut off."""
    async with PostgresStorage.from_url(database_url) as storage:
        yield storage


@pytest.fixture
async def fallback(proxied: tuple[TcpProxy, URL]) -> AsyncIterator[FallbackStorage]:
    _, url = proxied
    async with FallbackStorage(through_proxy(url), MemoryStorage(), probe_interval=0) as store:
        yield store


async def healthy(fallback: FallbackStorage, within: float = 10.0) -> None:
    """Calls go on while the background replay runs; wait until it is done."""
    deadline = asyncio.get_running_loop().time() + within
    while fallback.degraded:
        assert asyncio.get_running_loop().time() < deadline, "the replay never finished"
        await fallback.exists("any")  # a call starts the replay when it is due
        await asyncio.sleep(0.01)


async def recover(proxy: TcpProxy, fallback: FallbackStorage) -> None:
    proxy.forward()
    await healthy(fallback)
    assert await fallback.journal.size() == 0
    assert await fallback.journal.copies() == set()


async def test_a_delete_then_a_save_in_an_outage_replays_both(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    proxy, _ = proxied
    await fallback.save("s", msgs("P1", "P2"))
    proxy.refuse()
    await fallback.delete("s")
    await fallback.save("s", msgs("new"))
    await recover(proxy, fallback)
    assert await direct.load("s") == msgs("new")


async def test_copies_of_an_earlier_outage_are_never_read_or_resurrected(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    proxy, _ = proxied
    proxy.refuse()
    await fallback.save("s", msgs("x1"))
    await recover(proxy, fallback)
    await fallback.append("s", msgs("grown"))
    await fallback.delete("s")  # on the healthy primary
    proxy.refuse()
    assert await fallback.load("s") == []
    assert not await fallback.exists("s")
    await fallback.append("s", msgs("y"))
    await recover(proxy, fallback)
    assert await direct.load("s") == msgs("y")


async def test_edits_and_redactions_in_an_outage_stay_applied(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    proxy, _ = proxied
    await fallback.save("r", msgs("keep", "SSN-123-45-6789"))
    await fallback.save("e", msgs("a", "b"))
    proxy.refuse()
    await fallback.save("r", msgs("keep"))
    await fallback.save("e", [])
    await recover(proxy, fallback)
    assert await direct.load("r") == msgs("keep")
    assert await direct.load("e") == [] and await direct.exists("e")


async def test_writes_during_the_replay_are_never_lost(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    proxy, _ = proxied
    proxy.refuse()
    for number in range(30):
        await fallback.append(f"p{number}", msgs(f"outage {number}"))
    proxy.forward()

    async def writer(number: int) -> None:
        for turn in range(5):
            await fallback.append(f"p{number}", msgs(f"during {number}.{turn}"))
            await asyncio.sleep(0)

    replay = asyncio.create_task(fallback.reconcile())
    await asyncio.gather(*(writer(number) for number in range(30)), replay)
    assert not fallback.degraded and await fallback.journal.size() == 0
    for number in range(30):
        during = [f"during {number}.{turn}" for turn in range(5)]
        assert await direct.load(f"p{number}") == msgs(f"outage {number}", *during)


async def test_a_restarted_process_finds_and_replays_the_redis_journal(
    proxied: tuple[TcpProxy, URL], direct: PostgresStorage, redis_url: str, redis_prefix: str
) -> None:
    proxy, url = proxied
    await direct.save("k", msgs("before"))
    proxy.refuse()
    # The shared test Redis keeps nothing on disk; it isn't killed here (journal_loss).
    first = FallbackStorage(
        through_proxy(url),
        RedisStorage.from_url(redis_url, prefix=redis_prefix),
        journal_loss="accept",
    )
    async with first:  # the process that dies while degraded
        await first.append("k", msgs("acknowledged in the outage"))
        await first.save_state("k", {"stage": "intake", "chief_complaint": "knee pain"})
        assert first.degraded and await first.journal.size() == 2
    proxy.forward()
    second = FallbackStorage(
        through_proxy(url),
        RedisStorage.from_url(redis_url, prefix=redis_prefix),
        journal_loss="accept",
    )
    async with second:
        # Starts degraded (the journal is older than anything the primary may take now)
        # and replays at once; until then the secondary serves what it acknowledged.
        assert await second.load("k") == msgs("acknowledged in the outage")
        await healthy(second)
        assert second.stats.replayed == 2
        assert await second.load("k") == msgs("before", "acknowledged in the outage")
    state = await direct.load_state("k")
    assert state is not None and state.value.chief_complaint == "knee pain"


async def test_a_write_the_primary_refuses_is_quarantined_and_the_rest_goes_on(
    proxied: tuple[TcpProxy, URL], direct: PostgresStorage
) -> None:
    """The secondary holds more messages a session than the primary allows: the append
    past the primary's limit is acknowledged in the outage, refused by the replay."""
    proxy, url = proxied
    strict = through_proxy(url, limits=Limits(max_messages=2))
    lenient = MemoryStorage(limits=Limits(max_messages=100))
    async with FallbackStorage(strict, lenient, probe_interval=0) as fallback:
        proxy.refuse()
        await fallback.append("fine", msgs("small"))  # fails over
        await fallback.append("big", msgs("one", "two"))
        await fallback.append("big", msgs("three"))  # the secondary takes it
        await recover(proxy, fallback)
        (refused,) = await fallback.quarantined()
        assert (refused.kind, refused.key) == ("append", "big")
        assert "limit of 2" in refused.reason
        assert fallback.stats.quarantined == 1
    assert await direct.load("fine") == msgs("small")
    assert await direct.load("big") == msgs("one", "two")


async def test_a_message_over_the_primarys_limits_is_refused_in_an_outage_too(
    proxied: tuple[TcpProxy, URL], direct: PostgresStorage
) -> None:
    """The rules run once, with the primary's limits, before either side sees a write:
    what the primary would refuse is never acknowledged."""
    proxy, url = proxied
    strict = through_proxy(url, limits=Limits(max_message_bytes=1000))
    lenient = MemoryStorage(limits=Limits(max_message_bytes=100_000))
    async with FallbackStorage(strict, lenient, probe_interval=0) as fallback:
        proxy.refuse()
        await fallback.append("fine", msgs("small"))  # fails over
        with pytest.raises(MessageTooLargeError, match="1000"):
            await fallback.append("big", msgs("x" * 5000))
        assert not await lenient.exists("big")
        await recover(proxy, fallback)
        assert await fallback.quarantined() == []
    assert await direct.load("fine") == msgs("small")
    assert not await direct.exists("big")


async def test_documents_written_in_an_outage_reach_the_primary(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    proxy, _ = proxied
    proxy.refuse()
    await fallback.save("d", msgs("hello"))
    await fallback.save_state("d", {"stage": "intake", "chief_complaint": "headache"})
    await fallback.save_summary("d", "a headache", covers_until=0)
    await fallback.save_profile("u", {"age": 41})
    await recover(proxy, fallback)
    state, summary = await direct.load_state("d"), await direct.load_summary("d")
    assert state is not None and state.value.chief_complaint == "headache"
    assert summary is not None and summary.text == "a headache"
    assert await direct.load_profile("u") is not None
    assert await fallback.secondary.load_profile("u") is None  # the copy is gone


async def replay_all(replayer: Replayer, journal: Journal) -> Outcome:
    """Replay the journal (one session's entries) the way FallbackStorage does."""
    total = Outcome()
    while entries := await journal.head(100):
        outcome = await replayer.replay(entries)
        total.replayed += outcome.replayed
        total.quarantined += outcome.quarantined
    return total


async def test_a_run_of_appends_interrupted_mid_replay_is_applied_once(
    direct: PostgresStorage,
) -> None:
    journal = MemoryStorage().open_journal("j")
    await direct.save("once", msgs("turn 1"))
    first = await journal.record(Operation("append", "once", messages=tuple(msgs("turn 2"))))
    second = await journal.record(
        Operation("append", "once", messages=tuple(msgs("turn 3", "turn 4")))
    )
    await journal.record(Operation("append", "once", messages=tuple(msgs("turn 5"))))
    # The crash: replay marked the run of the first two at version 1 (positions 1 and 2),
    # appended it as one, and died before removing them.
    await journal.mark({first: Position(1, 1), second: Position(1, 2)})
    await direct.append("once", msgs("turn 2", "turn 3", "turn 4"))
    outcome = await replay_all(Replayer(direct, journal), journal)
    assert outcome.replayed == 3 and await journal.size() == 0
    assert await direct.load("once") == msgs("turn 1", "turn 2", "turn 3", "turn 4", "turn 5")


async def test_a_marked_append_that_never_landed_is_applied(direct: PostgresStorage) -> None:
    journal = MemoryStorage().open_journal("j")
    await direct.save("never", msgs("turn 1"))
    entry_id = await journal.record(Operation("append", "never", messages=tuple(msgs("x"))))
    await journal.mark({entry_id: Position(1, 1)})  # marked, then the primary went away
    await replay_all(Replayer(direct, journal), journal)
    assert await direct.load("never") == msgs("turn 1", "x")


async def test_an_append_the_failing_call_may_have_applied_is_applied_once(
    direct: PostgresStorage,
) -> None:
    journal = MemoryStorage().open_journal("j")
    await direct.save("maybe", msgs("turn 1", "turn 2"))  # the reply was lost, not the write
    await journal.record(
        Operation("append", "maybe", messages=tuple(msgs("turn 2")), uncertain=True)
    )
    await journal.record(Operation("append", "maybe", messages=tuple(msgs("turn 3"))))
    await replay_all(Replayer(direct, journal), journal)
    assert await direct.load("maybe") == msgs("turn 1", "turn 2", "turn 3")


async def test_an_applied_uncertain_append_stays_once_when_another_writer_followed(
    direct: PostgresStorage,
) -> None:
    """Issue 25: the failing call's append reached the primary (its reply was lost), then
    another process appended before the replay: the replay stored it a second time,
    ``[setup, A.pre, A.held, B.1, A.held]``.  It is found where it landed now."""
    journal = MemoryStorage().open_journal("j")
    setup, pre, held, other = msgs("setup", "A.pre", "A.held", "B.1")
    await direct.save("held", [setup, pre])
    await direct.append("held", [held])  # committed; the fallback never heard back
    await direct.append("held", [other])  # process B, before the replay
    await journal.record(Operation("append", "held", messages=(held,), uncertain=True))
    await replay_all(Replayer(direct, journal), journal)
    assert await direct.load("held") == [setup, pre, held, other]
    # and one that did not land is applied, after what B wrote
    lost = msgs("A.lost")[0]
    await journal.record(Operation("append", "held", messages=(lost,), uncertain=True))
    await replay_all(Replayer(direct, journal), journal)
    assert await direct.load("held") == [setup, pre, held, other, lost]


async def test_replay_uses_only_the_store_api() -> None:
    """The replayer only uses the public Store API: a MemoryStorage primary works too."""
    primary = MemoryStorage()
    journal = MemoryStorage().open_journal("j")
    await journal.record(Operation("save", "m", messages=tuple(msgs("a", "b"))))
    await journal.record(Operation("delete", "m"))
    for letter in "cde":
        await journal.record(Operation("append", "m", messages=tuple(msgs(letter))))
    outcome = await replay_all(Replayer(primary, journal), journal)
    assert (outcome.replayed, outcome.quarantined) == (5, 0)
    assert await journal.size() == 0
    assert await primary.load("m") == msgs("c", "d", "e")
    assert await primary.version("m") == 1  # the three appends went as one


async def test_a_state_needs_the_session_on_the_serving_side(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    """A degraded store can't tell a session only the primary holds from a missing one:
    it refuses, never acknowledging a write the primary might refuse.  A turn's messages
    written in the outage bring the session to the secondary, and its state with it."""
    proxy, _ = proxied
    await fallback.save("only-primary", msgs("hello"))
    proxy.refuse()
    with pytest.raises(SessionNotFoundError):
        await fallback.save_state("only-primary", {"stage": "triage"})
    await fallback.append("only-primary", msgs("a turn in the outage"))
    await fallback.save_state("only-primary", {"stage": "triage"})
    await recover(proxy, fallback)
    assert await direct.load("only-primary") == msgs("hello", "a turn in the outage")
    state = await direct.load_state("only-primary")
    assert state is not None and state.value.stage == "triage"


async def test_a_run_with_a_save_is_replayed_as_one_save() -> None:
    """Everything before a save is overwritten by it: the run is one write, whatever an
    earlier replay or the failed call may have applied."""
    primary = MemoryStorage()
    await primary.save("j", msgs("old"))
    journal = MemoryStorage().open_journal("j")
    await journal.record(
        Operation("append", "j", messages=tuple(msgs("maybe applied")), uncertain=True)
    )
    await journal.record(Operation("save", "j", messages=tuple(msgs("a", "b")), user_id="u"))
    await journal.record(Operation("append", "j", messages=tuple(msgs("c"))))
    await journal.record(Operation("append", "j", messages=tuple(msgs("d"))))
    await journal.record(Operation("state", "j", document={"stage": "triage"}))
    replayer = Replayer(primary, journal)
    first = await replayer.replay(await journal.head(10))
    assert (first.replayed, await journal.size()) == (4, 1)
    assert await primary.load("j") == msgs("a", "b", "c", "d")
    assert await primary.version("j") == 2  # one write after the old save
    await replay_all(replayer, journal)
    state = await primary.load_state("j")
    assert state is not None and state.value.stage == "triage"


async def test_a_degraded_read_never_shows_less_than_the_primary_held(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    """Issue 25: during an outage the secondary holds only what was written in it, so a
    read of a session the primary holds answered an empty or a shortened history.  A
    session this process saw on the primary is now read from the secondary only where
    the secondary holds all of what the read shows; otherwise the read says why."""
    proxy, _ = proxied
    await fallback.save("seen", msgs("one", "two", "three"))
    await fallback.save("untouched", msgs("kept"))
    proxy.refuse()
    await fallback.append("seen", msgs("four"))
    with pytest.raises(StorageUnavailableError, match="only the messages appended"):
        await fallback.load("seen")
    assert await fallback.newest("seen", 1) == msgs("four")  # the outage's own: all there
    with pytest.raises(StorageUnavailableError, match="only the messages appended"):
        await fallback.newest("seen", 3)
    with pytest.raises(StorageUnavailableError, match="holds nothing of session 'untouched'"):
        await fallback.load("untouched")
    # a session saved whole in the outage is all there
    await fallback.save("seen", msgs("replaced"))
    assert await fallback.load("seen") == msgs("replaced")
    await recover(proxy, fallback)
    assert await fallback.load("seen") == msgs("replaced")
    assert await direct.load("untouched") == msgs("kept")


async def test_a_removal_whose_reply_is_lost_is_not_counted_as_a_lost_write(
    proxied: tuple[TcpProxy, URL], fallback: FallbackStorage, direct: PostgresStorage
) -> None:
    """The journal removes a replayed run and its home dies before replying (Redis killed
    after its fsync): the entries are gone, and that is the replay's doing, not a loss."""
    proxy, _ = proxied
    proxy.refuse()
    for number in range(9):
        await fallback.append("run", msgs(f"outage {number}"))
    proxy.forward()
    journal, remove = fallback.journal, fallback.journal.remove

    async def removed_then_unanswered(entry_ids: Any) -> None:
        await remove(entry_ids)
        journal.remove = remove  # type: ignore[method-assign]  # once
        raise StorageUnavailableError("the journal's home went away before replying")

    journal.remove = removed_then_unanswered  # type: ignore[method-assign]
    for _ in range(3):  # the first replay meets the unanswered removal, then goes on
        try:
            await fallback.reconcile()
        except StorageUnavailableError:
            continue
    assert journal.remove is remove  # the removal went unanswered once
    assert not fallback.degraded and await journal.size() == 0
    assert (fallback.stats.lost, fallback.stats.lost_entries) == (0, [])
    assert await direct.load("run") == msgs(*(f"outage {number}" for number in range(9)))
