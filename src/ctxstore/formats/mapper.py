"""The upgrade mapper: every stored format, declared once, and the one loop that lifts it.

Each kind of stored data (messages, summaries, consultation states, user profiles) is a
:class:`FormatKind`: the format this code writes, the steps vN -> vN+1 that lift each
older format one version, and the model that validates the result.  :meth:`FormatKind.load`
is the only upgrade loop, so every kind follows the same rules (docs/legacy-formats.md):

- a format newer than this code knows is an UnsupportedFormatError, never a silent
  downgrade;
- an older format without a step (unknown, or a gap in the chain) is a CorruptDataError;
- a document that does not validate once upgraded is a CorruptDataError;
- both name the stored row: session and position for a message, session and summary
  version for a summary, session for a state, user for a profile.

Fields the code does not know are kept: in a message's metadata, in a state's or
profile's document (those models allow extra fields).

Adding a format: bump the constant in models.py and add its step here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, NoReturn, TypeVar

from pydantic import ValidationError

from ctxstore.errors import CorruptDataError, InvalidInputError, UnsupportedFormatError
from ctxstore.models import (
    MESSAGE_FORMAT,
    PROFILE_FORMAT,
    ROLES,
    STATE_FORMAT,
    SUMMARY_FORMAT,
    ConsultationState,
    Message,
    Summary,
    UserProfile,
)

Document = dict[str, Any]
#: The key a serialized document (in Redis, in imports) or row may carry to name its format.
FORMAT_KEY = "format_version"
Step = Callable[[Document], Document]
ModelT = TypeVar("ModelT")

# DataError itself shows these two in every message; other row keys are labelled here.
_SHOWN_BY_ERROR = frozenset(("session_id", "position"))


@dataclass(frozen=True)
class FormatKind(Generic[ModelT]):
    """One kind of stored data and every format of it this code can read."""

    #: How errors call it ("message", "summary", ...).
    name: str
    #: The format this code writes (a models.py constant).
    current: int
    #: ``steps[n]`` lifts a format-n document to format n + 1; it returns a new dict.
    steps: Mapping[int, Step]
    #: Validates an upgraded document into the model; raises InvalidInputError or
    #: pydantic's ValidationError.
    build: Callable[[Document], ModelT]
    #: The keyword arguments that name a stored row in errors, each with the label shown
    #: before its value ("" for session_id and position, which DataError shows itself).
    row: Mapping[str, str]

    def load(self, document: Any, format_version: int, **where: Any) -> ModelT:
        """Lift ``document`` from ``format_version`` to the current format and validate it.

        ``where`` names the row (exactly the keys of :attr:`row`); it reaches the error's
        details, and session_id/position its attributes.
        """
        if where.keys() != self.row.keys():
            raise TypeError(
                f"a {self.name} row is named by {sorted(self.row)}, not {sorted(where)}"
            )
        self._check_liftable(document, format_version, where)
        try:
            for version in range(format_version, self.current):
                document = self.steps[version](document)
            return self.build(document)
        except InvalidInputError as error:
            self._fail(CorruptDataError, f"does not validate: {error}", where, cause=error)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
                for item in error.errors()
            )
            self._fail(CorruptDataError, f"does not validate: {problems}", where, cause=error)

    def _check_liftable(self, document: Any, format_version: Any, where: Mapping[str, Any]) -> None:
        """Refuse a format this code can't lift to the current one, or a non-object."""
        if not isinstance(format_version, int) or isinstance(format_version, bool):
            self._fail(CorruptDataError, f"format {format_version!r} is not a number", where)
        if format_version > self.current:
            self._fail(
                UnsupportedFormatError,
                f"format {format_version} is newer than this ctxstore knows ({self.current})",
                where,
            )
        if not isinstance(document, dict):
            self._fail(CorruptDataError, f"not a JSON object but {type(document).__name__}", where)
        for version in range(format_version, self.current):
            if version not in self.steps:
                problem = (
                    f"unknown format {format_version}"
                    if version == format_version
                    else f"no upgrade from format {version} to {version + 1}"
                )
                self._fail(CorruptDataError, problem, where)

    def _fail(
        self,
        error_type: type[CorruptDataError] | type[UnsupportedFormatError],
        problem: str,
        where: Mapping[str, Any],
        cause: Exception | None = None,
    ) -> NoReturn:
        named = [
            f"{self.row[key]} {value!r}"
            for key, value in where.items()
            if key not in _SHOWN_BY_ERROR and value is not None
        ]
        subject = " ".join([self.name, *named])
        raise error_type(f"{subject}: {problem}", **where) from cause


# -- messages (docs/legacy-formats.md: formats 0, 1, 2) -------------------------------------

#: The fields of the current Message; anything else in a document moves to metadata.
MESSAGE_FIELDS = frozenset(("role", "content", "name", "turn_id", "timestamp", "metadata"))
# A key names a field whatever its case and underscores: Go writes an untagged struct's
# field names (TurnID), a tagged one's snake_case (turn_id) or camelCase (turnId).
_FIELD_OF_KEY = {name.replace("_", ""): name for name in MESSAGE_FIELDS}


def message_field(key: object) -> str | None:
    """The Message field a serialized message's key names, or None."""
    if not isinstance(key, str):
        return None
    return _FIELD_OF_KEY.get(key.replace("_", "").casefold())


def canonical_message(document: Document) -> Document:
    """Each key that names a field under that field's name; every other key in metadata.

    The field's own name wins over another spelling of it, which then stays in metadata
    (with ``TurnID`` and ``turn_id`` both present, nothing is dropped).  ``null`` metadata
    (Go's nil map) is empty; a key both at the top level and in metadata, with different
    values, is refused rather than one of them lost.  Role values are lower-cased.
    """
    # ctxstore's own keys (the common case) have nothing to move
    fields = document if document.keys() <= MESSAGE_FIELDS else _moved_to_metadata(document)
    role, metadata = fields.get("role"), fields.get("metadata")
    if metadata is None or (isinstance(role, str) and role not in ROLES):
        fields = {**fields, "metadata": {} if metadata is None else metadata}
        if isinstance(role, str):  # roles match without regard to case, in every format
            fields["role"] = role.lower()
    return fields


def _moved_to_metadata(document: Document) -> Document:
    fields: Document = {}
    unknown: Document = {}
    for key, value in document.items():
        field = message_field(key)
        if field is None or (key != field and (field in document or field in fields)):
            unknown[key] = value
        else:
            fields[field] = value
    metadata = fields.get("metadata")
    if unknown and (metadata is None or isinstance(metadata, dict)):
        fields["metadata"] = _merged(metadata or {}, unknown)
    return fields


def _merged(metadata: Document, unknown: Document) -> Document:
    """``metadata`` with the ``unknown`` keys; refused where the two give a key two values."""
    merged = dict(metadata)
    for key, value in unknown.items():
        if key in merged and merged[key] != value:
            raise InvalidInputError(
                f"{key!r} is both a field and a metadata key, with different values"
            )
        merged[key] = value
    return merged


def _message_0_to_1(document: Document) -> Document:
    """Go's encoding/json keys (``Role``, ``TurnID``, ``turnId``...) -> the field names.

    Keys and role values match case-insensitively; keys we do not know move to metadata.
    Turn ids and timestamps, where the Go struct had them, are carried along.
    """
    return canonical_message(document)


def _message_1_to_2(document: Document) -> Document:
    """Format 1 has no turn ids or timestamps: they stay null."""
    return {"turn_id": None, "timestamp": None, **document}


def keep_unknown_in_metadata(document: Document) -> Document:
    """Fields the current Message doesn't have move to metadata instead of being dropped
    (Message reads a timestamp's text exactly: ctxstore/timestamps.py)."""
    return canonical_message(document)


def _build_message(document: Document) -> Message:
    return Message.parse(keep_unknown_in_metadata(document))


MESSAGES: FormatKind[Message] = FormatKind(
    name="message",
    current=MESSAGE_FORMAT,
    steps={0: _message_0_to_1, 1: _message_1_to_2},
    build=_build_message,
    row={"session_id": "", "position": ""},
)


# -- summaries --------------------------------------------------------------------------------


def _build_summary(document: Document) -> Summary:
    # Summary ignores fields it doesn't have: a summary row has no document to keep them in.
    return Summary.model_validate(document)


SUMMARIES: FormatKind[Summary] = FormatKind(
    name="summary",
    current=SUMMARY_FORMAT,
    steps={},
    build=_build_summary,
    row={"session_id": "", "summary_version": "version"},
)


# -- consultation states and user profiles ---------------------------------------------------


def _state_1_to_2(document: Document) -> Document:
    """Format 2 adds aggravating_factors and red_flags (lists), swelling and trauma."""
    return {
        "aggravating_factors": [],
        "swelling": None,
        "trauma": None,
        "red_flags": [],
        **document,
    }


def _state_2_to_3(document: Document) -> Document:
    """Format 3's pain_level is text, as the contract's receivers declare it: a number
    0-10 becomes its text (any other value is left for validation to refuse)."""
    pain = document.get("pain_level")
    if type(pain) is int and 0 <= pain <= 10:
        return {**document, "pain_level": str(pain)}
    return document


def _build_state(document: Document) -> ConsultationState:
    state: ConsultationState = ConsultationState.parse(document)
    return state


def _build_profile(document: Document) -> UserProfile:
    profile: UserProfile = UserProfile.parse(document)
    return profile


STATES: FormatKind[ConsultationState] = FormatKind(
    name="consultation state",
    current=STATE_FORMAT,
    steps={1: _state_1_to_2, 2: _state_2_to_3},
    build=_build_state,
    row={"session_id": ""},
)

PROFILES: FormatKind[UserProfile] = FormatKind(
    name="user profile",
    current=PROFILE_FORMAT,
    steps={},
    build=_build_profile,
    row={"user_id": "of user"},
)

KINDS: tuple[FormatKind[Any], ...] = (MESSAGES, SUMMARIES, STATES, PROFILES)
