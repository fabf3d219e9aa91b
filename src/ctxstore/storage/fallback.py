"""FallbackStorage: keep answering while the primary is down, lose nothing acknowledged.

When the primary raises StorageUnavailableError, the call goes to the secondary and the
session is recorded.  Every later call first checks (at most every ``probe_interval``
seconds) whether the primary answers again; when it does, each recorded session is
reconciled into it before the primary serves again:

- written during the outage: the secondary's messages are merged into the primary with
  a version check.  If the primary holds what the secondary extended, the secondary's
  list is saved; if the primary moved on meanwhile (another worker kept reaching it),
  the messages only the secondary has are appended after the primary's, so neither
  side's acknowledged messages are lost and newer primary data is never overwritten;
- deleted during the outage: deleted in the primary too.

The recorded sessions live in this process: with a secondary that survives a restart
(Redis), call ``reconcile(session_ids)`` after one.  The degraded state is observable:
``degraded``, ``stats`` and log lines on every change.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from ctxstore.errors import ConflictError, CtxStoreError, StorageUnavailableError
from ctxstore.models import Message
from ctxstore.storage.base import AsyncClosing, ContextStorage, MessageInput

logger = logging.getLogger("ctxstore.fallback")
Result = TypeVar("Result")
PROBE_SESSION = "__ctxstore_probe__"


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
    written: dict[str, Literal["saved", "deleted"]] = field(default_factory=dict)

    @property
    def pending(self) -> set[str]:
        """Sessions the primary has yet to receive."""
        return set(self.written)


@dataclass(frozen=True)
class ReconcileReport:
    reconciled: int
    merged: int
    failed: dict[str, str]


class FallbackStorage(AsyncClosing):
    """A ContextStorage over a primary (PostgreSQL) and a secondary (Redis, memory)."""

    def __init__(
        self,
        primary: ContextStorage,
        secondary: ContextStorage,
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

    async def close(self) -> None:
        await self.primary.close()
        await self.secondary.close()

    # -- the contract -----------------------------------------------------------------

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        async def on(storage: ContextStorage) -> int:
            return await storage.save(
                session_id, messages, expected_version=expected_version, user_id=user_id
            )

        return await self._call(session_id, on, written="saved")

    async def load(self, session_id: str) -> list[Message]:
        async def on(storage: ContextStorage) -> list[Message]:
            return await storage.load(session_id)

        return await self._call(session_id, on)

    async def delete(self, session_id: str) -> None:
        async def on(storage: ContextStorage) -> None:
            await storage.delete(session_id)

        await self._call(session_id, on, written="deleted")

    async def exists(self, session_id: str) -> bool:
        async def on(storage: ContextStorage) -> bool:
            return await storage.exists(session_id)

        return await self._call(session_id, on)

    # -- routing ----------------------------------------------------------------------

    async def _call(
        self,
        session_id: str,
        action: Callable[[ContextStorage], Awaitable[Result]],
        *,
        written: Literal["saved", "deleted"] | None = None,
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
        if written is not None:
            self.stats.written[session_id] = written
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
        pending = dict(self.stats.written)
        for session_id in session_ids or ():
            pending.setdefault(session_id, "saved")
        reconciled = merged = 0
        failed: dict[str, str] = {}
        for session_id, kind in pending.items():
            try:
                if kind == "deleted":
                    await self.primary.delete(session_id)
                else:
                    merged += await self._reconcile_one(session_id)
            except CtxStoreError as error:
                failed[session_id] = str(error)
                self.stats.reconcile_failures += 1
                logger.warning("could not reconcile session %r yet: %s", session_id, error)
                continue
            reconciled += 1
            self.stats.written.pop(session_id, None)
        self.stats.reconciled += reconciled
        self.stats.merged += merged
        return ReconcileReport(reconciled, merged, failed)

    async def _reconcile_one(self, session_id: str, attempts: int = 5) -> int:
        """Returns 1 when both sides had messages the other lacked (merged), else 0."""
        ours = await self.secondary.load(session_id)
        version_of: Any = getattr(self.primary, "version", None)
        for _ in range(attempts):
            version = await version_of(session_id) if version_of else None
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


def _common_prefix(left: Sequence[Message], right: Sequence[Message]) -> int:
    count = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        count += 1
    return count
