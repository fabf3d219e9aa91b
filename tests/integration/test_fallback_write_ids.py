"""Exactly once by write id: PostgreSQL records the journal write ids a write applied, in
the write's own transaction (revision 0020), and replay applies only what it has not.

Issue 25: a write whose reply was lost (the *uncertain* write of the call that failed
over, or a replay interrupted by a crash) had to be guessed at: an append by its content,
anything else applied again over what other processes wrote meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import URL

from ctxstore import MemoryStorage, Message, PostgresStorage
from ctxstore.storage.fallback import FallbackStorage
from ctxstore.storage.journal import Journal, Operation
from ctxstore.storage.replay import Outcome, Replayer
from ctxstore.storage.write_ids import carrying, new_write_id
from tests.faults import TcpProxy
from tests.integration.test_fallback_journal import recover, replay_all, through_proxy


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


@pytest.fixture
async def direct(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url) as storage:
        yield storage


@pytest.fixture
def journal() -> Journal:
    return MemoryStorage().open_journal("j")


async def test_a_write_records_its_ids_with_it_and_only_when_it_applies(
    direct: PostgresStorage,
) -> None:
    applied, refused, plain = new_write_id(), new_write_id(), new_write_id()
    with carrying([applied]):
        await direct.save("w", msgs("a"))
    with carrying([refused]), pytest.raises(Exception, match="version"):
        await direct.append("w", msgs("b"), expected_version=7)  # refused: nothing applied
    assert await direct.applied_writes("w", [applied, refused, plain]) == {applied}
    assert await direct.applied_writes("other", [applied]) == frozenset()
    profile_write = new_write_id()
    with carrying([profile_write]):
        await direct.save_profile("u-w", {"age": 40})
    assert await direct.applied_writes("u-w", [profile_write], profile=True) == {profile_write}
    assert await direct.applied_writes("u-w", [profile_write]) == frozenset()
    assert await MemoryStorage().applied_writes("w", [applied]) is None  # can't tell


async def test_an_applied_uncertain_state_is_not_replayed_over_a_later_one(
    direct: PostgresStorage, journal: Journal
) -> None:
    """The call's state reached the primary, its reply was lost; another process saved a
    newer state before the replay.  Applied again, the old one would replace it."""
    await direct.save("st", msgs("hello"))
    write_id = new_write_id()
    with carrying([write_id]):
        await direct.save_state("st", {"stage": "greeting"})
    await direct.save_state("st", {"stage": "collecting_details"})  # process B
    await journal.record(
        Operation("state", "st", document={"stage": "greeting"}, uncertain=True, write_id=write_id)
    )
    outcome = await replay_all(Replayer(direct, journal), journal)
    assert (outcome.replayed, await journal.size()) == (1, 0)
    state = await direct.load_state("st")
    assert state is not None and state.value.stage == "collecting_details"
    assert state.version == 2


async def test_an_applied_uncertain_delete_leaves_a_session_created_after_it(
    direct: PostgresStorage, journal: Journal
) -> None:
    await direct.save("d", msgs("old consultation"))
    write_id = new_write_id()
    with carrying([write_id]):
        await direct.delete("d")
    await direct.save("d", msgs("new consultation"))  # process B, before the replay
    await journal.record(Operation("delete", "d", uncertain=True, write_id=write_id))
    await replay_all(Replayer(direct, journal), journal)
    assert await direct.load("d") == msgs("new consultation")


async def test_an_unapplied_uncertain_append_is_applied_though_its_messages_are_there(
    direct: PostgresStorage, journal: Journal
) -> None:
    """Content can't tell a second "yes" from the first: the write id can."""
    yes = msgs("yes")[0]
    await direct.save("y", [yes])
    await journal.record(
        Operation("append", "y", messages=(yes,), uncertain=True, write_id=new_write_id())
    )
    await replay_all(Replayer(direct, journal), journal)
    assert await direct.load("y") == [yes, yes]


async def test_a_replay_interrupted_after_it_applied_is_not_applied_again(
    direct: PostgresStorage, journal: Journal
) -> None:
    """The replay applied a summary, a profile and an append (recording their ids), then
    the process died before removing them from the journal; other processes wrote."""
    await direct.save("r", msgs("a"))
    entries = [
        Operation("append", "r", messages=tuple(msgs("b")), write_id=new_write_id()),
        Operation("summary", "r", text="first", covers_until=1, write_id=new_write_id()),
        Operation("profile", "u-r", document={"age": 30}, write_id=new_write_id()),
    ]
    for operation in entries:
        await journal.record(operation)
    await replay_all(Replayer(direct, journal), journal)
    for operation in entries:  # the journal as the killed process left it
        await journal.record(operation)
    await direct.append("r", msgs("c"))
    await direct.save_summary("r", "second", covers_until=2)
    await direct.save_profile("u-r", {"age": 31})
    outcome = await replay_all(Replayer(direct, journal), journal)
    assert (outcome.replayed, await journal.size()) == (3, 0)
    assert await direct.load("r") == msgs("a", "b", "c")
    summary = await direct.load_summary("r")
    assert summary is not None and summary.text == "second"
    profile = await direct.load_profile("u-r")
    assert profile is not None and profile.value.age == 31


async def test_a_run_of_appends_records_every_id(direct: PostgresStorage, journal: Journal) -> None:
    ids = [new_write_id() for _ in range(3)]
    for write_id, text in zip(ids, "xyz", strict=True):
        await journal.record(
            Operation("append", "run", messages=tuple(msgs(text)), write_id=write_id)
        )
    outcome: Outcome = await replay_all(Replayer(direct, journal), journal)
    assert outcome.replayed == 3
    assert await direct.version("run") == 1  # one statement
    assert await direct.applied_writes("run", ids) == set(ids)


async def test_a_commit_whose_reply_was_lost_is_applied_once_through_the_fallback(
    proxied: tuple[TcpProxy, URL], direct: PostgresStorage
) -> None:
    """End to end: the delete's COMMIT reaches PostgreSQL and its reply is lost; the
    fallback journals it as uncertain and acknowledges.  Another process then starts a
    new consultation under the same id.  Replay finds the delete applied and keeps it."""
    proxy, url = proxied
    async with FallbackStorage(through_proxy(url), MemoryStorage(), probe_interval=0) as store:
        await store.save("e2e", msgs("old"))
        proxy.deaf_after(b"COMMIT")  # the write's transaction: committed, never answered
        await store.delete("e2e")  # acknowledged through the journal
        assert store.degraded and await store.journal.size() == 1
        assert await direct.load("e2e") == []  # PostgreSQL did apply it
        await direct.save("e2e", msgs("new"))  # process B
        await recover(proxy, store)
        assert store.stats.replayed == 1
    await asyncio.sleep(0)
    assert await direct.load("e2e") == msgs("new")


async def test_write_ids_go_with_an_erasure_and_after_a_week(
    direct: PostgresStorage, database_url: URL
) -> None:
    from ctxstore.commands.expiry import purge_store  # noqa: PLC0415

    session_write, profile_write, other = new_write_id(), new_write_id(), new_write_id()
    with carrying([session_write]):
        await direct.save("erased-s", msgs("a"), user_id="erased-u")
    with carrying([profile_write]):
        await direct.save_profile("erased-u", {"age": 50})
    with carrying([other]):
        await direct.save("kept-s", msgs("b"))
    await direct.erase_user("erased-u", vacuum=False)
    assert await direct.applied_writes("erased-s", [session_write]) == frozenset()
    assert await direct.applied_writes("erased-u", [profile_write], profile=True) == frozenset()
    assert await direct.applied_writes("kept-s", [other]) == {other}
    async with direct.driver() as driver:
        await driver.execute(
            "UPDATE applied_session_writes SET applied_at = now() - interval '8 days'"
        )
    report = await purge_store(direct, show=False)
    assert report.write_ids == 1
    assert await direct.applied_writes("kept-s", [other]) == frozenset()
