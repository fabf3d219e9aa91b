"""The hostile-input catalogue: each input gets its documented outcome on PostgreSQL, and
the session's previous data (messages, state, summary, profile) is intact afterwards.

Outcomes are also listed in docs/hostile-inputs.md.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from ctxstore import (
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    Message,
    MessageTooLargeError,
    PostgresStorage,
)
from ctxstore.storage.base import DEFAULT_LIMITS

VICTIM = "victim"
BASELINE = [
    Message(
        role="user", content="我膝盖有下坠感", turn_id="t1", timestamp="2026-11-29T08:15:02+08:00"
    ),
    Message(role="assistant", content="是否伴随疼痛或肿胀？", turn_id="t1"),
]
BASE_STATE = {"stage": "collecting_details", "chief_complaint": "膝盖下坠感"}
BASE_PROFILE = {"age": 34}
LIMIT = DEFAULT_LIMITS.max_message_bytes

Action = Callable[[PostgresStorage], Awaitable[Any]]


@dataclass(frozen=True)
class Case:
    name: str
    action: Action
    #: the exception class, or None: accepted (and ``check`` verifies what was stored)
    outcome: type[Exception] | None
    check: Callable[[PostgresStorage], Awaitable[None]] | None = None


def append_to_victim(*extra: Any) -> Action:
    async def action(storage: PostgresStorage) -> Any:
        return await storage.save(VICTIM, [*BASELINE, *extra])

    return action


def round_trip(
    session_id: str, content: str, **fields: Any
) -> tuple[Action, Callable[[PostgresStorage], Awaitable[None]]]:
    message = Message(role="user", content=content, **fields)

    async def action(storage: PostgresStorage) -> Any:
        return await storage.save(session_id, [message])

    async def check(storage: PostgresStorage) -> None:
        (loaded,) = await storage.load(session_id)
        assert loaded.content.encode("utf-8") == content.encode("utf-8")
        assert loaded == message

    return action, check


def accepted(name: str, session_id: str, content: str, **fields: Any) -> Case:
    """An input that must be stored and read back exactly."""
    action, check = round_trip(session_id, content, **fields)
    return Case(name, action, None, check)


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": True}
    for _ in range(depth):
        value = {"d": value}
    return value


def many(count: int) -> list[Message]:
    return [Message(role="user" if i % 2 else "assistant", content=f"m{i}") for i in range(count)]


async def save_many(storage: PostgresStorage, session_id: str, count: int) -> Any:
    return await storage.save(session_id, many(count))


async def check_many(storage: PostgresStorage) -> None:
    loaded = await storage.load("huge")
    assert len(loaded) == 100_000 and loaded[-1].content == "m99999"


CST = timezone(timedelta(hours=5, minutes=45))
SQL = "'; DROP TABLE messages; --"

CASES: list[Case] = [
    Case(
        "NUL in content",
        append_to_victim({"role": "user", "content": "a\x00b"}),
        InvalidMessageError,
    ),
    Case(
        "NUL in a metadata key",
        append_to_victim({"role": "user", "content": "x", "metadata": {"k\x00": 1}}),
        InvalidMessageError,
    ),
    Case(
        "NUL in a nested metadata value",
        append_to_victim({"role": "user", "content": "x", "metadata": {"a": [{"b": "\x00"}]}}),
        InvalidMessageError,
    ),
    Case(
        "NUL in a nested state value",
        lambda s: s.save_state(VICTIM, {"stage": "x", "symptoms": ["ok", "bad\x00"]}),
        InvalidInputError,
    ),
    Case(
        "NUL in an unknown state field",
        lambda s: s.save_state(VICTIM, {"stage": "x", "extra": {"deep": ["\x00"]}}),
        InvalidInputError,
    ),
    Case(
        "NUL in a profile field",
        lambda s: s.save_profile("u-victim", {"gender": "\x00"}),
        InvalidInputError,
    ),
    Case(
        "NUL in a summary",
        lambda s: s.save_summary(VICTIM, "a\x00", covers_until=0),
        InvalidInputError,
    ),
    Case(
        "lone high surrogate in content",
        append_to_victim({"role": "user", "content": "a\ud83d"}),
        InvalidMessageError,
    ),
    Case(
        "lone low surrogate in metadata",
        append_to_victim({"role": "user", "content": "x", "metadata": {"k": "\udc00"}}),
        InvalidMessageError,
    ),
    Case(
        "lone surrogate in a session id",
        lambda s: s.save("bad\ud800", BASELINE),
        InvalidSessionIdError,
    ),
    accepted("literal backslash-u-0000 text", "lit", "text with \\u0000 in it, and \\x00 too"),
    accepted("emoji, ZWJ sequences, skin tones", "emoji", "🦵🏽 👩‍⚕️ 🏃‍♀️ 😀"),
    accepted("terminal control characters", "ctl", "\x01\x1b[31mred\x1b[0m\x7f"),
    accepted("right-to-left override", "rtl", "\u202egnirts desrever"),
    Case(
        "content one byte over the size limit",
        append_to_victim({"role": "user", "content": "a" * (LIMIT + 1)}),
        MessageTooLargeError,
    ),
    accepted("content exactly at the size limit", "limit", "膝" * (LIMIT // 3)),
    accepted("SQL fragment in a session id", SQL, "stored safely"),
    Case("SQL fragment in a user id", lambda s: s.save("sql-user", BASELINE, user_id=SQL), None),
    Case(
        "bytes that are not UTF-8 as content",
        append_to_victim({"role": "user", "content": b"\xff\xfe\x00"}),
        InvalidMessageError,
    ),
    Case("bytes as a session id", lambda s: s.save(b"\xff\xfe", BASELINE), InvalidSessionIdError),  # type: ignore[arg-type]
    Case(
        "bytes in metadata",
        append_to_victim({"role": "user", "content": "x", "metadata": {"k": b"\xff"}}),
        InvalidMessageError,
    ),
    Case(
        "an int as content", append_to_victim({"role": "user", "content": 42}), InvalidMessageError
    ),
    Case(
        "a dict instead of a message list",
        lambda s: s.save(VICTIM, {"role": "user", "content": "x"}),
        InvalidMessageError,
    ),  # type: ignore[arg-type]
    Case("None in the message list", append_to_victim(None), InvalidMessageError),
    Case(
        "metadata nested 40 deep",
        append_to_victim({"role": "user", "content": "x", "metadata": nested(40)}),
        InvalidMessageError,
    ),
    Case(
        "metadata nested 30 deep",
        lambda s: s.save("deep", [{"role": "user", "content": "x", "metadata": nested(30)}]),
        None,
    ),
    Case(
        "NaN in metadata",
        append_to_victim({"role": "user", "content": "x", "metadata": {"score": float("nan")}}),
        InvalidMessageError,
    ),
    Case("unknown role", append_to_victim({"role": "doctor", "content": "x"}), InvalidMessageError),
    Case(
        "capitalized role", append_to_victim({"role": "User", "content": "x"}), InvalidMessageError
    ),
    Case(
        "naive timestamp",
        append_to_victim({"role": "user", "content": "x", "timestamp": datetime(2026, 1, 1)}),
        InvalidMessageError,
    ),
    accepted(
        "extreme timestamps with a +05:45 offset",
        "time",
        "x",
        timestamp=datetime(1, 1, 2, tzinfo=CST),
    ),
    Case("empty session id", lambda s: s.save("", BASELINE), InvalidSessionIdError),
    Case("256-character session id", lambda s: s.save("x" * 256, BASELINE), InvalidSessionIdError),
    Case("whitespace-only session id", lambda s: s.save("   ", BASELINE), None),
    Case(
        "negative expected_version",
        lambda s: s.save(VICTIM, BASELINE, expected_version=-1),
        InvalidInputError,
    ),
    Case(
        "summary past the last message",
        lambda s: s.save_summary(VICTIM, "x", covers_until=99),
        InvalidInputError,
    ),
    Case(
        "pain level 11",
        lambda s: s.save_state(VICTIM, {"stage": "x", "pain_level": 11}),
        InvalidInputError,
    ),
    Case("a save of 100,000 messages", lambda s: save_many(s, "huge", 100_000), None, check_many),
    Case(
        "a save over the 200,000-message limit",
        lambda s: save_many(s, "too-many", 200_001),
        InvalidMessageError,
    ),
]


@pytest.fixture(scope="module")
def catalogue_size() -> int:
    assert len(CASES) >= 25
    return len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
async def test_hostile_input(pg_storage: PostgresStorage, case: Case, catalogue_size: int) -> None:
    await pg_storage.save(VICTIM, BASELINE, user_id="u-victim")
    await pg_storage.save_state(VICTIM, BASE_STATE)
    await pg_storage.save_summary(VICTIM, "baseline summary", covers_until=0)
    await pg_storage.save_profile("u-victim", BASE_PROFILE)
    if case.outcome is None:
        await case.action(pg_storage)
        if case.check is not None:
            await case.check(pg_storage)
    else:
        with pytest.raises(case.outcome) as caught:
            await case.action(pg_storage)
        assert type(caught.value).__module__ == "ctxstore.errors"
    snapshot = await pg_storage.snapshot(VICTIM)
    assert snapshot.messages == BASELINE
    assert snapshot.state is not None and snapshot.state.stage == BASE_STATE["stage"]
    assert snapshot.summary is not None and snapshot.summary.text == "baseline summary"
    assert snapshot.profile is not None and snapshot.profile.age == 34
    assert (snapshot.version, snapshot.state_version, snapshot.profile_version) == (1, 1, 1)
