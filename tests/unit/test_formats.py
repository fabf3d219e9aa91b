"""The upgrade mapper (ctxstore.formats) without a database: every kind, every rule.

Rows here are tuples shaped like the asyncpg records the PostgreSQL backend reads
(MESSAGE_COLUMN_ORDER, then whatever else the query selected).
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxstore.errors import CorruptDataError, UnsupportedFormatError
from ctxstore.formats.documents import load_profile, load_state, load_summary
from ctxstore.formats.mapper import KINDS, MESSAGES, PROFILES, STATES, SUMMARIES, FormatKind
from ctxstore.formats.messages import (
    FORMAT_KEY,
    detect_message_format,
    message_from_document,
    message_to_document,
    row_to_message,
    rows_to_messages,
    upgrade_message_document,
)
from ctxstore.models import (
    EMPTY_METADATA,
    MESSAGE_FORMAT,
    PROFILE_FORMAT,
    STATE_FORMAT,
    SUMMARY_FORMAT,
    ConsultationState,
    Message,
    Summary,
    UserProfile,
    digest_of,
)
from ctxstore.timestamps import nanoseconds_of

STATE_V1: dict[str, Any] = {
    "stage": "collecting_details",
    "chief_complaint": "膝盖下坠感",
    "body_parts": ["膝盖"],
    "symptoms": ["下坠感"],
    "duration": "一周",
    "pain_level": None,
    "missing_slots": ["pain_level"],
    "last_question": None,
    "pending_answer_for": [],
}
CREATED = datetime(2026, 11, 29, 0, 15, 2, 123000, tzinfo=UTC)
SUMMARY_FIELDS: dict[str, Any] = {
    "summary_version": 3,
    "text": "膝盖下坠感一周",
    "covers_until": 7,
    "created_at": CREATED,
    "token_count": 12,
}


def row_of(message: Message, seq: int, fmt: int = MESSAGE_FORMAT, *extra: Any) -> tuple[Any, ...]:
    """A messages row as PostgreSQL returns it: UTC instant, offset in seconds, jsonb or NULL."""
    stamp = message.timestamp
    offset = stamp.utcoffset() if stamp is not None else None
    return (
        seq,
        message.role,
        message.content,
        message.turn_id,
        stamp.astimezone(UTC) if stamp is not None else None,
        int(offset.total_seconds()) if offset is not None else None,
        nanoseconds_of(stamp) or None,
        message.name,
        json.loads(json.dumps(message.metadata)) if message.metadata else None,
        message.core_digest(),
        fmt,
        *extra,
    )


def conversation(count: int, offset: str = "+08:00") -> list[Message]:
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=f"第{i}条：膝盖走路时有下坠感",
            turn_id=f"turn_{i // 2:05d}",
            timestamp=f"2026-11-29T08:15:{i % 60:02d}.123{offset}",
            name="bot" if i % 5 == 4 else None,
            metadata={"trace": i, "nested": {"a": [1, 2.5, None]}} if i % 3 == 0 else {},
        )
        for i in range(count)
    ]


# -- the declared kinds ------------------------------------------------------------------


def test_four_kinds_declared_with_the_models_constants() -> None:
    assert [(kind.name, kind.current) for kind in KINDS] == [
        ("message", MESSAGE_FORMAT),
        ("summary", SUMMARY_FORMAT),
        ("consultation state", STATE_FORMAT),
        ("user profile", PROFILE_FORMAT),
    ]
    assert sorted(MESSAGES.steps) == [0, 1]
    assert sorted(STATES.steps) == [1, 2]
    assert SUMMARIES.steps == {} and PROFILES.steps == {}
    for kind in KINDS:  # every step leads towards the current format, none past it
        assert all(version < kind.current for version in kind.steps)


def test_a_row_must_be_named_the_way_its_kind_says() -> None:
    with pytest.raises(TypeError, match="session_id"):
        STATES.load(STATE_V1, 1, user_id="u1")


DOUBLE: FormatKind[dict[str, Any]] = FormatKind(
    name="thing",
    current=3,
    steps={0: lambda d: {**d, "one": True}, 2: lambda d: {**d, "three": True}},
    build=dict,
    row={"session_id": ""},
)


@pytest.mark.parametrize("fmt", [0, 1])
def test_a_gap_in_the_chain_is_corrupt_data(fmt: int) -> None:
    with pytest.raises(CorruptDataError, match=r"no upgrade from format 1 to 2|unknown format 1"):
        DOUBLE.load({}, fmt, session_id="s")


def test_an_unbroken_chain_runs_every_step_in_order() -> None:
    assert DOUBLE.load({"x": 1}, 2, session_id="s") == {"x": 1, "three": True}
    assert DOUBLE.load({"x": 1}, 3, session_id="s") == {"x": 1}


@pytest.mark.parametrize("fmt", [-1, True, "2", None, 1.0])
def test_an_unknown_or_malformed_format_is_corrupt_data(fmt: Any) -> None:
    for kind, where in (
        (MESSAGES, {"session_id": "s", "position": 4}),
        (STATES, {"session_id": "s"}),
        (PROFILES, {"user_id": "u1"}),
        (SUMMARIES, {"session_id": "s", "summary_version": 3}),
    ):
        with pytest.raises(CorruptDataError):
            kind.load({}, fmt, **where)


# -- messages ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [MESSAGE_FORMAT + 1, 99])
def test_a_newer_message_names_session_and_position(fmt: int) -> None:
    document = {FORMAT_KEY: fmt, "role": "user", "content": "x", "hologram": True}
    with pytest.raises(UnsupportedFormatError) as caught:
        message_from_document(document, session_id="future", position=3)
    assert (caught.value.session_id, caught.value.position) == ("future", 3)
    assert "'future'" in str(caught.value) and "position 3" in str(caught.value)
    assert f"format {fmt}" in str(caught.value)
    with pytest.raises(UnsupportedFormatError):
        upgrade_message_document({"role": "user"}, fmt, session_id="future", position=3)


def test_a_newer_row_is_unsupported_even_when_it_looks_corrupt() -> None:
    row = (3, "robot", "x", None, None, None, None, None, ["not", "an", "object"], b"", 3)
    with pytest.raises(UnsupportedFormatError) as caught:
        row_to_message(row, session_id="future", position=3)
    assert caught.value.position == 3


def test_a_newer_row_among_current_ones_stops_the_load_at_its_position() -> None:
    messages = conversation(6)
    rows = [row_of(m, seq) for seq, m in enumerate(messages)]
    rows[4] = row_of(messages[4], 4, 3)
    with pytest.raises(UnsupportedFormatError) as caught:
        rows_to_messages(rows, session_id="future")
    assert (caught.value.session_id, caught.value.position) == ("future", 4)


def test_a_message_that_does_not_validate_after_upgrading_is_corrupt() -> None:
    with pytest.raises(CorruptDataError) as caught:
        message_from_document({"Role": "Doctor", "Content": "x"}, session_id="bad", position=2)
    assert (caught.value.session_id, caught.value.position) == ("bad", 2)
    assert "role" in str(caught.value)


@pytest.mark.parametrize("document", [[], "text", None, 3])
def test_a_message_that_is_not_an_object_is_corrupt(document: Any) -> None:
    with pytest.raises(CorruptDataError, match="JSON object"):
        message_from_document(document, session_id="s", position=0)
    with pytest.raises(CorruptDataError, match="JSON object"):
        upgrade_message_document(document, 1, session_id="s", position=0)


def test_unknown_message_fields_are_kept_in_metadata() -> None:
    go = message_from_document(
        {"Role": "Tool", "Content": "{}", "Name": "lookup", "ToolCallID": "c1"},
        session_id="s",
        position=0,
    )
    assert (go.role, go.name, go.metadata) == ("tool", "lookup", {"ToolCallID": "c1"})
    current = message_from_document(
        {
            FORMAT_KEY: 2,
            "role": "user",
            "content": "x",
            "turn_id": "t1",
            "metadata": {"a": 1},
            "mood": "calm",
        },
        session_id="s",
        position=0,
    )
    assert current.metadata == {"a": 1, "mood": "calm"}
    assert current.turn_id == "t1"


def test_message_documents_round_trip_and_detect_their_format() -> None:
    for message in conversation(4):
        document = message_to_document(message)
        assert document[FORMAT_KEY] == MESSAGE_FORMAT == detect_message_format(document)
        assert message_from_document(document, session_id="s", position=0) == message
    assert detect_message_format({"Role": "user", "Content": "x"}) == 0
    assert detect_message_format({"role": "user", "content": "x"}) == 1
    assert detect_message_format({"role": "user", "content": "x", "timestamp": None}) == 2


def test_legacy_rows_upgrade_and_current_rows_stay_trusted() -> None:
    current = conversation(3)
    rows = [
        (0, "User", "你好", None, None, None, None, None, {"TraceID": "abc"}, b"\x00", 0),
        (1, "assistant", "是否伴随疼痛？", None, None, None, None, "bot", None, b"\x00", 1),
        *(row_of(m, seq) for seq, m in enumerate(current, start=2)),
    ]
    loaded = rows_to_messages(rows, session_id="s")
    assert loaded[0] == Message(role="user", content="你好", metadata={"TraceID": "abc"})
    assert loaded[1] == Message(role="assistant", content="是否伴随疼痛？", name="bot")
    assert loaded[2:] == current


# -- the fast path for current-format rows ---------------------------------------------------


@pytest.mark.parametrize("offset", ["+08:00", "Z", "-03:30", "+05:45", "+14:00", "-12:00"])
def test_loaded_messages_equal_the_saved_ones_offsets_included(offset: str) -> None:
    saved = conversation(12, offset)
    # Extra trailing columns (counts, hashes, versions) are ignored.
    loaded = rows_to_messages(
        [row_of(m, seq, MESSAGE_FORMAT, 99, b"hash") for seq, m in enumerate(saved)],
        session_id="s",
    )
    assert loaded == saved
    for before, after in zip(saved, loaded, strict=True):
        assert type(after) is Message
        assert after.timestamp is not None and before.timestamp is not None
        assert after.timestamp.utcoffset() == before.timestamp.utcoffset()
        assert after.timestamp.isoformat() == before.timestamp.isoformat()
        assert after.model_dump(mode="json") == before.model_dump(mode="json")


def test_loaded_messages_share_the_read_only_empty_metadata() -> None:
    loaded = rows_to_messages([row_of(m, 0) for m in conversation(3)[1:]], session_id="s")
    assert all(m.metadata is EMPTY_METADATA for m in loaded)
    with pytest.raises(TypeError):
        loaded[0].metadata["x"] = 1


def test_loaded_messages_keep_the_stored_core_digest() -> None:
    saved = conversation(6)
    loaded = rows_to_messages([row_of(m, seq) for seq, m in enumerate(saved)], session_id="s")
    for before, after in zip(saved, loaded, strict=True):
        assert after.__pydantic_private__ == {"_core_digest": before.core_digest()}
        assert digest_of(after) == digest_of(before)
    # The cached digest is what the stored row says, not recomputed.
    (marked,) = rows_to_messages([(*row_of(saved[1], 0)[:9], b"stored", 2)], session_id="s")
    assert marked.core_digest() == b"stored"


def test_loaded_messages_behave_like_any_message() -> None:
    (loaded,) = rows_to_messages([row_of(conversation(1)[0], 0)], session_id="s")
    copy = loaded.model_copy(update={"content": "changed"})
    assert copy.content == "changed" and copy.turn_id == loaded.turn_id
    assert loaded.model_fields_set == set(Message.model_fields)
    assert loaded.model_extra is None
    assert Message.model_validate(loaded.model_dump()) == loaded
    with pytest.raises(Exception, match="frozen"):
        loaded.content = "x"  # type: ignore[misc]


def test_unusual_and_corrupt_offsets_take_the_careful_path() -> None:
    stamp = datetime(2026, 11, 29, 0, 15, 2, tzinfo=UTC)
    base = ("user", "x", None)
    odd = rows_to_messages([(0, *base, stamp, 30, None, None, None, b"", 2)], session_id="s")
    assert odd[0].timestamp == stamp and odd[0].timestamp.utcoffset() == timedelta(seconds=30)
    no_stamp = rows_to_messages([(0, *base, None, 3600, None, None, None, b"", 2)], session_id="s")
    assert no_stamp[0].timestamp is None
    near_end = datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
    for offset in (14 * 3600, 86400 * 2):  # local time past year 9999; not a real offset
        with pytest.raises(CorruptDataError) as caught:
            rows_to_messages(
                [
                    row_of(Message(role="user", content="ok"), 0),
                    (1, *base, near_end, offset, None, None, None, b"", 2),
                ],
                session_id="s",
            )
        assert caught.value.position == 1


def test_metadata_that_is_not_an_object_is_corrupt() -> None:
    row = (5, "user", "x", None, None, None, None, None, ["a"], b"", 2)
    with pytest.raises(CorruptDataError) as caught:
        rows_to_messages([row], session_id="s")
    assert (caught.value.session_id, caught.value.position) == ("s", 5)


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector")
def test_the_collector_is_left_as_it_was() -> None:
    rows = [row_of(m, seq) for seq, m in enumerate(conversation(3))]
    gc.enable()
    rows_to_messages(rows, session_id="s")
    assert gc.isenabled()
    gc.disable()
    rows_to_messages(rows, session_id="s")
    assert not gc.isenabled()
    gc.enable()
    with pytest.raises(UnsupportedFormatError):
        rows_to_messages(
            [*rows, (3, "user", "x", None, None, None, None, None, None, b"", 9)], session_id="s"
        )
    assert gc.isenabled()


@given(
    instant=st.datetimes(
        min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
    ),
    quarters=st.integers(min_value=-14 * 4, max_value=14 * 4),
)
def test_the_fast_offset_restore_matches_astimezone(instant: datetime, quarters: int) -> None:
    offset = quarters * 15 * 60
    (loaded,) = rows_to_messages(
        [(0, "user", "x", None, instant, offset, None, None, None, b"", 2)], session_id="s"
    )
    expected = instant.astimezone(timezone(timedelta(seconds=offset))) if offset else instant
    assert loaded.timestamp == expected
    assert loaded.timestamp is not None
    assert loaded.timestamp.utcoffset() == expected.utcoffset()
    assert loaded.timestamp.isoformat() == expected.isoformat()
    assert loaded.timestamp.fold == expected.fold


# -- summaries -------------------------------------------------------------------------------


def test_a_summary_loads_from_its_columns() -> None:
    summary = load_summary({**SUMMARY_FIELDS, FORMAT_KEY: 1}, 1, session_id="s")
    assert summary == Summary(**SUMMARY_FIELDS)


class RecordLike:
    """Reads by name like an asyncpg Record, but iterates over its values like one too."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getitem__(self, key: str) -> Any:
        return self._fields[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._fields.values())

    def __len__(self) -> int:
        return len(self._fields)

    def keys(self) -> Any:
        return self._fields.keys()

    def items(self) -> Any:
        return self._fields.items()


def test_a_summary_loads_from_a_database_row() -> None:
    row = RecordLike({**SUMMARY_FIELDS, FORMAT_KEY: 1})
    assert load_summary(row, 1, session_id="s") == Summary(**SUMMARY_FIELDS)  # type: ignore[arg-type]


def test_a_newer_summary_names_session_and_version() -> None:
    # The argument decides, not a format_version among the fields.
    with pytest.raises(UnsupportedFormatError) as caught:
        load_summary({**SUMMARY_FIELDS, FORMAT_KEY: 1}, 2, session_id="s9")
    assert caught.value.session_id == "s9"
    assert caught.value.details["summary_version"] == 3
    assert "summary version 3" in str(caught.value) and "'s9'" in str(caught.value)


@pytest.mark.parametrize("fmt", [0, -1])
def test_an_older_summary_without_a_step_is_corrupt(fmt: int) -> None:
    with pytest.raises(CorruptDataError, match="summary version 3"):
        load_summary(SUMMARY_FIELDS, fmt, session_id="s")


@pytest.mark.parametrize(
    "change",
    [
        {"covers_until": -2},
        {"text": None},
        {"created_at": datetime(2026, 1, 1)},
        {"summary_version": 0},
        {"token_count": -1},
    ],
)
def test_a_summary_that_does_not_validate_is_corrupt(change: dict[str, Any]) -> None:
    with pytest.raises(CorruptDataError) as caught:
        load_summary({**SUMMARY_FIELDS, **change}, 1, session_id="s")
    assert caught.value.session_id == "s"


# -- consultation states ---------------------------------------------------------------------


def test_a_format_1_state_upgrades_and_keeps_unknown_fields() -> None:
    state = load_state({**STATE_V1, "future": "kept"}, 1, session_id="c")
    assert state == ConsultationState(
        **STATE_V1, aggravating_factors=[], swelling=None, trauma=None, red_flags=[], future="kept"
    )
    assert state.document()["future"] == "kept"
    current = load_state({**STATE_V1, "red_flags": ["麻木"], "x": 1}, 2, session_id="c")
    assert current.red_flags == ["麻木"] and current.document()["x"] == 1


def test_a_newer_state_names_the_session() -> None:
    with pytest.raises(UnsupportedFormatError) as caught:
        load_state(STATE_V1, STATE_FORMAT + 1, session_id="c")
    assert caught.value.session_id == "c" and "'c'" in str(caught.value)


def test_a_state_without_a_step_or_that_does_not_validate_is_corrupt() -> None:
    with pytest.raises(CorruptDataError, match="unknown format 0"):
        load_state(STATE_V1, 0, session_id="c")
    with pytest.raises(CorruptDataError, match="pain_level"):
        load_state({**STATE_V1, "pain_level": 11}, 1, session_id="c")
    with pytest.raises(CorruptDataError, match="JSON object"):
        load_state(["stage"], 2, session_id="c")


# -- user profiles ---------------------------------------------------------------------------


def test_a_profile_loads_and_keeps_unknown_fields() -> None:
    profile = load_profile({"age": 40, "hobby": "跑步"}, 1, user_id="u1")
    assert profile == UserProfile(age=40, hobby="跑步")
    assert profile.document()["hobby"] == "跑步"


def test_a_newer_profile_names_the_user() -> None:
    with pytest.raises(UnsupportedFormatError) as caught:
        load_profile({"age": 40}, PROFILE_FORMAT + 1, user_id="u1")
    assert caught.value.details["user_id"] == "u1"
    assert "user 'u1'" in str(caught.value)


def test_a_profile_that_does_not_validate_is_corrupt() -> None:
    with pytest.raises(CorruptDataError, match=r"user 'u1'.*age"):
        load_profile({"age": 200}, 1, user_id="u1")
    with pytest.raises(CorruptDataError, match="unknown format 0"):
        load_profile({"age": 20}, 0, user_id="u1")
