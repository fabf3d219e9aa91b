"""Which side serves each key of a FallbackStorage, and the switches between them.

A key is a session (``session:<id>``) or a user's profile (``profile:<id>``); the order
that matters is each key's own.  Three modes:

- *healthy*: the primary serves everything and the journal is empty;
- *degraded*: the primary failed; the secondary serves everything, writes are journaled;
- *recovering*: the primary answers again.  A key with journal entries still pending is
  served by the secondary until its entries are replayed; every other key is served by
  the primary.  A background task replays the journal in order, and a write to a key
  with pending entries first replays that key's entries itself, so the journal only
  shrinks and writers wait for their own key only.  When a key's last entry is replayed
  its secondary copy is removed; when no key is pending, the store is healthy again.

Each key's secondary writes, journal records and replays hold that key's lock, so a
key's writes reach the primary in the order they were acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from itertools import islice
from typing import Literal

from ctxstore.errors import ConflictError, CtxStoreError, StorageUnavailableError
from ctxstore.keyed_locks import KeyedLocks
from ctxstore.storage.journal import Durability, Entry, Journal, Operation
from ctxstore.storage.replay import Outcome, Replayer, ReplayReport
from ctxstore.storage.store import Store

logger = logging.getLogger("ctxstore.fallback")
PROBE_SESSION = "__ctxstore_probe__"
#: Sessions whose primary version the fallback remembers (for the merge policy's count).
SEEN_VERSIONS = 10_000
#: Pending entries of one key read from the journal at a time.
DRAIN_BATCH = 200
Mode = Literal["healthy", "degraded", "recovering"]
#: What FallbackStorage does when the journal can lose acknowledged entries: refuse the
#: degraded writes (StorageUnavailableError), or journal them anyway, saying so.
JournalLoss = Literal["refuse", "accept"]
#: How long reconcile() replays by default before it returns what remains.
RECONCILE_WITHIN = 60.0
#: Lost entry ids kept in FallbackStats.lost_entries (the count goes on).
LOST_KEPT = 1000


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
    #: Secondary copies removed after their key was replayed.
    cleaned: int = 0
    #: Journal entries this process recorded that vanished before they were replayed (the
    #: secondary lost them: a Redis crash without a durable AOF), and "entry id key" of each.
    lost: int = 0
    lost_entries: list[str] = field(default_factory=list)
    #: What an acknowledged journal entry survives, as last checked (at each outage).
    journal: str = "not checked yet"
    #: Writes refused because the journal could not keep them (nothing acknowledged).
    refused: int = 0
    #: Journal entries of calls told they failed (the journal's reply never came), found
    #: and removed before the key took another write.
    discarded: int = 0


class Sides:
    def __init__(
        self,
        primary: Store,
        secondary: Store,
        journal: Journal,
        *,
        probe_interval: float,
        clock: Callable[[], float],
        journal_loss: JournalLoss = "refuse",
    ) -> None:
        self.primary, self.secondary, self.journal = primary, secondary, journal
        self.journal_loss = journal_loss
        #: Checked before the first journaled write of each outage.
        self._durability: Durability | None = None
        self.probe_interval = probe_interval
        self.stats = FallbackStats()
        self.mode: Mode = "healthy"
        self._clock = clock
        self._replayer = Replayer(primary, journal)
        self._since = 0.0
        self._last_probe = 0.0
        self._started = False
        self._switch = asyncio.Lock()
        self._locks = KeyedLocks()
        #: Journal entry ids not yet replayed, per key, oldest first.
        self._pending: dict[str, deque[str]] = {}
        #: Secondary writes in progress per key (journaled when they finish).
        self._writing: dict[str, int] = {}
        self._seen: OrderedDict[str, int] = OrderedDict()
        #: Keys with a journal write whose reply never came: key -> that write's id.  The
        #: key takes no other write until the entry is found and removed (its caller was
        #: told the write failed, so it must never be replayed after the caller's next).
        self._unanswered: dict[str, str] = {}
        #: Pending session keys whose secondary copy began with an append: it holds the
        #: outage's messages only, not the primary's earlier ones.
        self._partial: set[str] = set()
        self._task: asyncio.Task[None] | None = None

    # -- routing ----------------------------------------------------------------------

    def serves_secondary(self, key: str) -> bool:
        if self.mode == "degraded":
            return True
        return self.mode == "recovering" and (key in self._pending or key in self._writing)

    async def ready(self) -> None:
        """Before each call: adopt a journal left from before; start replay when due."""
        if not self._started:
            async with self._switch:
                if not self._started:
                    await self._adopt()
                    self._started = True
        due = self._clock() - self._last_probe >= self.probe_interval
        if self.mode == "degraded" and self._task is None and due:
            self._last_probe = self._clock()
            self._task = asyncio.create_task(self._recover())

    @asynccontextmanager
    async def secondary_write(self, key: str, *, uncertain: bool) -> AsyncIterator[bool]:
        """Hold ``key``; yields True when the write must go to the secondary (journaled
        with ``record``), False when the primary serves the key now.  A write to a key
        whose entries are pending while the primary answers replays them first."""
        async with self._locks.hold(key):
            if self.mode == "recovering" and key in self._pending and not uncertain:
                try:
                    await self._drain_key(key)
                except StorageUnavailableError as error:
                    await self.fail_over(error)
                except ConflictError as error:
                    logger.warning("replay of %s paused: %s", key, error)
            if not uncertain and not self.serves_secondary(key):
                yield False
                return
            self._writing[key] = self._writing.get(key, 0) + 1
            try:
                yield True
            finally:
                self._writing[key] -= 1
                if not self._writing[key]:
                    del self._writing[key]

    async def require_durable(self) -> None:
        """Before a degraded write: the journal keeps it, or the write is refused.  The
        journal's home is asked at the first journaled write of each outage."""
        if self._durability is None:
            found = await self.journal.durability()
            self.stats.journal = found.how
            if found.can_lose:
                if self.journal_loss == "accept":
                    logger.error(
                        "the fallback journal can lose acknowledged writes (%s): journaling "
                        "anyway, as journal_loss='accept' asks",
                        found.how,
                    )
                else:
                    logger.error("the fallback journal can't keep writes (%s)", found.how)
            self._durability = found
        found = self._durability
        if found.can_lose and self.journal_loss != "accept":
            self.stats.refused += 1
            raise StorageUnavailableError(
                f"the primary storage is unavailable and the fallback journal can't keep "
                f"an acknowledged write: {found.how}; nothing was written.  Make the "
                "secondary durable, or pass journal_loss='accept' to FallbackStorage to "
                "journal anyway, knowing a crash of the secondary loses those writes"
            )

    async def record(self, key: str, operation: Operation) -> None:
        """Journal a write the secondary accepted (within ``secondary_write``)."""
        try:
            entry_id = await self.journal.record(operation)
        except StorageUnavailableError:
            self._unanswered[key] = operation.write_id  # it may be in the journal
            raise
        if operation.kind == "append" and key not in self._pending:
            self._partial.add(key)
        elif operation.kind in ("save", "delete"):
            self._partial.discard(key)  # the copy is the whole session now
        self._pending.setdefault(key, deque()).append(entry_id)
        self.stats.journaled += 1

    async def settle_unanswered(self, key: str) -> None:
        """Before ``key`` takes a write: remove the entry of an earlier write to it whose
        journal reply never came (its caller was told it failed).  Raises
        StorageUnavailableError while the journal can't be asked: the key waits."""
        write_id = self._unanswered.get(key)
        if write_id is None:
            return
        async with self._locks.hold(key):
            if key not in self._unanswered:
                return
            entry_id = await self.journal.find(write_id)
            if entry_id is not None:
                await self._replayer.remove([entry_id])
                queue = self._pending.get(key)
                if queue is not None and entry_id in queue:
                    queue.remove(entry_id)
                self.stats.discarded += 1
                logger.error(
                    "journal entry %s of %s discarded: the journal never answered its write, "
                    "so its caller was told it failed",
                    entry_id,
                    key,
                )
            del self._unanswered[key]

    def saw(self, session_id: str, version: int) -> None:
        self._seen[session_id] = version
        self._seen.move_to_end(session_id)
        if len(self._seen) > SEEN_VERSIONS:
            self._seen.popitem(last=False)

    def seen(self, session_id: str) -> int | None:
        return self._seen.get(session_id)

    def check_secondary_read(self, key: str, session_id: str, *, whole: bool) -> None:
        """Before a read the secondary serves: refuse one that would show less than the
        primary is known to hold (this process saw the session there), saying why."""
        version = self._seen.get(session_id)
        if not version:
            return  # never seen on the primary: the secondary's answer is all there is
        if key not in self._pending and key not in self._writing:
            raise StorageUnavailableError(
                f"the primary storage is unavailable and the fallback holds nothing of "
                f"session {session_id!r}, which the primary holds (version {version})"
            )
        if whole and key in self._partial:
            raise StorageUnavailableError(
                f"the primary storage is unavailable; the fallback holds only the messages "
                f"appended to session {session_id!r} during the outage, not the primary's "
                "earlier ones: read the newest messages, or retry when the primary is back"
            )

    @property
    def journal_at_risk(self) -> bool:
        """Journaling, as accepted, where a crash of the journal's home loses entries."""
        found = self._durability
        return found is not None and found.can_lose and self.journal_loss == "accept"

    def partial(self, key: str) -> bool:
        return key in self._partial

    # -- switching ----------------------------------------------------------------------

    async def _adopt(self) -> None:
        # An entry whose caller (a process before this one) was told it failed is replayed
        # here like the rest: that process's later writes were refused until it removed
        # it, so none came after it.
        async for entry in self.journal.scan():
            self._pending.setdefault(self._key_of(entry), deque()).append(entry.id)
        if self._pending:
            logger.warning(
                "the fallback journal holds writes of %d keys from before: they are "
                "served from the secondary until replayed",
                len(self._pending),
            )
            self.mode = "degraded"
            self._since = self._clock()
            self._last_probe = self._clock() - self.probe_interval

    async def fail_over(self, error: CtxStoreError) -> None:
        async with self._switch:
            if self.mode == "degraded":
                return
            if self.mode == "healthy":
                self._durability = None  # asked again: the secondary may have changed
                # Copies a recovery could not remove must not be read in this outage.
                await self._remove_copies(await self.journal.copies())
                self._since = self._clock()
                self.stats.failovers += 1
                logger.warning(
                    "primary storage unavailable (%s): serving from the secondary", error
                )
            else:
                logger.warning("primary storage unavailable again during replay (%s)", error)
            self.mode = "degraded"
            self._last_probe = self._clock()

    async def _probe_and_drain(self, deadline: float | None = None) -> None:
        """Raises StorageUnavailableError (after failing over) when the primary is down."""
        try:
            await self.primary.exists(PROBE_SESSION)
            async with self._switch:
                if self.mode == "degraded":
                    self.mode = "recovering"
            await self._drain(deadline)
        except StorageUnavailableError as error:
            await self.fail_over(error)
            raise

    async def _recover(self) -> None:
        try:
            await self._probe_and_drain()
        except StorageUnavailableError:
            pass  # failed over; the next probe tries again
        except Exception:  # a task's error would otherwise be lost
            logger.exception("fallback replay stopped")
            raise
        finally:
            self._task = None

    async def _drain(self, deadline: float | None = None) -> None:
        """Replay every pending key in journal order; healthy once nothing is pending.
        Stops (still recovering) at ``deadline`` (the clock's time), if given."""
        for key in list(self._unanswered):  # the journal answers again: settle them first
            await self.settle_unanswered(key)
        after: str | None = None
        progress = self.stats.replayed + self.stats.quarantined + self.stats.lost
        while self.mode == "recovering" and (self._pending or self._writing):
            if deadline is not None and self._clock() >= deadline:
                return
            entries = await self.journal.head(100, after=after)
            for entry in entries:
                await self._replay_oldest(entry)
            if entries:
                after = entries[-1].id
                continue
            # The end of the journal: start over for what conflicted or came meanwhile.
            if after is None:
                # Nothing left in the journal, yet keys wait for entries: they vanished.
                for key in [key for key in self._pending if key not in self._writing]:
                    async with self._locks.hold(key):
                        if key in self._pending:
                            await self._drain_key(key)
            after = None
            done = self.stats.replayed + self.stats.quarantined + self.stats.lost
            if done == progress:
                await asyncio.sleep(0.05)  # only conflicts or writers in flight: let them be
            progress = done
        async with self._switch:
            if self.mode == "recovering" and not self._pending and not self._writing:
                self.mode = "healthy"
                self.stats.recoveries += 1
                logger.warning(
                    "primary storage is back after %.1f s: journal replayed (%d writes)",
                    self._clock() - self._since,
                    self.stats.replayed,
                )

    async def _replay_oldest(self, entry: Entry) -> None:
        """Journal order reached ``entry``: replay its key, unless a writer did."""
        key = self._key_of(entry)
        async with self._locks.hold(key):
            queue = self._pending.get(key)
            if not queue or entry.id not in queue:
                return  # a writer replayed it first
            # Entries of the key before it (paused by a conflict, or vanished) go first.
            try:
                await self._drain_key(key)
            except ConflictError as error:
                logger.warning("replay of %s paused: %s", key, error)

    async def _drain_key(self, key: str) -> None:
        """Replay every pending entry of ``key``, oldest first (its lock held, so nothing
        else changes its queue meanwhile)."""
        while queue := self._pending.get(key):
            found = await self.journal.get_many(list(islice(queue, DRAIN_BATCH)))
            batch: list[Entry] = []
            for entry in found:
                if entry is None:
                    break
                batch.append(entry)
            if not batch:
                self._vanished(key, queue.popleft())
            while batch:
                outcome = await self._replayer.replay(batch)
                self._count(outcome, batch[0])
                del batch[: outcome.handled]
                for _ in range(outcome.handled):
                    queue.popleft()
            if not queue:
                await self._settle(key)

    def _vanished(self, key: str, entry_id: str) -> None:
        """An entry of ``key`` is not in the journal: this process removed it (the
        journal's reply was lost), or the journal's home lost it."""
        if entry_id in self._replayer.unsure_removals:
            self._replayer.unsure_removals.discard(entry_id)
            return
        self._lost(key, entry_id)

    def _lost(self, key: str, entry_id: str) -> None:
        """An entry this process journaled is gone from the journal, not replayed: the
        primary serves the key again without it."""
        self.stats.lost += 1
        if len(self.stats.lost_entries) < LOST_KEPT:
            self.stats.lost_entries.append(f"{entry_id} {key}")
        logger.error(
            "journal entry %s of %s vanished before it was replayed: that acknowledged "
            "write is lost (the journal's home lost it: %s)",
            entry_id,
            key,
            self.stats.journal,
        )

    def _count(self, outcome: Outcome, first: Entry) -> None:
        self.stats.replayed += outcome.replayed
        self.stats.quarantined += outcome.quarantined
        self.stats.moved_on += outcome.moved
        if outcome.quarantined:
            kind, subject = first.describe()
            logger.error(
                "journal entry %s (%s %r) quarantined: %s", first.id, kind, subject, outcome.refusal
            )

    async def _settle(self, key: str) -> None:
        """``key`` has nothing left to replay: the primary serves it; its copy goes."""
        self._pending.pop(key, None)
        self._partial.discard(key)
        subject = key.partition(":")[2]
        version = self._replayer.settled(subject)
        if version is not None:
            self.saw(subject, version)
        await self._remove_copies({key})

    async def _remove_copies(self, keys: set[str]) -> None:
        for key in sorted(keys):
            kind, _, subject = key.partition(":")
            if kind == "profile":
                await self.secondary.delete_profile(subject)
            elif kind == "session":
                await self.secondary.delete(subject)
        await self.journal.drop_copies(keys)
        self.stats.cleaned += len(keys)

    @staticmethod
    def _key_of(entry: Entry) -> str:
        return entry.operation.copy_key if entry.operation else f"unreadable:{entry.id}"

    async def reconcile(self, within: float | None = RECONCILE_WITHIN) -> ReplayReport:
        """Replay now, for at most ``within`` seconds (None: until done); healthy when
        the journal is empty.  Raises StorageUnavailableError when the primary doesn't
        answer."""
        deadline = None if within is None else self._clock() + within
        await self.ready()
        if self._task is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(within):
                    await asyncio.shield(self._task)
        if self.mode != "healthy" and (deadline is None or self._clock() < deadline):
            await self._probe_and_drain(deadline)
        return ReplayReport(
            replayed=self.stats.replayed,
            quarantined=self.stats.quarantined,
            moved_on=self.stats.moved_on,
            remaining=await self.journal.size(),
            lost=self.stats.lost,
        )

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, CtxStoreError):
                await self._task
