"""The storage contract every backend honours (DESIGN.md section 1)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from ctxstore.db.tables import MAX_SESSION_ID_LENGTH
from ctxstore.errors import (
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    MessageTooLargeError,
)
from ctxstore.models import (
    ROLES,
    ConsultationState,
    Message,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
    digest_of,
)
from ctxstore.textcheck import json_problem, text_problem, utf8_size_exceeds

MessageInput = Message | Mapping[str, Any]


class AsyncClosing:
    """``async with storage:`` closes it on the way out (shared by every backend)."""

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()


#: ``expected_version`` meaning "the session must not exist yet".
NEW_SESSION = 0


@runtime_checkable
class ContextStorage(Protocol):
    """Where a session's messages live (the original Go design's contract).

    - ``save`` fully overwrites the session's message list, atomically, and returns the
      session's new version.  With ``expected_version`` it succeeds only if the stored
      version equals it (``NEW_SESSION``: must not exist yet), else ``ConflictError``;
      without it the last write wins.
    - ``load`` returns exactly what was saved; ``[]`` for a missing session.
    - ``delete`` removes everything of the session and is idempotent.
    - ``exists`` tells an empty session (saved with ``[]``) from a missing one.
    """

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int: ...

    async def load(self, session_id: str) -> list[Message]: ...

    async def delete(self, session_id: str) -> None: ...

    async def exists(self, session_id: str) -> bool: ...

    async def close(self) -> None: ...


@dataclass(frozen=True)
class SessionHead:
    """A session's row as a reader sees it (``exists`` False: the rest is zero/None)."""

    exists: bool
    version: int
    message_count: int
    created_at: datetime | None
    user_id: str | None


@dataclass(frozen=True)
class StoredMessage:
    """A message with its position and stored contract cost (None: count it now)."""

    position: int
    message: Message
    token_count: int | None


class SessionReader(Protocol):
    """Reads of one session that all see the same snapshot of the database.

    What context assembly needs, and no more: the newest messages a window takes are
    read in chunks, newest first, so a 10,000-message session costs what its window
    costs.
    """

    async def head(self) -> SessionHead: ...

    async def latest_summary(self) -> Summary | None: ...

    async def state(self) -> Versioned[ConsultationState] | None: ...

    async def profile(self, user_id: str) -> Versioned[UserProfile] | None: ...

    async def newest(
        self, before: int, limit: int, token_budget: int | None = None
    ) -> list[StoredMessage]:
        """Up to ``limit`` messages at positions below ``before``, newest first.

        ``token_budget`` is a hint: a backend may stop after the first message whose
        stored count no longer fits it (that message included).
        """
        ...

    async def span(self, start: int, stop: int) -> list[Message]:
        """The messages at positions ``start`` (inclusive) to ``stop`` (exclusive)."""
        ...

    async def token_total(self, after: int) -> tuple[int, int]:
        """(messages, tokens) after position ``after``; uncounted legacy messages are
        estimated from their length."""
        ...


@runtime_checkable
class VersionedStorage(ContextStorage, Protocol):
    """The whole consultation: versions, appends, summaries, state, profiles, snapshots."""

    async def version(self, session_id: str) -> int:
        """The session's version; 0 when it does not exist."""
        ...

    async def append(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        """Add messages after the stored ones (creating the session); the new version."""
        ...

    async def save_summary(
        self,
        session_id: str,
        text: str,
        *,
        covers_until: int,
        token_count: int | None = None,
        expected_version: int | None = None,
    ) -> Summary:
        """Store the next summary version (``expected_version``: the latest one seen)."""
        ...

    async def load_summary(
        self, session_id: str, summary_version: int | None = None
    ) -> Summary | None: ...

    async def save_state(
        self,
        session_id: str,
        state: ConsultationState | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int: ...

    async def load_state(self, session_id: str) -> Versioned[ConsultationState] | None: ...

    async def state_history(self, session_id: str) -> list[StateChange]: ...

    async def save_profile(
        self,
        user_id: str,
        profile: UserProfile | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int: ...

    async def load_profile(self, user_id: str) -> Versioned[UserProfile] | None: ...

    async def snapshot(self, session_id: str) -> SessionSnapshot: ...

    def reader(self, session_id: str) -> AbstractAsyncContextManager[SessionReader]:
        """A SessionReader on one consistent snapshot, for context assembly."""
        ...


@dataclass(frozen=True)
class Limits:
    """Input limits shared by every backend, so all of them accept the same inputs."""

    max_message_bytes: int = 256 * 1024
    max_messages: int = 200_000
    max_session_id_length: int = MAX_SESSION_ID_LENGTH


DEFAULT_LIMITS = Limits()


def check_session_id(session_id: object, limits: Limits = DEFAULT_LIMITS) -> str:
    return _check_id(session_id, "session id", InvalidSessionIdError, limits)


def check_user_id(user_id: object, limits: Limits = DEFAULT_LIMITS) -> str:
    return _check_id(user_id, "user id", InvalidInputError, limits)


def check_expected_version(expected_version: object) -> int | None:
    if expected_version is None:
        return None
    if type(expected_version) is not int or expected_version < 0:
        raise InvalidInputError(
            f"expected_version must be a non-negative int or None, not {expected_version!r}"
        )
    return expected_version


def check_write(
    session_id: object, expected_version: object, user_id: object, limits: Limits
) -> int | None:
    """The common arguments of save and append; returns the expected version."""
    check_session_id(session_id, limits)
    if user_id is not None:
        check_user_id(user_id, limits)
    return check_expected_version(expected_version)


def _check_id(value: object, what: str, error: type[InvalidInputError], limits: Limits) -> str:
    if not isinstance(value, str):
        raise error(f"{what} must be a string, not {type(value).__name__}")
    if not value:
        raise error(f"{what} must not be empty")
    if len(value) > limits.max_session_id_length:
        raise error(
            f"{what} is {len(value)} characters; the limit is {limits.max_session_id_length}"
        )
    problem = text_problem(value)
    if problem:
        raise error(f"{what} {problem}")
    return value


def check_summary_input(text: object, covers_until: object, token_count: object) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(f"summary text must be a string, not {type(text).__name__}")
    problem = text_problem(text)
    if problem:
        raise InvalidInputError(f"summary text {problem}")
    if type(covers_until) is not int or covers_until < -1:
        raise InvalidInputError(f"covers_until must be an int >= -1, not {covers_until!r}")
    if token_count is not None and (type(token_count) is not int or token_count < 0):
        raise InvalidInputError(f"token_count must be a non-negative int, not {token_count!r}")
    return text


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
