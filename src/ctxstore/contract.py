"""The Context Contract v1.0.0: what the AI service receives for each LLM call.

Field names are fixed by the contract (docs/context-contract.md).  Versioning: adding fields
bumps the minor version (compatible), removing or renaming bumps the major.  A receiver
checks ``meta.context_version`` first: the same major is accepted (unknown newer-minor
fields are ignored), another major or a malformed version raises ContractVersionError.

The JSON Schema (context-contract-1.0.0.schema.json, ``ctxstore contract schema``) is the
one definition of what a receiver accepts: ``parse_contract`` checks a document against it
(ctxstore/schemacheck.py) before building the models, so the two never disagree.  Field
types follow the contract's declared receiver models: ``pain_level`` is text, ``null`` for
any list is an empty list (what Go marshals for a nil slice).
"""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError, field_validator

from ctxstore.errors import ContractVersionError, InvalidInputError
from ctxstore.jsontext import compact_json
from ctxstore.models import ConsultationState, Role, UserProfile
from ctxstore.schemacheck import SchemaProblem, check
from ctxstore.tokens import element_json

CONTEXT_VERSION = "1.0.0"
SUPPORTED_MAJOR = 1
_VERSION = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")

_SCHEMA: dict[str, Any] = json.loads(
    resources.files("ctxstore")
    .joinpath(f"context-contract-{CONTEXT_VERSION}.schema.json")
    .read_text(encoding="utf-8")
)
_TIMESTAMP = re.compile(_SCHEMA["$defs"]["Timestamp"]["pattern"])
#: The consultation state's fields at this version, all a 1.0.0 receiver knows.
STATE_FIELDS: tuple[str, ...] = tuple(_SCHEMA["$defs"]["ConsultationState"]["properties"])


class _ContractModel(BaseModel):
    # A receiver ignores fields a newer minor version added.
    model_config = ConfigDict(extra="ignore")


class ContractMessage(_ContractModel):
    role: Role
    content: StrictStr
    turn_id: StrictStr
    #: RFC 3339 with a UTC offset, kept as written so the JSON round-trips byte for byte.
    timestamp: StrictStr

    @field_validator("timestamp")
    @classmethod
    def _rfc_3339(cls, value: str) -> str:
        # search, as the schema's pattern is applied; a newline is refused as the schema does
        if not _TIMESTAMP.search(value) or "\n" in value:
            raise ValueError(f"not an RFC 3339 time with a UTC offset: {value!r}")
        return value


class KnowledgeItem(_ContractModel):
    title: StrictStr
    content: StrictStr
    source: StrictStr
    relevance_score: float


class ContractContext(_ContractModel):
    recent_messages: list[ContractMessage]
    conversation_summary: StrictStr | None = None
    consultation_state: ConsultationState
    user_profile: UserProfile | None = None
    retrieved_knowledge: list[KnowledgeItem] | None = None

    @field_validator("recent_messages", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value  # Go marshals a nil slice as null


class ContractMeta(_ContractModel):
    context_version: StrictStr
    token_budget: int = Field(gt=0)
    included_message_count: int = Field(ge=0)
    summary_version: int = Field(ge=0)


class ContextContract(_ContractModel):
    """The package handed to each LLM call."""

    session_id: StrictStr
    turn_id: StrictStr
    user_message: StrictStr
    context: ContractContext
    meta: ContractMeta

    def to_json(self) -> str:
        """The canonical serialization, the one ``meta.token_budget`` is measured on."""
        return serialize_contract(self)


def _major(version: object) -> int:
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise ContractVersionError(
            f"meta.context_version {version!r} is not a MAJOR.MINOR.PATCH version"
        )
    return int(version.split(".", 1)[0])


def parse_contract(data: str | bytes | dict[str, Any]) -> ContextContract:
    """Receive a contract: check its version, then the JSON Schema, then build it.

    Same major as this code: accepted (unknown newer-minor fields ignored).  Another
    major, or a version that is missing or doesn't parse: ContractVersionError.  Anything
    else the schema refuses: InvalidInputError, saying where.
    """
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as error:
            raise InvalidInputError(f"the contract is not JSON: {error}") from error
    if not isinstance(data, dict):
        raise InvalidInputError("the contract must be a JSON object")
    meta = data.get("meta")
    version = meta.get("context_version") if isinstance(meta, dict) else None
    major = _major(version)
    if major != SUPPORTED_MAJOR:
        raise ContractVersionError(
            f"context_version {version} has major version {major}; this receiver "
            f"understands {SUPPORTED_MAJOR}.x only"
        )
    try:
        document = check(_SCHEMA, data)
    except SchemaProblem as problem:
        raise InvalidInputError(f"invalid Context Contract: {problem}") from None
    except RecursionError:
        raise InvalidInputError("invalid Context Contract: nested too deeply") from None
    try:
        return ContextContract.model_validate(document)
    except ValidationError as error:  # the schema admits nothing the models refuse
        raise InvalidInputError(f"invalid Context Contract: {error}") from error


def contract_json_schema() -> dict[str, Any]:
    """The JSON Schema of the contract, for the Go side to share the type contract; the
    very schema parse_contract checks documents against."""
    return copy.deepcopy(_SCHEMA)


def state_document(state: ConsultationState) -> dict[str, Any]:
    """``state`` as a 1.0.0 contract carries it: the fields of this version only.  A
    receiver may refuse fields it doesn't know (Go's DisallowUnknownFields), so the other
    fields a state stores stay out until a minor version adds them."""
    document = state.document()
    return {name: document[name] for name in STATE_FIELDS if name in document}


# -- the canonical serialization ---------------------------------------------------------------

_RECENT = "\x00recent_messages\x00"
_KNOWLEDGE = "\x00retrieved_knowledge\x00"


def render_array(elements: list[dict[str, Any]]) -> str:
    """``[`` newline, one element per line (``,{...}`` after the first), ``]``."""
    lines = [
        ("," if index else "") + element_json(item) + "\n" for index, item in enumerate(elements)
    ]
    return "[\n" + "".join(lines) + "]"


def serialize_parts(
    skeleton: dict[str, Any],
    recent: list[dict[str, Any]],
    knowledge: list[dict[str, Any]] | None,
) -> str:
    """The contract JSON from its skeleton and its two arrays (see ctxstore/tokens.py).

    The skeleton holds the arrays' places (``context.recent_messages`` and, when
    knowledge is given, ``context.retrieved_knowledge``) with any value; they are
    replaced by placeholders that only a string with NUL characters could produce, which
    no contract text may contain, then the rendered arrays are spliced in.
    """
    context = dict(skeleton["context"])
    context["recent_messages"] = _RECENT
    if knowledge is not None:
        context["retrieved_knowledge"] = _KNOWLEDGE
    else:
        context.pop("retrieved_knowledge", None)
    text = compact_json({**skeleton, "context": context})
    text = text.replace(json.dumps(_RECENT), render_array(recent))
    if knowledge is not None:
        text = text.replace(json.dumps(_KNOWLEDGE), render_array(knowledge))
    return text


_OPTIONAL_CONTEXT = ("conversation_summary", "user_profile", "retrieved_knowledge")


def contract_document(contract: ContextContract) -> dict[str, Any]:
    """The contract as JSON data in field order, optional context parts left out if absent."""
    document = contract.model_dump(mode="json")
    context = document["context"]
    for name in _OPTIONAL_CONTEXT:
        if context.get(name) is None:
            context.pop(name, None)
    return document


def serialize_contract(contract: ContextContract) -> str:
    return serialize_document(contract_document(contract))


def serialize_document(document: dict[str, Any]) -> str:
    """The canonical text of a contract given as JSON data in field order."""
    context = document["context"]
    return serialize_parts(document, context["recent_messages"], context.get("retrieved_knowledge"))


#: The original design document's example, complete (used by tests and the docs).
EXAMPLE: dict[str, Any] = {
    "session_id": "sess_0197a2b4",
    "turn_id": "turn_0197",
    "user_message": "我膝盖有下坠感",
    "context": {
        "recent_messages": [
            {
                "role": "user",
                "content": "我膝盖有下坠感",
                "turn_id": "turn_0196",
                "timestamp": "2026-11-29T08:15:02.123+08:00",
            },
            {
                "role": "assistant",
                "content": "是否伴随疼痛或肿胀？",
                "turn_id": "turn_0196",
                "timestamp": "2026-11-29T08:15:04.481+08:00",
            },
        ],
        "conversation_summary": "用户自述膝盖有下坠感约一周，走路时明显。",
        "consultation_state": {
            "stage": "collecting_details",
            "chief_complaint": "膝盖下坠感",
            "body_parts": ["膝盖"],
            "symptoms": ["下坠感"],
            "duration": "一周",
            "aggravating_factors": ["走路"],
            "pain_level": None,
            "swelling": None,
            "trauma": None,
            "red_flags": [],
            "missing_slots": ["pain_level", "swelling", "trauma"],
            "last_question": "是否伴随疼痛或肿胀？",
            "pending_answer_for": ["pain", "swelling"],
        },
        "user_profile": {
            "age": 34,
            "gender": "female",
            "exercise_habit": "每周跑步三次",
            "known_limitations": [],
        },
        "retrieved_knowledge": [
            {
                "title": "膝关节不稳的常见原因",
                "content": "膝盖打软或下坠感常见于前交叉韧带损伤、半月板损伤或股四头肌无力。",
                "source": "rehab-kb/knee/instability",
                "relevance_score": 0.92,
            }
        ],
    },
    "meta": {
        "context_version": "1.0.0",
        "token_budget": 8000,
        "included_message_count": 2,
        "summary_version": 1,
    },
}
