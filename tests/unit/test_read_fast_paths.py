"""The read side's fast paths give what their careful references give (issue 48, item 6).

- ``rows_to_messages`` (current-format rows built inline, a run of rows at one stored time
  sharing one datetime) against ``row_to_message`` row by row;
- ``go_timestamp`` (from datetime's isoformat) against the field-by-field writer it
  replaced;
- ContextBuilder's recent messages (``_recent_messages``, ``_trusted_message``) against
  ``contract_message`` with ``legacy_fill`` and the validated ContractMessage.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxstore.context.builder import _recent_messages, _trusted_message
from ctxstore.contract import _TIMESTAMP, ContractMessage
from ctxstore.errors import CorruptDataError, InvalidMessageError
from ctxstore.formats.messages import row_to_message, rows_to_messages
from ctxstore.models import Message
from ctxstore.storage.base import StoredMessage
from ctxstore.timestamps import nanoseconds_of, with_nanoseconds
from ctxstore.tokens import contract_message, legacy_fill

# -- rows_to_messages ----------------------------------------------------------------------

_INSTANTS = st.datetimes(
    min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)
#: Stored times: instants (a few, so runs of equal ones are common), asyncpg's naive
#: infinities, or none.
_STAMPS = st.one_of(
    st.none(),
    st.sampled_from([datetime.min, datetime.max]),
    st.sampled_from(
        [
            datetime(2026, 11, 29, 0, 15, 2, 123000, tzinfo=UTC),
            datetime(2026, 11, 29, 0, 15, 2, 123001, tzinfo=UTC),
            datetime(1, 1, 1, tzinfo=UTC),
            datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        ]
    ),
    _INSTANTS,
)
#: Offsets in seconds: none, quarter hours (the fast path's), and others.
_OFFSETS = st.one_of(
    st.none(),
    st.just(0),
    st.sampled_from([8 * 3600, -5 * 3600, 5 * 3600 + 45 * 60, 14 * 3600, -14 * 3600]),
    st.integers(min_value=-86_399, max_value=86_399),
)
_NANOS = st.one_of(st.none(), st.sampled_from([1, 500, 999]), st.integers(-1, 1001))


@st.composite
def _rows(draw: st.DrawFn) -> list[tuple[Any, ...]]:
    count = draw(st.integers(min_value=0, max_value=12))
    rows = []
    for seq in range(count):
        if rows and draw(st.booleans()):  # the time of the row before, again
            stamp, offset, nanos = rows[-1][4:7]
        else:
            stamp, offset, nanos = draw(_STAMPS), draw(_OFFSETS), draw(_NANOS)
        rows.append(
            (
                seq,
                draw(st.sampled_from(["user", "assistant", "system", "tool"])),
                draw(st.text(max_size=5)),
                draw(st.one_of(st.none(), st.text(max_size=3))),
                stamp,
                offset,
                nanos,
                draw(st.one_of(st.none(), st.just("bot"))),
                draw(st.one_of(st.none(), st.just({"k": [1, None]}))),
                draw(st.binary(min_size=0, max_size=4)),
                draw(st.sampled_from([2, 2, 2, None])),
            )
        )
    return rows


def _one_by_one(rows: list[tuple[Any, ...]], current: int | None) -> list[Message] | str:
    """The careful path's messages, or the error it raises."""
    try:
        return [
            row_to_message(
                (*row[:-1], 2) if row[-1] == current else row, session_id="s", position=row[0]
            )
            for row in rows
        ]
    except (CorruptDataError, InvalidMessageError) as error:
        return f"{type(error).__name__}: {error}"


def _fast(rows: list[tuple[Any, ...]], current: int | None) -> list[Message] | str:
    try:
        return rows_to_messages(rows, session_id="s", current=current)
    except (CorruptDataError, InvalidMessageError) as error:
        return f"{type(error).__name__}: {error}"


def _described(message: Message) -> tuple[Any, ...]:
    stamp = message.timestamp
    return (
        message.__dict__,
        message.__pydantic_private__,
        message.__pydantic_fields_set__,
        type(stamp),
        stamp.isoformat() if stamp is not None else None,
        stamp.utcoffset() if stamp is not None else None,
        nanoseconds_of(stamp),
        stamp.fold if stamp is not None else None,
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(), current=st.sampled_from([2, None]))
def test_rows_load_as_the_careful_path_loads_them_one_by_one(
    rows: list[tuple[Any, ...]], current: int | None
) -> None:
    rows = [row if row[-1] is not None or current is None else (*row[:-1], 2) for row in rows]
    expected, loaded = _one_by_one(rows, current), _fast(rows, current)
    assert loaded == expected  # the same messages, or the same error
    if isinstance(loaded, str) or isinstance(expected, str):
        return
    assert [_described(m) for m in loaded] == [_described(m) for m in expected]


def test_a_run_of_equal_times_shares_one_datetime_and_another_time_does_not() -> None:
    stamp = datetime(2026, 11, 29, 0, 15, 2, 123000, tzinfo=UTC)
    rows = [
        (0, "user", "a", "t", stamp, 28800, 7, None, None, b"", 2),
        (1, "assistant", "b", "t", stamp, 28800, 7, None, None, b"", 2),
        (2, "user", "c", "t", stamp, 28800, 8, None, None, b"", 2),
        (3, "user", "d", "t", stamp, 3600, 8, None, None, b"", 2),
    ]
    first, second, third, fourth = rows_to_messages(rows, session_id="s")
    assert first.timestamp is second.timestamp
    assert nanoseconds_of(third.timestamp) == 8 and third.timestamp is not second.timestamp
    assert fourth.timestamp == third.timestamp
    assert fourth.timestamp is not None and fourth.timestamp.utcoffset() == timedelta(hours=1)


# -- go_timestamp --------------------------------------------------------------------------


def _go_timestamp_field_by_field(moment: datetime) -> str:
    """go_timestamp as it was written before (field by field), the reference."""
    offset = moment.utcoffset()
    if offset is None:
        raise InvalidMessageError(f"timestamp {moment.isoformat()} has no UTC offset")
    text = (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T"
        f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    )
    nanosecond = nanoseconds_of(moment)
    if moment.microsecond or nanosecond:
        text += f".{moment.microsecond:06d}{nanosecond:03d}".rstrip("0")
    if not offset:
        return text + "Z"
    minutes, rest = divmod(abs(offset), timedelta(minutes=1))
    if rest:
        raise InvalidMessageError(
            f"timestamp {moment.isoformat()}: RFC 3339 (Go) has no seconds in a UTC offset"
        )
    sign = "-" if offset < timedelta(0) else "+"
    return f"{text}{sign}{minutes // 60:02d}:{minutes % 60:02d}"


_ZONES = st.one_of(
    st.none(),
    st.just(UTC),
    st.integers(-24 * 60 + 1, 24 * 60 - 1).map(lambda m: timezone(timedelta(minutes=m))),
    st.integers(-86_399, 86_399).map(lambda s: timezone(timedelta(seconds=s))),
    st.integers(-86_399_999_999, 86_399_999_999).map(
        lambda us: timezone(timedelta(microseconds=us))
    ),
)


def _written(moment: datetime, writer: Any) -> str:
    try:
        return str(writer(moment))
    except InvalidMessageError as error:
        return f"refused: {error}"


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(moment=st.datetimes(timezones=_ZONES), nanosecond=st.integers(0, 999))
def test_go_timestamp_writes_what_the_field_by_field_writer_wrote(
    moment: datetime, nanosecond: int
) -> None:
    from ctxstore.timestamps import go_timestamp  # noqa: PLC0415

    precise = with_nanoseconds(moment, nanosecond)
    written = _written(precise, go_timestamp)
    assert written == _written(precise, _go_timestamp_field_by_field)
    if not written.startswith("refused"):  # what the contract's schema admits
        assert _TIMESTAMP.search(written)


# -- the context build's recent messages ----------------------------------------------------

_CREATED = [
    datetime(2026, 11, 29, 0, 15, 2, 123000, tzinfo=UTC),
    datetime(2026, 11, 29, 8, 15, 2, tzinfo=timezone(timedelta(hours=8))),
]


@st.composite
def _stored_messages(draw: st.DrawFn) -> list[StoredMessage]:
    stamps = st.one_of(
        st.none(),
        st.sampled_from(_CREATED),
        st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5))])),
    )
    found: list[StoredMessage] = []
    for position in range(draw(st.integers(0, 8))):
        stamp = found[-1].message.timestamp if found and draw(st.booleans()) else draw(stamps)
        if stamp is not None and draw(st.booleans()):
            stamp = with_nanoseconds(stamp, draw(st.integers(0, 999)))
        message = Message(
            role=draw(st.sampled_from(["user", "assistant", "system", "tool"])),
            content=draw(st.text(max_size=5).filter(lambda text: "\x00" not in text)),
            turn_id=draw(st.sampled_from([None, "", "turn_1"])),
            timestamp=stamp,
        )
        found.append(StoredMessage(position * 3, message, None))
    return found


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_stored_messages(), created=st.sampled_from(_CREATED))
def test_recent_messages_are_what_contract_message_makes(
    messages: list[StoredMessage], created: datetime
) -> None:
    from ctxstore.timestamps import go_timestamp  # noqa: PLC0415

    expected = [
        contract_message(stored.message, *legacy_fill(stored.position, created))
        for stored in messages
    ]
    recent = _recent_messages(messages, created)
    assert recent == expected
    assert [list(item) for item in recent] == [list(item) for item in expected]  # key order
    trusted = [_trusted_message(dict(item)) for item in recent]
    validated = [ContractMessage.model_validate(item) for item in expected]
    assert trusted == validated
    for mine, theirs in zip(trusted, validated, strict=True):
        assert type(mine) is ContractMessage
        assert mine.model_fields_set == theirs.model_fields_set
        assert mine.__pydantic_extra__ == theirs.__pydantic_extra__
        assert mine.__pydantic_private__ == theirs.__pydantic_private__
        assert mine.model_dump_json() == theirs.model_dump_json()
    assert go_timestamp(created) in {item["timestamp"] for item in recent} or all(
        stored.message.timestamp is not None for stored in messages
    )


@pytest.mark.parametrize(
    "item",
    [
        {"role": "robot", "content": "x", "turn_id": "t", "timestamp": "2026-01-01T00:00:00Z"},
        {"role": "user", "content": 1, "turn_id": "t", "timestamp": "2026-01-01T00:00:00Z"},
        {"role": "user", "content": "x", "turn_id": None, "timestamp": "2026-01-01T00:00:00Z"},
    ],
)
def test_anything_unexpected_is_left_to_validation(item: dict[str, Any]) -> None:
    assert _trusted_message(item) is item
