"""Concurrent writers on a real PostgreSQL: nothing lost, nothing mixed."""

from __future__ import annotations

import asyncio
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from sqlalchemy import URL, text

from ctxstore import ContextManager, Message, PostgresStorage
from ctxstore.errors import ConflictError
from tests.conformance.contract import KNEE_STATE
from tests.integration.concurrent_writer import run_writers

REPO = Path(__file__).resolve().parents[2]
WRITERS, TURNS = 32, 20
PROCESSES, PROCESS_WRITERS = 8, 8  # 8 processes x 8 writers x 20 turns on one session


async def assert_every_turn_landed_in_order(
    storage: PostgresStorage, session_id: str, expected_turns: dict[tuple[int, int], int]
) -> None:
    """No gaps, no duplicates, each writer's turns in order, each turn's pair adjacent."""
    messages = await storage.load(session_id)  # raises on gaps or count mismatch
    assert len(messages) == 2 * sum(expected_turns.values())
    async with storage.engine.connect() as conn:
        count, distinct, top = (
            await conn.execute(
                text(
                    "SELECT count(*), count(DISTINCT seq), max(seq) FROM messages "
                    "WHERE session_id = :s"
                ),
                {"s": session_id},
            )
        ).one()
    assert count == distinct == top + 1 == len(messages)
    seen: dict[tuple[int, int], list[int]] = defaultdict(list)
    for position in range(0, len(messages), 2):
        question, answer = messages[position], messages[position + 1]
        assert question.metadata == answer.metadata  # a turn's two messages stay together
        assert (question.role, answer.role) == ("user", "assistant")
        key = (question.metadata["process"], question.metadata["writer"])
        seen[key].append(question.metadata["turn"])
    assert {key: len(turns) for key, turns in seen.items()} == expected_turns
    for turns in seen.values():
        assert turns == sorted(turns) == list(range(len(turns)))


async def test_32_writers_in_one_process_lose_nothing(pg_storage: PostgresStorage) -> None:
    manager = ContextManager(pg_storage)
    written = await run_writers(manager, "busy", 0, WRITERS, TURNS)
    assert written == WRITERS * TURNS
    await assert_every_turn_landed_in_order(
        pg_storage, "busy", {(0, w): TURNS for w in range(WRITERS)}
    )
    assert await pg_storage.version("busy") == written


async def test_64_writers_across_8_processes_all_succeed_and_lose_nothing(
    pg_storage: PostgresStorage, database_url: URL
) -> None:
    url = database_url.render_as_string(hide_password=False)
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tests.integration.concurrent_writer",
            url,
            "shared",
            str(index),
            str(PROCESS_WRITERS),
            str(TURNS),
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for index in range(PROCESSES)
    ]
    outputs = [await process.communicate() for process in processes]
    assert [process.returncode for process in processes] == [0] * PROCESSES, outputs
    written = sum(int(out.decode().split()[0]) for out, _ in outputs)
    print(f"cross-process writes {written}, none failed")
    assert written == PROCESSES * PROCESS_WRITERS * TURNS
    await assert_every_turn_landed_in_order(
        pg_storage,
        "shared",
        {(p, w): TURNS for p in range(PROCESSES) for w in range(PROCESS_WRITERS)},
    )
    assert await pg_storage.version("shared") == written


async def test_a_manager_never_fails_because_others_wrote(
    pg_storage: PostgresStorage, database_url: URL
) -> None:
    """Appends don't depend on what was read: another process in between changes nothing."""
    async with PostgresStorage.from_url(database_url) as elsewhere:
        mine, other = ContextManager(pg_storage), ContextManager(elsewhere)
        for turn in range(5):
            await mine.add_message("s", Message(role="user", content=f"mine {turn}"))
            await elsewhere.save(
                "s", [*await elsewhere.load("s"), Message(role="user", content=f"theirs {turn}")]
            )
            await other.add_message("s", Message(role="user", content=f"other {turn}"))
        contents = [m.content for m in await pg_storage.load("s")]
    assert contents == [
        text for turn in range(5) for text in (f"mine {turn}", f"theirs {turn}", f"other {turn}")
    ]


async def test_two_state_updates_from_one_version_one_wins(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("c", [])
    await pg_storage.save_state("c", KNEE_STATE)
    outcomes = await asyncio.gather(
        *(
            pg_storage.save_state("c", {**KNEE_STATE, "stage": stage}, expected_version=1)
            for stage in ("assessing", "advising")
        ),
        return_exceptions=True,
    )
    conflicts = [o for o in outcomes if isinstance(o, ConflictError)]
    winners = [o for o in outcomes if o == 2]
    assert len(conflicts) == 1 and len(winners) == 1, outcomes
    current = await pg_storage.load_state("c")
    assert current is not None and current.version == 2
    history = await pg_storage.state_history("c")
    assert [change.version for change in history] == [1, 2]
    assert history[1].state.stage == current.value.stage


async def test_concurrent_summaries_never_share_a_version(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("s", [Message(role="user", content=str(i)) for i in range(10)])
    outcomes = await asyncio.gather(
        *(pg_storage.save_summary("s", f"summary {i}", covers_until=i) for i in range(10)),
        return_exceptions=True,
    )
    stored = [o.summary_version for o in outcomes if not isinstance(o, BaseException)]
    assert all(isinstance(o, ConflictError) for o in outcomes if isinstance(o, BaseException))
    assert sorted(stored) == list(range(1, len(stored) + 1))
    latest = await pg_storage.load_summary("s")
    assert latest is not None and latest.summary_version == len(stored)


async def test_a_stale_save_never_overwrites_newer_data(database_url: URL) -> None:
    async with (
        PostgresStorage.from_url(database_url) as worker_a,
        PostgresStorage.from_url(database_url) as worker_b,
    ):
        base = [Message(role="user", content="hello")]
        await worker_a.save("s", base)
        seen = await worker_a.load("s")
        version = await worker_a.version("s")
        await worker_b.save("s", [*seen, Message(role="assistant", content="from b")])
        with pytest.raises(ConflictError):
            await worker_a.save(
                "s", [*seen, Message(role="assistant", content="from a")], expected_version=version
            )
        with pytest.raises(ConflictError):
            await worker_a.append(
                "s", [Message(role="assistant", content="from a")], expected_version=version
            )
        assert [m.content for m in await worker_b.load("s")] == ["hello", "from b"]


async def test_delete_racing_saves_leaves_all_or_nothing(database_url: URL) -> None:
    full = [Message(role="user", content=f"m{i}") for i in range(50)]
    async with (
        PostgresStorage.from_url(database_url) as saver,
        PostgresStorage.from_url(database_url) as deleter,
    ):
        outcomes = set()
        for round_number in range(30):
            session_id = f"race-{round_number}"
            await saver.save(session_id, full[:10])

            async def delete_after(delay: float, session_id: str = session_id) -> None:
                await asyncio.sleep(delay)
                await deleter.delete(session_id)

            # vary who reaches the session row first
            await asyncio.gather(
                saver.save(session_id, full), delete_after(0.0005 * (round_number % 6))
            )
            loaded = await saver.load(session_id)
            assert loaded in ([], full)
            if loaded:
                assert await saver.version(session_id) >= 1
            outcomes.add(len(loaded))
            async with saver.engine.connect() as conn:
                orphans = await conn.scalar(
                    text(
                        "SELECT count(*) FROM messages m WHERE NOT EXISTS "
                        "(SELECT 1 FROM sessions s WHERE s.session_id = m.session_id)"
                    )
                )
            assert orphans == 0
        print(f"delete/save race outcomes (message counts seen): {sorted(outcomes)}")


async def test_snapshot_is_consistent_while_writers_append(pg_storage: PostgresStorage) -> None:
    await pg_storage.append("live", [Message(role="user", content="0")])

    async def writer() -> None:
        for index in range(1, 120):
            await pg_storage.append("live", [Message(role="user", content=str(index))])

    async def reader() -> int:
        checked = 0
        for _ in range(60):
            snapshot = await pg_storage.snapshot("live")
            # every append adds one message and one version: a torn read would differ
            assert len(snapshot.messages) == snapshot.version
            checked += 1
        return checked

    _, checked = await asyncio.gather(writer(), reader())
    assert checked == 60


async def test_first_appends_racing_to_create_a_session_all_land(database_url: URL) -> None:
    """Appends without an expected version to a session that doesn't exist yet: whichever
    creates it, the others extend it, none is refused (the row appears between one
    writer's statements)."""
    writers, rounds = 8, 40
    storages = [PostgresStorage.from_url(database_url) for _ in range(writers)]
    try:
        for storage in storages:  # connected before the race, so the writers start together
            await storage.load("warm-up")
        for round_number in range(rounds):
            session_id = f"first-{round_number}"
            await asyncio.gather(
                *(
                    storage.append(session_id, [Message(role="user", content=f"w{i}")])
                    for i, storage in enumerate(storages)
                )
            )
            stored = await storages[0].load(session_id)
            assert sorted(m.content for m in stored) == [f"w{i}" for i in range(writers)]
    finally:
        for storage in storages:
            await storage.close()


async def test_an_unversioned_summary_never_conflicts_while_saves_shrink_the_session(
    database_url: URL,
) -> None:
    """Issue 25: a save shortening the session, then an append growing it again, between
    a refused summary write and the read of why, made save_summary without an expected
    version raise ConflictError (179 in 3 s before).  Now it is stored or refused for a
    reason (InvalidInputError: covers_until past the messages at that moment)."""
    import time  # noqa: PLC0415

    from ctxstore.errors import InvalidInputError  # noqa: PLC0415

    def messages(count: int) -> list[Message]:
        return [Message(role="user", content=str(index)) for index in range(count)]

    outcomes: dict[str, int] = defaultdict(int)
    async with (
        PostgresStorage.from_url(database_url) as churner,
        PostgresStorage.from_url(database_url) as summarizer,
    ):
        await churner.save("race", messages(10))
        stop = time.monotonic() + 2.0

        async def churn() -> None:
            while time.monotonic() < stop or not outcomes["invalid"]:
                await churner.save("race", messages(2))
                await churner.append("race", messages(8))

        async def summarize() -> None:
            while time.monotonic() < stop or not outcomes["invalid"]:
                try:
                    await summarizer.save_summary("race", "summary", covers_until=5)
                    outcomes["stored"] += 1
                except InvalidInputError:
                    outcomes["invalid"] += 1
                except ConflictError:
                    outcomes["conflict"] += 1

        await asyncio.wait_for(asyncio.gather(churn(), summarize(), summarize()), 60)
    assert outcomes["conflict"] == 0, dict(outcomes)
    assert outcomes["stored"] > 0 and outcomes["invalid"] > 0  # both sides of the race ran
