"""Stored values to models and back: the JSON of messages, summaries, states and
profiles, and the hashes and script replies that hold them.

Messages are written in the current format (plus ``format_version``) under the keys of
the Go struct the store's layout names (formats/layouts.py), so that struct reads them.
Whatever Go wrote loads: any struct's keys, ``null`` for a nil slice (an empty session),
older formats upgraded (docs/legacy-formats.md).  Anything that does not parse is a
CorruptDataError.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ctxstore.errors import CorruptDataError
from ctxstore.formats.documents import load_profile, load_state, load_summary
from ctxstore.formats.layouts import GO_SERVICE, GoLayout
from ctxstore.formats.mapper import FORMAT_KEY
from ctxstore.formats.messages import message_from_document
from ctxstore.models import (
    SUMMARY_FORMAT,
    ConsultationState,
    Message,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage.rules import SummaryDraft

# -- writing -----------------------------------------------------------------------------------


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def messages_json(messages: Sequence[Message], layout: GoLayout = GO_SERVICE) -> str:
    """The messages as one JSON array, in the current format, for ``layout``'s struct."""
    return dumps([layout.document(message, position) for position, message in enumerate(messages)])


def summary_json(draft: SummaryDraft, created_at: datetime) -> str:
    """A summary as a JSON object, without the version the script gives it."""
    return dumps(
        {
            FORMAT_KEY: SUMMARY_FORMAT,
            "text": draft.text,
            "covers_until": draft.covers_until,
            "created_at": created_at.isoformat(),
            "token_count": draft.token_count,
        }
    )


# -- reading -----------------------------------------------------------------------------------


def parse_session_value(raw: bytes | str, session_id: str) -> list[Message]:
    """A stored JSON array of messages, any known format, -> current Messages."""
    documents = parse_json(raw, session_id, "messages")
    if documents is None:  # Go marshals a nil slice as null: its Load reads no messages
        return []
    if not isinstance(documents, list):
        raise CorruptDataError(
            f"expected a JSON array of messages, got {type(documents).__name__}",
            session_id=session_id,
        )
    return [
        message_from_document(document, session_id=session_id, position=position)
        for position, document in enumerate(documents)
    ]


def parse_json(raw: bytes | str, session_id: str | None, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise CorruptDataError(f"{what}: not JSON: {error}", session_id=session_id) from error


def text(value: bytes | str | None) -> str | None:
    # The client may or may not decode responses.
    return value.decode("utf-8") if isinstance(value, bytes) else value


def integer(value: Any, session_id: str | None, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as error:
        raise CorruptDataError(
            f"{what}: {value!r} is not a number", session_id=session_id
        ) from error


def stamp(value: Any, session_id: str | None, what: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(text(value)))
    except ValueError as error:
        raise CorruptDataError(f"{what}: {value!r} is not a time", session_id=session_id) from error
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def parse_summary(raw: bytes | str, session_id: str) -> Summary:
    fields = parse_json(raw, session_id, "summary")
    if not isinstance(fields, dict):
        raise CorruptDataError("summary: not a JSON object", session_id=session_id)
    # The mapper rejects a missing or non-integer format as corrupt.
    format_version: Any = fields.get(FORMAT_KEY)
    return load_summary(fields, format_version, session_id=session_id)


def parse_state(fields: Sequence[Any], session_id: str) -> Versioned[ConsultationState] | None:
    """A state hash's DOCUMENT_FIELDS; None when there is no state."""
    version, updated_at, format_version, document = fields
    if version is None:
        return None
    state = load_state(
        parse_json(document, session_id, "consultation state"),
        integer(format_version, session_id, "consultation state format"),
        session_id=session_id,
    )
    return Versioned(
        state,
        integer(version, session_id, "consultation state version"),
        stamp(updated_at, session_id, "consultation state"),
    )


def parse_state_change(raw: bytes | str, session_id: str) -> StateChange:
    """One entry of the state history list."""
    entry = parse_json(raw, session_id, "state history")
    if not isinstance(entry, dict):
        raise CorruptDataError("state history: not a JSON object", session_id=session_id)
    state = load_state(
        entry.get("document"),
        integer(entry.get(FORMAT_KEY), session_id, "state history format"),
        session_id=session_id,
    )
    return StateChange(
        integer(entry.get("version"), session_id, "state history version"),
        state,
        stamp(entry.get("created_at"), session_id, "state history"),
    )


def parse_profile(fields: Sequence[Any], user_id: str) -> Versioned[UserProfile] | None:
    """A profile hash's DOCUMENT_FIELDS; None when there is no profile."""
    version, updated_at, format_version, document = fields
    if version is None:
        return None
    where = f"user profile of {user_id!r}"
    profile = load_profile(
        parse_json(document, None, where), integer(format_version, None, where), user_id=user_id
    )
    return Versioned(profile, integer(version, None, where), stamp(updated_at, None, where))


@dataclass(frozen=True)
class SessionRead:
    """One session as the read script returned it."""

    messages: list[Message]
    version: int
    user_id: str | None
    created_at: datetime | None
    summary: Summary | None
    state: Versioned[ConsultationState] | None
    profile: Versioned[UserProfile] | None

    def snapshot(self, session_id: str) -> SessionSnapshot:
        return SessionSnapshot(
            session_id=session_id,
            exists=True,
            version=self.version,
            user_id=self.user_id,
            messages=self.messages,
            summary=self.summary,
            state=self.state.value if self.state else None,
            state_version=self.state.version if self.state else 0,
            profile=self.profile.value if self.profile else None,
            profile_version=self.profile.version if self.profile else 0,
        )


def parse_read(reply: Sequence[Any], session_id: str) -> SessionRead | None:
    """The read script's reply; None when there is no session."""
    if not reply:
        return None
    raw, version, user_id, created_at, summary = reply[:5]
    user = text(user_id)
    return SessionRead(
        messages=parse_session_value(raw, session_id),
        version=1 if version is None else integer(version, session_id, "version"),
        user_id=user,
        created_at=None if created_at is None else stamp(created_at, session_id, "session"),
        summary=None if summary is None else parse_summary(summary, session_id),
        state=parse_state(reply[5:9], session_id),
        profile=None if user is None else parse_profile(reply[9:13], user),
    )
