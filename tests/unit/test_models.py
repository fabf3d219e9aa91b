from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxstore import Message
from ctxstore.errors import InvalidMessageError
from ctxstore.models import construct_trusted
from ctxstore.textcheck import json_problem, text_problem, utf8_size_exceeds


def test_message_has_the_contract_fields() -> None:
    message = Message(
        role="user",
        content="我膝盖有下坠感",
        turn_id="turn_0197",
        timestamp="2026-11-29T08:15:02.123+08:00",
    )
    assert message.model_dump(mode="json") == {
        "role": "user",
        "content": "我膝盖有下坠感",
        "turn_id": "turn_0197",
        "timestamp": "2026-11-29T08:15:02.123+08:00",  # as Go writes it
        "name": None,
        "metadata": {},
    }


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"role": "doctor", "content": "x"}, "role"),
        ({"role": "User", "content": "x"}, "role"),
        ({"role": "user", "content": 1}, "content"),
        ({"role": "user", "content": None}, "content"),
        ({"role": "user", "content": "a\x00"}, "NUL"),
        ({"role": "user", "content": "\udfff"}, "surrogate"),
        ({"role": "user", "content": "x", "timestamp": datetime(2026, 1, 1)}, "timezone"),
        ({"role": "user", "content": "x", "extra": 1}, "extra"),
    ],
)
def test_invalid_messages_raise_a_ctxstore_error(fields: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        Message(**fields)  # type: ignore[arg-type]
    assert fragment.lower() in str(caught.value).lower()
    assert isinstance(caught.value, ValueError)


def test_messages_are_immutable() -> None:
    message = Message(role="user", content="x")
    with pytest.raises(Exception, match="frozen"):
        message.content = "y"  # type: ignore[misc]


def test_digest_tells_apart_every_field() -> None:
    base = {"role": "user", "content": "x", "turn_id": "t", "name": None}
    stamp = datetime(2026, 1, 1, tzinfo=UTC)
    variants = [
        Message(**base),  # type: ignore[arg-type]
        Message(**{**base, "role": "assistant"}),  # type: ignore[arg-type]
        Message(**{**base, "content": "y"}),  # type: ignore[arg-type]
        Message(**{**base, "turn_id": "u"}),  # type: ignore[arg-type]
        Message(**{**base, "name": "n"}),  # type: ignore[arg-type]
        Message(**base, timestamp=stamp),  # type: ignore[arg-type]
        Message(**base, timestamp=stamp.astimezone(timezone(timedelta(hours=8)))),  # type: ignore[arg-type]
        Message(**base, metadata={"k": 1}),  # type: ignore[arg-type]
        Message(**base, metadata={"k": 2}),  # type: ignore[arg-type]
    ]
    assert len({message.digest() for message in variants}) == len(variants)


_STORABLE_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"))


@given(
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    content=_STORABLE_TEXT,
    turn_id=st.none() | _STORABLE_TEXT,
    name=st.none() | _STORABLE_TEXT,
    timestamp=st.none()
    | st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-9, minutes=-30))])),
)
def test_the_core_digest_is_sha256_of_the_fields_as_compact_json(
    role: str, content: str, turn_id: str | None, name: str | None, timestamp: datetime | None
) -> None:
    # The digest is stored (messages.digest, the sessions' content hash): its definition
    # must not move, however it is computed.
    message = Message(role=role, content=content, turn_id=turn_id, name=name, timestamp=timestamp)
    stamp = timestamp.isoformat() if timestamp is not None else None
    canonical = json.dumps(
        [role, content, turn_id, stamp, name], ensure_ascii=False, separators=(",", ":")
    )
    assert message.core_digest() == hashlib.sha256(canonical.encode()).digest()
    assert message.core_digest() is message.core_digest()  # computed once


def test_equal_messages_have_equal_digests_and_trusted_copies_compare_equal() -> None:
    original = Message(role="tool", content="x", metadata={"b": 1, "a": [1, 2]})
    copy = construct_trusted(
        role="tool",
        content="x",
        turn_id=None,
        timestamp=None,
        name=None,
        metadata={"a": [1, 2], "b": 1},
        core_digest=None,
    )
    assert copy == original
    assert copy.digest() == original.digest()


def test_text_and_json_checks() -> None:
    assert text_problem("fine \\u0000 text") is None
    assert "NUL" in (text_problem("a\x00") or "")
    assert "surrogate" in (text_problem("\ud83d") or "")
    assert json_problem({"a": [1, 2.5, None, True, {"b": "c"}]}) is None
    assert "NaN" in (json_problem({"a": float("nan")}) or "")
    assert "not a string" in (json_problem({1: "a"}) or "")
    assert "not a JSON value" in (json_problem({"a": object()}) or "")
    assert utf8_size_exceeds("膝" * 10, 29)
    assert not utf8_size_exceeds("膝" * 10, 30)


def test_a_copy_with_changes_is_validated_and_digested_afresh() -> None:
    """pydantic's model_copy(update=...) would keep the cached digest (a save of the
    edited copy would see nothing changed) and skip validation."""
    original = Message(role="user", content="膝盖疼", turn_id="t1")
    digest = original.core_digest()
    edited = original.model_copy(update={"content": "膝盖不疼了"})
    assert edited.content == "膝盖不疼了" and edited.core_digest() != digest
    assert original.model_copy().core_digest() == digest
    deep = original.model_copy(update={"metadata": {"k": [1]}}, deep=True)
    assert deep.metadata == {"k": [1]} and deep.core_digest() == digest
    with pytest.raises(InvalidMessageError):
        original.model_copy(update={"role": "nobody"})
