"""In-memory storage for tests and local development; same contract as PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ctxstore.errors import ConflictError, InvalidInputError, SessionNotFoundError
from ctxstore.models import (
    ConsultationState,
    Message,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage.base import (
    DEFAULT_LIMITS,
    NEW_SESSION,
    AsyncClosing,
    Limits,
    MessageInput,
    SessionHead,
    StoredMessage,
    check_expected_version,
    check_new_message,
    check_session_id,
    check_summary_input,
    check_user_id,
    check_write,
    coerce_messages,
)
from ctxstore.tokens import TokenCounter


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Session:
    messages: list[Message]
    version: int
    expires_at: float | None
    created_at: datetime = field(default_factory=_now)
    user_id: str | None = None
    summaries: list[Summary] = field(default_factory=list)
    state: Versioned[ConsultationState] | None = None
    history: list[StateChange] = field(default_factory=list)


class MemoryStorage(AsyncClosing):
    """Sessions in a dict behind an asyncio lock: the reference implementation.

    Every operation runs under one lock, so each is atomic and the version checks are
    exact.  ``ttl_seconds`` bounds how long an untouched session lives, so a long-running
    dev server cannot leak memory; expired sessions behave as missing and are swept on
    write.  Stored values are deep copies: a caller mutating its objects later changes
    nothing here.
    """

    def __init__(
        self,
        *,
        ttl_seconds: float | None = None,
        limits: Limits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self._sessions: dict[str, _Session] = {}
        self._profiles: dict[str, Versioned[UserProfile]] = {}
        self._lock = asyncio.Lock()
        self._ttl = ttl_seconds
        self._limits = limits
        self._clock = clock
        self.token_counter = token_counter or TokenCounter()

    async def close(self) -> None:
        async with self._lock:
            self._sessions.clear()
            self._profiles.clear()

    def __len__(self) -> int:
        return len(self._sessions)

    # -- helpers (call with the lock held) ----------------------------------------------

    def _live(self, session_id: str) -> _Session | None:
        entry = self._sessions.get(session_id)
        if entry is not None and entry.expires_at is not None and entry.expires_at <= self._clock():
            del self._sessions[session_id]
            return None
        return entry

    def _sweep(self) -> None:
        if self._ttl is None:
            return
        now = self._clock()
        for key in [k for k, e in self._sessions.items() if e.expires_at and e.expires_at <= now]:
            del self._sessions[key]

    def _expiry(self) -> float | None:
        return self._clock() + self._ttl if self._ttl is not None else None

    @staticmethod
    def _check_version(session_id: str, current: int, expected: int | None) -> None:
        if expected is not None and expected != current:
            raise ConflictError.stale(
                f"session {session_id!r}", current, expected, session_id=session_id
            )

    def _validated(self, messages: Sequence[MessageInput], offset: int = 0) -> list[Message]:
        validated = coerce_messages(messages, self._limits)
        for position, message in enumerate(validated):
            check_new_message(message, offset + position, self._limits)
        return [message.model_copy(deep=True) for message in validated]

    def _existing(self, session_id: str) -> _Session:
        entry = self._live(session_id)
        if entry is None:
            raise SessionNotFoundError(session_id=session_id)
        return entry

    # -- messages -------------------------------------------------------------------------

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        expected = check_write(session_id, expected_version, user_id, self._limits)
        stored = self._validated(messages)
        async with self._lock:
            self._sweep()
            entry = self._live(session_id)
            self._check_version(session_id, entry.version if entry else NEW_SESSION, expected)
            if entry is None:
                entry = _Session(messages=[], version=0, expires_at=None)
                self._sessions[session_id] = entry
            entry.messages = stored
            entry.version += 1
            entry.expires_at = self._expiry()
            if user_id is not None:
                entry.user_id = user_id
            return entry.version

    async def append(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        expected = check_write(session_id, expected_version, user_id, self._limits)
        async with self._lock:
            self._sweep()
            entry = self._live(session_id)
            self._check_version(session_id, entry.version if entry else NEW_SESSION, expected)
            added = self._validated(messages, len(entry.messages) if entry else 0)
            if len(added) + (len(entry.messages) if entry else 0) > self._limits.max_messages:
                raise InvalidInputError(f"more than {self._limits.max_messages} messages")
            if entry is None:
                entry = _Session(messages=[], version=0, expires_at=None)
                self._sessions[session_id] = entry
            entry.messages.extend(added)
            entry.version += 1
            entry.expires_at = self._expiry()
            if user_id is not None:
                entry.user_id = user_id
            return entry.version

    async def load(self, session_id: str) -> list[Message]:
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            if entry is None:
                return []
            return [message.model_copy(deep=True) for message in entry.messages]

    async def version(self, session_id: str) -> int:
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            return entry.version if entry else 0

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id, self._limits)
        async with self._lock:
            self._sessions.pop(session_id, None)

    async def exists(self, session_id: str) -> bool:
        check_session_id(session_id, self._limits)
        async with self._lock:
            return self._live(session_id) is not None

    # -- summaries --------------------------------------------------------------------------

    async def save_summary(
        self,
        session_id: str,
        text: str,
        *,
        covers_until: int,
        token_count: int | None = None,
        expected_version: int | None = None,
    ) -> Summary:
        check_session_id(session_id, self._limits)
        check_summary_input(text, covers_until, token_count)
        expected = check_expected_version(expected_version)
        async with self._lock:
            entry = self._existing(session_id)
            latest = entry.summaries[-1].summary_version if entry.summaries else 0
            if expected is not None and expected != latest:
                raise ConflictError.stale(
                    f"summary of {session_id!r}", latest, expected, session_id=session_id
                )
            if covers_until >= len(entry.messages):
                raise InvalidInputError(
                    f"covers_until {covers_until} is past the session's "
                    f"{len(entry.messages)} messages"
                )
            summary = Summary(
                summary_version=latest + 1,
                text=text,
                covers_until=covers_until,
                created_at=_now(),
                token_count=token_count,
            )
            entry.summaries.append(summary)
            return summary

    async def load_summary(
        self, session_id: str, summary_version: int | None = None
    ) -> Summary | None:
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            if entry is None or not entry.summaries:
                return None
            if summary_version is None:
                return entry.summaries[-1]
            for summary in entry.summaries:
                if summary.summary_version == summary_version:
                    return summary
            return None

    # -- consultation state -----------------------------------------------------------------

    async def save_state(
        self,
        session_id: str,
        state: ConsultationState | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        check_session_id(session_id, self._limits)
        parsed: ConsultationState = ConsultationState.parse(state)
        expected = check_expected_version(expected_version)
        async with self._lock:
            entry = self._existing(session_id)
            current = entry.state.version if entry.state else 0
            self._check_version(session_id, current, expected)
            now = _now()
            stored = parsed.model_copy(deep=True)
            entry.state = Versioned(stored, current + 1, now)
            entry.history.append(StateChange(current + 1, stored.model_copy(deep=True), now))
            return current + 1

    async def load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            if entry is None or entry.state is None:
                return None
            state = entry.state
            return Versioned(state.value.model_copy(deep=True), state.version, state.updated_at)

    async def state_history(self, session_id: str) -> list[StateChange]:
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            return list(entry.history) if entry else []

    # -- user profiles ----------------------------------------------------------------------

    async def save_profile(
        self,
        user_id: str,
        profile: UserProfile | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        check_user_id(user_id, self._limits)
        parsed: UserProfile = UserProfile.parse(profile)
        expected = check_expected_version(expected_version)
        async with self._lock:
            current = self._profiles.get(user_id)
            version = current.version if current else 0
            if expected is not None and expected != version:
                raise ConflictError.stale(f"profile of {user_id!r}", version, expected)
            self._profiles[user_id] = Versioned(parsed.model_copy(deep=True), version + 1, _now())
            return version + 1

    async def load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        check_user_id(user_id, self._limits)
        async with self._lock:
            current = self._profiles.get(user_id)
            if current is None:
                return None
            return Versioned(
                current.value.model_copy(deep=True), current.version, current.updated_at
            )

    # -- context assembly ------------------------------------------------------------------

    @asynccontextmanager
    async def reader(self, session_id: str) -> AsyncIterator[MemorySessionReader]:
        """Reads on a snapshot of the session taken on entry."""
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            snapshot = (
                None
                if entry is None
                else _Session(
                    messages=list(entry.messages),
                    version=entry.version,
                    expires_at=entry.expires_at,
                    created_at=entry.created_at,
                    user_id=entry.user_id,
                    summaries=list(entry.summaries),
                    state=entry.state,
                )
            )
            profiles = dict(self._profiles)
        yield MemorySessionReader(snapshot, profiles, self.token_counter)

    # -- snapshot -----------------------------------------------------------------------------

    async def snapshot(self, session_id: str) -> SessionSnapshot:
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            if entry is None:
                return SessionSnapshot(session_id, False, 0, None, [], None, None, 0, None, 0)
            profile = self._profiles.get(entry.user_id) if entry.user_id else None
            return SessionSnapshot(
                session_id=session_id,
                exists=True,
                version=entry.version,
                user_id=entry.user_id,
                messages=[message.model_copy(deep=True) for message in entry.messages],
                summary=entry.summaries[-1] if entry.summaries else None,
                state=entry.state.value.model_copy(deep=True) if entry.state else None,
                state_version=entry.state.version if entry.state else 0,
                profile=profile.value.model_copy(deep=True) if profile else None,
                profile_version=profile.version if profile else 0,
            )


class MemorySessionReader:
    """SessionReader over a snapshot of one MemoryStorage session."""

    def __init__(
        self,
        entry: _Session | None,
        profiles: dict[str, Versioned[UserProfile]],
        counter: TokenCounter,
    ) -> None:
        self._entry = entry
        self._profiles = profiles
        self._counter = counter

    async def head(self) -> SessionHead:
        entry = self._entry
        if entry is None:
            return SessionHead(False, 0, 0, None, None)
        return SessionHead(
            True, entry.version, len(entry.messages), entry.created_at, entry.user_id
        )

    async def latest_summary(self) -> Summary | None:
        return self._entry.summaries[-1] if self._entry and self._entry.summaries else None

    async def state(self) -> Versioned[ConsultationState] | None:
        if self._entry is None or self._entry.state is None:
            return None
        state = self._entry.state
        return Versioned(state.value.model_copy(deep=True), state.version, state.updated_at)

    async def profile(self, user_id: str) -> Versioned[UserProfile] | None:
        return self._profiles.get(user_id)

    async def newest(
        self, before: int, limit: int, token_budget: int | None = None
    ) -> list[StoredMessage]:
        if self._entry is None:
            return []
        messages = self._entry.messages
        stop = min(before, len(messages))
        positions = range(stop - 1, max(stop - limit, 0) - 1, -1)
        return [
            StoredMessage(
                position,
                messages[position].model_copy(deep=True),
                self._counter.message_cost(messages[position]),
            )
            for position in positions
        ]

    async def span(self, start: int, stop: int) -> list[Message]:
        if self._entry is None:
            return []
        return [message.model_copy(deep=True) for message in self._entry.messages[start:stop]]

    async def token_total(self, after: int) -> tuple[int, int]:
        if self._entry is None:
            return 0, 0
        tail = self._entry.messages[after + 1 :]
        tokens = 0
        for message in tail:
            cost = self._counter.message_cost(message)
            tokens += cost if cost is not None else len(message.content) + 16
        return len(tail), tokens
