"""The storage contract every backend honours (DESIGN.md section 1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ctxstore.db.tables import MAX_SESSION_ID_LENGTH
from ctxstore.errors import InvalidMessageError, InvalidSessionIdError, MessageTooLargeError
from ctxstore.models import ROLES, Message, digest_of
from ctxstore.textcheck import json_problem, text_problem, utf8_size_exceeds

MessageInput = Message | Mapping[str, Any]


@runtime_checkable
class ContextStorage(Protocol):
    """Where a session's messages live.

    - ``save`` fully overwrites the session's message list, atomically.
    - ``load`` returns exactly what was saved; ``[]`` for a missing session.
    - ``delete`` removes everything of the session and is idempotent.
    - ``exists`` tells an empty session (saved with ``[]``) from a missing one.
    """

    async def save(self, session_id: str, messages: Sequence[MessageInput]) -> None: ...

    async def load(self, session_id: str) -> list[Message]: ...

    async def delete(self, session_id: str) -> None: ...

    async def exists(self, session_id: str) -> bool: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class Limits:
    """Input limits shared by every backend, so all of them accept the same inputs."""

    max_message_bytes: int = 256 * 1024
    max_messages: int = 200_000
    max_session_id_length: int = MAX_SESSION_ID_LENGTH


DEFAULT_LIMITS = Limits()


def check_session_id(session_id: object, limits: Limits = DEFAULT_LIMITS) -> str:
    if not isinstance(session_id, str):
        raise InvalidSessionIdError(f"session id must be a string, not {type(session_id).__name__}")
    if not session_id:
        raise InvalidSessionIdError("session id must not be empty")
    if len(session_id) > limits.max_session_id_length:
        raise InvalidSessionIdError(
            f"session id is {len(session_id)} characters; the limit is "
            f"{limits.max_session_id_length}"
        )
    problem = text_problem(session_id)
    if problem:
        raise InvalidSessionIdError(f"session id {problem}")
    return session_id


def coerce_messages(messages: object, limits: Limits = DEFAULT_LIMITS) -> list[Message]:
    """Turn the caller's list into validated Messages, or raise before anything is written."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise InvalidMessageError(
            f"messages must be a list of Message, not {type(messages).__name__}"
        )
    if len(messages) > limits.max_messages:
        raise InvalidMessageError(
            f"{len(messages)} messages exceed the limit of {limits.max_messages} per session"
        )
    if all(type(item) is Message for item in messages):
        return list(messages)  # the common case, checked at C speed
    result: list[Message] = []
    for position, item in enumerate(messages):
        if isinstance(item, Message):
            result.append(item)
        elif isinstance(item, Mapping):
            result.append(Message.parse(item, position=position))
        else:
            raise InvalidMessageError(
                f"expected a Message or a mapping, got {type(item).__name__}", position=position
            )
    return result


def check_new_message(message: Message, position: int, limits: Limits = DEFAULT_LIMITS) -> None:
    """Checks for a message about to be written.

    Messages built with the constructor are already valid; this also catches ones built
    with ``model_construct`` and enforces the size limit, which is a storage setting.
    """
    if message.role not in ROLES:
        raise InvalidMessageError(f"unknown role {message.role!r}", position=position)
    for field_name in ("content", "turn_id", "name"):
        value = getattr(message, field_name)
        if value is None and field_name != "content":
            continue
        if not isinstance(value, str):
            raise InvalidMessageError(
                f"{field_name} must be a string, not {type(value).__name__}", position=position
            )
        problem = text_problem(value)
        if problem:
            raise InvalidMessageError(f"{field_name} {problem}", position=position)
    stamp = message.timestamp
    if stamp is not None and (stamp.tzinfo is None or stamp.utcoffset() is None):
        raise InvalidMessageError("timestamp must be timezone-aware", position=position)
    if not isinstance(message.metadata, dict):
        raise InvalidMessageError("metadata must be a mapping", position=position)
    if message.metadata:
        problem = json_problem(message.metadata)
        if problem:
            raise InvalidMessageError(f"metadata {problem}", position=position)
    if utf8_size_exceeds(message.content, limits.max_message_bytes):
        raise MessageTooLargeError(
            f"content is larger than the limit of {limits.max_message_bytes} bytes",
            position=position,
        )


def message_digests(messages: Sequence[Message], limits: Limits = DEFAULT_LIMITS) -> list[bytes]:
    """Each message's digest; a message that cannot be serialized gets a precise error."""
    try:
        return [digest_of(message) for message in messages]
    except (TypeError, ValueError, AttributeError):
        pass  # find which message failed, and why
    digests: list[bytes] = []
    for position, message in enumerate(messages):
        try:
            digests.append(digest_of(message))
        except (TypeError, ValueError, AttributeError) as error:
            check_new_message(message, position, limits)  # raises the precise reason
            raise InvalidMessageError(
                f"cannot be serialized: {error}", position=position
            ) from error
    return digests
