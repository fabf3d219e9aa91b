"""Key rotation beside writers: every acknowledged write leaves a session that opens.

`rotate-keys --reencrypt` rewrites a sealed session's rows and content hash under a fresh
key without moving its version; a process that loaded the session before keeps what it
knew.  Its next write must either extend the chain actually stored or be refused, never
store a hash no reader can verify (issue 46).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.rotate_keys import rotate_keys
from ctxstore.encryption import Encryption, Keyring
from ctxstore.models import ConsultationState, UserProfile

pytestmark = [pytest.mark.asyncio, pytest.mark.postgres]


def turn(i: int, tag: str = "") -> list[Message]:
    return [
        Message(role="user", content=f"膝盖疼 {tag} 第{i}轮", turn_id=f"t{i}"),
        Message(role="assistant", content=f"持续多久了？ {tag} 第{i}轮", turn_id=f"t{i}"),
    ]


@pytest.fixture
def keyring() -> Keyring:
    return Keyring({"k1": os.urandom(32)})


@pytest.fixture
async def writer(database_url: URL, keyring: Keyring) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url, encryption=Encryption(keyring)) as storage:
        yield storage


async def rotate(storage: PostgresStorage, keyring: Keyring) -> None:
    async with storage.driver() as driver:
        report = await rotate_keys(driver, Encryption(keyring), reencrypt=True, show=False)
    assert report.sessions and report.rows and not report.refused


async def reopened(url: URL, keyring: Keyring, session_id: str) -> list[Message]:
    async with PostgresStorage.from_url(url, encryption=Encryption(keyring)) as cold:
        return await cold.load(session_id)


@pytest.mark.parametrize("user_id", ["alice", None])
async def test_an_append_known_from_before_a_rotation_keeps_the_session_readable(
    writer: PostgresStorage, database_url: URL, keyring: Keyring, user_id: str | None
) -> None:
    await writer.save("s", turn(0), user_id=user_id)
    assert await writer.load("s") == turn(0)  # this process now knows the chain
    await rotate(writer, keyring)
    version = await writer.append("s", turn(1), user_id=user_id)
    assert version == await writer.version("s")
    assert await reopened(database_url, keyring, "s") == [*turn(0), *turn(1)]
    assert await writer.load("s") == [*turn(0), *turn(1)]


async def test_an_append_at_a_known_version_across_a_rotation_commits(
    writer: PostgresStorage, database_url: URL, keyring: Keyring
) -> None:
    version = await writer.save("s", turn(0), user_id="alice")
    await rotate(writer, keyring)
    # The version did not move: the rotation changed no content, so no conflict either.
    after = await writer.append("s", turn(1), expected_version=version, user_id="alice")
    assert after == version + 1
    assert await reopened(database_url, keyring, "s") == [*turn(0), *turn(1)]


async def test_a_save_of_a_list_loaded_before_a_rotation_keeps_the_session_readable(
    writer: PostgresStorage, database_url: URL, keyring: Keyring
) -> None:
    version = await writer.save("s", turn(0), user_id="alice")
    history = await writer.load("s")
    await rotate(writer, keyring)
    history.extend(turn(1))
    await writer.save("s", history, expected_version=version, user_id="alice")
    assert await reopened(database_url, keyring, "s") == [*turn(0), *turn(1)]
    edited = [*turn(0)[:1], *turn(2)]
    await rotate(writer, keyring)
    await writer.save("s", edited, user_id="alice")
    assert await reopened(database_url, keyring, "s") == edited


async def test_documents_written_across_a_rotation_open(
    writer: PostgresStorage, database_url: URL, keyring: Keyring
) -> None:
    await writer.save("s", turn(0), user_id="alice")
    await writer.save_state("s", ConsultationState(stage="triage"))
    await writer.save_summary("s", "总结一", covers_until=1)
    await writer.save_profile("alice", UserProfile(age=40))
    await rotate(writer, keyring)
    await writer.save_state("s", ConsultationState(stage="history"))
    await writer.save_summary("s", "总结二", covers_until=1)
    await writer.save_profile("alice", UserProfile(age=41))
    async with PostgresStorage.from_url(database_url, encryption=Encryption(keyring)) as cold:
        assert (await cold.load_state("s")).value.stage == "history"  # type: ignore[union-attr]
        assert (await cold.load_summary("s")).text == "总结二"  # type: ignore[union-attr]
        assert (await cold.load_profile("alice")).value.age == 41  # type: ignore[union-attr]
        assert [c.state.stage for c in await cold.state_history("s")] == ["triage", "history"]


@pytest.mark.slow
async def test_writers_and_readers_beside_killed_and_rerun_rotations_lose_nothing(
    database_url: URL,
) -> None:
    from tests.rotation_history import run_history  # noqa: PLC0415

    result = await run_history(database_url, seed_value=int.from_bytes(os.urandom(2)))
    print(result.line())
    assert result.acknowledged > 100 and result.reads > 20, result.line()
    assert result.rotations_finished == 2, result.line()
    assert not result.lost and not result.unreadable, result.line()
    assert not result.read_errors and not result.failed, result.line()
    assert result.stale_keys == 0 and result.keys_under_old_master == 0, result.line()
    assert result.erasures > 0 and not result.erasure_leftovers, result.line()
