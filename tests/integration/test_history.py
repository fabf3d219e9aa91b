"""History: what load returns; saving it after appends costs the new messages only, and
any other change still saves exactly what the list holds."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.storage.history import History


def msgs(*contents: str, **fields: Any) -> list[Message]:
    return [Message(role="user", content=content, **fields) for content in contents]


async def test_load_extend_save_stays_on_the_fast_path(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("s", msgs("a", "b"))
    history = await pg_storage.load("s")
    assert isinstance(history, History)
    assert pg_storage.knowledge.stored_prefix("s", history) is not None
    for turn in range(3):
        history.extend(msgs(f"q{turn}", f"r{turn}"))
        assert pg_storage.knowledge.stored_prefix("s", history) is not None
        await pg_storage.save("s", history)
        known = pg_storage.knowledge.get("s")
        assert known is not None and known.count == len(history)
    history += msgs("x")
    await pg_storage.save("s", history)
    assert await pg_storage.load("s") == history
    assert len(history) == 9


@pytest.mark.parametrize(
    "extend",
    [
        lambda loaded, new: loaded + new,
        lambda loaded, new: [*loaded, *new],
        lambda loaded, new: list(loaded) + new,
        lambda loaded, new: tuple(loaded) + tuple(new),
    ],
    ids=["plus", "unpack", "list-plus", "tuple"],
)
async def test_any_list_extending_the_loaded_one_is_recognised(
    pg_storage: PostgresStorage, extend: Callable[[list[Message], list[Message]], Any]
) -> None:
    """The everyday idiom builds a new list: it is still saved as an append."""
    await pg_storage.save("s", msgs("a", "b"))
    for turn in range(3):
        messages = extend(await pg_storage.load("s"), msgs(f"q{turn}", f"r{turn}"))
        assert pg_storage.knowledge.stored_prefix("s", messages) is not None
        await pg_storage.save("s", messages)
        messages = extend(messages, msgs(f"again{turn}"))  # saved lists are known too
        assert pg_storage.knowledge.stored_prefix("s", messages) is not None
        await pg_storage.save("s", messages)
    assert [m.content for m in await pg_storage.load("s")] == [
        "a", "b", "q0", "r0", "again0", "q1", "r1", "again1", "q2", "r2", "again2"
    ]  # fmt: skip


async def test_equal_but_different_messages_take_the_general_path(
    pg_storage: PostgresStorage,
) -> None:
    await pg_storage.save("s", msgs("a", "b"))
    await pg_storage.load("s")
    fresh = msgs("a", "b", "c")  # equal messages, other objects: hashed, still an append
    assert pg_storage.knowledge.stored_prefix("s", fresh) is not None  # equal compares equal
    await pg_storage.save("s", fresh)
    assert await pg_storage.load("s") == fresh


@pytest.mark.parametrize(
    "change",
    [
        lambda h: h.__setitem__(1, Message(role="assistant", content="edited")),
        lambda h: h.__delitem__(0),
        lambda h: h.insert(0, Message(role="system", content="inserted")),
        lambda h: h.pop(),
        lambda h: h.remove(h[0]),
        lambda h: h.reverse(),
        lambda h: h.sort(key=lambda m: m.content, reverse=True),
        lambda h: h.clear(),
        lambda h: h.__setitem__(slice(0, 1), []),
        lambda h: h.__imul__(2),
    ],
    ids=[
        "setitem",
        "delitem",
        "insert",
        "pop",
        "remove",
        "reverse",
        "sort",
        "clear",
        "slice",
        "imul",
    ],
)
async def test_any_other_change_is_saved_exactly(
    pg_storage: PostgresStorage, change: Callable[[History], Any]
) -> None:
    await pg_storage.save("s", msgs("a", "b", "c"))
    history = await pg_storage.load("s")
    change(history)
    history.extend(msgs("new"))
    await pg_storage.save("s", history)
    assert await pg_storage.load("s") == list(history)


async def test_metadata_changed_in_place_is_saved(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("s", [*msgs("a"), Message(role="user", content="b", metadata={"k": 1})])
    history = await pg_storage.load("s")
    history[1].metadata["k"] = 2  # a loaded message's metadata dict
    history.extend(msgs("c"))
    await pg_storage.save("s", history)
    assert (await pg_storage.load("s"))[1].metadata == {"k": 2}
    history[2].metadata["added"] = True  # a message added through this History
    await pg_storage.save("s", history)
    assert (await pg_storage.load("s"))[2].metadata == {"added": True}


async def test_a_loaded_message_without_metadata_is_read_only(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("s", msgs("a"))
    (message,) = await pg_storage.load("s")
    with pytest.raises(TypeError, match="read-only"):
        message.metadata["k"] = 1
    updated = message.model_copy(update={"metadata": {"k": 1}})
    await pg_storage.save("s", [updated])
    assert (await pg_storage.load("s"))[0].metadata == {"k": 1}


async def test_another_writer_in_between_still_gives_full_overwrite(database_url: URL) -> None:
    async with (
        PostgresStorage.from_url(database_url) as mine,
        PostgresStorage.from_url(database_url) as theirs,
    ):
        await mine.save("s", msgs("a"))
        history = await mine.load("s")
        await theirs.save("s", msgs("a", "theirs"))
        history.extend(msgs("mine"))
        await mine.save("s", history)  # last write wins, as without versions
        assert await theirs.load("s") == msgs("a", "mine")
        history.extend(msgs("more"))
        await mine.save("s", history)
        assert await theirs.load("s") == msgs("a", "mine", "more")


async def test_a_history_saved_into_another_session(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("one", msgs("a", "b"))
    history = await pg_storage.load("one")
    history.extend(msgs("c"))
    await pg_storage.save("two", history)
    assert await pg_storage.load("two") == msgs("a", "b", "c")
    assert await pg_storage.load("one") == msgs("a", "b")
    history.extend(msgs("d"))
    await pg_storage.save("two", history)
    assert await pg_storage.load("two") == msgs("a", "b", "c", "d")


async def test_histories_copy_and_pickle_as_plain_lists(pg_storage: PostgresStorage) -> None:
    await pg_storage.save("s", [*msgs("a"), Message(role="user", content="b", metadata={"k": [1]})])
    history = await pg_storage.load("s")
    assert pickle.loads(pickle.dumps(history)) == list(history)
    deep = copy.deepcopy(history)
    assert deep == history and type(deep) is History
    deep[1].metadata["k"].append(2)
    assert history[1].metadata == {"k": [1]}
    shallow = copy.copy(history)
    assert shallow == history and type(shallow) is History
    shallow.extend(msgs("c"))
    await pg_storage.save("s", shallow)
    assert await pg_storage.load("s") == list(shallow)


async def test_an_edited_history_is_no_longer_taken_for_the_stored_list(
    pg_storage: PostgresStorage,
) -> None:
    await pg_storage.save("s", msgs("a", "b", "c"))
    history = await pg_storage.load("s")
    history.append(Message(role="user", content="d"))
    assert pg_storage.knowledge.stored_prefix("s", history) is not None  # it only grew
    history[1] = Message(role="user", content="B")  # an edit, even to an equal length
    history.append(Message(role="user", content="e"))
    assert pg_storage.knowledge.stored_prefix("s", history) is None
    await pg_storage.save("s", history)
    assert [m.content for m in await pg_storage.load("s")] == ["a", "B", "c", "d", "e"]
    history[1] = Message(role="user", content="b")  # back to what was stored at first
    assert pg_storage.knowledge.stored_prefix("s", history) is None  # still an edit
    await pg_storage.save("s", history)
    assert [m.content for m in await pg_storage.load("s")] == ["a", "b", "c", "d", "e"]
