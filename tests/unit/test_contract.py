"""The Context Contract v1.0.0: field names, round trips, version checks, schema."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import ContextContract, parse_contract
from ctxstore.contract import EXAMPLE, contract_json_schema
from ctxstore.errors import ContractVersionError, InvalidInputError
from ctxstore.jsontext import compact_json


def test_the_full_example_validates_and_round_trips_byte_for_byte() -> None:
    original = json.dumps(EXAMPLE, ensure_ascii=False, separators=(",", ":"))
    contract = parse_contract(original)
    assert contract.meta.context_version == "1.0.0"
    assert contract.context.recent_messages[0].timestamp == "2026-11-29T08:15:02.123+08:00"
    serialized = contract.to_json()
    assert json.loads(serialized) == EXAMPLE
    assert json.dumps(json.loads(serialized), ensure_ascii=False, separators=(",", ":")) == original
    assert parse_contract(serialized) == contract


def test_field_names_are_exactly_the_contracts() -> None:
    assert list(ContextContract.model_fields) == [
        "session_id",
        "turn_id",
        "user_message",
        "context",
        "meta",
    ]
    assert list(EXAMPLE["context"]) == [
        "recent_messages",
        "conversation_summary",
        "consultation_state",
        "user_profile",
        "retrieved_knowledge",
    ]
    contract = parse_contract(EXAMPLE)
    assert set(contract.model_dump()["meta"]) == {
        "context_version",
        "token_budget",
        "included_message_count",
        "summary_version",
    }
    assert set(contract.model_dump()["context"]["recent_messages"][0]) == {
        "role",
        "content",
        "turn_id",
        "timestamp",
    }


def with_version(version: Any) -> dict[str, Any]:
    document = copy.deepcopy(EXAMPLE)
    document["meta"]["context_version"] = version
    return document


@pytest.mark.parametrize("version", ["1.0.0", "1.1.0", "1.7.3", "1.0.12"])
def test_same_major_is_accepted(version: str) -> None:
    assert parse_contract(with_version(version)).meta.context_version == version


def test_newer_minor_fields_are_ignored() -> None:
    document = with_version("1.3.0")
    document["context"]["patient_mood"] = "anxious"
    document["meta"]["trace_id"] = "abc"
    document["context"]["recent_messages"][0]["sentiment"] = 0.2
    contract = parse_contract(document)
    assert "patient_mood" not in contract.context.model_dump()
    assert contract.meta.token_budget == 8000


@pytest.mark.parametrize("version", ["2.0.0", "0.9.0", "10.0.0"])
def test_other_majors_are_rejected(version: str) -> None:
    with pytest.raises(ContractVersionError, match="major"):
        parse_contract(with_version(version))


@pytest.mark.parametrize("version", ["1.0", "v1.0.0", "1.0.0-beta", "", None, 1, "01.0.0", "1.x.0"])
def test_unparsable_versions_are_rejected(version: Any) -> None:
    with pytest.raises(ContractVersionError):
        parse_contract(with_version(version))


def test_missing_meta_is_a_version_error() -> None:
    document = copy.deepcopy(EXAMPLE)
    del document["meta"]
    with pytest.raises(ContractVersionError):
        parse_contract(document)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.pop("user_message"),
        lambda d: d["context"].pop("consultation_state"),
        lambda d: d["context"]["recent_messages"][0].update(timestamp="2026-11-29T08:15:02"),
        lambda d: d["context"]["recent_messages"][0].update(role="doctor"),
        lambda d: d["meta"].update(token_budget=0),
    ],
    ids=["no-user-message", "no-state", "naive-timestamp", "bad-role", "zero-budget"],
)
def test_invalid_contracts_raise_invalid_input(mutate: Any) -> None:
    document = copy.deepcopy(EXAMPLE)
    mutate(document)
    with pytest.raises(InvalidInputError):
        parse_contract(document)


def test_not_json_is_invalid_input() -> None:
    with pytest.raises(InvalidInputError):
        parse_contract("{not json")


def test_json_schema_describes_the_contract() -> None:
    schema = contract_json_schema()
    assert schema["x-context-version"] == "1.0.0"
    assert schema["required"] == ["session_id", "turn_id", "user_message", "context", "meta"]
    context = schema["$defs"]["ContractContext"]
    assert set(context["properties"]) == {
        "recent_messages",
        "conversation_summary",
        "consultation_state",
        "user_profile",
        "retrieved_knowledge",
    }
    assert context["required"] == ["recent_messages", "consultation_state"]


def test_contract_schema_command_prints_the_schema() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", "contract", "schema"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == contract_json_schema()


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(st.characters(exclude_categories=["Cs"]), max_size=6), inner, max_size=4
        )
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(value=JSON_VALUES)
def test_the_contracts_compact_json_is_json_dumps(value: object) -> None:
    # compact_json makes its encoder once (the C one json.dumps uses): same text.
    assert compact_json(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
