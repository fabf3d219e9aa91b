"""The storage contract as test classes, subclassed once per backend (docs/storage-contract.md).

This module is not collected by itself (its name does not start with ``test_`` and its
classes not with ``Test``).  Each ``tests/conformance/test_<backend>.py`` subclasses
``VersionedContract`` once per configuration and provides one fixture, ``make_storage``:
a factory that opens a store of that backend as an async context manager::

    class TestMemory(VersionedContract):
        @pytest.fixture
        def make_storage(self) -> StorageFactory:
            @asynccontextmanager
            async def make(*, ttl=None, limits=DEFAULT_LIMITS):
                async with MemoryStorage(ttl=ttl, limits=limits) as storage:
                    yield storage
            return make

Most tests take the ready-made ``storage`` fixture (``make_storage()`` with the defaults);
the TTL tests open their own with a ``ttl``.  Stores opened by one test may share data (one
database, one Redis prefix) or not (memory): no test relies on either.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ctxstore import (
    NEW_SESSION,
    ConsultationState,
    ContextManager,
    ContextStorage,
    Limits,
    Message,
    SlidingWindow,
    UserProfile,
    VersionedStorage,
)
from ctxstore.contract import EXAMPLE
from ctxstore.errors import (
    ConflictError,
    InvalidInputError,
    InvalidSessionIdError,
    MessageTooLargeError,
    SessionNotFoundError,
    SessionOwnerError,
)

#: Opens a store: ``make_storage(ttl=None, limits=DEFAULT_LIMITS)``, an async context
#: manager yielding the store and closing it (and dropping what the test wrote) after.
StorageFactory = Callable[..., AbstractAsyncContextManager[Any]]

DEFAULT_LIMITS = Limits()
CST = timezone(timedelta(hours=8))
KNEE_STATE: dict[str, Any] = copy.deepcopy(EXAMPLE["context"]["consultation_state"])


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


def turn(index: int) -> list[Message]:
    return [
        Message(role="user", content=f"问题 {index}", turn_id=f"t{index}"),
        Message(role="assistant", content=f"回答 {index}", turn_id=f"t{index}"),
    ]


def timed_turn(index: int) -> list[Message]:
    """A turn with turn ids and timestamps: every store counts its tokens when written."""
    stamp = datetime(2026, 11, 29, 8, 0, tzinfo=CST) + timedelta(minutes=index)
    return [
        Message(
            role="user", content=f"第{index}个问题：膝盖", turn_id=f"t{index}", timestamp=stamp
        ),
        Message(
            role="assistant",
            content=f"回答 {index}",
            turn_id=f"t{index}",
            timestamp=stamp + timedelta(seconds=5),
        ),
    ]


def timed_history(
    count: int, start: int = 0, text: str = "第{n}轮：膝盖疼了一周，上下楼梯时明显。"
) -> list[Message]:
    """``count`` messages from position ``start``, user and assistant in turn, each with a
    turn id and a time (so each store counts its tokens when written); ``text`` is
    formatted with the position ``n``."""
    return [
        Message(
            role="user" if n % 2 == 0 else "assistant",
            content=text.format(n=n),
            turn_id=f"t{n}",
            timestamp=f"2026-12-04T08:{n // 60 % 60:02d}:{n % 60:02d}+08:00",
        )
        for n in range(start, start + count)
    ]


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


class StorageContract:
    """The data contract every backend keeps: save, load, delete, exists."""

    @pytest.fixture
    def make_storage(self) -> StorageFactory:
        """Abstract: each backend's subclass says how to open its store."""
        raise NotImplementedError(f"{type(self).__name__} must define the make_storage fixture")

    @pytest.fixture
    async def storage(self, make_storage: StorageFactory) -> AsyncIterator[Any]:
        async with make_storage() as storage:
            yield storage

    async def test_storage_satisfies_the_protocol(self, storage: ContextStorage) -> None:
        assert isinstance(storage, ContextStorage)

    async def test_save_then_load_returns_equal_messages(self, storage: ContextStorage) -> None:
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
    async def test_text_round_trips_byte_exact(self, storage: ContextStorage, text: str) -> None:
        await storage.save("exact", [Message(role="user", content=text)])
        (loaded,) = await storage.load("exact")
        assert loaded.content.encode("utf-8") == text.encode("utf-8")

    async def test_load_of_missing_session_is_an_empty_list(self, storage: ContextStorage) -> None:
        loaded = await storage.load("never-saved")
        assert loaded == []
        assert isinstance(loaded, list)
        assert await storage.exists("never-saved") is False

    async def test_empty_session_is_distinct_from_missing(self, storage: ContextStorage) -> None:
        await storage.save("empty", [])
        assert await storage.exists("empty") is True
        assert await storage.load("empty") == []
        await storage.save("empty", consultation()[:1])
        await storage.save("empty", [])
        assert await storage.load("empty") == []
        assert await storage.exists("empty") is True

    async def test_delete_is_thorough_and_idempotent(self, storage: ContextStorage) -> None:
        await storage.save("gone", consultation())
        await storage.delete("gone")
        assert await storage.exists("gone") is False
        assert await storage.load("gone") == []
        await storage.delete("gone")
        await storage.delete("never-existed")
        await storage.save("gone", consultation()[:1])
        assert await storage.load("gone") == consultation()[:1]

    async def test_save_is_a_full_overwrite(self, storage: ContextStorage) -> None:
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

    async def test_a_loaded_list_extended_and_saved_is_stored_whole(
        self, storage: ContextStorage
    ) -> None:
        """The everyday idiom, both ways: extend what ``load`` returned, or a new list."""
        await storage.save("idiom", consultation()[:2])
        loaded = await storage.load("idiom")
        loaded.extend(consultation()[2:3])
        await storage.save("idiom", loaded)
        assert await storage.load("idiom") == consultation()[:3]
        grown = [*(await storage.load("idiom")), *consultation()[3:]]
        await storage.save("idiom", grown)
        assert await storage.load("idiom") == consultation()

    async def test_sessions_are_independent(self, storage: ContextStorage) -> None:
        first, second = consultation()[:2], consultation()[2:]
        await storage.save("a", first)
        await storage.save("b", second)
        await storage.delete("a")
        assert await storage.load("b") == second
        assert await storage.load("a") == []

    async def test_messages_may_be_given_as_mappings(self, storage: ContextStorage) -> None:
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

    async def test_stored_data_does_not_follow_later_mutation(
        self, storage: ContextStorage
    ) -> None:
        message = Message(role="user", content="x", metadata={"tags": ["a"]})
        await storage.save("m", [message])
        message.metadata["tags"].append("b")
        (loaded,) = await storage.load("m")
        assert loaded.metadata == {"tags": ["a"]}

    async def test_metadata_changed_in_place_on_a_loaded_message_is_saved(
        self, storage: ContextStorage
    ) -> None:
        await storage.save("m", [Message(role="user", content="x", metadata={"k": 1})])
        loaded = await storage.load("m")
        loaded[0].metadata["k"] = 2
        await storage.save("m", loaded)
        assert (await storage.load("m"))[0].metadata == {"k": 2}

    @pytest.mark.parametrize("bad", list(BAD_MESSAGE_LISTS), ids=list(BAD_MESSAGE_LISTS))
    async def test_bad_messages_are_rejected_and_nothing_is_written(
        self, storage: ContextStorage, bad: str
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

    async def test_oversized_message_is_rejected(self, storage: ContextStorage) -> None:
        previous = consultation()
        await storage.save("s", previous)
        huge = Message(role="user", content="膝" * 100_000)  # 300,000 UTF-8 bytes
        with pytest.raises(MessageTooLargeError) as caught:
            await storage.save("s", [*previous, huge])
        assert caught.value.position == len(previous)
        assert await storage.load("s") == previous

    async def test_a_bad_message_in_an_edited_history_leaves_the_old_history(
        self, storage: ContextStorage
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
    async def test_bad_session_ids_are_rejected(
        self, storage: ContextStorage, session_id: Any
    ) -> None:
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
    async def test_unusual_but_valid_session_ids_work(
        self, storage: ContextStorage, session_id: str
    ) -> None:
        await storage.save(session_id, consultation())
        assert await storage.load(session_id) == consultation()
        await storage.delete(session_id)
        assert await storage.exists(session_id) is False


class VersionedContract(StorageContract):
    """The whole consultation: versions, appends, summaries, state, profiles, snapshots,
    the reader context assembly uses, ContextManager on top, and TTL."""

    async def test_storage_satisfies_the_versioned_protocol(
        self, storage: VersionedStorage
    ) -> None:
        assert isinstance(storage, VersionedStorage)

    async def test_newest_reads_the_last_messages_oldest_first(
        self, storage: VersionedStorage
    ) -> None:
        stored = [message for index in range(6) for message in turn(index)]
        await storage.save("newest", stored)
        assert await storage.newest("newest", 3) == stored[-3:]
        assert await storage.newest("newest", 100) == stored
        assert await storage.newest("newest", 0) == []
        assert await storage.newest("missing", 5) == []
        await storage.append("newest", turn(6))
        assert await storage.newest("newest", 2) == turn(6)
        for bad in (-1, 1.5, "3", True):
            with pytest.raises(InvalidInputError, match="limit"):
                await storage.newest("newest", bad)  # type: ignore[arg-type]

    # -- versions and appends ---------------------------------------------------------

    async def test_every_save_returns_the_next_version(self, storage: VersionedStorage) -> None:
        assert await storage.version("v") == 0
        assert await storage.save("v", turn(0)) == 1
        assert await storage.save("v", turn(0) + turn(1)) == 2
        assert await storage.save("v", []) == 3
        assert await storage.version("v") == 3

    async def test_saving_the_stored_list_keeps_the_version(
        self, storage: VersionedStorage
    ) -> None:
        assert await storage.save("same", []) == 1  # creating a session is a change
        assert await storage.save("same", []) == 1
        assert await storage.save("same", turn(0)) == 2
        assert await storage.save("same", turn(0)) == 2
        assert await storage.save("same", turn(0), expected_version=2) == 2
        assert await storage.save("same", await storage.load("same")) == 2
        with pytest.raises(ConflictError) as caught:
            await storage.save("same", turn(0), expected_version=1)
        assert caught.value.current_version == 2
        assert await storage.save("same", [*turn(0), *turn(1)]) == 3
        assert await storage.save("same", turn(0)) == 4  # a shorter list is a change
        assert await storage.load("same") == turn(0)

    @pytest.mark.parametrize(
        "written",
        [
            "0001-01-01T00:00:00Z",
            "0001-01-01T08:00:00+08:00",
            "9999-12-31T23:59:59.999999999Z",
            "9999-12-31T18:59:59.999999-05:00",
            "2026-01-02T03:04:05.123456789+08:00",
            "2026-01-02T03:04:05Z",
        ],
    )
    async def test_saving_the_stored_list_keeps_the_version_at_any_time(
        self, storage: VersionedStorage, written: str
    ) -> None:
        messages = [Message(role="user", content="x", timestamp=written)]  # type: ignore[arg-type]
        assert await storage.save("when", messages) == 1
        assert await storage.save("when", messages) == 1
        fresh = [Message(role="user", content="x", timestamp=written)]  # type: ignore[arg-type]
        assert await storage.save("when", fresh) == 1
        assert await storage.save("when", await storage.load("when")) == 1
        assert await storage.load("when") == messages

    async def test_expected_version_zero_means_must_not_exist(
        self, storage: VersionedStorage
    ) -> None:
        assert await storage.save("new", turn(0), expected_version=NEW_SESSION) == 1
        with pytest.raises(ConflictError) as caught:
            await storage.save("new", turn(1), expected_version=NEW_SESSION)
        assert caught.value.current_version == 1
        assert caught.value.expected_version == 0
        assert await storage.load("new") == turn(0)

    async def test_a_stale_save_raises_conflict_and_changes_nothing(
        self, storage: VersionedStorage
    ) -> None:
        await storage.save("s", turn(0))
        assert await storage.save("s", turn(0) + turn(1), expected_version=1) == 2
        with pytest.raises(ConflictError) as caught:
            await storage.save("s", turn(9), expected_version=1)
        assert caught.value.current_version == 2
        assert caught.value.session_id == "s"
        assert await storage.load("s") == turn(0) + turn(1)
        assert await storage.version("s") == 2

    async def test_expected_version_of_a_missing_session_conflicts(
        self, storage: VersionedStorage
    ) -> None:
        with pytest.raises(ConflictError) as caught:
            await storage.save("missing", turn(0), expected_version=3)
        assert caught.value.current_version == 0
        assert not await storage.exists("missing")

    @pytest.mark.parametrize("bad", [-1, 1.5, "1", True])
    async def test_bad_expected_versions_are_invalid_input(
        self, storage: VersionedStorage, bad: object
    ) -> None:
        with pytest.raises(InvalidInputError):
            await storage.save("s", turn(0), expected_version=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            await storage.append("s", turn(0), expected_version=bad)  # type: ignore[arg-type]
        assert not await storage.exists("s")

    async def test_append_adds_after_the_stored_messages(self, storage: VersionedStorage) -> None:
        assert await storage.append("a", turn(0)) == 1  # creates the session
        assert await storage.append("a", turn(1)) == 2
        await storage.save("a", [*turn(0), *turn(1), *turn(2)])
        assert await storage.append("a", turn(3), expected_version=3) == 4
        assert await storage.load("a") == [*turn(0), *turn(1), *turn(2), *turn(3)]
        with pytest.raises(ConflictError) as caught:
            await storage.append("a", turn(4), expected_version=3)
        assert caught.value.current_version == 4
        with pytest.raises(ConflictError):
            await storage.append("a", turn(4), expected_version=NEW_SESSION)
        assert await storage.append("b", turn(0), expected_version=NEW_SESSION) == 1
        assert len(await storage.load("a")) == 8

    async def test_append_rejects_bad_messages_without_writing(
        self, storage: VersionedStorage
    ) -> None:
        await storage.append("a", turn(0))
        with pytest.raises(InvalidInputError):
            await storage.append("a", [*turn(1), {"role": "user", "content": "\x00"}])
        assert await storage.load("a") == turn(0)
        assert await storage.version("a") == 1

    async def test_save_after_appends_is_still_a_full_overwrite(
        self, storage: VersionedStorage
    ) -> None:
        await storage.append("mix", turn(0))
        await storage.append("mix", turn(1))
        await storage.save("mix", [turn(0)[0], *turn(5)])
        assert await storage.load("mix") == [turn(0)[0], *turn(5)]
        await storage.append("mix", turn(6))
        assert await storage.load("mix") == [turn(0)[0], *turn(5), *turn(6)]

    # -- summaries, state, profiles ------------------------------------------------------

    async def test_summaries_are_versioned(self, storage: VersionedStorage) -> None:
        await storage.save("s", [*turn(0), *turn(1)])
        assert await storage.load_summary("s") is None
        first = await storage.save_summary("s", "膝盖下坠感一周", covers_until=1, token_count=9)
        assert (first.summary_version, first.covers_until, first.token_count) == (1, 1, 9)
        second = await storage.save_summary("s", "更新的总结", covers_until=3, expected_version=1)
        assert second.summary_version == 2
        assert second.created_at >= first.created_at
        assert await storage.load_summary("s") == second
        assert await storage.load_summary("s", 1) == first
        assert await storage.load_summary("s", 7) is None
        with pytest.raises(ConflictError) as caught:
            await storage.save_summary("s", "stale", covers_until=3, expected_version=1)
        assert caught.value.current_version == 2

    async def test_summary_preconditions(self, storage: VersionedStorage) -> None:
        with pytest.raises(SessionNotFoundError):
            await storage.save_summary("nowhere", "text", covers_until=0)
        await storage.save("s", turn(0))
        with pytest.raises(InvalidInputError):
            await storage.save_summary("s", "covers a message that does not exist", covers_until=2)
        with pytest.raises(InvalidInputError):
            await storage.save_summary("s", "bad \x00 text", covers_until=0)
        assert await storage.load_summary("s") is None

    async def test_summary_checks_come_in_one_order(self, storage: VersionedStorage) -> None:
        """Missing session, then a stale summary version, then covers_until: every backend."""
        with pytest.raises(SessionNotFoundError):
            await storage.save_summary("nowhere", "x", covers_until=99, expected_version=5)
        await storage.save("s", turn(0))
        await storage.save_summary("s", "first", covers_until=0)
        with pytest.raises(ConflictError):
            await storage.save_summary("s", "x", covers_until=99, expected_version=5)
        with pytest.raises(InvalidInputError):
            await storage.save_summary("s", "x", covers_until=99, expected_version=1)
        summary = await storage.load_summary("s")
        assert summary is not None and summary.text == "first"

    async def test_state_is_versioned_with_history(self, storage: VersionedStorage) -> None:
        await storage.save("c", turn(0))
        assert await storage.load_state("c") is None
        assert await storage.save_state("c", KNEE_STATE) == 1
        advanced = {**KNEE_STATE, "stage": "assessing", "pain_level": 4, "swelling": False}
        assert await storage.save_state("c", ConsultationState(**advanced), expected_version=1) == 2
        current = await storage.load_state("c")
        assert current is not None
        assert current.version == 2
        assert current.value == ConsultationState(**advanced)
        history = await storage.state_history("c")
        assert [(change.version, change.state.stage) for change in history] == [
            (1, "collecting_details"),
            (2, "assessing"),
        ]
        assert history[0].created_at <= history[1].created_at

    async def test_state_conflicts_and_preconditions(self, storage: VersionedStorage) -> None:
        with pytest.raises(SessionNotFoundError):
            await storage.save_state("nowhere", KNEE_STATE)
        await storage.save("c", [])
        with pytest.raises(ConflictError):
            await storage.save_state("c", KNEE_STATE, expected_version=1)
        assert await storage.save_state("c", KNEE_STATE, expected_version=NEW_SESSION) == 1
        with pytest.raises(ConflictError) as caught:
            await storage.save_state("c", KNEE_STATE, expected_version=NEW_SESSION)
        assert caught.value.current_version == 1
        assert len(await storage.state_history("c")) == 1

    @pytest.mark.parametrize(
        "bad",
        [
            {"chief_complaint": "no stage"},
            {**KNEE_STATE, "pain_level": 11},
            {**KNEE_STATE, "body_parts": "膝盖"},
            {**KNEE_STATE, "symptoms": ["a\x00b"]},
            {**KNEE_STATE, "extra": {"nested": ["\ud800"]}},
        ],
        ids=["no-stage", "pain-11", "not-a-list", "NUL", "surrogate-in-unknown-field"],
    )
    async def test_invalid_state_is_rejected(
        self, storage: VersionedStorage, bad: dict[str, Any]
    ) -> None:
        await storage.save("c", [])
        await storage.save_state("c", KNEE_STATE)
        with pytest.raises(InvalidInputError):
            await storage.save_state("c", bad)
        current = await storage.load_state("c")
        assert current is not None and current.version == 1

    async def test_unknown_state_fields_are_kept(self, storage: VersionedStorage) -> None:
        await storage.save("c", [])
        await storage.save_state("c", {**KNEE_STATE, "triage_score": {"v": 2, "by": "model-x"}})
        current = await storage.load_state("c")
        assert current is not None
        assert current.value.document()["triage_score"] == {"v": 2, "by": "model-x"}

    async def test_profiles_are_versioned_and_outlive_sessions(
        self, storage: VersionedStorage
    ) -> None:
        profile = {"age": 34, "gender": "female", "exercise_habit": "跑步", "known_limitations": []}
        assert await storage.load_profile("u1") is None
        assert await storage.save_profile("u1", profile) == 1
        assert (
            await storage.save_profile(
                "u1", UserProfile(**{**profile, "age": 35}), expected_version=1
            )
            == 2
        )
        with pytest.raises(ConflictError):
            await storage.save_profile("u1", profile, expected_version=1)
        await storage.save("s", turn(0), user_id="u1")
        await storage.delete("s")
        stored = await storage.load_profile("u1")
        assert stored is not None
        assert (stored.version, stored.value.age) == (2, 35)
        with pytest.raises(InvalidInputError):
            await storage.save_profile("u1", {"age": -3})

    async def test_erase_user_removes_every_session_and_the_profile(
        self, storage: VersionedStorage
    ) -> None:
        await storage.save("e1", turn(0), user_id="erase-me")
        await storage.append("e2", turn(1), user_id="erase-me")
        await storage.save_state("e1", KNEE_STATE)
        await storage.save_summary("e1", "a knee", covers_until=0)
        await storage.save_profile("erase-me", {"age": 40})
        await storage.save("kept", turn(0), user_id="someone-else")
        await storage.save_profile("someone-else", {"age": 41})
        receipt = await storage.erase_user("erase-me")
        assert (receipt.user_id, receipt.sessions, receipt.summaries, receipt.states) == (
            "erase-me",
            2,
            1,
            1,
        )
        assert receipt.messages == len(turn(0)) + len(turn(1))
        assert receipt.state_changes == 1 and receipt.profile
        assert "2 sessions" in receipt.summary()
        for session_id in ("e1", "e2"):
            assert not await storage.exists(session_id)
            assert await storage.load_state(session_id) is None
            assert await storage.load_summary(session_id) is None
            assert await storage.state_history(session_id) == []
        assert await storage.load_profile("erase-me") is None
        assert await storage.load("kept") == turn(0)
        assert await storage.load_profile("someone-else") is not None
        again = await storage.erase_user("erase-me")  # idempotent
        assert (again.sessions, again.messages, again.profile) == (0, 0, False)
        with pytest.raises(InvalidInputError):
            await storage.erase_user("")

    async def test_a_session_keeps_the_user_it_was_first_written_for(
        self, storage: VersionedStorage
    ) -> None:
        await storage.save("owned", turn(0), user_id="alice")
        for write in (
            lambda: storage.append("owned", turn(1), user_id="mallory"),
            lambda: storage.append("owned", turn(1), expected_version=1, user_id="mallory"),
            lambda: storage.save("owned", [*turn(0), *turn(1)], user_id="mallory"),
            lambda: storage.save("owned", turn(5), user_id="mallory"),
        ):
            with pytest.raises(SessionOwnerError, match="belongs to another user") as refused:
                await write()
            assert isinstance(refused.value, ConflictError)
            assert "alice" not in str(refused.value)  # the owner is not told to anyone
            assert (await storage.load("owned"), await storage.version("owned")) == (turn(0), 1)
        # Writes naming the owner, or no user, go on; the owner stays.
        assert await storage.append("owned", turn(1)) == 2
        assert await storage.append("owned", turn(2), user_id="alice") == 3
        with pytest.raises(SessionOwnerError):
            await storage.append("owned", turn(3), user_id="mallory")
        # A session written without a user is claimed by the first user named.
        await storage.save("unowned", turn(0))
        assert await storage.append("unowned", turn(1), user_id="bob") == 2
        with pytest.raises(SessionOwnerError):
            await storage.save("unowned", turn(0), user_id="alice")
        # Deleted, the id is free for anyone.
        await storage.delete("owned")
        assert await storage.save("owned", turn(0), user_id="mallory") == 1

    async def test_erasure_finds_a_session_another_user_tried_to_take(
        self, storage: VersionedStorage
    ) -> None:
        await storage.save("taken", turn(0), user_id="erase-me")
        with pytest.raises(SessionOwnerError):
            await storage.append("taken", turn(1), user_id="taker")
        receipt = await storage.erase_user("erase-me")
        assert (receipt.sessions, receipt.messages) == (1, len(turn(0)))
        assert not await storage.exists("taken")
        assert await storage.erase_user("taker") is not None

    async def test_a_deleted_profile_is_gone_and_its_sessions_stay(
        self, storage: VersionedStorage
    ) -> None:
        await storage.save_profile("u2", {"age": 50})
        await storage.save("s2", turn(0), user_id="u2")
        await storage.delete_profile("u2")
        await storage.delete_profile("u2")  # idempotent
        await storage.delete_profile("never-had-one")
        assert await storage.load_profile("u2") is None
        assert await storage.load("s2") == turn(0)
        assert await storage.save_profile("u2", {"age": 51}) == 1  # afresh
        with pytest.raises(InvalidInputError):
            await storage.delete_profile("")

    async def test_unknown_profile_fields_are_kept(self, storage: VersionedStorage) -> None:
        await storage.save_profile("u2", {"age": 40, "preferred_language": "zh-CN"})
        stored = await storage.load_profile("u2")
        assert stored is not None
        assert stored.value.document()["preferred_language"] == "zh-CN"

    async def test_delete_removes_summaries_state_and_history(
        self, storage: VersionedStorage
    ) -> None:
        await storage.save("d", turn(0), user_id="u")
        await storage.save_summary("d", "summary", covers_until=1)
        await storage.save_state("d", KNEE_STATE)
        await storage.delete("d")
        assert await storage.load_summary("d") is None
        assert await storage.load_state("d") is None
        assert await storage.state_history("d") == []
        await storage.save("d", [])
        assert await storage.load_summary("d") is None
        assert await storage.load_state("d") is None
        snapshot = await storage.snapshot("d")
        assert (snapshot.version, snapshot.user_id, snapshot.state_version) == (1, None, 0)

    async def test_snapshot_returns_everything_with_versions(
        self, storage: VersionedStorage
    ) -> None:
        missing = await storage.snapshot("none")
        assert (missing.exists, missing.version, missing.messages, missing.summary_version) == (
            False,
            0,
            [],
            0,
        )
        await storage.save_profile("u9", {"age": 50, "known_limitations": ["半月板损伤"]})
        await storage.save("full", [*turn(0), *turn(1)], user_id="u9")
        await storage.save_summary("full", "两轮对话的总结", covers_until=1)
        await storage.save_state("full", KNEE_STATE)
        snapshot = await storage.snapshot("full")
        assert snapshot.exists
        assert snapshot.version == 1
        assert snapshot.user_id == "u9"
        assert snapshot.messages == [*turn(0), *turn(1)]
        assert snapshot.summary is not None and snapshot.summary.text == "两轮对话的总结"
        assert snapshot.summary_version == 1
        assert snapshot.state == ConsultationState(**KNEE_STATE)
        assert snapshot.state_version == 1
        assert snapshot.profile is not None and snapshot.profile.known_limitations == ["半月板损伤"]
        assert snapshot.profile_version == 1

    # -- what context assembly reads -----------------------------------------------------

    async def test_reader_serves_one_session(self, storage: VersionedStorage) -> None:
        messages = [*timed_turn(0), *timed_turn(1), *timed_turn(2)]
        await storage.save_profile("u-r", {"age": 41})
        await storage.save("r", messages, user_id="u-r")
        await storage.save_summary("r", "前两条的总结", covers_until=1)
        await storage.save_state("r", KNEE_STATE)
        counter = storage.token_counter
        async with storage.reader("r") as reader:
            head = await reader.head()
            assert (head.exists, head.version, head.message_count, head.user_id) == (
                True,
                1,
                6,
                "u-r",
            )
            assert head.created_at is not None
            summary = await reader.latest_summary()
            assert summary is not None and (summary.text, summary.covers_until) == (
                "前两条的总结",
                1,
            )
            state = await reader.state()
            assert state is not None and (state.version, state.value) == (
                1,
                ConsultationState(**KNEE_STATE),
            )
            profile = await reader.profile("u-r")
            assert profile is not None and (profile.version, profile.value.age) == (1, 41)
            assert await reader.profile("someone-else") is None
            newest = await reader.newest(6, 3)
            assert [stored.position for stored in newest] == [5, 4, 3]
            assert [stored.message for stored in newest] == messages[5:2:-1]
            for stored in newest:
                assert stored.token_count in (None, counter.message_cost(stored.message))
            assert [stored.position for stored in await reader.newest(2, 10)] == [1, 0]
            assert await reader.span(1, 4) == messages[1:4]
            count, tokens = await reader.token_total(3)
            assert (count, tokens) == (2, sum(counter.message_cost(m) for m in messages[4:]))

    async def test_reader_of_a_missing_session(self, storage: VersionedStorage) -> None:
        async with storage.reader("nobody") as reader:
            head = await reader.head()
            assert (head.exists, head.version, head.message_count) == (False, 0, 0)
            assert await reader.latest_summary() is None
            assert await reader.state() is None
            assert await reader.newest(10, 10) == []
            assert await reader.span(0, 10) == []
            assert await reader.token_total(-1) == (0, 0)

    async def test_iter_messages_streams_the_session_in_order(
        self, storage: VersionedStorage
    ) -> None:
        messages = [message for index in range(7) for message in turn(index)]  # 14
        await storage.save("export", messages)
        streamed = [m async for m in storage.iter_messages("export", batch_size=4)]
        assert streamed == messages
        assert [m async for m in storage.iter_messages("nobody")] == []
        with pytest.raises(InvalidInputError):
            [m async for m in storage.iter_messages("export", batch_size=0)]

    async def test_reader_sees_one_snapshot(self, storage: VersionedStorage) -> None:
        await storage.save("snap", [*timed_turn(0), *timed_turn(1)])
        async with storage.reader("snap") as reader:
            assert (await reader.head()).message_count == 4
            await storage.append("snap", timed_turn(2))
            assert (await reader.head()).message_count == 4
            assert [stored.position for stored in await reader.newest(10, 10)] == [3, 2, 1, 0]
            assert len(await reader.span(0, 10)) == 4
        assert len(await storage.load("snap")) == 6

    async def test_context_manager_works_over_the_store(self, storage: VersionedStorage) -> None:
        manager = ContextManager(storage)
        assert await manager.add_messages("cm", timed_turn(0), user_id="u-cm") == 1
        assert await manager.add_messages("cm", timed_turn(1)) == 2
        assert await manager.add_message("cm", timed_turn(2)[0]) == 3
        await storage.save_summary("cm", "第一轮的总结", covers_until=1)
        window = await manager.get_context("cm", SlidingWindow(3))
        assert window.messages == [*timed_turn(1), timed_turn(2)[0]]
        assert (window.first_position, window.total_messages, window.version) == (2, 5, 3)
        assert window.summary is not None and window.summary.text == "第一轮的总结"
        everything = await manager.get_context("cm")  # the default: a 4,000-token budget
        assert everything.messages == [*timed_turn(0), *timed_turn(1), timed_turn(2)[0]]
        assert everything.first_position == 0 and everything.token_count > 0
        snapshot = await storage.snapshot("cm")
        assert snapshot.user_id == "u-cm"
        assert snapshot.messages == [*timed_turn(0), *timed_turn(1), timed_turn(2)[0]]

    async def test_context_managers_in_two_processes_lose_nothing(
        self, storage: VersionedStorage
    ) -> None:
        """Two managers (as two workers would have) racing on one session: optimistic
        appends and retries keep every message, each turn contiguous."""
        first, second = ContextManager(storage), ContextManager(storage)
        await asyncio.gather(
            *(
                (first if index % 2 else second).add_messages("race", timed_turn(index))
                for index in range(10)
            )
        )
        stored = await storage.load("race")
        assert len(stored) == 20
        assert await storage.version("race") == 10
        turns = [stored[i : i + 2] for i in range(0, 20, 2)]
        assert sorted(turns, key=lambda pair: pair[0].turn_id or "") == sorted(
            (timed_turn(index) for index in range(10)), key=lambda pair: pair[0].turn_id or ""
        )

    # -- TTL ------------------------------------------------------------------------------

    async def test_expired_sessions_behave_as_missing(self, make_storage: StorageFactory) -> None:
        ttl = timedelta(seconds=1)
        async with make_storage(ttl=ttl) as storage:
            await storage.save_profile("u-ttl", {"age": 30})
            await storage.save("gone", turn(0), user_id="u-ttl")
            await storage.save_summary("gone", "s", covers_until=1)
            await storage.save_state("gone", KNEE_STATE)
            loaded = await storage.load("gone")  # the store now "knows" the session
            await asyncio.sleep(ttl.total_seconds() + 0.5)
            assert await storage.load("gone") == []
            assert not await storage.exists("gone")
            assert await storage.version("gone") == 0
            assert await storage.load_summary("gone") is None
            assert await storage.load_state("gone") is None
            assert await storage.state_history("gone") == []
            assert not (await storage.snapshot("gone")).exists
            async with storage.reader("gone") as reader:
                assert not (await reader.head()).exists
            with pytest.raises(SessionNotFoundError):
                await storage.save_state("gone", KNEE_STATE)
            with pytest.raises(SessionNotFoundError):
                await storage.save_summary("gone", "s", covers_until=0)
            with pytest.raises(ConflictError):
                await storage.save("gone", turn(1), expected_version=1)
            # A write starts it afresh, even the very list loaded before it expired.
            loaded.extend(turn(1))
            assert await storage.save("gone", loaded, expected_version=NEW_SESSION) == 1
            assert await storage.load("gone") == [*turn(0), *turn(1)]
            assert await storage.load_summary("gone") is None
            assert await storage.load_state("gone") is None
            assert await storage.state_history("gone") == []
            assert (await storage.snapshot("gone")).user_id is None
            profile = await storage.load_profile("u-ttl")  # profiles are not sessions
            assert profile is not None and profile.value.age == 30

    async def test_an_append_to_an_expired_session_starts_it_afresh(
        self, make_storage: StorageFactory
    ) -> None:
        ttl = timedelta(seconds=1)
        async with make_storage(ttl=ttl) as storage:
            await storage.append("a", turn(0))
            await asyncio.sleep(ttl.total_seconds() + 0.5)
            assert await storage.append("a", turn(1)) == 1
            assert await storage.load("a") == turn(1)

    async def test_every_write_pushes_the_expiry_back(self, make_storage: StorageFactory) -> None:
        ttl = timedelta(seconds=2)
        async with make_storage(ttl=ttl) as storage:
            await storage.save("s", turn(0))
            await asyncio.sleep(1.2)
            await storage.append("s", turn(1))
            await asyncio.sleep(1.2)  # 2.4 s after the save, 1.2 s after the append
            assert await storage.load("s") == [*turn(0), *turn(1)]
            await storage.save("s", turn(2))
            await asyncio.sleep(1.2)
            assert await storage.version("s") == 3

    async def test_saving_the_stored_list_pushes_the_expiry_back(
        self, make_storage: StorageFactory
    ) -> None:
        async with make_storage(ttl=timedelta(seconds=2)) as storage:
            assert await storage.save("s", turn(0)) == 1
            await asyncio.sleep(1.2)
            assert await storage.save("s", turn(0)) == 1
            await asyncio.sleep(1.2)  # 2.4 s after the first save
            assert await storage.load("s") == turn(0)
            assert await storage.version("s") == 1

    async def test_without_a_ttl_nothing_expires(self, make_storage: StorageFactory) -> None:
        async with make_storage(ttl=None) as storage:
            await storage.save("kept", turn(0))
            await asyncio.sleep(1.1)
            assert await storage.load("kept") == turn(0)
