"""Which side serves a FallbackStorage, and the switches between them.

Healthy: the primary serves.  Degraded: the secondary serves and writes are journaled.
The switch to degraded removes copies an earlier recovery left; the switch back replays
the journal (storage/replay.py), closes the gate for new writes while the last entries
drain, and only then lets the primary serve, so no acknowledged write is left behind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from ctxstore.errors import CtxStoreError, StorageUnavailableError
from ctxstore.storage.journal import Journal
from ctxstore.storage.replay import Replayer, ReplayReport
from ctxstore.storage.store import Store

logger = logging.getLogger("ctxstore.fallback")
PROBE_SESSION = "__ctxstore_probe__"


@dataclass
class FallbackStats:
    """Counters of what the fallback did (observable, e.g. exported as metrics)."""

    failovers: int = 0
    degraded_calls: int = 0
    recoveries: int = 0
    #: Writes recorded in the journal, replayed into the primary, refused by it.
    journaled: int = 0
    replayed: int = 0
    quarantined: int = 0
    #: Sessions the primary changed during an outage (merged by the journal's policy).
    moved_on: int = 0
    #: Secondary copies removed after a replay.
    cleaned: int = 0


class Sides:
    def __init__(
        self,
        primary: Store,
        secondary: Store,
        journal: Journal,
        *,
        probe_interval: float,
        clock: Callable[[], float],
    ) -> None:
        self.primary, self.secondary, self.journal = primary, secondary, journal
        self.probe_interval = probe_interval
        self.stats = FallbackStats()
        self._clock = clock
        self._replayer = Replayer(primary, journal)
        self._degraded_since: float | None = None
        self._last_probe = 0.0
        self._started = False
        #: Held while switching sides (failover cleanup, replay, recovery).
        self._switch = asyncio.Lock()
        #: Cleared while the last journal entries drain: new writes wait for the switch.
        self._open = asyncio.Event()
        self._open.set()
        #: Degraded writes between the secondary and the journal.
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @property
    def degraded(self) -> bool:
        return self._degraded_since is not None

    async def ready(self, *, writing: bool) -> None:
        """Before each call: find a journal left from before, try to recover, and (for a
        write) wait while the last journal entries drain."""
        if not self._started:
            async with self._switch:
                if not self._started:
                    await self._adopt_journal()
                    self._started = True
        if self.degraded and not self._switch.locked():
            await self._maybe_recover()
        if writing:
            await self._open.wait()

    @asynccontextmanager
    async def journaling(self) -> AsyncIterator[None]:
        """Around a degraded write: the switch back waits until it is journaled."""
        self._in_flight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    async def _adopt_journal(self) -> None:
        left = await self.journal.size()
        if left:
            logger.warning(
                "the fallback journal holds %d writes from before: serving from the "
                "secondary until they are replayed",
                left,
            )
            self._degraded_since = self._clock()
            self._last_probe = self._clock() - self.probe_interval

    async def fail_over(self, error: CtxStoreError) -> None:
        async with self._switch:
            if self._degraded_since is not None:
                return
            # Copies an earlier recovery could not remove must not be read in this outage.
            await self._remove_copies()
            self._degraded_since = self._clock()
            self._last_probe = self._clock()
            self.stats.failovers += 1
            logger.warning("primary storage unavailable (%s): serving from the secondary", error)

    async def _maybe_recover(self) -> None:
        if self._clock() - self._last_probe < self.probe_interval:
            return
        async with self._switch:
            if not self.degraded:
                return
            self._last_probe = self._clock()
            try:
                await self.primary.exists(PROBE_SESSION)
                await self._recover()
            except StorageUnavailableError as error:
                logger.info("primary storage still unavailable: %s", error)

    async def _recover(self) -> None:
        """Replay the journal, pause writes for its last entries, switch, remove copies."""
        report = await self._replay()
        if report.remaining:
            return
        self._open.clear()
        try:
            await self._idle.wait()  # degraded writes already past the gate get journaled
            report = await self._replay()
            if report.remaining or await self.journal.size():
                return
            outage = self._clock() - (self._degraded_since or self._clock())
            self._degraded_since = None
            self._replayer.finished()
        finally:
            self._open.set()
        self.stats.recoveries += 1
        logger.warning(
            "primary storage is back after %.1f s: journal replayed (%d writes so far)",
            outage,
            self.stats.replayed,
        )
        try:
            await self._remove_copies()
        except StorageUnavailableError as error:
            logger.warning("secondary copies stay until the next failover: %s", error)

    async def _replay(self) -> ReplayReport:
        report = await self._replayer.drain()
        self.stats.replayed += report.replayed
        self.stats.quarantined += report.quarantined
        self.stats.moved_on += report.moved_on
        return report

    async def _remove_copies(self) -> None:
        copies = await self.journal.copies()
        for copy in sorted(copies):
            kind, _, key = copy.partition(":")
            if kind == "profile":
                await self.secondary.delete_profile(key)
            else:
                await self.secondary.delete(key)
        await self.journal.drop_copies(copies)
        self.stats.cleaned += len(copies)

    async def reconcile(self) -> ReplayReport:
        """Replay now; switch back when the journal is empty.  Raises
        StorageUnavailableError when the primary doesn't answer."""
        await self.ready(writing=False)
        async with self._switch:
            if self.degraded:
                self._last_probe = self._clock()
                await self.primary.exists(PROBE_SESSION)
                await self._recover()
            else:
                await self._replay()
        return ReplayReport(
            replayed=self.stats.replayed,
            quarantined=self.stats.quarantined,
            moved_on=self.stats.moved_on,
            remaining=await self.journal.size(),
        )
