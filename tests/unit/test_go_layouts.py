"""Go's JSON as Go writes it: every struct's keys read, and written back for its struct.

(The real Go program's view of the same is tests/interop/test_go_interop.py.)
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from ctxstore import Message
from ctxstore.errors import ConfigurationError, CorruptDataError, InvalidMessageError
from ctxstore.formats.layouts import GO_SERVICE, GoLayout
from ctxstore.formats.messages import message_from_document, message_to_document
from ctxstore.storage.redis.values import messages_json, parse_session_value
from ctxstore.timestamps import go_timestamp, parse_timestamp

BEIJING = timezone(timedelta(hours=8))


def read(document: dict[str, Any]) -> Message:
    return message_from_document(document, session_id="s", position=0)


@pytest.mark.parametrize(
    "document",
    [
        {"Role": "User", "Content": "c", "Name": "n", "TurnID": "t", "Timestamp": "T",
         "Metadata": {"k": "v"}},
        {"role": "User", "content": "c", "name": "n", "turn_id": "t", "timestamp": "T",
         "metadata": {"k": "v"}},
        {"role": "USER", "content": "c", "name": "n", "turnId": "t", "timestamp": "T",
         "metadata": {"k": "v"}},
        {"role": "user", "content": "c", "name": "n", "turn_id": "t", "timestamp": "T",
         "metadata": {"k": "v"}, "format_version": 2},
        {"ROLE": "user", "CONTENT": "c", "NAME": "n", "TURN_ID": "t", "TIMESTAMP": "T",
         "METADATA": {"k": "v"}},
    ],
    ids=["untagged", "snake_case", "camelCase", "ctxstore", "upper"],
)  # fmt: skip
def test_every_struct_s_keys_name_the_same_fields(document: dict[str, Any]) -> None:
    stamp = "2026-11-29T08:15:02.123+08:00"
    document = {key: stamp if value == "T" else value for key, value in document.items()}
    message = read(document)
    assert message == Message(
        role="user",
        content="c",
        name="n",
        turn_id="t",
        timestamp=datetime(2026, 11, 29, 8, 15, 2, 123000, tzinfo=BEIJING),
        metadata={"k": "v"},
    )


@pytest.mark.parametrize("role", ["User", "USER", "uSeR"])
@pytest.mark.parametrize("key", ["role", "Role"])
def test_role_values_match_without_case_in_every_format(key: str, role: str) -> None:
    assert read({key: role, "content": "x"}).role == "user"
    assert read({key: role, "content": "x", "format_version": 2}).role == "user"


def test_null_session_and_null_fields_are_empty() -> None:
    assert parse_session_value("null", "s") == []
    assert parse_session_value(b" null ", "s") == []
    message = read({"Role": "user", "Content": "x", "Metadata": None, "TurnID": ""})
    assert (message.metadata, message.turn_id) == ({}, "")
    assert read({"role": "user", "content": "x", "metadata": None, "turn_id": None}).metadata == {}


def test_other_fields_stay_in_metadata_and_no_spelling_is_lost() -> None:
    message = read({"Role": "tool", "Content": "{}", "ToolCallID": "c1", "TokenCount": 7})
    assert message.metadata == {"ToolCallID": "c1", "TokenCount": 7}
    both = read({"role": "user", "content": "x", "turn_id": "a", "TurnID": "b"})
    assert (both.turn_id, both.metadata) == ("a", {"TurnID": "b"})
    merged = read({"Role": "user", "Content": "x", "Metadata": {"a": "1"}, "Extra": 2})
    assert merged.metadata == {"a": "1", "Extra": 2}
    with pytest.raises(CorruptDataError, match="both a field and a metadata key"):
        read({"Role": "user", "Content": "x", "Metadata": {"Extra": "1"}, "Extra": 2})


def test_zero_and_maximum_times_are_read_exactly() -> None:
    zero = read({"Role": "user", "Content": "x", "Timestamp": "0001-01-01T08:00:00+08:00"})
    assert zero.timestamp == datetime(1, 1, 1, tzinfo=UTC)
    assert zero.timestamp is not None and zero.timestamp.utcoffset() == timedelta(hours=8)
    last = read({"role": "user", "content": "x", "timestamp": "9999-12-31T23:59:59.999999000Z"})
    assert last.timestamp == datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)


MESSAGES = [
    Message(
        role="user",
        content="我膝盖有下坠感 <b>&",
        turn_id="turn_0001",
        timestamp=datetime(2026, 11, 29, 8, 15, 2, 123000, tzinfo=BEIJING),
        name="",
        metadata={"trace": "t-1", "TokenCount": 12},
    ),
    Message(role="assistant", content="ok", timestamp=datetime(1, 1, 1, tzinfo=UTC)),
    Message(role="tool", content="{}", metadata={"ToolCallID": "c1"}),
]


def test_the_default_layout_writes_ctxstore_s_own_keys_which_the_service_reads() -> None:
    (first, *_) = json.loads(messages_json(MESSAGES))
    assert list(first) == [
        "role",
        "content",
        "turn_id",
        "timestamp",
        "name",
        "metadata",
        "format_version",
    ]
    assert first == message_to_document(MESSAGES[0])  # as ctxstore has always written it
    assert parse_session_value(messages_json(MESSAGES, GO_SERVICE), "s") == MESSAGES


@pytest.mark.parametrize(
    ("layout", "keys"),
    [
        (GoLayout.of("untagged"), ["Role", "Content", "TurnID", "Timestamp", "Name", "Metadata"]),
        (GoLayout.of("snake_case"), ["role", "content", "turn_id", "timestamp", "name"]),
        (GoLayout.of("camelCase"), ["role", "content", "turnId", "timestamp", "name", "metadata"]),
        (
            GoLayout.of("untagged", turn_id=False, timestamp=False, metadata=None),
            ["Role", "Content", "turn_id", "timestamp", "Name", "metadata"],
        ),
    ],
    ids=["untagged", "snake_case", "camelCase", "service-untagged"],
)
def test_each_layout_writes_its_struct_s_keys_and_reads_back_exactly(
    layout: GoLayout, keys: list[str]
) -> None:
    written = json.loads(messages_json(MESSAGES, layout))
    assert all(key in written[0] for key in keys)
    assert written[1]["timestamp" if "timestamp" in written[1] else "Timestamp"] == (
        "0001-01-01T00:00:00Z"  # what Go writes for its zero time
    )
    assert parse_session_value(messages_json(MESSAGES, layout), "s") == MESSAGES


def test_string_metadata_layouts_write_the_struct_s_fields_apart() -> None:
    layout = GoLayout.of("untagged", metadata="string", fields=("TokenCount", "ToolCallID"))
    first, second, third = json.loads(messages_json(MESSAGES, layout))
    assert first["Metadata"] == {"trace": "t-1"} and first["TokenCount"] == 12
    assert second["Metadata"] is None  # Go's nil map
    assert third["ToolCallID"] == "c1" and third["Metadata"] is None
    assert parse_session_value(messages_json(MESSAGES, layout), "s") == MESSAGES
    with pytest.raises(InvalidMessageError, match="map\\[string\\]string") as caught:
        messages_json(MESSAGES, GoLayout.of("untagged", metadata="string"))
    assert caught.value.position == 0


def test_role_case_of_the_struct() -> None:
    layout = GoLayout.of("untagged", role_case="title")
    assert [m["Role"] for m in json.loads(messages_json(MESSAGES, layout))] == [
        "User",
        "Assistant",
        "Tool",
    ]


@pytest.mark.parametrize(
    "build",
    [
        lambda: GoLayout.of("untagged", fields=("Timestamp",)),
        lambda: GoLayout(role="Role", content="role"),
        lambda: GoLayout(fields=("Turn_Id",)),
        lambda: GoLayout(role="Role", content="Content", fields=("Name_",)),
        lambda: GoLayout(name=None, fields=("NAME",)),
    ],
)
def test_layouts_that_would_mix_fields_are_refused(build: Any) -> None:
    with pytest.raises(ConfigurationError):
        build()


@pytest.mark.parametrize(
    "text",
    [
        "0001-01-01T00:00:00Z",
        "0001-01-01T08:00:00+08:00",
        "9999-12-31T23:59:59.999999Z",
        "9999-12-31T18:59:59.999999-05:00",
        "2026-11-29T08:15:02.123+08:00",
        "1900-01-01T00:00:00+08:05",
        "2026-01-01T00:00:00-12:00",
        "2026-01-01T00:00:00+14:00",
        "2026-01-01T00:00:00.000001-09:30",
    ],
)
def test_go_text_reads_and_writes_back_byte_for_byte(text: str) -> None:
    moment = parse_timestamp(text)
    assert isinstance(moment, datetime)
    assert go_timestamp(moment) == text


def test_timestamps_go_can_t_hold_exactly_are_refused_for_go() -> None:
    with pytest.raises(InvalidMessageError, match="RFC 3339"):
        go_timestamp(datetime(1900, 1, 1, tzinfo=timezone(timedelta(seconds=29143))))
    assert parse_timestamp("2026-01-01T00:00:00") == "2026-01-01T00:00:00"  # naive: the model's
    with pytest.raises(InvalidMessageError):
        Message.parse({"role": "user", "content": "x", "timestamp": "2026-01-01T00:00:00"})
    assert parse_timestamp("2026-01-01T00:00:00+08:05:43") == datetime(
        2026, 1, 1, tzinfo=timezone(timedelta(seconds=29143))
    )
