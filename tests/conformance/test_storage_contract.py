"""The ContextStorage data contract (DESIGN.md section 1), run against every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ctxstore import InvalidInputError, Message
from ctxstore.errors import InvalidSessionIdError, MessageTooLargeError
from ctxstore.storage.base import ContextStorage

CST = timezone(timedelta(hours=8))


def consultation() -> list[Message]:
    return [
        Message(
            role="user",
            content="我膝盖有下坠感",
            turn_id="turn_0001",
            timestamp=datetime(2026, 11, 29, 8, 15, 2, 123000, tzinfo=CST),
        ),
        Message(
            role="assistant",
            content="是否伴随疼痛或肿胀？",
            turn_id="turn_0001",
            timestamp=datetime(2026, 11, 29, 8, 15, 9, tzinfo=CST),
            metadata={"model": "demo", "scores": [0.5, 1], "nested": {"k": None}},
        ),
        Message(role="system", content="You are a rehabilitation assistant.", name="policy"),
        Message(role="tool", content='{"result": "ok"}', name="lookup"),
    ]


async def test_storage_satisfies_the_protocol(storage: ContextStorage) -> None:
    assert isinstance(storage, ContextStorage)


async def test_save_then_load_returns_equal_messages(storage: ContextStorage) -> None:
    messages = consultation()
    await storage.save("s1", messages)
    loaded = await storage.load("s1")
    assert loaded == messages
    assert [m.content for m in loaded] == [m.content for m in messages]
    assert [m.timestamp.utcoffset() if m.timestamp else None for m in loaded] == [
        m.timestamp.utcoffset() if m.timestamp else None for m in messages
    ]


@pytest.mark.parametrize(
    "text",
    [
        "literal \\u0000 stays six characters",
        "emoji 😀🦵🏽 and ZWJ 👩‍⚕️",
        "  leading and trailing spaces  ",
        "line\r\nbreaks\nand\ttabs",
        "",
        "'; DROP TABLE messages; --",
        "\u200b\ufeff zero-width and BOM",
    ],
)
async def test_text_round_trips_byte_exact(storage: ContextStorage, text: str) -> None:
    await storage.save("exact", [Message(role="user", content=text)])
    (loaded,) = await storage.load("exact")
    assert loaded.content.encode("utf-8") == text.encode("utf-8")


async def test_load_of_missing_session_is_an_empty_list(storage: ContextStorage) -> None:
    loaded = await storage.load("never-saved")
    assert loaded == []
    assert isinstance(loaded, list)
    assert await storage.exists("never-saved") is False


async def test_empty_session_is_distinct_from_missing(storage: ContextStorage) -> None:
    await storage.save("empty", [])
    assert await storage.exists("empty") is True
    assert await storage.load("empty") == []
    await storage.save("empty", consultation()[:1])
    await storage.save("empty", [])
    assert await storage.load("empty") == []
    assert await storage.exists("empty") is True


async def test_delete_is_thorough_and_idempotent(storage: ContextStorage) -> None:
    await storage.save("gone", consultation())
    await storage.delete("gone")
    assert await storage.exists("gone") is False
    assert await storage.load("gone") == []
    await storage.delete("gone")
    await storage.delete("never-existed")
    await storage.save("gone", consultation()[:1])
    assert await storage.load("gone") == consultation()[:1]


async def test_save_is_a_full_overwrite(storage: ContextStorage) -> None:
    messages = consultation()
    await storage.save("s", messages)
    await storage.save("s", messages[:2])
    assert await storage.load("s") == messages[:2]
    edited = [messages[0], Message(role="assistant", content="edited"), *messages[2:]]
    await storage.save("s", edited)
    assert await storage.load("s") == edited
    reordered = list(reversed(messages))
    await storage.save("s", reordered)
    assert await storage.load("s") == reordered


async def test_sessions_are_independent(storage: ContextStorage) -> None:
    first, second = consultation()[:2], consultation()[2:]
    await storage.save("a", first)
    await storage.save("b", second)
    await storage.delete("a")
    assert await storage.load("b") == second
    assert await storage.load("a") == []


async def test_messages_may_be_given_as_mappings(storage: ContextStorage) -> None:
    await storage.save(
        "dicts",
        [
            {"role": "user", "content": "hi", "timestamp": "2026-11-29T08:15:02+08:00"},
            {"role": "assistant", "content": "hello"},
        ],
    )
    loaded = await storage.load("dicts")
    assert [m.content for m in loaded] == ["hi", "hello"]
    assert loaded[0].timestamp == datetime(2026, 11, 29, 0, 15, 2, tzinfo=UTC)


async def test_stored_data_does_not_follow_later_mutation(storage: ContextStorage) -> None:
    message = Message(role="user", content="x", metadata={"tags": ["a"]})
    await storage.save("m", [message])
    message.metadata["tags"].append("b")
    (loaded,) = await storage.load("m")
    assert loaded.metadata == {"tags": ["a"]}


async def test_metadata_changed_in_place_on_a_loaded_message_is_saved(
    storage: ContextStorage,
) -> None:
    await storage.save("m", [Message(role="user", content="x", metadata={"k": 1})])
    loaded = await storage.load("m")
    loaded[0].metadata["k"] = 2
    await storage.save("m", loaded)
    assert (await storage.load("m"))[0].metadata == {"k": 2}


def _bypassing_validation(**fields: Any) -> Message:
    defaults: dict[str, Any] = {
        "role": "user",
        "content": "x",
        "turn_id": None,
        "timestamp": None,
        "name": None,
        "metadata": {},
    }
    return Message.model_construct(**{**defaults, **fields})


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"d": value}
    return value


BAD_MESSAGE_LISTS: dict[str, Any] = {
    "NUL in content": [{"role": "user", "content": "a\x00b"}],
    "lone surrogate in content": [{"role": "user", "content": "a\ud800b"}],
    "non-string content": [{"role": "user", "content": 42}],
    "bytes content": [{"role": "user", "content": b"bytes"}],
    "unknown role": [{"role": "doctor", "content": "x"}],
    "naive timestamp": [{"role": "user", "content": "x", "timestamp": "2026-11-29T08:15:02"}],
    "unknown field": [{"role": "user", "content": "x", "mood": "happy"}],
    "NUL in metadata key": [{"role": "user", "content": "x", "metadata": {"a\x00": 1}}],
    "NUL in nested metadata value": [
        {"role": "user", "content": "x", "metadata": {"a": ["ok", {"b": "\x00"}]}}
    ],
    "too deeply nested metadata": [{"role": "user", "content": "x", "metadata": _nested(40)}],
    "NUL in name": [{"role": "user", "content": "x", "name": "a\x00"}],
    "not a message": ["just a string"],
    "not a list": "a string is not a list of messages",
    "bypassed validation: bad role": [_bypassing_validation(role="doctor")],
    "bypassed validation: NUL": [_bypassing_validation(content="\x00")],
    "bypassed validation: naive timestamp": [_bypassing_validation(timestamp=datetime(2026, 1, 1))],
    "bypassed validation: non-JSON metadata": [_bypassing_validation(metadata={"s": {1, 2}})],
}


@pytest.mark.parametrize("bad", list(BAD_MESSAGE_LISTS), ids=list(BAD_MESSAGE_LISTS))
async def test_bad_messages_are_rejected_and_nothing_is_written(
    storage: ContextStorage, bad: str
) -> None:
    previous = consultation()
    await storage.save("s", previous)
    payload = BAD_MESSAGE_LISTS[bad]
    if isinstance(payload, list):
        payload = [*previous, *payload]  # an append that must not half-happen
    with pytest.raises(InvalidInputError):
        await storage.save("s", payload)
    assert await storage.load("s") == previous
    with pytest.raises(InvalidInputError):
        await storage.save("new-session", payload)
    assert await storage.exists("new-session") is False


async def test_oversized_message_is_rejected(storage: ContextStorage) -> None:
    previous = consultation()
    await storage.save("s", previous)
    huge = Message(role="user", content="膝" * 100_000)  # 300,000 UTF-8 bytes
    with pytest.raises(MessageTooLargeError) as caught:
        await storage.save("s", [*previous, huge])
    assert caught.value.position == len(previous)
    assert await storage.load("s") == previous


async def test_a_bad_message_in_an_edited_history_leaves_the_old_history(
    storage: ContextStorage,
) -> None:
    previous = consultation()
    await storage.save("s", previous)
    edited = [previous[0], _bypassing_validation(content="bad\x00"), *previous[2:]]
    with pytest.raises(InvalidInputError):
        await storage.save("s", edited)
    assert await storage.load("s") == previous


@pytest.mark.parametrize(
    "session_id",
    ["", "x" * 256, "a\x00b", "a\udc00", 42, None, b"bytes"],
    ids=["empty", "too-long", "NUL", "surrogate", "int", "None", "bytes"],
)
async def test_bad_session_ids_are_rejected(storage: ContextStorage, session_id: Any) -> None:
    with pytest.raises(InvalidSessionIdError):
        await storage.save(session_id, consultation())
    with pytest.raises(InvalidSessionIdError):
        await storage.load(session_id)
    with pytest.raises(InvalidSessionIdError):
        await storage.delete(session_id)
    with pytest.raises(InvalidSessionIdError):
        await storage.exists(session_id)


@pytest.mark.parametrize(
    "session_id",
    ["'; DROP TABLE sessions; --", "用户/会话:42", "x" * 255, "with space", "😀"],
    ids=["sql", "unicode", "max-length", "space", "emoji"],
)
async def test_unusual_but_valid_session_ids_work(storage: ContextStorage, session_id: str) -> None:
    await storage.save(session_id, consultation())
    assert await storage.load(session_id) == consultation()
    await storage.delete(session_id)
    assert await storage.exists(session_id) is False
