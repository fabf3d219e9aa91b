"""The contract's JSON Schema and parse_contract accept exactly the same documents.

Hypothesis generates contracts, most of them nearly valid (null lists, integral floats,
timestamps and versions at the edge, wrong types, missing fields), and requires the
reference validator (the ``jsonschema`` package, draft 2020-12) and parse_contract to agree
on every one.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ctxstore import parse_contract
from ctxstore.contract import EXAMPLE, STATE_FIELDS, contract_json_schema, state_document
from ctxstore.errors import ContractVersionError, InvalidInputError
from ctxstore.models import ConsultationState

SCHEMA = contract_json_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def parses(document: Any) -> bool:
    try:
        parse_contract(document)
    except (ContractVersionError, InvalidInputError):
        return False
    return True


def test_the_schema_is_valid_draft_2020_12_and_requires_a_version() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    meta = SCHEMA["$defs"]["ContractMeta"]
    assert "context_version" in meta["required"]
    assert VALIDATOR.is_valid(EXAMPLE) and parses(EXAMPLE)


# -- generated documents ----------------------------------------------------------------------

json_leaf = (
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=6)
)
json_any = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
short_text = st.text(max_size=8) | st.sampled_from(["", "我膝盖有下坠感", "a\nb", "\ud800"])


@st.composite
def timestamps(draw: st.DrawFn) -> tuple[str, bool]:
    """Text and whether it is a valid RFC 3339 time in years 0001-9999 (an oracle of its
    own: the calendar, not the schema's pattern)."""
    year = draw(st.integers(0, 9999) | st.sampled_from([4, 100, 400, 1900, 2000, 2024]))
    month, day = draw(st.integers(0, 13)), draw(st.integers(0, 32))
    hour, minute, second = (
        draw(st.integers(0, 25)),
        draw(st.integers(0, 61)),
        draw(st.integers(0, 61)),
    )
    fraction = draw(st.sampled_from(["", ".1", ".123456", ".123456789", ".", ".1234567890123"]))
    zone_hour, zone_minute = draw(st.integers(0, 25)), draw(st.integers(0, 61))
    zone = draw(st.sampled_from(["Z", "z", "+", "-", ""]))
    separator = draw(st.sampled_from(["T", "T", "T", "t", " "]))
    tail = draw(st.sampled_from(["", "", "", "\n", " ", "x"]))
    offset = zone if zone in ("Z", "z", "") else f"{zone}{zone_hour:02d}:{zone_minute:02d}"
    text = (
        f"{year:04d}-{month:02d}-{day:02d}{separator}{hour:02d}:{minute:02d}:{second:02d}"
        f"{fraction}{offset}{tail}"
    )
    try:
        datetime(year, month, day, hour, minute, second)
        calendar = True
    except ValueError:
        calendar = False
    valid = (
        calendar
        and separator == "T"
        and fraction != "."
        and (zone == "Z" or (zone in "+-" and zone != "" and zone_hour < 24 and zone_minute < 60))
        and tail == ""
    )
    return text, valid


@st.composite
def valid_timestamps(draw: st.DrawFn) -> str:
    moment = draw(st.datetimes(datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999)))
    text = moment.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0")
    text += draw(st.sampled_from(["", ".1", ".123456", ".123456789", ".000000001"]))
    zone = draw(st.sampled_from(["Z", "+08:00", "-12:00", "+14:00", "+05:45", "-00:00", "+23:59"]))
    return text + zone


def lists_of(item: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | st.lists(item, max_size=3)


counts = st.integers(0, 10**6) | st.integers(0, 10**6).map(float)
messages = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "system", "tool"]),
        "content": short_text,
        "turn_id": short_text,
        "timestamp": valid_timestamps(),
    },
    optional={"sentiment": json_any},
)
states = st.fixed_dictionaries(
    {"stage": st.sampled_from(["greeting", "assessing", "x"])},
    optional={
        "chief_complaint": st.none() | short_text,
        "body_parts": lists_of(short_text),
        "symptoms": lists_of(short_text),
        "duration": st.none() | short_text,
        "aggravating_factors": lists_of(short_text),
        "pain_level": st.none() | short_text | st.integers(0, 10) | st.sampled_from([7.0, 0.0]),
        "swelling": st.none() | st.booleans(),
        "trauma": st.none() | st.booleans(),
        "red_flags": lists_of(short_text),
        "missing_slots": lists_of(short_text),
        "last_question": st.none() | short_text,
        "pending_answer_for": lists_of(short_text),
        "future_field": json_any,
    },
)
profiles = st.none() | st.fixed_dictionaries(
    {},
    optional={
        "age": st.none() | st.integers(0, 150) | st.just(34.0),
        "gender": st.none() | short_text,
        "exercise_habit": st.none() | short_text,
        "known_limitations": lists_of(short_text),
        "hobby": json_any,
    },
)
knowledge = st.fixed_dictionaries(
    {
        "title": short_text,
        "content": short_text,
        "source": short_text,
        "relevance_score": st.floats(allow_infinity=False) | st.integers(-(10**20), 10**20),
    }
)
contexts = st.fixed_dictionaries(
    {"recent_messages": lists_of(messages), "consultation_state": states},
    optional={
        "conversation_summary": st.none() | short_text,
        "user_profile": profiles,
        "retrieved_knowledge": lists_of(knowledge),
        "patient_mood": json_any,
    },
)
metas = st.fixed_dictionaries(
    {
        "context_version": st.sampled_from(["1.0.0", "1.2.3", "1.10.0"]),
        "token_budget": st.integers(1, 10**6) | st.just(8000.0),
        "included_message_count": counts,
        "summary_version": counts,
    },
    optional={"trace_id": json_any},
)
contracts = st.fixed_dictionaries(
    {
        "session_id": short_text,
        "turn_id": short_text,
        "user_message": short_text,
        "context": contexts,
        "meta": metas,
    }
)
#: What a mutation puts somewhere: anything, and the values at the edge of each rule.
nasty = (
    json_any
    | timestamps().map(lambda pair: pair[0])
    | st.sampled_from(
        [None, True, 0, -1, 1, 11, 7.5, 1e300, 10**400, -(10**400), float("nan"),
         float("inf"), "", "User", "doctor", "7", [], {}, [None], ["x", 1], {"stage": ""},
         "1.0", "2.0.0", "v1.0.0", "1.0.0\n", "01.0.0", "1.0.0-beta", "١.0.0", "1.00.0",
         "0000-12-31T19:00:00-05:00", "2026-02-29T00:00:00Z", "2024-02-29T00:00:00Z"]
    )
)  # fmt: skip


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


@st.composite
def documents(draw: st.DrawFn) -> Any:
    """A valid contract, then up to two mutations: a value replaced or a key removed."""
    document = draw(contracts)
    for _ in range(draw(st.integers(0, 2))):
        where = paths(document)
        if not where:
            break
        path = draw(st.sampled_from(where))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            # A copy: nasty's sampled lists and dicts are shared objects, and putting one
            # inside itself by a second mutation would make the document a cycle.
            parent[path[-1]] = copy.deepcopy(draw(nasty))
    return document


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_the_schema_and_the_parser_accept_the_same_documents(document: dict[str, Any]) -> None:
    by_schema = VALIDATOR.is_valid(document)
    assert parses(copy.deepcopy(document)) == by_schema, list(VALIDATOR.iter_errors(document))[:1]
    event(f"accepted: {by_schema}")


@settings(max_examples=300, deadline=None)
@given(timestamps())
def test_the_timestamp_pattern_is_the_calendar(pair: tuple[str, bool]) -> None:
    text, valid = pair
    document = copy.deepcopy(EXAMPLE)
    document["context"]["recent_messages"][0]["timestamp"] = text
    assert VALIDATOR.is_valid(document) == valid, text
    assert parses(document) == valid, text


# -- what a Go sender writes ------------------------------------------------------------------


def test_null_for_any_list_is_an_empty_list() -> None:
    document = copy.deepcopy(EXAMPLE)
    document["context"]["recent_messages"] = None
    document["context"]["retrieved_knowledge"] = None
    document["context"]["user_profile"]["known_limitations"] = None
    document["meta"]["included_message_count"] = 0
    for name in ("body_parts", "symptoms", "aggravating_factors", "red_flags", "missing_slots",
                 "pending_answer_for"):  # fmt: skip
        document["context"]["consultation_state"][name] = None
    assert VALIDATOR.is_valid(document)
    contract = parse_contract(json.dumps(document))
    assert contract.context.recent_messages == [] and contract.context.retrieved_knowledge == []
    assert contract.context.consultation_state.body_parts == []
    assert contract.context.user_profile is not None
    assert contract.context.user_profile.known_limitations == []


@pytest.mark.parametrize(
    ("pain", "read"), [("moderate", "moderate"), ("7", "7"), (7, "7"), (7.0, "7"), (None, None)]
)
def test_pain_level_is_text_as_the_receiver_model_declares(pain: Any, read: Any) -> None:
    document = copy.deepcopy(EXAMPLE)
    document["context"]["consultation_state"]["pain_level"] = pain
    assert parse_contract(document).context.consultation_state.pain_level == read
    assert ConsultationState.parse({"stage": "x", "pain_level": pain}).pain_level == read


@pytest.mark.parametrize("pain", [11, -1, 7.5, True])
def test_pain_level_numbers_are_0_to_10(pain: Any) -> None:
    document = copy.deepcopy(EXAMPLE)
    document["context"]["consultation_state"]["pain_level"] = pain
    assert not VALIDATOR.is_valid(document)
    with pytest.raises(InvalidInputError):
        parse_contract(document)


@pytest.mark.parametrize("version", [None, "", "v1.0.0", "1.0", "2.0.0", "1.0.0\n"])
def test_versions_the_schema_refuses_the_parser_refuses(version: Any) -> None:
    document = copy.deepcopy(EXAMPLE)
    if version is None:
        del document["meta"]["context_version"]
    else:
        document["meta"]["context_version"] = version
    assert not VALIDATOR.is_valid(document)
    with pytest.raises(ContractVersionError):
        parse_contract(document)


def test_a_1_0_0_contract_carries_the_1_0_0_state_fields_only() -> None:
    state = ConsultationState.parse({"stage": "assessing", "pain_level": 3, "future": "x"})
    document = state_document(state)
    assert list(document) == list(STATE_FIELDS) and "future" not in document
    assert document["pain_level"] == "3"
