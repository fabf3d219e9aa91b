"""Legal holds on PostgreSQL (revision 1006): nothing held is purged, deleted or erased,
whichever comes first in a race; holds are the owner's, recorded with who and when."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.expiry import purge_store
from ctxstore.commands.holds import Hold, lift_hold, list_holds, place_hold
from ctxstore.errors import InvalidInputError, LegalHoldError
from tests.integration.test_erasure import app_login, cli  # noqa: F401 - a fixture
from tests.integration.test_expiry import expire

pytestmark = pytest.mark.postgres

DAY = timedelta(days=1)
TURN = [Message(role="user", content="我膝盖疼了三天"), Message(role="assistant", content="好的")]


async def seed_user(storage: PostgresStorage, user_id: str, sessions: int) -> list[str]:
    ids = [f"{user_id}-s{n}" for n in range(sessions)]
    for session_id in ids:
        await storage.save(session_id, TURN, user_id=user_id)
    return ids


async def count(url: URL, query: str, *arguments: object) -> int:
    connection = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(False))
    try:
        return int(await connection.fetchval(query, *arguments))
    finally:
        await connection.close()


async def sessions_of(url: URL, user_id: str) -> int:
    return await count(url, "SELECT count(*) FROM sessions WHERE user_id = $1", user_id)


async def test_a_held_user_is_not_erased_and_the_error_names_the_hold(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        await seed_user(storage, "alice", 3)
        await seed_user(storage, "bob", 1)
        hold = await place_hold(
            storage, "user", "alice", reason="matter 42: records requested", placed_by="legal"
        )
        assert (hold.subject, hold.subject_id, hold.sessions, hold.messages) == (
            "user",
            "alice",
            3,
            6,
        )
        with pytest.raises(LegalHoldError) as refused:
            await storage.erase_user("alice")
        said = str(refused.value)
        assert str(hold.hold_id) in said and "matter 42: records requested" in said
        assert "placed by legal" in said and "nothing was deleted" in said
        assert [m.content for m in await storage.load("alice-s0")] == [m.content for m in TURN]
        assert (await storage.erase_user("bob")).sessions == 1  # nobody else is held

        lifted = await lift_hold(storage, str(hold.hold_id), lifted_by="legal")
        assert lifted.lifted_by == "legal" and lifted.lifted_at is not None
        assert (await storage.erase_user("alice")).sessions == 3


async def test_a_held_session_refuses_deletion_and_holds_its_users_erasure(
    database_url: URL,
) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        held, free = await seed_user(storage, "carol", 2)
        hold = await place_hold(storage, "session", held, reason="audit", placed_by="dpo")
        assert (hold.sessions, hold.messages) == (1, 2)
        with pytest.raises(LegalHoldError, match=f"session {held} is under a legal hold"):
            await storage.delete(held)
        with pytest.raises(LegalHoldError, match="user carol is under a legal hold"):
            await storage.erase_user("carol")
        await storage.delete(free)  # the user's other session is not held
        assert await storage.exists(held) and not await storage.exists(free)


async def test_purge_keeps_held_sessions_and_the_dry_run_counts_what_it_then_removes(
    database_url: URL,
) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        dave = await seed_user(storage, "dave", 2)
        erin = await seed_user(storage, "erin", 3)
        live = await seed_user(storage, "frank", 2)
        await expire(storage, *dave, *erin)
        await place_hold(storage, "user", "dave", reason="litigation", placed_by="legal")
        await place_hold(storage, "session", erin[0], reason="complaint", placed_by="legal")

        dry = await purge_store(storage, batch_size=1, show=False, dry_run=True)
        assert (dry.sessions, dry.messages, dry.held_sessions, dry.held_messages) == (2, 4, 3, 6)
        assert "dry run, nothing deleted: would purge 2 expired sessions (4 messages" in (
            dry.summary()
        )
        assert await count(database_url, "SELECT count(*) FROM sessions") == 7

        done = await purge_store(storage, batch_size=1, show=False)
        assert (done.sessions, done.messages) == (dry.sessions, dry.messages)
        assert (done.held_sessions, done.held_messages) == (3, 6)
        assert "kept 3 such sessions (6 messages) under a legal hold" in done.summary()
        left = await count(database_url, "SELECT count(*) FROM sessions")
        assert left == 5  # dave's 2, erin's held one, frank's 2 live ones
        assert await storage.exists(live[0])


async def test_an_expired_held_session_reads_as_missing_but_stays(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        [session_id] = await seed_user(storage, "gina", 1)
        hold = await place_hold(storage, "user", "gina", reason="hold", placed_by="legal")
        await expire(storage, session_id)
        assert await storage.load(session_id) == [] and not await storage.exists(session_id)
        assert await count(database_url, "SELECT count(*) FROM messages") == 2  # still there
        await lift_hold(storage, str(hold.hold_id), lifted_by="legal")
        assert (await purge_store(storage, show=False)).sessions == 1
        assert await count(database_url, "SELECT count(*) FROM messages") == 0


async def test_holds_are_listed_with_who_and_when_and_refuse_bad_input(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await seed_user(storage, "hana", 1)
        first = await place_hold(storage, "user", "hana", reason="first", placed_by="a")
        second = await place_hold(storage, "user", "nobody-yet", reason="ahead", placed_by="b")
        assert second.sessions == 0  # a hold may come before the data it covers
        await lift_hold(storage, str(first.hold_id), lifted_by="c")
        assert [hold.hold_id for hold in await list_holds(storage)] == [second.hold_id]
        every = await list_holds(storage, lifted_too=True)
        assert [(hold.hold_id, hold.lifted_by) for hold in every] == [
            (first.hold_id, "c"),
            (second.hold_id, None),
        ]
        with pytest.raises(InvalidInputError, match=r"no hold .* in force"):
            await lift_hold(storage, str(first.hold_id), lifted_by="c")
        with pytest.raises(InvalidInputError, match="not a hold id"):
            await lift_hold(storage, "42", lifted_by="c")
        with pytest.raises(InvalidInputError, match="reason must be"):
            await place_hold(storage, "user", "hana", reason=" ", placed_by="a")
        with pytest.raises(InvalidInputError):
            await place_hold(storage, "user", "", reason="x", placed_by="a")
        assert len(await list_holds(storage, lifted_too=True)) == 2  # nothing half-written


async def test_the_app_role_reads_holds_and_may_not_place_or_lift_them(
    database_url: URL,
    app_login: URL,  # noqa: F811 - the fixture imported above
) -> None:
    async with PostgresStorage.from_url(database_url) as owner:
        await seed_user(owner, "ines", 1)
        hold = await place_hold(owner, "user", "ines", reason="hold", placed_by="legal")
    async with PostgresStorage.from_url(app_login) as app:
        with pytest.raises(LegalHoldError):
            await app.erase_user("ines")
        assert (await purge_store(app, show=False)).sessions == 0
    connection = await asyncpg.connect(
        app_login.set(drivername="postgresql").render_as_string(False)
    )
    lift = f"UPDATE legal_holds SET lifted_by = 'me' WHERE hold_id = '{hold.hold_id}'"
    try:
        for statement in (
            "INSERT INTO legal_holds (user_id, reason, placed_by) VALUES ('x', 'r', 'me')",
            lift,
            "DELETE FROM legal_holds",
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await connection.execute(statement)
    finally:
        await connection.close()


def test_the_hold_command_adds_lists_and_lifts(database_url: URL) -> None:
    def hold(*arguments: str) -> str:
        result = cli(database_url, "hold", *arguments)
        assert result.returncode == 0, result.stderr
        return result.stdout

    placed = hold("add", "--user", "jun", "--reason", "matter 7", "--by", "counsel")
    assert placed.startswith("placed ") and "user jun: placed by counsel at " in placed
    hold_id = placed.split()[1]
    assert "covers 0 sessions, 0 messages" in hold("list")
    assert hold("lift", hold_id, "--by", "counsel").startswith("lifted ")
    assert hold("list").strip() == "no hold in force"
    assert "lifted by counsel at" in hold("list", "--all")


# -- races: each outcome is one of the two orders, never a held row removed -------------------

ROUNDS = 8


async def erase_against_a_hold(storage: PostgresStorage, url: URL, user_id: str) -> str:
    await seed_user(storage, user_id, 3)
    placed, erased = await asyncio.gather(
        place_hold(storage, "user", user_id, reason="race", placed_by="legal"),
        storage.erase_user(user_id),
        return_exceptions=True,
    )
    assert isinstance(placed, Hold), placed
    if isinstance(erased, LegalHoldError):  # the hold came first: everything stays
        assert placed.sessions == 3 and await sessions_of(url, user_id) == 3
        return "hold first"
    assert not isinstance(erased, BaseException), erased
    assert erased.sessions == 3 and placed.sessions == 0  # erased, then held: nothing left
    return "erasure first"


async def test_an_erasure_racing_a_hold_never_removes_what_the_hold_covers(
    database_url: URL,
) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        outcomes = [
            await erase_against_a_hold(storage, database_url, f"race-{n}") for n in range(ROUNDS)
        ]
    print("erasure against a hold:", {o: outcomes.count(o) for o in set(outcomes)})


async def append_until(storage: PostgresStorage, session_id: str, stop: asyncio.Event) -> int:
    """A writer on a live session of the user, counting the turns acknowledged."""
    acknowledged = 0
    while not stop.is_set():
        await storage.append(session_id, TURN)
        acknowledged += 1
        await asyncio.sleep(0)
    return acknowledged


async def purge_against_a_hold(
    storage: PostgresStorage, url: URL, user_id: str, kept_before: int
) -> int:
    """One round; the expired sessions kept under holds after it, in every round so far."""
    expired = await seed_user(storage, user_id, 12)
    await expire(storage, *expired)
    written = f"{user_id}-live"  # the user's live session, written all along
    await storage.save(written, TURN, user_id=user_id)
    stop = asyncio.Event()
    writer = asyncio.create_task(append_until(storage, written, stop))
    placed, purged = await asyncio.gather(
        place_hold(storage, "user", user_id, reason="race", placed_by="legal"),
        purge_store(storage, batch_size=2, show=False),
    )
    stop.set()
    turns = await writer
    # What the hold covered when it was placed is there; what the purge took, it took first.
    assert await sessions_of(url, user_id) == placed.sessions
    assert (placed.sessions - 1) + purged.sessions == 12
    assert purged.held_sessions == kept_before + placed.sessions - 1
    assert len(await storage.load(written)) == 2 * (turns + 1)  # every write acknowledged
    return purged.held_sessions


async def test_a_purge_racing_a_hold_and_a_writer_never_removes_what_the_hold_covers(
    database_url: URL,
) -> None:
    async with PostgresStorage.from_url(database_url, ttl=DAY) as storage:
        kept = 0
        for n in range(ROUNDS):
            kept = await purge_against_a_hold(storage, database_url, f"purge-race-{n}", kept)
