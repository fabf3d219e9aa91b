"""What a bundle holds, as the backends' import hooks receive it (checked already), and
what ``import_user`` returns."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from ctxstore.models import ConsultationState, Message, StateChange, Summary, UserProfile, Versioned


@dataclass(frozen=True, slots=True)
class BundledSession:
    """A session's record: it belongs to the bundle's user; its messages follow it."""

    session_id: str
    version: int
    created_at: datetime
    updated_at: datetime
    message_count: int


@dataclass(frozen=True, slots=True)
class BundledMessages:
    """Consecutive messages of the session before them, from position ``start``."""

    session_id: str
    start: int
    messages: list[Message]


@dataclass(frozen=True, slots=True)
class BundledSummary:
    session_id: str
    summary: Summary


@dataclass(frozen=True, slots=True)
class BundledState:
    session_id: str
    state: Versioned[ConsultationState]


@dataclass(frozen=True, slots=True)
class BundledStateChange:
    session_id: str
    change: StateChange


#: A record of the bundle: the profile is the Versioned[UserProfile] itself.
Bundled = (
    Versioned[UserProfile]
    | BundledSession
    | BundledMessages
    | BundledSummary
    | BundledState
    | BundledStateChange
)


@dataclass(frozen=True)
class ImportReceipt:
    """What ``import_user`` restored, and of which bundle."""

    user_id: str
    sessions: int
    messages: int
    summaries: int
    states: int
    state_changes: int
    profile: bool
    #: The bundle's size and the SHA-256 of all its bytes (what ``sha256sum`` says).
    bytes: int
    sha256: str
    seconds: float

    def summary(self) -> str:
        return (
            f"imported user {self.user_id!r}: {self.sessions:,} sessions, "
            f"{self.messages:,} messages, {self.summaries:,} summaries, {self.states:,} "
            f"states, {self.state_changes:,} state changes, "
            f"{'a' if self.profile else 'no'} profile ({self.bytes:,} bytes, sha256 "
            f"{self.sha256}) in {self.seconds:.1f} s"
        )
