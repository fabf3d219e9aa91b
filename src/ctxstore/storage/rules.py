"""Every input rule of the storage contract, written once for every backend.

`Store` (storage/store.py) applies these before a backend sees anything, always in the
same order: session id, user id, expected version, then the payload (messages, summary,
state or profile) and its sizes.  A value one backend accepts, every backend accepts;
a value one rejects, all reject with the same error class, before anything is written.

The rules that depend on what is stored (the version, the number of stored messages,
what a summary may cover) are checked by each backend atomically with its write; the
errors they raise are built here, so they read the same everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ctxstore.errors import (
    ConflictError,
    InputTooLargeError,
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    MessageTooLargeError,
    SessionNotFoundError,
    SessionOwnerError,
    TooManyMessagesError,
)
from ctxstore.models import ROLES, ConsultationState, Message, UserProfile
from ctxstore.textcheck import json_problem, text_problem, utf8_size_exceeds

#: ``expected_version`` meaning "must not exist yet".
NEW_SESSION = 0


@dataclass(frozen=True)
class Limits:
    """Input limits shared by every backend, so all of them accept the same inputs."""

    #: UTF-8 bytes of one message's content.
    max_message_bytes: int = 256 * 1024
    #: UTF-8 bytes of one message's metadata, serialized as compact JSON.
    max_metadata_bytes: int = 64 * 1024
    #: Characters of a message's ``turn_id`` and ``name``.
    max_label_chars: int = 255
    #: UTF-8 bytes of a summary's text.
    max_summary_bytes: int = 256 * 1024
    #: UTF-8 bytes of a consultation state or user profile, serialized as compact JSON.
    max_document_bytes: int = 64 * 1024
    #: Nesting of metadata and documents.
    max_json_depth: int = 32
    #: Messages in one session.
    max_messages: int = 200_000
    #: Characters of a session id or user id.
    max_session_id_length: int = 255


DEFAULT_LIMITS = Limits()


# -- identifiers and versions --------------------------------------------------------------


def check_session_id(session_id: object, limits: Limits = DEFAULT_LIMITS) -> str:
    return _check_id(session_id, "session id", InvalidSessionIdError, limits)


def check_user_id(user_id: object, limits: Limits = DEFAULT_LIMITS) -> str:
    return _check_id(user_id, "user id", InvalidInputError, limits)


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
    """The common arguments of every message write, in the rules' order."""
    check_session_id(session_id, limits)
    if user_id is not None:
        check_user_id(user_id, limits)
    return check_expected_version(expected_version)


def check_limit(limit: object) -> int:
    """A count of newest messages to read: an int >= 0 (0 reads nothing)."""
    if type(limit) is not int or limit < 0:
        raise InvalidInputError(f"limit must be a non-negative int, not {limit!r}")
    return limit


#: Sessions on one page of a user's listing: by default, and at most.
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


def check_page_size(limit: object, name: str = "limit") -> int:
    """Items on one page of a listing: an int from 1 to MAX_PAGE_SIZE."""
    if type(limit) is not int or not 1 <= limit <= MAX_PAGE_SIZE:
        raise InvalidInputError(f"{name} must be an int from 1 to {MAX_PAGE_SIZE}, not {limit!r}")
    return limit


def check_stage_filter(stage: object, limits: Limits = DEFAULT_LIMITS) -> str | None:
    """A listing's stage filter: None, or a stage as a state stores one."""
    if stage is None:
        return None
    if not isinstance(stage, str) or not stage:
        raise InvalidInputError(f"stage must be a non-empty string or None, not {stage!r}")
    if utf8_size_exceeds(stage, limits.max_document_bytes):  # no stored state has it
        raise InputTooLargeError(
            f"stage is larger than a state may be ({limits.max_document_bytes} bytes)"
        )
    problem = text_problem(stage)
    if problem:
        raise InvalidInputError(f"stage {problem}")
    return stage


def check_updated_since(updated_since: object) -> datetime | None:
    """A listing's updated-since filter: None, or a timezone-aware datetime."""
    if updated_since is None:
        return None
    if not isinstance(updated_since, datetime) or updated_since.utcoffset() is None:
        raise InvalidInputError(
            f"updated_since must be a timezone-aware datetime or None, not {updated_since!r}"
        )
    return updated_since


def check_flag(value: object, name: str) -> bool:
    if type(value) is not bool:
        raise InvalidInputError(f"{name} must be True or False, not {value!r}")
    return value


def check_text_label(value: object, name: str, limits: Limits = DEFAULT_LIMITS) -> str:
    """A label (a turn id, a response id): storable text of 1 to ``max_label_chars``."""
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string, not {value!r}")
    problem = text_problem(value)
    if problem:
        raise InvalidInputError(f"{name} {problem}")
    if len(value) > limits.max_label_chars:
        raise InvalidInputError(
            f"{name} is {len(value)} characters; the limit is {limits.max_label_chars}"
        )
    return value


def check_positive(value: object, name: str) -> int:
    if type(value) is not int or not 0 < value <= 2**31 - 1:
        raise InvalidInputError(f"{name} must be a positive int, not {value!r}")
    return value


def check_batch_size(batch_size: object) -> int:
    if type(batch_size) is not int or batch_size < 1:
        raise InvalidInputError(f"batch_size must be a positive int, not {batch_size!r}")
    return batch_size


def check_ttl(ttl: object) -> timedelta | None:
    if ttl is None:
        return None
    if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
        raise InvalidInputError(f"ttl must be a positive timedelta or None, not {ttl!r}")
    return ttl


# -- JSON values ---------------------------------------------------------------------------


def json_bytes(value: Any) -> int:
    """Size of ``value`` as compact UTF-8 JSON (what the limits count)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# -- messages ------------------------------------------------------------------------------


def coerce_messages(
    messages: object, limits: Limits = DEFAULT_LIMITS, *, trusted: int = 0
) -> list[Message]:
    """The caller's list as checked Messages, or a ctxstore error before anything is written.

    ``trusted``: the first ``trusted`` items are messages the backend knows it stored (the
    very same objects, see SessionKnowledge.stored_prefix); they were checked when written.
    """
    if type(messages) is not list and (
        isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence)
    ):
        raise InvalidMessageError(
            f"messages must be a list of Message, not {type(messages).__name__}"
        )
    check_message_count(len(messages), limits)
    # The caller's own list when every item already is a Message (no copy: a backend
    # that keeps messages copies them itself); a new list when items need converting.
    result: list[Message] = messages if isinstance(messages, list) else list(messages)
    for position in range(trusted, len(result)):
        item = result[position]
        if type(item) is not Message:
            if isinstance(item, Message):
                pass
            elif isinstance(item, Mapping):
                if result is messages:
                    result = result[:]
                item = result[position] = Message.parse(item, position=position)
            else:
                raise InvalidMessageError(
                    f"expected a Message or a mapping, got {type(item).__name__}",
                    position=position,
                )
        check_message(item, position, limits)
    return result


def check_message_count(count: int, limits: Limits, stored: int = 0) -> None:
    """A session may hold at most ``limits.max_messages`` (``stored`` + ``count``)."""
    if stored + count > limits.max_messages:
        held = f"{stored} stored and {count} new" if stored else str(count)
        raise TooManyMessagesError(
            f"{held} messages exceed the limit of {limits.max_messages} per session"
        )


def check_message(message: Message, position: int, limits: Limits = DEFAULT_LIMITS) -> None:
    """Everything about one message that a backend must never be asked to store.

    Messages built with the constructor already passed most of this; it also catches ones
    built with ``model_construct`` and enforces the size limits, which are settings.
    """
    if message.role not in ROLES:
        raise InvalidMessageError(f"unknown role {message.role!r}", position=position)
    _check_texts(message, position, limits)
    _check_timestamp(message.timestamp, position)
    _check_metadata(message.metadata, position, limits)
    if utf8_size_exceeds(message.content, limits.max_message_bytes):
        raise MessageTooLargeError(
            f"content is larger than the limit of {limits.max_message_bytes} bytes",
            position=position,
        )


def _check_texts(message: Message, position: int, limits: Limits) -> None:
    """The content, and the labels (turn_id, name) with their length limit."""
    for field_name in ("content", "turn_id", "name"):
        value = getattr(message, field_name)
        if value is None and field_name != "content":
            continue
        if type(value) is not str:
            raise InvalidMessageError(
                f"{field_name} must be a string, not {type(value).__name__}", position=position
            )
        problem = text_problem(value)
        if problem:
            raise InvalidMessageError(f"{field_name} {problem}", position=position)
        if field_name != "content" and len(value) > limits.max_label_chars:
            raise MessageTooLargeError(
                f"{field_name} is {len(value)} characters; the limit is {limits.max_label_chars}",
                position=position,
            )


def _check_metadata(metadata: object, position: int, limits: Limits) -> None:
    if type(metadata) is not dict and not isinstance(metadata, dict):
        raise InvalidMessageError("metadata must be a mapping", position=position)
    if not metadata:
        return
    problem = json_problem(metadata, limits.max_json_depth)
    if problem:
        raise InvalidMessageError(f"metadata {problem}", position=position)
    if json_bytes(metadata) > limits.max_metadata_bytes:
        raise MessageTooLargeError(
            f"metadata is larger than the limit of {limits.max_metadata_bytes} bytes",
            position=position,
        )


_MINUTE = timedelta(minutes=1)


def _check_timestamp(stamp: object, position: int) -> None:
    if stamp is None:
        return
    if not isinstance(stamp, datetime):
        raise InvalidMessageError("timestamp must be a datetime", position=position)
    offset = stamp.utcoffset()
    if offset is None:
        raise InvalidMessageError("timestamp must be timezone-aware", position=position)
    # RFC 3339 (what Go and every JSON peer read and write) has whole-minute offsets: one
    # with seconds could be stored here, but not carried to them unaltered.
    if offset % _MINUTE:
        raise InvalidMessageError(
            "timestamp's UTC offset must be a whole number of minutes", position=position
        )
    if 1 < stamp.year < 9999:
        return  # an offset is less than a day: only the first and last years can overflow
    try:
        stamp.astimezone(UTC)
    except OverflowError as error:
        raise InvalidMessageError(
            f"timestamp {stamp.isoformat()} is outside years 1-9999 in UTC", position=position
        ) from error


# -- summaries and documents -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SummaryDraft:
    """A summary to store, checked: what a backend's ``_save_summary`` writes."""

    text: str
    #: The position of the last message the summary covers (-1: none).
    covers_until: int
    #: The caller's count of the text's tokens (None: not given).
    token_count: int | None


def check_summary(
    text: object, covers_until: object, token_count: object, limits: Limits = DEFAULT_LIMITS
) -> SummaryDraft:
    if not isinstance(text, str):
        raise InvalidInputError(f"summary text must be a string, not {type(text).__name__}")
    problem = text_problem(text)
    if problem:
        raise InvalidInputError(f"summary text {problem}")
    if type(covers_until) is not int or covers_until < -1:
        raise InvalidInputError(f"covers_until must be an int >= -1, not {covers_until!r}")
    if token_count is not None and (type(token_count) is not int or token_count < 0):
        raise InvalidInputError(f"token_count must be a non-negative int, not {token_count!r}")
    if utf8_size_exceeds(text, limits.max_summary_bytes):
        raise InputTooLargeError(
            f"summary text is larger than the limit of {limits.max_summary_bytes} bytes"
        )
    return SummaryDraft(text, covers_until, token_count)


def check_state(state: object, limits: Limits = DEFAULT_LIMITS) -> ConsultationState:
    parsed: ConsultationState = ConsultationState.parse(state)
    _check_document(parsed.document(), "ConsultationState", limits)
    return parsed


def check_profile(profile: object, limits: Limits = DEFAULT_LIMITS) -> UserProfile:
    parsed: UserProfile = UserProfile.parse(profile)
    _check_document(parsed.document(), "UserProfile", limits)
    return parsed


def _check_document(document: dict[str, Any], kind: str, limits: Limits) -> None:
    problem = json_problem(document, limits.max_json_depth)
    if problem:
        raise InvalidInputError(f"{kind}: {problem}")
    if json_bytes(document) > limits.max_document_bytes:
        raise InputTooLargeError(
            f"{kind} is larger than the limit of {limits.max_document_bytes} bytes"
        )


# -- rules that depend on what is stored -----------------------------------------------------


def check_owner(session_id: str, owner: str | None, user_id: str | None) -> None:
    """A write naming ``user_id`` to a session recorded for ``owner`` (None: nobody yet)."""
    if user_id is not None and owner is not None and owner != user_id:
        raise owned_by_another(session_id)


def owned_by_another(session_id: str) -> SessionOwnerError:
    # The owner is not named: the caller may be anyone who knows the session id.
    return SessionOwnerError(
        f"session {session_id!r} belongs to another user; nothing was written (a session "
        "keeps the user it was first written for)",
        session_id=session_id,
    )


def stale_session(session_id: str, current: int, expected: int | None) -> ConflictError:
    return ConflictError.stale(f"session {session_id!r}", current, expected, session_id=session_id)


def stale_summary(session_id: str, current: int, expected: int | None) -> ConflictError:
    return ConflictError.stale(
        f"summary of {session_id!r}", current, expected, session_id=session_id
    )


def stale_state(session_id: str, current: int, expected: int | None) -> ConflictError:
    return ConflictError.stale(f"state of {session_id!r}", current, expected, session_id=session_id)


def stale_profile(user_id: str, current: int, expected: int | None) -> ConflictError:
    return ConflictError.stale(f"profile of {user_id!r}", current, expected)


def refuse_summary(
    session_id: str,
    *,
    message_count: int | None,
    latest: int,
    covers_until: int,
    expected: int | None,
) -> None:
    """Raise why a summary can't be stored, in the one order every backend uses:
    missing session, stale summary version, covers_until past the stored messages."""
    if message_count is None:
        raise SessionNotFoundError(session_id=session_id)
    if expected is not None and expected != latest:
        raise stale_summary(session_id, latest, expected)
    if covers_until >= message_count:
        raise InvalidInputError(
            f"covers_until {covers_until} is past the session's {message_count} messages"
        )
