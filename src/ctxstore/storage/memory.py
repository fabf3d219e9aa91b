"""In-memory storage for tests and local development: the reference backend.

Only stores and fetches: every input rule is applied by Store (storage/store.py) before a
hook here runs, and the rules that depend on stored data raise the errors rules.py builds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ctxstore.errors import ConflictError, SessionNotFoundError
from ctxstore.models import (
    EMPTY_METADATA,
    ConsultationState,
    Message,
    SessionListing,
    SessionPage,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage import rules
from ctxstore.storage.base import Erased
from ctxstore.storage.bundle import (
    Bundled,
    BundledMessages,
    BundledSession,
    BundledState,
    BundledStateChange,
    BundledSummary,
)
from ctxstore.storage.journal import MemoryJournal
from ctxstore.storage.listing import ListingQuery, page_of
from ctxstore.storage.rules import DEFAULT_LIMITS, NEW_SESSION, Limits, SummaryDraft
from ctxstore.storage.snapshot import SessionCopy, SnapshotReader
from ctxstore.storage.store import Store
from ctxstore.tokens import TokenCounter


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Session:
    messages: list[Message]
    version: int
    expires_at: float | None
    created_at: datetime = field(default_factory=_now)
    #: The last message write (as PostgreSQL's sessions.updated_at).
    updated_at: datetime = field(default_factory=_now)
    user_id: str | None = None
    summaries: list[Summary] = field(default_factory=list)
    state: Versioned[ConsultationState] | None = None
    history: list[StateChange] = field(default_factory=list)


def _copies(messages: list[Message]) -> list[Message]:
    # Messages are frozen but their metadata dicts are not (except the shared read-only
    # empty one): callers never share ours.
    return [
        message if message.metadata is EMPTY_METADATA else message.model_copy(deep=True)
        for message in messages
    ]


class MemoryStorage(Store):
    """Sessions in a dict behind an asyncio lock.

    Every operation runs under one lock, so each is atomic and the version checks are
    exact.  ``ttl`` bounds how long an untouched session lives, so a long-running dev
    server cannot leak memory; expired sessions behave as missing and are swept on write.
    """

    def __init__(
        self,
        *,
        ttl: timedelta | None = None,
        limits: Limits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
        token_counter: TokenCounter | None = None,
    ) -> None:
        super().__init__(limits=limits, ttl=ttl, token_counter=token_counter)
        self._sessions: dict[str, _Session] = {}
        self._profiles: dict[str, Versioned[UserProfile]] = {}
        self._journals: dict[str, MemoryJournal] = {}
        self._lock = asyncio.Lock()
        self._clock = clock

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
        if self.ttl is None:
            return
        now = self._clock()
        for key in [k for k, e in self._sessions.items() if e.expires_at and e.expires_at <= now]:
            del self._sessions[key]

    def _expiry(self) -> float | None:
        return self._clock() + self.ttl.total_seconds() if self.ttl is not None else None

    def _writable(self, session_id: str, expected: int | None, user_id: str | None) -> _Session:
        """The live session (created when missing) once the owner and version checks passed."""
        self._sweep()
        entry = self._live(session_id)
        rules.check_owner(session_id, entry.user_id if entry else None, user_id)
        current = entry.version if entry else NEW_SESSION
        if expected is not None and expected != current:
            raise rules.stale_session(session_id, current, expected)
        if entry is None:
            entry = _Session(messages=[], version=0, expires_at=None)
            self._sessions[session_id] = entry
        return entry

    def _wrote(self, entry: _Session, user_id: str | None, *, changed: bool = True) -> int:
        if entry.user_id is None:
            entry.user_id = user_id
        entry.version += 1 if changed else 0  # saving the stored list again is no change
        entry.expires_at = self._expiry()
        entry.updated_at = _now()
        return entry.version

    def _existing(self, session_id: str) -> _Session:
        entry = self._live(session_id)
        if entry is None:
            raise SessionNotFoundError(session_id=session_id)
        return entry

    # -- messages -------------------------------------------------------------------------

    async def _save(
        self,
        session_id: str,
        messages: list[Message],
        expected: int | None,
        user_id: str | None,
    ) -> int:
        stored = _copies(messages)
        async with self._lock:
            entry = self._writable(session_id, expected, user_id)
            changed = entry.version == 0 or entry.messages != stored
            entry.messages = stored
            return self._wrote(entry, user_id, changed=changed)

    async def _append(
        self, session_id: str, messages: list[Message], expected: int | None, user_id: str | None
    ) -> int:
        added = _copies(messages)
        async with self._lock:
            live = self._live(session_id)
            rules.check_message_count(len(added), self.limits, len(live.messages) if live else 0)
            entry = self._writable(session_id, expected, user_id)
            entry.messages = [*entry.messages, *added]
            return self._wrote(entry, user_id)

    async def _load(self, session_id: str) -> list[Message]:
        async with self._lock:
            entry = self._live(session_id)
            return _copies(entry.messages) if entry is not None else []

    async def _version(self, session_id: str) -> int:
        async with self._lock:
            entry = self._live(session_id)
            return entry.version if entry else 0

    async def _delete(self, session_id: str) -> None:
        async with self._lock:
            self._sessions.pop(session_id, None)

    async def _exists(self, session_id: str) -> bool:
        async with self._lock:
            return self._live(session_id) is not None

    # -- summaries --------------------------------------------------------------------------

    async def _save_summary(
        self, session_id: str, draft: SummaryDraft, expected: int | None
    ) -> Summary:
        async with self._lock:
            entry = self._live(session_id)
            latest = entry.summaries[-1].summary_version if entry and entry.summaries else 0
            count = len(entry.messages) if entry is not None else None
            if (
                entry is None
                or (expected is not None and expected != latest)
                or (draft.covers_until >= len(entry.messages))
            ):
                rules.refuse_summary(
                    session_id,
                    message_count=count,
                    latest=latest,
                    covers_until=draft.covers_until,
                    expected=expected,
                )
                raise AssertionError("refuse_summary raises")  # pragma: no cover
            summary = Summary(
                summary_version=latest + 1,
                text=draft.text,
                covers_until=draft.covers_until,
                created_at=_now(),
                token_count=draft.token_count,
            )
            entry.summaries.append(summary)
            return summary

    async def _load_summary(self, session_id: str, summary_version: int | None) -> Summary | None:
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

    async def _save_state(
        self, session_id: str, state: ConsultationState, expected: int | None
    ) -> int:
        async with self._lock:
            entry = self._existing(session_id)
            current = entry.state.version if entry.state else 0
            if expected is not None and expected != current:
                raise rules.stale_state(session_id, current, expected)
            now = _now()
            stored = state.model_copy(deep=True)
            entry.state = Versioned(stored, current + 1, now)
            entry.history.append(StateChange(current + 1, stored.model_copy(deep=True), now))
            return current + 1

    async def _load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        async with self._lock:
            entry = self._live(session_id)
            if entry is None or entry.state is None:
                return None
            state = entry.state
            return Versioned(state.value.model_copy(deep=True), state.version, state.updated_at)

    async def _state_history(self, session_id: str) -> list[StateChange]:
        async with self._lock:
            entry = self._live(session_id)
            return list(entry.history) if entry else []

    # -- user profiles ----------------------------------------------------------------------

    async def _save_profile(self, user_id: str, profile: UserProfile, expected: int | None) -> int:
        async with self._lock:
            current = self._profiles.get(user_id)
            version = current.version if current else 0
            if expected is not None and expected != version:
                raise rules.stale_profile(user_id, version, expected)
            self._profiles[user_id] = Versioned(profile.model_copy(deep=True), version + 1, _now())
            return version + 1

    async def _delete_profile(self, user_id: str) -> None:
        async with self._lock:
            self._profiles.pop(user_id, None)

    async def _erase_user(self, user_id: str) -> Erased:
        async with self._lock:
            doomed = {sid: e for sid, e in self._sessions.items() if e.user_id == user_id}
            for session_id in doomed:
                del self._sessions[session_id]
            return Erased(
                session_ids=tuple(doomed),
                messages=sum(len(e.messages) for e in doomed.values()),
                summaries=sum(len(e.summaries) for e in doomed.values()),
                states=sum(e.state is not None for e in doomed.values()),
                state_changes=sum(len(e.history) for e in doomed.values()),
                profile=self._profiles.pop(user_id, None) is not None,
            )

    def open_journal(self, name: str) -> MemoryJournal:
        return self._journals.setdefault(name, MemoryJournal())

    async def _load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        async with self._lock:
            current = self._profiles.get(user_id)
            if current is None:
                return None
            return Versioned(
                current.value.model_copy(deep=True), current.version, current.updated_at
            )

    # -- a user's sessions ------------------------------------------------------------------

    async def _list_sessions(self, query: ListingQuery) -> SessionPage:
        """Sorts the user's live sessions each time: a test and development store, not
        one whose cost must stay flat."""
        async with self._lock:
            now = self._clock()
            found = sorted(
                (
                    (entry.created_at, session_id, entry)
                    for session_id, entry in self._sessions.items()
                    if _listed(entry, session_id, query, now)
                ),
                key=lambda found: found[:2],
                reverse=True,
            )
            items = [_listing(s, e, query) for _, s, e in found[: query.limit]]
            return page_of(query, items, more=len(found) > query.limit)

    # -- a user's bundle --------------------------------------------------------------------

    async def _import_user(self, user_id: str, records: AsyncIterator[Bundled]) -> None:
        """The bundle staged whole (this store holds everything in memory anyway), then
        added under the lock once nothing of it exists here."""
        staged: dict[str, _Session] = {}
        profile: Versioned[UserProfile] | None = None
        async for record in records:
            if isinstance(record, Versioned):
                profile = record
            else:
                _stage(staged, record, self._expiry())
        async with self._lock:
            self._refuse_existing(user_id, staged)
            self._sessions.update(staged)
            if profile is not None:
                self._profiles[user_id] = profile

    def _refuse_existing(self, user_id: str, staged: dict[str, _Session]) -> None:
        """ConflictError when the user or one of ``staged``'s sessions is here already."""
        self._sweep()
        if user_id in self._profiles or any(
            entry.user_id == user_id for entry in self._sessions.values()
        ):
            raise ConflictError(f"import: user {user_id!r} already exists; nothing was imported")
        for session_id in staged:
            if self._live(session_id) is not None:
                raise ConflictError(
                    f"import: session {session_id!r} already exists; nothing was imported",
                    session_id=session_id,
                )
        for entry in staged.values():
            entry.user_id = user_id

    # -- context assembly ------------------------------------------------------------------

    @asynccontextmanager
    async def _reader(self, session_id: str) -> AsyncIterator[SnapshotReader]:
        """Reads on a copy of the session taken on entry."""
        async with self._lock:
            entry = self._live(session_id)
            copy = (
                None
                if entry is None
                else SessionCopy(
                    version=entry.version,
                    messages=list(entry.messages),
                    created_at=entry.created_at,
                    user_id=entry.user_id,
                    summary=entry.summaries[-1] if entry.summaries else None,
                    state=entry.state,
                )
            )
            profiles = dict(self._profiles)

        async def profile(user_id: str) -> Versioned[UserProfile] | None:
            return profiles.get(user_id)

        yield SnapshotReader(copy, self.token_counter, profile)

    # -- snapshot -----------------------------------------------------------------------------

    async def _snapshot(self, session_id: str) -> SessionSnapshot:
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
                messages=_copies(entry.messages),
                summary=entry.summaries[-1] if entry.summaries else None,
                state=entry.state.value.model_copy(deep=True) if entry.state else None,
                state_version=entry.state.version if entry.state else 0,
                profile=profile.value.model_copy(deep=True) if profile else None,
                profile_version=profile.version if profile else 0,
            )


def _listed(entry: _Session, session_id: str, query: ListingQuery, now: float) -> bool:
    """Whether ``entry`` is in ``query``'s listing (the rules of sessions.sql's
    list_sessions, on a live session)."""
    after = query.after
    return (
        entry.user_id == query.user_id
        and (entry.expires_at is None or entry.expires_at > now)
        and (after is None or (entry.created_at, session_id) < (after.created_at, after.session_id))
        and (query.updated_since is None or entry.updated_at >= query.updated_since)
        and (
            query.stage is None
            or (entry.state is not None and entry.state.value.stage == query.stage)
        )
    )


def _listing(session_id: str, entry: _Session, query: ListingQuery) -> SessionListing:
    latest = entry.summaries[-1] if entry.summaries else None
    return SessionListing(
        session_id=session_id,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
        message_count=len(entry.messages),
        stage=entry.state.value.stage if entry.state is not None else None,
        summary_version=latest.summary_version if latest is not None else 0,
        summary_text=latest.text if latest is not None and query.with_summaries else None,
    )


def _stage(staged: dict[str, _Session], record: Bundled, expires_at: float | None) -> None:
    """Add a bundle's record (not the profile) to the sessions being imported."""
    if isinstance(record, BundledSession):
        staged[record.session_id] = _Session(
            messages=[],
            version=record.version,
            expires_at=expires_at,
            created_at=record.created_at,
            updated_at=record.updated_at,
        )
        return
    assert not isinstance(record, Versioned)
    entry = staged[record.session_id]
    if isinstance(record, BundledMessages):
        entry.messages.extend(record.messages)
    elif isinstance(record, BundledSummary):
        entry.summaries.append(record.summary)
    elif isinstance(record, BundledState):
        entry.state = record.state
    elif isinstance(record, BundledStateChange):
        entry.history.append(record.change)
