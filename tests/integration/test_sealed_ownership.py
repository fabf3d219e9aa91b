"""A sealed session proves whose it is: moved to another user in SQL, it does not open.

A data key's owner is bound to it by its wrapping; a session's rows may be sealed only
under the session's own key or its user's.  The database owner who changes
``sessions.user_id``, or ``data_keys.owner``, gets a session every read refuses with
CorruptDataError naming it, and the rightful owner's erasure still takes it (issue 46).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import ContextBuilder, ContextManager, Message, PostgresStorage, TokenBudget
from ctxstore.commands.rotate_keys import rotate_keys
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import CorruptDataError
from ctxstore.models import ConsultationState

pytestmark = [pytest.mark.asyncio, pytest.mark.postgres]

CONVERSATION = [
    Message(role="user", content="我膝盖有下坠感", turn_id="t1"),
    Message(role="assistant", content="持续多久了？", turn_id="t1"),
]


@pytest.fixture
def encryption() -> Encryption:
    return Encryption(Keyring({"k1": os.urandom(32)}))


@pytest.fixture
async def sealed(database_url: URL, encryption: Encryption) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url, encryption=encryption) as storage:
        await storage.save("s", CONVERSATION, user_id="alice")
        await storage.save_state("s", ConsultationState(stage="triage"))
        await storage.save_summary("s", "膝盖下坠感", covers_until=1)
        await storage.save("bobs", CONVERSATION, user_id="bob")
        yield storage


async def as_owner(storage: PostgresStorage, query: str) -> None:
    async with storage.driver() as driver:
        await driver.execute(query)


async def context(storage: PostgresStorage, session_id: str) -> Any:
    return await ContextManager(storage).get_context(session_id, TokenBudget(2000))


async def contract(storage: PostgresStorage, session_id: str) -> Any:
    return await ContextBuilder(storage).build(session_id, "t2", "还是疼")


READS: dict[str, Callable[[PostgresStorage], Awaitable[Any]]] = {
    "load": lambda storage: storage.load("s"),
    "snapshot": lambda storage: storage.snapshot("s"),
    "load_state": lambda storage: storage.load_state("s"),
    "load_summary": lambda storage: storage.load_summary("s"),
    "state_history": lambda storage: storage.state_history("s"),
    "newest": lambda storage: storage.newest("s", 1),
    "context": lambda storage: context(storage, "s"),
    "contract": lambda storage: contract(storage, "s"),
}


@pytest.mark.parametrize("moved_to", ["'bob'", "NULL"])
@pytest.mark.parametrize("read", sorted(READS))
async def test_a_session_moved_to_another_user_is_refused_naming_it(
    sealed: PostgresStorage, encryption: Encryption, moved_to: str, read: str
) -> None:
    await as_owner(sealed, f"UPDATE sessions SET user_id = {moved_to} WHERE session_id = 's'")
    for storage in (sealed, PostgresStorage.from_url(sealed.engine.url, encryption=encryption)):
        async with storage:  # this process (its keys cached) and a new one
            with pytest.raises(CorruptDataError, match="moved to another user") as raised:
                await READS[read](storage)
            assert raised.value.session_id == "s"


async def test_a_users_key_moved_to_another_user_is_refused_naming_the_session(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    await as_owner(sealed, "UPDATE data_keys SET owner = 'u:mallory' WHERE owner = 'u:alice'")
    async with PostgresStorage.from_url(sealed.engine.url, encryption=encryption) as cold:
        with pytest.raises(CorruptDataError, match="another owner") as raised:
            await cold.load("s")
        assert raised.value.session_id == "s"
        assert await cold.load("bobs") == CONVERSATION  # bob's own key is his


async def test_the_rightful_owners_erasure_takes_a_moved_session(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    await as_owner(sealed, "UPDATE sessions SET user_id = 'bob' WHERE session_id = 's'")
    erased = await sealed.erase_user("alice")
    assert erased.sessions == 1 and erased.messages == 2 and erased.states == 1
    async with sealed.driver() as driver:
        left = await driver.fetch("SELECT session_id FROM sessions ORDER BY session_id")
        owners = await driver.fetch("SELECT DISTINCT owner FROM data_keys")
    assert [row["session_id"] for row in left] == ["bobs"]
    assert [row["owner"] for row in owners] == ["u:bob"]
    assert await sealed.load("bobs") == CONVERSATION


async def test_rotation_does_not_launder_a_moved_session(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    await as_owner(sealed, "UPDATE sessions SET user_id = 'bob' WHERE session_id = 's'")
    async with sealed.driver() as driver:
        report = await rotate_keys(driver, encryption, reencrypt=True, show=False)
    assert report.refused == ["session 's'"]
    async with PostgresStorage.from_url(sealed.engine.url, encryption=encryption) as cold:
        with pytest.raises(CorruptDataError, match="moved to another user"):
            await cold.load("s")
        assert await cold.load("bobs") == CONVERSATION


async def test_a_session_saved_without_a_user_opens_once_it_has_one(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    """Its first rows are under its own key, the later ones under its user's: both hold."""
    await sealed.save("anon", CONVERSATION)
    await sealed.append("anon", CONVERSATION, user_id="carol")
    async with PostgresStorage.from_url(sealed.engine.url, encryption=encryption) as cold:
        assert await cold.load("anon") == CONVERSATION * 2
        assert (await cold.snapshot("anon")).user_id == "carol"


@pytest.mark.parametrize("write", ["save", "append"])
async def test_a_session_started_afresh_after_expiry_is_sealed_for_its_new_owner(
    database_url: URL, encryption: Encryption, write: str
) -> None:
    """This process knew the expired session as alice's: the new one, saved without a
    user, is sealed under its own key (so it opens, and alice's erasure leaves it)."""
    from datetime import timedelta  # noqa: PLC0415

    async with PostgresStorage.from_url(
        database_url, encryption=encryption, ttl=timedelta(seconds=1)
    ) as storage:
        await storage.save("s", CONVERSATION, user_id="alice")
        async with storage.driver() as driver:
            await driver.execute("UPDATE sessions SET expires_at = now() - interval '1 s'")
        fresh = [Message(role="user", content="新的会诊")]
        if write == "save":
            await storage.save("s", fresh)
        else:
            await storage.append("s", fresh)
        async with PostgresStorage.from_url(database_url, encryption=encryption) as cold:
            assert await cold.load("s") == fresh
            assert (await cold.erase_user("alice")).sessions == 0
            assert await cold.load("s") == fresh
