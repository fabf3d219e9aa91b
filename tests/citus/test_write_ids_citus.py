"""Journal write ids on Citus: each write records its ids in its own transaction, on the
session's shard (or, for a profile, in the reference table beside ``user_profiles``)."""

from __future__ import annotations

from sqlalchemy import URL

from ctxstore import MemoryStorage, Message, PostgresStorage
from ctxstore.storage.journal import Operation
from ctxstore.storage.replay import Replayer
from ctxstore.storage.write_ids import carrying, new_write_id


async def test_writes_record_their_ids_and_replay_skips_what_was_applied(
    database_url: URL,
) -> None:
    ids = {kind: new_write_id() for kind in ("save", "append", "state", "delete", "profile")}
    async with PostgresStorage.from_url(database_url) as storage:
        with carrying([ids["save"]]):
            await storage.save("c1", [Message(role="user", content="a")], user_id="cu1")
        with carrying([ids["append"]]):
            await storage.append("c1", [Message(role="user", content="b")])
        with carrying([ids["state"]]):
            await storage.save_state("c1", {"stage": "greeting"})
        with carrying([ids["profile"]]):
            await storage.save_profile("cu1", {"age": 33})
        session_ids = [ids[kind] for kind in ("save", "append", "state", "delete")]
        assert await storage.applied_writes("c1", session_ids) == set(session_ids[:3])
        assert await storage.applied_writes("cu1", [ids["profile"]], profile=True) == {
            ids["profile"]
        }
        with carrying([ids["delete"]]):
            await storage.delete("c1")
        await storage.save("c1", [Message(role="user", content="new")])  # another process
        journal = MemoryStorage().open_journal("j")
        await journal.record(Operation("delete", "c1", uncertain=True, write_id=ids["delete"]))
        replayer = Replayer(storage, journal)
        while entries := await journal.head(10):
            await replayer.replay(entries)
        assert await storage.load("c1") == [Message(role="user", content="new")]
        receipt = await storage.erase_user("cu1", vacuum=False)
        assert receipt.profile
        assert await storage.applied_writes("cu1", [ids["profile"]], profile=True) == set()
