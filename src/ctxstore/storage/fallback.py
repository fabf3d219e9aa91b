"""FallbackStorage: keep answering while the primary is down, lose nothing acknowledged.

A router over two Stores: each call goes to the primary; when it raises
StorageUnavailableError the call goes to the secondary and the session (or user) is
recorded.  Both sides are Stores, so they apply the same rules in the same order: a
value the secondary accepts, the primary accepts too.  Every later call first checks
(at most every ``probe_interval`` seconds) whether the primary answers again; when it
does, each recorded session is reconciled into it before the primary serves again:

- messages written during the outage are merged with a version check.  If the primary
  holds what the secondary extended, the secondary's list is saved; if the primary moved
  on meanwhile (another worker kept reaching it), the messages only the secondary has
  are appended after the primary's, so neither side's acknowledged messages are lost
  and newer primary data is never overwritten;
- a session deleted during the outage is deleted in the primary too;
- a consultation state, summary or profile written during the outage is copied over.

The recorded sessions live in this process: with a secondary that survives a restart
(Redis), call ``reconcile(session_ids)`` after one.  The degraded state is observable:
``degraded``, ``stats`` and log lines on every change.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ctxstore.errors import ConflictError, CtxStoreError, StorageUnavailableError
from ctxstore.models import (
    ConsultationState,
    Message,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage.base import AsyncClosing, MessageInput, SessionReader
from ctxstore.storage.rules import Limits
from ctxstore.storage.store import Store
from ctxstore.tokens import TokenCounter

logger = logging.getLogger("ctxstore.fallback")
Result = TypeVar("Result")
PROBE_SESSION = "__ctxstore_probe__"
Written = Literal["saved", "deleted"]


@dataclass
class FallbackStats:
    """Counters of what the fallback did (observable, e.g. exported as metrics)."""

    failovers: int = 0
    degraded_calls: int = 0
    recoveries: int = 0
    reconciled: int = 0
    merged: int = 0
    reconcile_failures: int = 0
    #: What each session written during an outage still needs in the primary.
    written: dict[str, Written] = field(default_factory=dict)
    #: Sessions whose state or summary, and users whose profile, changed during an outage.
    documents: set[str] = field(default_factory=set)
    profiles: set[str] = field(default_factory=set)

    @property
    def pending(self) -> set[str]:
        """Sessions the primary has yet to receive."""
        return set(self.written) | self.documents


@dataclass(frozen=True)
class ReconcileReport:
    reconciled: int
    merged: int
    failed: dict[str, str]


class FallbackStorage(AsyncClosing):
    """The whole storage contract over a primary (PostgreSQL) and a secondary (Redis, memory)."""

    def __init__(
        self,
        primary: Store,
        secondary: Store,
        *,
        probe_interval: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.primary = primary
        self.secondary = secondary
        self.probe_interval = probe_interval
        self._clock = clock
        self._degraded_since: float | None = None
        self._last_probe = 0.0
        self.stats = FallbackStats()

    @property
    def degraded(self) -> bool:
        """True while calls go to the secondary."""
        return self._degraded_since is not None

    @property
    def active(self) -> Store:
        return self.secondary if self.degraded else self.primary

    @property
    def token_counter(self) -> TokenCounter:
        return self.primary.token_counter

    @property
    def limits(self) -> Limits:
        return self.primary.limits

    async def close(self) -> None:
        await self.primary.close()
        await self.secondary.close()

    # -- messages -----------------------------------------------------------------------

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        return await self._call(
            lambda store: store.save(
                session_id, messages, expected_version=expected_version, user_id=user_id
            ),
            session=session_id,
            written="saved",
        )

    async def append(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        return await self._call(
            lambda store: store.append(
                session_id, messages, expected_version=expected_version, user_id=user_id
            ),
            session=session_id,
            written="saved",
        )

    async def load(self, session_id: str) -> list[Message]:
        return await self._call(lambda store: store.load(session_id))

    async def version(self, session_id: str) -> int:
        return await self._call(lambda store: store.version(session_id))

    async def delete(self, session_id: str) -> None:
        await self._call(
            lambda store: store.delete(session_id), session=session_id, written="deleted"
        )

    async def exists(self, session_id: str) -> bool:
        return await self._call(lambda store: store.exists(session_id))

    # -- documents --------------------------------------------------------------------------

    async def save_summary(
        self,
        session_id: str,
        text: str,
        *,
        covers_until: int,
        token_count: int | None = None,
        expected_version: int | None = None,
    ) -> Summary:
        return await self._call(
            lambda store: store.save_summary(
                session_id,
                text,
                covers_until=covers_until,
                token_count=token_count,
                expected_version=expected_version,
            ),
            document=session_id,
        )

    async def load_summary(
        self, session_id: str, summary_version: int | None = None
    ) -> Summary | None:
        return await self._call(lambda store: store.load_summary(session_id, summary_version))

    async def save_state(
        self,
        session_id: str,
        state: ConsultationState | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        return await self._call(
            lambda store: store.save_state(session_id, state, expected_version=expected_version),
            document=session_id,
        )

    async def load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        return await self._call(lambda store: store.load_state(session_id))

    async def state_history(self, session_id: str) -> list[StateChange]:
        return await self._call(lambda store: store.state_history(session_id))

    async def save_profile(
        self,
        user_id: str,
        profile: UserProfile | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        return await self._call(
            lambda store: store.save_profile(user_id, profile, expected_version=expected_version),
            profile=user_id,
        )

    async def load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        return await self._call(lambda store: store.load_profile(user_id))

    async def snapshot(self, session_id: str) -> SessionSnapshot:
        return await self._call(lambda store: store.snapshot(session_id))

    async def iter_messages(
        self, session_id: str, *, batch_size: int = 1000
    ) -> AsyncGenerator[Message, None]:
        """The serving side's messages, streamed (chosen when the first batch is read)."""
        async with AsyncExitStack() as stack:
            stream = await self._call(
                lambda store: _first_batch(stack, store, session_id, batch_size)
            )
            for message in stream.first:
                yield message
            async for message in stream.rest:
                yield message

    @asynccontextmanager
    async def reader(self, session_id: str) -> AsyncIterator[SessionReader]:
        """The serving side's reader (chosen when it is opened)."""
        async with AsyncExitStack() as stack:
            yield await self._call(
                lambda store: stack.enter_async_context(store.reader(session_id))
            )

    # -- routing ----------------------------------------------------------------------

    async def _call(
        self,
        action: Callable[[Store], Awaitable[Result]],
        *,
        session: str | None = None,
        written: Written | None = None,
        document: str | None = None,
        profile: str | None = None,
    ) -> Result:
        if self.degraded:
            await self._maybe_recover()
        if not self.degraded:
            try:
                return await action(self.primary)
            except StorageUnavailableError as error:
                self._enter_degraded(error)
        self.stats.degraded_calls += 1
        result = await action(self.secondary)
        if session is not None and written is not None:
            self.stats.written[session] = written
        if document is not None:
            self.stats.documents.add(document)
        if profile is not None:
            self.stats.profiles.add(profile)
        return result

    def _enter_degraded(self, error: CtxStoreError) -> None:
        if self._degraded_since is None:
            self._degraded_since = self._clock()
            self._last_probe = self._clock()
            self.stats.failovers += 1
            logger.warning("primary storage unavailable (%s): serving from the secondary", error)

    async def _maybe_recover(self) -> None:
        if self._clock() - self._last_probe < self.probe_interval:
            return
        self._last_probe = self._clock()
        try:
            await self.primary.exists(PROBE_SESSION)
        except StorageUnavailableError:
            return
        report = await self.reconcile()
        if not report.failed:
            outage = self._clock() - (self._degraded_since or self._clock())
            self._degraded_since = None
            self.stats.recoveries += 1
            logger.warning(
                "primary storage is back after %.1f s: reconciled %d sessions (%d merged)",
                outage,
                report.reconciled,
                report.merged,
            )

    # -- reconciliation ---------------------------------------------------------------

    async def reconcile(self, session_ids: Sequence[str] | None = None) -> ReconcileReport:
        """Bring the primary up to date with what the secondary acknowledged."""
        pending: dict[str, Written | None] = dict(self.stats.written)
        for session_id in self.stats.documents:
            pending.setdefault(session_id, None)
        for session_id in session_ids or ():
            pending.setdefault(session_id, "saved")
        reconciled = merged = 0
        failed: dict[str, str] = {}
        for session_id, kind in pending.items():
            try:
                if kind == "deleted":
                    await self.primary.delete(session_id)
                elif kind == "saved":
                    merged += await self._reconcile_messages(session_id)
                if kind != "deleted" and session_id in self.stats.documents:
                    await self._reconcile_documents(session_id)
            except CtxStoreError as error:
                failed[session_id] = str(error)
                self.stats.reconcile_failures += 1
                logger.warning("could not reconcile session %r yet: %s", session_id, error)
                continue
            reconciled += 1
            self.stats.written.pop(session_id, None)
            self.stats.documents.discard(session_id)
        for user_id in list(self.stats.profiles):
            try:
                found = await self.secondary.load_profile(user_id)
                if found is not None:
                    await self.primary.save_profile(user_id, found.value)
            except CtxStoreError as error:
                failed[f"profile {user_id}"] = str(error)
                self.stats.reconcile_failures += 1
                continue
            self.stats.profiles.discard(user_id)
        self.stats.reconciled += reconciled
        self.stats.merged += merged
        return ReconcileReport(reconciled, merged, failed)

    async def _reconcile_messages(self, session_id: str, attempts: int = 5) -> int:
        """Returns 1 when both sides had messages the other lacked (merged), else 0."""
        ours = await self.secondary.load(session_id)
        for _ in range(attempts):
            version = await self.primary.version(session_id)
            theirs = await self.primary.load(session_id)
            common = _common_prefix(theirs, ours)
            if common == len(ours) and version:
                return 0  # the primary already holds everything the secondary has
            if common == len(theirs):
                merged_list, was_merge = ours, 0
            else:
                merged_list, was_merge = [*theirs, *ours[common:]], 1
            try:
                await self.primary.save(session_id, merged_list, expected_version=version)
            except ConflictError:
                continue  # the primary moved while we merged: merge again
            return was_merge
        raise ConflictError(f"session {session_id!r} kept changing while reconciling")

    async def _reconcile_documents(self, session_id: str) -> None:
        """The state and latest summary the secondary acknowledged, copied over."""
        if not await self.primary.exists(session_id):
            return  # nothing to attach them to (deleted meanwhile)
        state = await self.secondary.load_state(session_id)
        if state is not None:
            await self.primary.save_state(session_id, state.value)
        summary = await self.secondary.load_summary(session_id)
        if summary is not None:
            stored = await self.primary.load_summary(session_id)
            if stored is None or (stored.text, stored.covers_until) != (
                summary.text,
                summary.covers_until,
            ):
                await self.primary.save_summary(
                    session_id,
                    summary.text,
                    covers_until=summary.covers_until,
                    token_count=summary.token_count,
                )


@dataclass
class _Stream:
    first: list[Message]
    rest: AsyncGenerator[Message, None]


async def _first_batch(
    stack: AsyncExitStack, store: Store, session_id: str, batch_size: int
) -> _Stream:
    """Open ``store``'s stream and read its first batch: where a failover would happen."""
    stream = store.iter_messages(session_id, batch_size=batch_size)
    stack.push_async_callback(stream.aclose)
    first: list[Message] = []
    async for message in stream:
        first.append(message)
        if len(first) == batch_size:
            break
    return _Stream(first, stream)


def _common_prefix(left: Sequence[Message], right: Sequence[Message]) -> int:
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count
