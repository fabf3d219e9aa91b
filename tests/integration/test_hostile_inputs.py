"""The hostile-input catalogue (docs/hostile-inputs.md), fed to every backend through every
write path it concerns.

Every backend (memory, PostgreSQL, Redis, a healthy PostgreSQL-over-memory fallback) must
give each input the same outcome: the very same exception class, raised before anything is
written, or the same exact round trip.  Before each case a session (the "victim") holds two
messages, a consultation state, a summary, and its user a profile; afterwards everything the
case was not meant to change is unchanged, versions included.

Message inputs go through each way messages are written: ``save`` of the stored list plus
the input, ``append`` of the input, and ``save`` of the list ``load`` returned, extended
with the input.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from ctxstore import (
    ConsultationState,
    CtxStoreError,
    FallbackStorage,
    Limits,
    MemoryStorage,
    Message,
    PostgresStorage,
    RedisStorage,
)
from ctxstore.errors import (
    InputTooLargeError,
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    MessageTooLargeError,
    TooManyMessagesError,
)

DEFAULTS = Limits()
CATALOGUE = Path(__file__).resolve().parents[2] / "docs" / "hostile-inputs.md"

BASELINE = [
    Message(
        role="user", content="我膝盖有下坠感", turn_id="t1", timestamp="2026-11-29T08:15:02+08:00"
    ),
    Message(
        role="assistant", content="是否伴随疼痛或肿胀？", turn_id="t1", metadata={"model": "demo"}
    ),
]
BASE_STATE = {"stage": "collecting_details", "chief_complaint": "膝盖下坠感"}
BASE_SUMMARY = "baseline summary"
BASE_PROFILE = {"age": 34}
MB = 1_000_000
SQL = "'; DROP TABLE messages; --"


@dataclass(frozen=True)
class Scene:
    """The ids one case works with; all but the literal ids in a case are its own."""

    victim: str  # holds BASELINE, BASE_STATE, BASE_SUMMARY; its user has BASE_PROFILE
    user: str
    fresh: str  # a session id nobody has written
    tag: str  # unique to this test, for ids a case makes up


Action = Callable[[Any, Scene], Awaitable[Any]]

#: What may change when a case is accepted: parts of the observation below.
MESSAGES, SUMMARY, STATE, PROFILE = "messages", "summary", "state", "profile"


@dataclass(frozen=True)
class Case:
    name: str
    #: write path -> what it does
    paths: dict[str, Action]
    #: the exact exception class every backend raises, or None: accepted (``paths`` verify)
    outcome: type[CtxStoreError] | None
    #: the parts of the victim an accepted case changes (checked by its action)
    changes: frozenset[str] = frozenset()
    limits: Limits = DEFAULTS
    outcome_text: str = ""  # the catalogue's words for an accepted outcome
    paths_text: str = ""  # the catalogue's words for the paths, when not their names

    def describe_outcome(self) -> str:
        if self.outcome is None:
            return self.outcome_text or "stored, reads back exactly"
        return f"rejected: `{self.outcome.__name__}`"

    def describe_paths(self) -> str:
        return self.paths_text or ", ".join(self.paths)


# -- message inputs ---------------------------------------------------------------------------


def parsed(items: Sequence[Any]) -> list[Message]:
    return [item if isinstance(item, Message) else Message.parse(item) for item in items]


def message_paths(extra: Callable[[], Sequence[Any]]) -> dict[str, Action]:
    async def save(store: Any, scene: Scene) -> Any:
        return await store.save(scene.victim, [*BASELINE, *extra()])

    async def append(store: Any, scene: Scene) -> Any:
        return await store.append(scene.victim, list(extra()))

    async def loaded_history(store: Any, scene: Scene) -> Any:
        history = await store.load(scene.victim)
        history.extend(extra())
        return await store.save(scene.victim, history)

    return {"save": save, "append": append, "history": loaded_history}


def rejected_messages(
    name: str, *extra: Any, outcome: type[CtxStoreError], limits: Limits = DEFAULTS
) -> Case:
    return Case(name, message_paths(lambda: extra), outcome, limits=limits)


def accepted_messages(
    name: str, *extra: Any, limits: Limits = DEFAULTS, outcome_text: str = ""
) -> Case:
    """Stored after the victim's messages, read back equal, byte-exact, same UTC offsets."""
    expected = [*BASELINE, *parsed(extra)]

    def verified(action: Action) -> Action:
        async def run(store: Any, scene: Scene) -> None:
            assert await action(store, scene) == 2
            loaded = await store.load(scene.victim)
            assert loaded == expected
            assert [m.content.encode() for m in loaded] == [m.content.encode() for m in expected]
            assert [m.timestamp.utcoffset() if m.timestamp else None for m in loaded] == [
                m.timestamp.utcoffset() if m.timestamp else None for m in expected
            ]

        return run

    paths = {path: verified(action) for path, action in message_paths(lambda: extra).items()}
    return Case(
        name,
        paths,
        None,
        frozenset({MESSAGES}),
        limits=limits,
        outcome_text=outcome_text or "stored, reads back byte-exact",
    )


def user(content: Any = "x", **fields: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **fields}


def nested(depth: int) -> dict[str, Any]:
    """``depth`` dicts around a leaf dict (the outermost one is the metadata itself)."""
    value: dict[str, Any] = {"leaf": True}
    for _ in range(depth):
        value = {"d": value}
    return value


def nested_lists(depth: int) -> list[Any]:
    """``depth`` lists around a leaf list."""
    value: list[Any] = [1]
    for _ in range(depth):
        value = [value]
    return value


class Unknown:
    """An object no JSON encoder knows."""


@cache
def many(count: int) -> tuple[Message, ...]:
    return tuple(
        Message(role="user" if i % 2 else "assistant", content=f"m{i}") for i in range(count)
    )


def bypassing_validation(**fields: Any) -> Message:
    defaults: dict[str, Any] = {
        "role": "user",
        "content": "x",
        "turn_id": None,
        "timestamp": None,
        "name": None,
        "metadata": {},
    }
    return Message.model_construct(**{**defaults, **fields})


# -- other inputs -------------------------------------------------------------------------------


def single(path: str, action: Action, outcome: type[CtxStoreError] | None, name: str) -> Case:
    return Case(name, {path: action}, outcome)


def not_a_list(name: str, payload: Any) -> Case:
    async def save(store: Any, scene: Scene) -> Any:
        return await store.save(scene.victim, payload)

    async def append(store: Any, scene: Scene) -> Any:
        return await store.append(scene.victim, payload)

    return Case(name, {"save": save, "append": append}, InvalidMessageError)


def bad_session_id(name: str, session_id: Any) -> Case:
    """Refused by every write, before the session is even looked up."""
    paths: dict[str, Action] = {
        "save": lambda store, _: store.save(session_id, BASELINE),
        "append": lambda store, _: store.append(session_id, BASELINE),
        "save_state": lambda store, _: store.save_state(session_id, BASE_STATE),
        "save_summary": lambda store, _: store.save_summary(session_id, "s", covers_until=0),
    }
    return Case(name, paths, InvalidSessionIdError)


def odd_session_id(name: str, session_id: Callable[[Scene], str], outcome_text: str) -> Case:
    """A valid id however it looks: every write and read works with it."""

    async def fresh_id(store: Any, scene: Scene) -> str:
        chosen = session_id(scene)
        await store.delete(chosen)  # a literal id may be left by another backend's run
        return chosen

    async def save(store: Any, scene: Scene) -> None:
        chosen = await fresh_id(store, scene)
        assert await store.save(chosen, BASELINE) == 1
        assert await store.load(chosen) == BASELINE
        await store.delete(chosen)
        assert not await store.exists(chosen)

    async def append(store: Any, scene: Scene) -> None:
        chosen = await fresh_id(store, scene)
        assert await store.append(chosen, BASELINE) == 1
        assert await store.append(chosen, BASELINE[:1]) == 2
        assert await store.load(chosen) == [*BASELINE, BASELINE[0]]
        await store.delete(chosen)

    async def documents(store: Any, scene: Scene) -> None:
        chosen = await fresh_id(store, scene)
        await store.save(chosen, BASELINE, user_id=scene.user)
        assert await store.save_state(chosen, BASE_STATE) == 1
        await store.save_summary(chosen, "s", covers_until=1)
        snapshot = await store.snapshot(chosen)
        assert snapshot.state is not None and snapshot.state.stage == BASE_STATE["stage"]
        assert snapshot.summary is not None and snapshot.summary.text == "s"
        assert snapshot.user_id == scene.user
        await store.delete(chosen)

    return Case(
        name,
        {"save": save, "append": append, "save_state+save_summary": documents},
        None,
        outcome_text=outcome_text,
    )


def bad_user_id(name: str, user_id: str) -> Case:
    async def save(store: Any, scene: Scene) -> Any:
        return await store.save(scene.fresh, BASELINE, user_id=user_id)

    async def append(store: Any, scene: Scene) -> Any:
        return await store.append(scene.fresh, BASELINE, user_id=user_id)

    async def save_profile(store: Any, _: Scene) -> Any:
        return await store.save_profile(user_id, BASE_PROFILE)

    return Case(
        name, {"save": save, "append": append, "save_profile": save_profile}, InvalidInputError
    )


def odd_user_id(name: str) -> Case:
    def user_id(scene: Scene) -> str:
        return f"{scene.tag}{SQL}"

    async def save(store: Any, scene: Scene) -> None:
        await store.save(scene.fresh, BASELINE, user_id=user_id(scene))
        assert (await store.snapshot(scene.fresh)).user_id == user_id(scene)

    async def append(store: Any, scene: Scene) -> None:
        await store.append(scene.fresh, BASELINE, user_id=user_id(scene))
        assert (await store.snapshot(scene.fresh)).user_id == user_id(scene)

    async def save_profile(store: Any, scene: Scene) -> None:
        assert await store.save_profile(user_id(scene), {"age": 1}) == 1
        profile = await store.load_profile(user_id(scene))
        assert profile is not None and profile.value.age == 1

    return Case(
        name,
        {"save": save, "append": append, "save_profile": save_profile},
        None,
        outcome_text="stored (bound parameters; nothing executes)",
    )


def negative_expected_version() -> Case:
    paths: dict[str, Action] = {
        "save": lambda s, c: s.save(c.victim, BASELINE, expected_version=-1),
        "append": lambda s, c: s.append(c.victim, BASELINE, expected_version=-1),
        "save_state": lambda s, c: s.save_state(c.victim, BASE_STATE, expected_version=-1),
        "save_summary": lambda s, c: s.save_summary(
            c.victim, "x", covers_until=0, expected_version=-1
        ),
        "save_profile": lambda s, c: s.save_profile(c.user, BASE_PROFILE, expected_version=-1),
    }
    return Case("negative expected_version", paths, InvalidInputError)


def state_case(name: str, state: Callable[[], Any], outcome: type[CtxStoreError]) -> Case:
    return single("save_state", lambda s, c: s.save_state(c.victim, state()), outcome, name)


def profile_case(name: str, profile: Callable[[], Any], outcome: type[CtxStoreError]) -> Case:
    return single("save_profile", lambda s, c: s.save_profile(c.user, profile()), outcome, name)


def summary_case(
    name: str, text: Callable[[], str], outcome: type[CtxStoreError], covers_until: int = 0
) -> Case:
    return single(
        "save_summary",
        lambda s, c: s.save_summary(c.victim, text(), covers_until=covers_until),
        outcome,
        name,
    )


def summary_at_the_limit() -> Case:
    text = "a" * DEFAULTS.max_summary_bytes

    async def action(store: Any, scene: Scene) -> None:
        summary = await store.save_summary(scene.victim, text, covers_until=1)
        assert summary.summary_version == 2
        stored = await store.load_summary(scene.victim)
        assert stored is not None and stored.text == text

    return Case(
        "summary exactly at the size limit",
        {"save_summary": action},
        None,
        frozenset({SUMMARY}),
        outcome_text="stored, reads back exactly",
    )


def a_loaded_message_mutated(name: str, value: Any) -> Case:
    """Metadata is the one mutable part of a message: a loaded one changed in place."""

    async def action(store: Any, scene: Scene) -> Any:
        history = await store.load(scene.victim)
        history[1].metadata["bad"] = value
        return await store.save(scene.victim, history)

    return Case(name, {"history": action}, InvalidMessageError)


def save_of_many(name: str, count: int) -> Case:
    async def save(store: Any, scene: Scene) -> None:
        assert await store.save(scene.fresh, list(many(count))) == 1
        await check(store, scene)

    async def append(store: Any, scene: Scene) -> None:
        assert await store.append(scene.fresh, list(many(count))) == 1
        await check(store, scene)

    async def check(store: Any, scene: Scene) -> None:
        loaded = await store.load(scene.fresh)
        assert len(loaded) == count and loaded[-1].content == f"m{count - 1}"
        await store.delete(scene.fresh)

    return Case(
        name,
        {"save": save, "append": append},
        None,
        outcome_text=f"stored; all {count:,} read back",
    )


PLUS_8 = timezone(timedelta(hours=8))
PLUS_053015 = timezone(timedelta(hours=5, minutes=30, seconds=15))
MINUS_030259 = timezone(-timedelta(hours=3, minutes=2, seconds=59))
PLUS_1_SECOND = timezone(timedelta(seconds=1))
PLUS_1_MICROSECOND = timezone(timedelta(hours=1, microseconds=1))
HUGE = 10**5000  # past the 4,300 digits int() and str() convert by default
PLUS_0545 = timezone(timedelta(hours=5, minutes=45))
MINUS_5 = timezone(timedelta(hours=-5))
LIMIT = DEFAULTS.max_message_bytes
FOUR = Limits(max_messages=4)

CASES: list[Case] = [
    rejected_messages("NUL in content", user("a\x00b"), outcome=InvalidMessageError),
    rejected_messages(
        "NUL in a metadata key", user(metadata={"k\x00": 1}), outcome=InvalidMessageError
    ),
    rejected_messages(
        "NUL in a nested metadata value",
        user(metadata={"a": [{"b": "\x00"}]}),
        outcome=InvalidMessageError,
    ),
    state_case(
        "NUL in a nested state value",
        lambda: {"stage": "x", "symptoms": ["ok", "bad\x00"]},
        InvalidInputError,
    ),
    state_case(
        "NUL in an unknown state field",
        lambda: {"stage": "x", "extra": {"deep": ["\x00"]}},
        InvalidInputError,
    ),
    profile_case("NUL in a profile field", lambda: {"gender": "\x00"}, InvalidInputError),
    summary_case("NUL in a summary", lambda: "a\x00", InvalidInputError),
    rejected_messages(
        "lone high surrogate in content", user("a\ud83d"), outcome=InvalidMessageError
    ),
    rejected_messages(
        "lone low surrogate in metadata",
        user(metadata={"k": "\udc00"}),
        outcome=InvalidMessageError,
    ),
    bad_session_id("lone surrogate in a session id", "bad\ud800"),
    accepted_messages("literal backslash-u-0000 text", user("text with \\u0000 in it, and \\x00")),
    accepted_messages("emoji, ZWJ sequences, skin tones", user("🦵🏽 👩‍⚕️ 🏃‍♀️ 😀")),
    accepted_messages("terminal control characters", user("\x01\x1b[31mred\x1b[0m\x7f")),
    accepted_messages("right-to-left override", user("\u202egnirts desrever")),
    rejected_messages(
        "content one byte over the size limit",
        user("a" * (LIMIT + 1)),
        outcome=MessageTooLargeError,
    ),
    accepted_messages("content exactly at the size limit", user("膝" * (LIMIT // 3) + "a")),
    odd_session_id(
        "SQL fragment in a session id",
        lambda scene: f"{scene.tag}{SQL}",
        "stored, reads back byte-exact",
    ),
    odd_user_id("SQL fragment in a user id"),
    rejected_messages(
        "bytes that are not UTF-8 as content", user(b"\xff\xfe\x00"), outcome=InvalidMessageError
    ),
    bad_session_id("bytes as a session id", b"\xff\xfe"),
    rejected_messages(
        "bytes in metadata", user(metadata={"k": b"\xff"}), outcome=InvalidMessageError
    ),
    rejected_messages("an int as content", user(42), outcome=InvalidMessageError),
    not_a_list("a dict instead of a message list", user("x")),
    rejected_messages("None in the message list", None, outcome=InvalidMessageError),
    rejected_messages(
        "metadata nested 40 deep", user(metadata=nested(40)), outcome=InvalidMessageError
    ),
    accepted_messages(
        "metadata nested 30 deep",
        user(metadata=nested(30)),
        outcome_text="stored (the limit is 32 levels)",
    ),
    rejected_messages(
        "NaN in metadata", user(metadata={"score": float("nan")}), outcome=InvalidMessageError
    ),
    rejected_messages(
        "float of magnitude 2^63 in metadata (jsonb would return it as an int outside 64 bits)",
        user(metadata={"score": [-1.5e80]}),
        outcome=InvalidMessageError,
    ),
    accepted_messages(
        "float just below 2^63 in metadata",
        user(metadata={"score": 9.2e18}),
        outcome_text="stored",
    ),
    rejected_messages(
        "unknown role", {"role": "doctor", "content": "x"}, outcome=InvalidMessageError
    ),
    rejected_messages(
        "capitalized role", {"role": "User", "content": "x"}, outcome=InvalidMessageError
    ),
    rejected_messages(
        "naive timestamp", user(timestamp=datetime(2026, 1, 1)), outcome=InvalidMessageError
    ),
    accepted_messages(
        "extreme timestamps with a +05:45 offset",
        user(timestamp=datetime(1, 1, 2, tzinfo=PLUS_0545)),
        user(timestamp=datetime(9999, 12, 31, 18, 0, tzinfo=PLUS_0545)),
        outcome_text="stored, reads back exactly, offsets included",
    ),
    bad_session_id("empty session id", ""),
    bad_session_id("256-character session id", "x" * 256),
    odd_session_id(
        "whitespace-only session id",
        lambda _: "   ",
        "stored (any text without NUL or lone surrogates is a valid id)",
    ),
    negative_expected_version(),
    summary_case("summary past the last message", lambda: "x", InvalidInputError, covers_until=99),
    state_case("pain level 11", lambda: {"stage": "x", "pain_level": 11}, InvalidInputError),
    save_of_many("100,000 messages into a new session", 100_000),
    Case(
        "messages past the 200,000-message limit",
        message_paths(lambda: many(DEFAULTS.max_messages - len(BASELINE) + 1)),
        TooManyMessagesError,
    ),
    # -- added with one set of rules for every backend --------------------------------------
    rejected_messages(
        "5 MB of metadata", user(metadata={"blob": "x" * (5 * MB)}), outcome=MessageTooLargeError
    ),
    rejected_messages("5 MB turn_id", user(turn_id="t" * (5 * MB)), outcome=MessageTooLargeError),
    rejected_messages(
        "256-character turn_id", user(turn_id="t" * 256), outcome=MessageTooLargeError
    ),
    accepted_messages("255-character turn_id and name", user(turn_id="t" * 255, name="n" * 255)),
    rejected_messages("5 MB name", user(name="n" * (5 * MB)), outcome=MessageTooLargeError),
    state_case("5 MB state stage", lambda: {"stage": "s" * (5 * MB)}, InputTooLargeError),
    state_case(
        "state nested 40 deep in an unknown field",
        lambda: {"stage": "x", "extra": nested(40)},
        InvalidInputError,
    ),
    profile_case("20 MB profile", lambda: {"exercise_habit": "跑" * (7 * MB)}, InputTooLargeError),
    profile_case(
        "integer past 64 bits in an unknown profile field",
        lambda: {"age": 30, "score": 2**64},
        InvalidInputError,
    ),
    summary_case("5 MB summary", lambda: "摘" * (5 * MB // 3), InputTooLargeError),
    summary_case(
        "summary one byte over the size limit",
        lambda: "a" * (DEFAULTS.max_summary_bytes + 1),
        InputTooLargeError,
    ),
    summary_at_the_limit(),
    rejected_messages(
        "year-1 timestamp with a +08:00 offset (before year 1 in UTC)",
        user(timestamp=datetime(1, 1, 1, 3, tzinfo=PLUS_8)),
        outcome=InvalidMessageError,
    ),
    rejected_messages(
        "year-9999 timestamp with a -05:00 offset (after year 9999 in UTC)",
        user(timestamp=datetime(9999, 12, 31, 22, tzinfo=MINUS_5)),
        outcome=InvalidMessageError,
    ),
    rejected_messages(
        "a range in metadata", user(metadata={"r": range(3)}), outcome=InvalidMessageError
    ),
    rejected_messages(
        "a tuple in metadata", user(metadata={"t": (1, 2)}), outcome=InvalidMessageError
    ),
    rejected_messages(
        "a set in metadata", user(metadata={"s": {1, 2}}), outcome=InvalidMessageError
    ),
    rejected_messages(
        "a message built with model_construct holding a tuple in metadata",
        bypassing_validation(metadata={"t": (1, 2)}),
        outcome=InvalidMessageError,
    ),
    rejected_messages(
        "10**5000 in metadata", user(metadata={"n": 10**5000}), outcome=InvalidMessageError
    ),
    rejected_messages(
        "2**64 in metadata", user(metadata={"n": 2**64}), outcome=InvalidMessageError
    ),
    accepted_messages(
        "the signed 64-bit extremes in metadata",
        user(metadata={"min": -(2**63), "max": 2**63 - 1}),
        outcome_text="stored, reads back exactly",
    ),
    rejected_messages(
        "infinity in metadata", user(metadata={"x": float("inf")}), outcome=InvalidMessageError
    ),
    rejected_messages(
        "metadata nested 33 deep (deeper than 32)",
        user(metadata=nested(33)),
        outcome=InvalidMessageError,
    ),
    rejected_messages(
        "a message built with model_construct holding NUL",
        bypassing_validation(content="a\x00"),
        outcome=InvalidMessageError,
    ),
    a_loaded_message_mutated("a loaded message's metadata changed in place to a set", {1, 2}),
    a_loaded_message_mutated("a loaded message's metadata changed in place to NaN", float("nan")),
    rejected_messages(
        "past max_messages (4): 2 stored + 3 new, as a list, an append or a loaded History",
        *many(3),
        outcome=TooManyMessagesError,
        limits=FOUR,
    ),
    accepted_messages(
        "exactly max_messages (4): 2 stored + 2 new",
        *many(2),
        limits=FOUR,
        outcome_text="stored",
    ),
    bad_user_id("NUL in a user id", "u\x00"),
    bad_user_id("256-character user id", "u" * 256),
    # -- added with "every exception is a ctxstore error" ------------------------------------
    *(
        state_case(
            f"state nested {depth:,} deep in an unknown field",
            lambda depth=depth: {"stage": "x", "extra": nested(depth)},
            InvalidInputError,
        )
        for depth in (255, 1_000, 10_000)
    ),
    state_case(
        "state nested 10,000 lists deep in an unknown field",
        lambda: {"stage": "x", "extra": nested_lists(10_000)},
        InvalidInputError,
    ),
    *(
        profile_case(
            f"profile nested {depth:,} deep in an unknown field",
            lambda depth=depth: {"age": 30, "extra": nested(depth)},
            InvalidInputError,
        )
        for depth in (255, 1_000, 10_000)
    ),
    *(
        rejected_messages(
            f"metadata nested {depth:,} deep",
            user(metadata=nested(depth)),
            outcome=InvalidMessageError,
        )
        for depth in (255, 1_000, 10_000)
    ),
    rejected_messages(
        "metadata nested 10,000 lists deep",
        user(metadata={"l": nested_lists(10_000)}),
        outcome=InvalidMessageError,
    ),
    rejected_messages(
        "a message built with model_construct holding metadata nested 10,000 deep",
        bypassing_validation(metadata=nested(10_000)),
        outcome=InvalidMessageError,
    ),
    state_case(
        "an unknown object in an unknown state field",
        lambda: {"stage": "x", "extra": Unknown()},
        InvalidInputError,
    ),
    state_case(
        "a ConsultationState holding an unknown object in an unknown field",
        lambda: ConsultationState(stage="x", extra={"deep": [Unknown()]}),
        InvalidInputError,
    ),
    profile_case(
        "an unknown object in an unknown profile field",
        lambda: {"age": 30, "extra": [Unknown()]},
        InvalidInputError,
    ),
    rejected_messages(
        "an unknown object in metadata",
        user(metadata={"o": Unknown()}),
        outcome=InvalidMessageError,
    ),
    state_case(
        "a set in an unknown state field", lambda: {"stage": "x", "s": {1, 2}}, InvalidInputError
    ),
    profile_case(
        "a tuple in an unknown profile field", lambda: {"age": 30, "t": (1, 2)}, InvalidInputError
    ),
    state_case(
        "a datetime in an unknown state field",
        lambda: {"stage": "x", "seen": datetime(2026, 1, 1, tzinfo=PLUS_8)},
        InvalidInputError,
    ),
    profile_case(
        "NaN in an unknown profile field",
        lambda: {"age": 30, "score": float("nan")},
        InvalidInputError,
    ),
    state_case(
        "an integer key in an unknown state field",
        lambda: {"stage": "x", "by_day": {1: "a"}},
        InvalidInputError,
    ),
    state_case(
        "a 5,001-digit integer in an unknown state field",
        lambda: {"stage": "x", "n": HUGE},
        InvalidInputError,
    ),
    profile_case(
        "a 5,001-digit integer in an unknown profile field",
        lambda: {"age": 30, "n": [HUGE]},
        InvalidInputError,
    ),
    state_case(
        "a 5,001-digit integer as pain level",
        lambda: {"stage": "x", "pain_level": HUGE},
        InvalidInputError,
    ),
    profile_case("a 5,001-digit string as age", lambda: {"age": "9" * 5001}, InvalidInputError),
    rejected_messages(
        "UTC offsets with seconds (+05:30:15, -03:02:59)",
        user(timestamp=datetime(2026, 11, 29, 8, 15, 2, 123456, tzinfo=PLUS_053015)),
        user(timestamp=datetime(1, 1, 1, tzinfo=MINUS_030259)),
        outcome=InvalidMessageError,
    ),
    rejected_messages(
        "a UTC offset with microseconds (+01:00:00.000001)",
        user(timestamp=datetime(2026, 1, 1, tzinfo=PLUS_1_MICROSECOND)),
        outcome=InvalidMessageError,
    ),
    rejected_messages(
        "year-1 timestamp with a +00:00:01 offset (a second before year 1 in UTC)",
        user(timestamp=datetime(1, 1, 1, tzinfo=PLUS_1_SECOND)),
        outcome=InvalidMessageError,
    ),
]


#: Cases of 100,000 messages and more: seconds of CPU each, in `make test-slow`.
BULK = {"100,000 messages into a new session", "messages past the 200,000-message limit"}


def catalogue_params() -> list[Any]:
    return [
        pytest.param(
            case,
            path,
            id=f"{number:02d}-{path}-{case.name}",
            marks=[pytest.mark.slow] if case.name in BULK else [],
        )
        for number, case in enumerate(CASES, 1)
        for path in case.paths
    ]


# -- backends -----------------------------------------------------------------------------------

Opener = Callable[[Limits], AbstractAsyncContextManager[Any]]


@pytest.fixture(
    params=[
        "memory",
        pytest.param("postgres", marks=pytest.mark.postgres),
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("fallback", marks=pytest.mark.postgres),
    ]
)
def open_store(request: pytest.FixtureRequest) -> Opener:
    """Opens the backend under test with the given limits."""
    kind = request.param
    # Resolved now, outside the test's event loop (creating a database runs a loop).
    if kind in {"postgres", "fallback"}:
        url = request.getfixturevalue("module_database_url")
    elif kind == "redis":
        redis_url = request.getfixturevalue("redis_url")
        prefix = request.getfixturevalue("redis_prefix")

    @asynccontextmanager
    async def open_(limits: Limits) -> AsyncIterator[Any]:
        if kind == "memory":
            async with MemoryStorage(limits=limits) as memory:
                yield memory
        elif kind == "postgres":
            async with PostgresStorage.from_url(url, limits=limits) as postgres:
                yield postgres
        elif kind == "redis":
            async with RedisStorage.from_url(
                redis_url, prefix=prefix, limits=limits
            ) as redis_store:
                yield redis_store
        else:
            async with FallbackStorage(
                PostgresStorage.from_url(url, limits=limits), MemoryStorage(limits=limits)
            ) as fallback:
                yield fallback
                assert fallback.stats.failovers == 0  # PostgreSQL answered every call

    return open_


async def observe(store: Any, scene: Scene) -> dict[str, Any]:
    """Everything a case might wrongly touch, with its versions."""
    snapshot = await store.snapshot(scene.victim)
    history = await store.state_history(scene.victim)
    return {
        MESSAGES: (snapshot.exists, snapshot.version, snapshot.user_id, snapshot.messages),
        SUMMARY: (snapshot.summary, snapshot.summary_version),
        STATE: (snapshot.state, snapshot.state_version, [(c.version, c.state) for c in history]),
        PROFILE: (snapshot.profile, snapshot.profile_version),
    }


async def prepare(store: Any) -> Scene:
    tag = uuid.uuid4().hex[:10]
    scene = Scene(victim=f"{tag}-victim", user=f"{tag}-user", fresh=f"{tag}-fresh", tag=tag)
    await store.save_profile(scene.user, BASE_PROFILE)
    await store.save(scene.victim, BASELINE, user_id=scene.user)
    await store.save_state(scene.victim, BASE_STATE)
    await store.save_summary(scene.victim, BASE_SUMMARY, covers_until=0)
    return scene


@pytest.mark.parametrize(("case", "path"), catalogue_params())
async def test_hostile_input(open_store: Opener, case: Case, path: str) -> None:
    async with open_store(case.limits) as store:
        scene = await prepare(store)
        before = await observe(store, scene)
        action = case.paths[path]
        if case.outcome is None:
            await action(store, scene)  # accepted: the action checks what was stored
        else:
            with pytest.raises(CtxStoreError) as caught:
                await action(store, scene)
            assert type(caught.value) is case.outcome, (
                f"{type(caught.value).__name__} instead of {case.outcome.__name__}: {caught.value}"
            )
            assert not await store.exists(scene.fresh)
        after = await observe(store, scene)
        for part, value in before.items():
            if part not in case.changes:
                assert after[part] == value, f"{part} changed"


def test_the_catalogue_documents_every_case() -> None:
    """docs/hostile-inputs.md lists exactly these cases, their paths and outcomes."""
    rows = re.findall(
        r"^\| (\d+) \| (.+?) \| (.+?) \| (.+?) \|$", CATALOGUE.read_text("utf-8"), re.MULTILINE
    )
    documented = [(int(n), name, paths, outcome) for n, name, paths, outcome in rows]
    expected = [
        (number, case.name, case.describe_paths(), case.describe_outcome())
        for number, case in enumerate(CASES, 1)
    ]
    assert documented == expected
    assert len(CASES) >= 39
