"""The current formats of what ctxstore stores."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictStr,
    ValidationError,
    field_validator,
)

from ctxstore.errors import InvalidMessageError
from ctxstore.textcheck import json_problem, text_problem

Role = Literal["user", "assistant", "system", "tool"]
ROLES: frozenset[str] = frozenset(get_args(Role))

#: The message format this code writes (LEGACY_FORMATS.md: format 2).
MESSAGE_FORMAT = 2


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "message"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


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
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def core_digest(self) -> bytes:
        """SHA-256 of every field but metadata, computed once per instance."""
        cached = self._core_digest
        if cached is None:
            stamp = self.timestamp.isoformat() if self.timestamp is not None else None
            canonical = json.dumps(
                [self.role, self.content, self.turn_id, stamp, self.name],
                ensure_ascii=False,
                separators=(",", ":"),
            )
            cached = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()
            self._core_digest = cached
        return cached

    def digest(self) -> bytes:
        """SHA-256 identifying this message's whole content.

        Metadata is a mutable dict, so its part is recomputed each time (only when present).
        """
        return full_digest(self.core_digest(), self.metadata)


def digest_of(message: Message) -> bytes:
    """``message.digest()`` without pydantic's slow private-attribute lookup.

    Saves call this once per message of the whole list, so it must cost next to nothing
    for messages whose digest is already known.
    """
    private = message.__pydantic_private__
    core = private.get("_core_digest") if private else None
    if core is None:
        core = message.core_digest()
    metadata = message.__dict__["metadata"]
    return core if not metadata else full_digest(core, metadata)


def full_digest(core: bytes, metadata: dict[str, Any] | None) -> bytes:
    if not metadata:
        return core
    encoded = json.dumps(
        metadata, ensure_ascii=False, sort_keys=True, separators=(",", ":")
    ).encode("utf-8", "surrogatepass")
    return hashlib.sha256(core + encoded).digest()


FIELD_NAMES: frozenset[str] = frozenset(Message.model_fields)
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
            "metadata": metadata if metadata is not None else {},
        },
    )
    _set_slot(message, "__pydantic_fields_set__", FIELD_NAMES)
    _set_slot(message, "__pydantic_extra__", None)
    _set_slot(message, "__pydantic_private__", {"_core_digest": core_digest})
    return message
