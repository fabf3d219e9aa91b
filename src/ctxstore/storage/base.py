"""The storage contract every backend honours (docs/storage-contract.md): the Go
service's ContextStorage protocol, the SessionReader protocol, and what the operations
return.

The rules every backend applies live in storage/rules.py; the operations themselves,
VersionedStorage, in storage/store.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from ctxstore.models import (
    ConsultationState,
    Message,
    Summary,
    UserProfile,
    Versioned,
)

# Re-exported for code written against the protocols; defined once in rules.py.
from ctxstore.storage.rules import DEFAULT_LIMITS, NEW_SESSION, Limits, check_session_id

__all__ = [
    "DEFAULT_LIMITS",
    "NEW_SESSION",
    "AsyncClosing",
    "Backups",
    "ContextStorage",
    "Erased",
    "ErasureReceipt",
    "Limits",
    "MessageInput",
    "SessionHead",
    "SessionReader",
    "StoredMessage",
    "Vacuumed",
    "check_session_id",
]

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


@runtime_checkable
class ContextStorage(Protocol):
    """Where a session's messages live: the Go service's original interface.

    See docs/storage-contract.md.

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
class Erased:
    """What a backend removed for one user (a hook's result; see ErasureReceipt).

    ``data_keys``: the data keys destroyed with the rows; ``master_key_ids``: the master
    keys they were wrapped under (none: no key was destroyed, nothing erased was sealed)."""

    session_ids: tuple[str, ...] = ()
    messages: int = 0
    summaries: int = 0
    states: int = 0
    state_changes: int = 0
    profile: bool = False
    data_keys: int = 0
    master_key_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Vacuumed:
    """What became of the clean-up after an erasure (a hook's result; see ErasureReceipt)."""

    done: bool
    note: str
    follow_up: str | None = None


@dataclass(frozen=True)
class Backups:
    """What the backups taken before an erasure still hold (a hook's result)."""

    note: str
    readable_until: datetime | None = None


@dataclass(frozen=True)
class ErasureReceipt:
    """What ``erase_user`` removed, and when, and what is left where: for the requester
    and the audit log.

    - ``vacuumed``: after the erasure committed, ANALYZE and VACUUM ran on every table it
      touched, so the table statistics (``pg_stats``) and dead row versions no longer
      hold the user's ids and text; ``vacuum_note`` says what ran, or why not (also "not
      applicable" on a backend without either); ``vacuum_follow_up`` is what an operator
      still has to run, exactly (None: nothing).
    - ``backups``: what backups taken before ``erased_at`` still hold of the user and
      for how long they stay readable; ``backups_readable_until``: the date the last of
      them expires, by the configured backup retention (None: not known).
    """

    user_id: str
    sessions: int
    messages: int
    summaries: int
    states: int
    state_changes: int
    profile: bool
    erased_at: datetime
    seconds: float
    vacuumed: bool
    vacuum_note: str
    vacuum_follow_up: str | None
    backups: str
    backups_readable_until: datetime | None

    def summary(self) -> str:
        lines = [
            f"erased user {self.user_id!r}: {self.sessions:,} sessions, {self.messages:,} "
            f"messages, {self.summaries:,} summaries, {self.states:,} states "
            f"({self.state_changes:,} state changes), "
            f"{'the profile' if self.profile else 'no profile'}; "
            f"at {self.erased_at.isoformat(timespec='seconds')} in {self.seconds:.2f} s",
            f"vacuum: {self.vacuum_note}",
        ]
        if self.vacuum_follow_up is not None:
            lines.append(f"follow-up: {self.vacuum_follow_up}")
        lines.append(f"backups: {self.backups}")
        return "\n".join(lines)


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
    """A message with its position and stored contract cost (None: count it now).

    ``token_encoding`` labels the count with the encoding and element form it was made with
    (``TokenCounter.count_label``): a reader counting another way recounts the message.
    """

    position: int
    message: Message
    token_count: int | None
    token_encoding: str | None = None


@dataclass(frozen=True)
class WindowHint:
    """The first chunk a reader's caller will ask ``newest`` for (positions below the
    head's count): ``limit`` messages within ``token_budget``."""

    limit: int
    token_budget: int


class SnapshotMoved(Exception):
    """Raised by a reader that read its head and first chunk in one statement, outside a
    transaction, when a later read finds the session at another version: the caller
    reads again with a head read without a window (one transaction from the start).
    Never reaches a ctxstore caller."""


class SessionReader(Protocol):
    """Reads of one session that all see the same snapshot of the database.

    What context assembly needs, and no more: the newest messages a window takes are
    read in chunks, newest first, so a 10,000-message session costs what its window
    costs.
    """

    async def head(self, window: WindowHint | None = None) -> SessionHead:
        """The session's head.  ``window``: a backend may read that first chunk with
        it; then a later read may raise ``SnapshotMoved`` (see there)."""
        ...

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
