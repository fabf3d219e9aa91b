"""Hypothesis: arbitrary Unicode and arbitrary histories round-trip through PostgreSQL."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxstore import Message, PostgresStorage
from ctxstore.errors import InvalidInputError

PROPERTY_SETTINGS = settings(
    max_examples=75,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Everything PostgreSQL text can hold: all of Unicode but U+0000 and lone surrogates.
storable_text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"))
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | storable_text
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(storable_text, inner, max_size=3),
    max_leaves=8,
)
offsets = st.integers(-14 * 60, 14 * 60).map(lambda minutes: timezone(timedelta(minutes=minutes)))
timestamps = st.none() | st.builds(
    lambda seconds, tz: (
        datetime(2020, 1, 1, tzinfo=UTC).astimezone(tz) + timedelta(seconds=seconds)
    ),
    st.integers(0, 10**8),
    offsets,
)
messages = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    content=storable_text,
    turn_id=st.none() | storable_text,
    timestamp=timestamps,
    name=st.none() | storable_text,
    metadata=st.dictionaries(storable_text, json_values, max_size=3),
)


@PROPERTY_SETTINGS
@given(text=storable_text)
async def test_any_storable_text_round_trips_exactly(
    pg_storage: PostgresStorage, text: str
) -> None:
    session_id = f"u-{uuid.uuid4()}"
    await pg_storage.save(session_id, [Message(role="user", content=text, metadata={text: text})])
    (loaded,) = await pg_storage.load(session_id)
    assert loaded.content.encode("utf-8") == text.encode("utf-8")
    assert loaded.metadata == {text: text}


@PROPERTY_SETTINGS
@given(
    prefix=storable_text,
    bad=st.sampled_from(["\x00", "\ud800", "\udfff", "\udbff"]),
    suffix=storable_text,
)
async def test_unstorable_text_is_refused_and_nothing_is_written(
    pg_storage: PostgresStorage, prefix: str, bad: str, suffix: str
) -> None:
    session_id = f"bad-{uuid.uuid4()}"
    with pytest.raises(InvalidInputError):
        await pg_storage.save(session_id, [{"role": "user", "content": prefix + bad + suffix}])
    assert not await pg_storage.exists(session_id)


edits = st.lists(
    st.tuples(st.sampled_from(["append", "truncate", "replace", "insert", "reset"]), st.data()),
    min_size=1,
    max_size=6,
)


@PROPERTY_SETTINGS
@given(
    initial=st.lists(messages, max_size=8),
    steps=st.lists(
        st.tuples(
            st.sampled_from(["append", "truncate", "replace", "insert", "reset"]),
            st.lists(messages, min_size=1, max_size=4),
            st.integers(0, 20),
        ),
        min_size=1,
        max_size=6,
    ),
)
async def test_any_sequence_of_overwrites_loads_the_last_list(
    pg_storage: PostgresStorage,
    initial: list[Message],
    steps: list[tuple[str, list[Message], int]],
) -> None:
    session_id = f"seq-{uuid.uuid4()}"
    current = list(initial)
    await pg_storage.save(session_id, current)
    for action, extra, index in steps:
        where = index % (len(current) + 1)
        if action == "append":
            current = [*current, *extra]
        elif action == "truncate":
            current = current[:where]
        elif action == "replace" and current:
            current = [
                *current[: where % len(current)],
                extra[0],
                *current[where % len(current) + 1 :],
            ]
        elif action == "insert":
            current = [*current[:where], *extra, *current[where:]]
        else:
            current = list(extra)
        await pg_storage.save(session_id, current)
        assert await pg_storage.load(session_id) == current
