"""The current formats of what ctxstore stores."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Generic, Literal, Self, TypeVar, get_args

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictStr,
    ValidationError,
    field_serializer,
    field_validator,
)

from ctxstore.errors import InvalidInputError, InvalidMessageError
from ctxstore.jsontext import compact_json
from ctxstore.textcheck import json_problem, text_problem
from ctxstore.timestamps import go_timestamp, nanoseconds_of, parse_timestamp

DocumentT = TypeVar("DocumentT")

Role = Literal["user", "assistant", "system", "tool"]
ROLES: frozenset[str] = frozenset(get_args(Role))

#: The message format this code writes (docs/legacy-formats.md: format 2).
MESSAGE_FORMAT = 2


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "message"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


class ReadOnlyMetadata(dict[str, Any]):
    """The empty metadata of a loaded message: read-only, so a History can trust it.

    Messages are immutable; a loaded message without metadata shares this instance, and
    changing it raises instead of silently diverging from what is stored.  Build a new
    message instead: ``message.model_copy(update={"metadata": {...}})``.
    """

    def _refuse(self, *_: Any, **__: Any) -> None:
        raise TypeError(
            "a loaded message's empty metadata is read-only; "
            "use message.model_copy(update={'metadata': {...}})"
        )

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _refuse  # type: ignore[assignment]
    __ior__ = _refuse  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return {}

    def __copy__(self) -> dict[str, Any]:
        return {}


EMPTY_METADATA: dict[str, Any] = ReadOnlyMetadata()


def _whole_number(value: Any) -> Any:
    # JSON has numbers, not ints: 46.0 and 4.6e1 are the integer 46 (JSON Schema 2020-12
    # counts them as "integer" too), also under strict validation; 46.5 stays refused.
    if type(value) is float and value.is_integer():
        return int(value)
    return value


#: An integer as JSON means it: any number without a fraction, never a string or a bool.
#: Goes after an int's Field constraints (before them, the JSON Schema loses them).
WHOLE_NUMBER = BeforeValidator(_whole_number)


class Message(BaseModel):
    """One message of a conversation: the Context Contract's message plus optional extras.

    Immutable, so the content digest that makes delta saves cheap can be cached.
    ``turn_id`` and ``timestamp`` are optional because older formats have neither.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: StrictStr
    turn_id: StrictStr | None = None
    timestamp: AwareDatetime | None = None
    name: StrictStr | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    _core_digest: bytes | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise InvalidMessageError(_describe(error)) from error

    @classmethod
    def parse(cls, data: Any, *, position: int | None = None) -> Message:
        """Validate a mapping (or a Message) into a Message, raising InvalidMessageError."""
        if isinstance(data, Message):
            return data
        try:
            return cls.model_validate(data)
        except ValidationError as error:
            raise InvalidMessageError(_describe(error), position=position) from error

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update``, a new message validated like any other (pydantic's
        copy would skip validation and keep this message's cached digest, so a save of
        the edited copy would see nothing changed)."""
        if not update:
            return super().model_copy(deep=deep)
        fields = {**self.__dict__, **update}
        return type(self)(**(copy.deepcopy(fields) if deep else fields))

    @field_validator("timestamp", mode="before")
    @classmethod
    def _exact_timestamp(cls, value: Any) -> Any:
        # pydantic would drop digits below the microsecond; Go and isoformat text is read
        # exactly or refused (ctxstore/timestamps.py)
        return parse_timestamp(value) if isinstance(value, str) else value

    @field_serializer("timestamp", when_used="json")
    def _timestamp_as_go_writes_it(self, value: datetime | None) -> str | None:
        # RFC 3339 as Go's MarshalJSON writes it (Z for UTC, the fraction to the
        # nanosecond without trailing zeros): what a Go client wrote, it reads back
        if value is None:
            return None
        try:
            return go_timestamp(value)
        except InvalidMessageError:  # an offset with seconds, which RFC 3339 can't write
            return value.isoformat()

    @field_validator("content", "turn_id", "name")
    @classmethod
    def _storable_text(cls, value: str | None) -> str | None:
        if value is not None:
            problem = text_problem(value)
            if problem:
                raise ValueError(problem)
        return value

    @field_validator("metadata")
    @classmethod
    def _storable_metadata(cls, value: dict[str, Any]) -> dict[str, Any]:
        problem = json_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    def __eq__(self, other: object) -> bool:
        # Compare fields only: the cached digest is not part of a message's identity.
        if not isinstance(other, Message):
            return NotImplemented
        if self.__dict__ != other.__dict__:
            return False
        # datetimes compare instants to the microsecond: the same instant in another UTC
        # offset is another timestamp here (what is stored keeps the offset), and so is one
        # a nanosecond apart (Go's times).
        mine, theirs = self.timestamp, other.timestamp
        return (
            mine is None
            or theirs is None
            or (
                mine.utcoffset() == theirs.utcoffset()
                and nanoseconds_of(mine) == nanoseconds_of(theirs)
            )
        )

    __hash__ = None  # type: ignore[assignment]

    def core_digest(self) -> bytes:
        """SHA-256 of every field but metadata, computed once per instance."""
        # The private dict itself: pydantic's attribute access to it costs microseconds.
        private = self.__pydantic_private__
        cached: bytes | None = private.get("_core_digest") if private is not None else None
        if cached is None:
            fields = self.__dict__
            timestamp = fields["timestamp"]
            stamp = timestamp.isoformat() if timestamp is not None else None
            canonical = compact_json(
                [fields["role"], fields["content"], fields["turn_id"], stamp, fields["name"]]
            )
            cached = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()
            if private is None:
                self._core_digest = cached
            else:
                private["_core_digest"] = cached
        return cached

    def digest(self) -> bytes:
        """SHA-256 identifying this message's whole content.

        Metadata is a mutable dict, so its part is recomputed each time (only when present).
        """
        return digest_of(self)


def digest_of(message: Message) -> bytes:
    """``message.digest()`` without pydantic's slow private-attribute lookup.

    Saves call this once per message of the whole list, so it must cost next to nothing
    for messages whose digest is already known.
    """
    core = core_digest_of(message)
    metadata = message.__dict__["metadata"]
    return core if not metadata else full_digest(core, metadata)


def core_digest_of(message: Message) -> bytes:
    """``message.core_digest()`` without pydantic's slow private-attribute lookup."""
    private = message.__pydantic_private__
    core = private.get("_core_digest") if private else None
    return core if core is not None else message.core_digest()


def full_digest(core: bytes, metadata: dict[str, Any] | None) -> bytes:
    if not metadata:
        return core
    encoded = json.dumps(
        metadata, ensure_ascii=False, sort_keys=True, separators=(",", ":")
    ).encode("utf-8", "surrogatepass")
    return hashlib.sha256(core + encoded).digest()


# A plain set shared by trusted messages: pydantic copies it before any change.
FIELD_NAMES: set[str] = set(Message.model_fields)
_new_instance = object.__new__
_set_slot = object.__setattr__


def construct_trusted(
    *,
    role: str,
    content: str,
    turn_id: str | None,
    timestamp: datetime | None,
    name: str | None,
    metadata: dict[str, Any] | None,
    core_digest: bytes | None,
) -> Message:
    """Build a Message from a row PostgreSQL already constrained, without re-validating.

    Rows in the current format were validated on the way in and the table's CHECK
    constraints hold them to it, so validating 1,000 of them again on every load would
    only cost time.  This fills the instance the way ``model_construct`` does, minus its
    per-call bookkeeping (0.5 us instead of 2.9 us a message).
    """
    message = _new_instance(Message)
    _set_slot(
        message,
        "__dict__",
        {
            "role": role,
            "content": content,
            "turn_id": turn_id,
            "timestamp": timestamp,
            "name": name,
            "metadata": metadata if metadata is not None else EMPTY_METADATA,
        },
    )
    _set_slot(message, "__pydantic_fields_set__", FIELD_NAMES)
    _set_slot(message, "__pydantic_extra__", None)
    _set_slot(message, "__pydantic_private__", {"_core_digest": core_digest})
    return message


# -- consultation documents ---------------------------------------------------------------

#: Formats this code writes (docs/legacy-formats.md).
STATE_FORMAT = 3
SUMMARY_FORMAT = 1
PROFILE_FORMAT = 1


class _Document(BaseModel):
    """A JSON document stored as jsonb: fields this code doesn't know are kept."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    @classmethod
    def parse(cls, data: Any) -> Any:
        """Validate ``data`` (a mapping or an instance), raising InvalidInputError.

        Unknown fields are kept as given, so they must already be plain JSON: serializing
        would turn sets and tuples into lists, NaN into null and int keys into strings, and
        fail with pydantic's own errors on objects it doesn't know, nesting of 255+ levels
        and integers of more than 4,300 digits.  They are checked first, without recursion.
        """
        if isinstance(data, cls):
            data = _dumped(data)
        try:
            document = cls.model_validate(data)
        except ValidationError as error:
            raise InvalidInputError(f"{cls.__name__}: {_describe(error)}") from error
        problem = json_problem(_dumped(document))
        if problem:
            raise InvalidInputError(f"{cls.__name__}: {problem}")
        return document

    def document(self) -> dict[str, Any]:
        """The JSON document as stored, unknown fields included."""
        return self.model_dump(mode="json")


def _dumped(document: _Document) -> dict[str, Any]:
    """``document`` as JSON, or InvalidInputError when its unknown fields are not JSON."""
    kind = type(document).__name__
    for key, value in (document.__pydantic_extra__ or {}).items():
        problem = _plain_json_problem(key, value)
        if problem:
            raise InvalidInputError(f"{kind}: {problem}")
    try:
        return document.model_dump(mode="json")
    except (ValueError, RecursionError) as error:  # PydanticSerializationError is a ValueError
        raise InvalidInputError(f"{kind}: cannot be stored as JSON: {error}") from None


def _plain_json_problem(name: object, value: Any) -> str | None:
    """Why the unknown field ``name`` is not plain JSON, or None (the same rule as message
    metadata, depth counted from the document)."""
    if type(name) is not str:
        return f"a field name of type {type(name).__name__} is not a string"
    problem = text_problem(name)
    if problem:
        return f"$: key {problem}"
    return json_problem(value, depth=1, path=f"$.{name}")


class ConsultationState(_Document):
    """The structured state of a consultation (format 3, the Context Contract example)."""

    stage: StrictStr = Field(min_length=1)
    chief_complaint: StrictStr | None = None
    body_parts: list[StrictStr] = Field(default_factory=list)
    symptoms: list[StrictStr] = Field(default_factory=list)
    duration: StrictStr | None = None
    aggravating_factors: list[StrictStr] = Field(default_factory=list)
    #: Text, as the contract's receivers declare it ("moderate", "7"); a number 0-10 given
    #: as an int is kept as its text (analytics still gets the number: pain_number).
    pain_level: StrictStr | None = None
    swelling: bool | None = None
    trauma: bool | None = None
    red_flags: list[StrictStr] = Field(default_factory=list)
    missing_slots: list[StrictStr] = Field(default_factory=list)
    last_question: StrictStr | None = None
    pending_answer_for: list[StrictStr] = Field(default_factory=list)

    @field_validator(
        "body_parts",
        "symptoms",
        "aggravating_factors",
        "red_flags",
        "missing_slots",
        "pending_answer_for",
        mode="before",
    )
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value  # Go marshals a nil slice as null

    @field_validator("pain_level", mode="before")
    @classmethod
    def _pain_level_text(cls, value: Any) -> Any:
        if type(value) is float and value.is_integer():  # JSON's 7.0 is the number 7
            value = int(value)
        if type(value) is int:
            if not 0 <= value <= 10:
                raise ValueError("a pain level given as a number must be 0-10")
            return str(value)
        return value


def pain_number(pain_level: str | None) -> int | None:
    """The 0-10 number a pain level's text is, if it is one (for the typed column)."""
    text = (pain_level or "").strip()
    if text.isascii() and text.isdigit() and int(text) <= 10:
        return int(text)
    return None


class UserProfile(_Document):
    """What the assistant knows of a user across sessions (the contract's user_profile)."""

    age: Annotated[int, Field(ge=0, le=150), WHOLE_NUMBER] | None = None
    gender: StrictStr | None = None
    exercise_habit: StrictStr | None = None
    known_limitations: list[StrictStr] = Field(default_factory=list)

    @field_validator("known_limitations", mode="before")
    @classmethod
    def _null_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value  # Go marshals a nil slice as null


class Summary(BaseModel):
    """One version of a session's conversation summary."""

    model_config = ConfigDict(frozen=True)

    summary_version: int = Field(ge=1)
    text: StrictStr
    #: Position of the last message the summary covers (-1: none).
    covers_until: int = Field(ge=-1)
    created_at: AwareDatetime
    token_count: int | None = Field(default=None, ge=0)


@dataclass(frozen=True)
class Versioned(Generic[DocumentT]):
    """A stored document with the version that optimistic concurrency checks against."""

    value: DocumentT
    version: int
    updated_at: datetime


@dataclass(frozen=True)
class StateChange:
    """One accepted version of a consultation state, from the history table."""

    version: int
    state: ConsultationState
    created_at: datetime


@dataclass(frozen=True)
class SessionSnapshot:
    """Everything about a session, read from one consistent database snapshot.

    Versions are 0 where there is nothing (a missing session, no summary, ...).
    """

    session_id: str
    exists: bool
    version: int
    user_id: str | None
    messages: list[Message]
    summary: Summary | None
    state: ConsultationState | None
    state_version: int
    profile: UserProfile | None
    profile_version: int

    @property
    def summary_version(self) -> int:
        return self.summary.summary_version if self.summary is not None else 0


# -- a user's sessions, listed ---------------------------------------------------------------


class SessionListing(BaseModel):
    """One session in a listing of its user's sessions (``VersionedStorage.list_sessions``):
    what a "your consultations" screen shows, without the messages."""

    model_config = ConfigDict(frozen=True)

    session_id: str
    #: When the session was first written (the listing's order, newest first), and last
    #: written to (a message write: save or append; a summary or state doesn't move it).
    created_at: AwareDatetime
    updated_at: AwareDatetime
    message_count: int = Field(ge=0)
    #: The current consultation state's stage (None: no state saved).
    stage: str | None = None
    #: The latest summary's version (0: none).
    summary_version: int = Field(default=0, ge=0)
    #: The latest summary's text, opened where sealed: only when the listing was asked
    #: ``with_summaries=True`` and there is a summary; None otherwise.
    summary_text: str | None = None


class SessionPage(BaseModel):
    """One page of a user's sessions, newest first, and where the next one starts."""

    model_config = ConfigDict(frozen=True)

    items: list[SessionListing]
    #: Opaque, URL-safe: pass it back as ``cursor`` for the next page, with the same user
    #: and filters.  None: this page is the last.
    next_cursor: str | None = None
