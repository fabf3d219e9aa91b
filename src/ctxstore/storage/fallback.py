"""FallbackStorage: keep answering while the primary is down, lose nothing acknowledged.

A router over two Stores.  Each call goes to the primary; when it raises
StorageUnavailableError the store turns *degraded*: calls go to the secondary, and each
write the secondary accepts is recorded in the journal (storage/journal.py, kept in the
secondary) before the caller hears back.  Both sides are Stores, so they accept the same
inputs the same way.

When the primary answers again (probed in the background at most every
``probe_interval`` seconds) the journal is replayed into it, key by key in order
(storage/failover.py switches the sides, storage/replay.py holds the merge policy);
keys with nothing pending are served by the primary at once, and the secondary's copy of
a key goes when its last entry is replayed, so a later outage never reads or resurrects
it.

With a Redis secondary the journal survives the process: a new FallbackStorage with the
same secondary and ``journal_name`` finds it, starts degraded and replays it.  Give each
worker process its own stable ``journal_name``.  The degraded state is observable:
``degraded``, ``stats``, ``quarantined()`` and log lines on every change.
"""

from __future__ import annotations

import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
)
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from typing import TypeVar

from ctxstore import telemetry
from ctxstore.errors import StorageUnavailableError
from ctxstore.models import Message
from ctxstore.storage.base import ErasureReceipt, SessionReader
from ctxstore.storage.bundle import ImportReceipt
from ctxstore.storage.failover import RECONCILE_WITHIN, FallbackStats, JournalLoss, Sides
from ctxstore.storage.journal import Journal, Operation, Quarantined, copy_key
from ctxstore.storage.replay import ReplayReport
from ctxstore.storage.store import JournalEntry, Route, Store, VersionedStorage
from ctxstore.storage.write_ids import carrying, new_write_id

Result = TypeVar("Result")
#: Sessions whose primary version the fallback remembers (for the merge policy's count).
SEEN_VERSIONS = 10_000


class FallbackStorage(VersionedStorage):
    """The whole storage contract over a primary (PostgreSQL) and a secondary (Redis, memory).

    Not a Store: a router over two.  Its public methods are VersionedStorage's (the rules
    applied once, here); each operation then runs on the side its Route sends it to.
    """

    def __init__(
        self,
        primary: Store,
        secondary: Store,
        *,
        journal_name: str = "default",
        probe_interval: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        journal_loss: JournalLoss = "refuse",
    ) -> None:
        """``journal_loss``: with a secondary that outlives the process (Redis) but can
        lose what it acknowledged (no AOF, or an AOF not fsynced before the reply),
        "refuse" (the default) refuses the writes of an outage with
        StorageUnavailableError instead of acknowledging them; "accept" journals them
        anyway, logging the risk at each outage and showing it in ``stats.journal``."""
        self.primary = primary
        self.secondary = secondary
        #: The rules' limits and the token counter are the primary's: the public methods
        #: apply them once, before either side sees the call.
        self.limits = primary.limits
        self.token_counter = primary.token_counter
        self.journal_name = journal_name
        self.journal: Journal = secondary.open_journal(journal_name)
        self._sides = Sides(
            primary,
            secondary,
            self.journal,
            probe_interval=probe_interval,
            clock=clock,
            journal_loss=journal_loss,
        )
        telemetry.watch_fallback(self)

    @property
    def mode(self) -> str:
        """healthy, degraded (the secondary serves) or recovering (the journal replays)."""
        return self._sides.mode

    @property
    def degraded(self) -> bool:
        """True until the primary serves every key again (the journal is empty)."""
        return self._sides.mode != "healthy"

    @property
    def stats(self) -> FallbackStats:
        return self._sides.stats

    @property
    def journal_at_risk(self) -> bool:
        """True while this store journals where a crash of the journal's home loses
        acknowledged writes (journal_loss="accept" on a Redis without a durable AOF)."""
        return self._sides.journal_at_risk

    @property
    def lost(self) -> int:
        """Journaled writes that vanished before they were replayed (``stats.lost``)."""
        return self._sides.stats.lost

    async def reconcile(self, within: float | None = RECONCILE_WITHIN) -> ReplayReport:
        """Replay the journal now, and serve from the primary again once it is empty.

        Returns after ``within`` seconds at most (None: when done) with what remains;
        raises StorageUnavailableError when the primary doesn't answer.
        """
        return await self._sides.reconcile(within)

    async def close(self) -> None:
        await self._sides.close()
        await self.primary.close()
        await self.secondary.close()

    async def quarantined(self) -> list[Quarantined]:
        """Journaled writes the primary refused, with the reason (kept for an operator)."""
        return await self.journal.quarantined()

    # -- the operations: each routed by its Route (storage/store.py) ---------------------------

    async def _call(
        self,
        route: Route,
        subject: str,
        action: Callable[[Store], Awaitable[Result]],
        journal: JournalEntry | None = None,
    ) -> Result:
        """``action`` on the side serving ``subject``'s key, through that side's own
        ``_call`` (so its telemetry); a write is journaled on the secondary."""

        def on(side: Store) -> Awaitable[Result]:
            return side._call(route, subject, action)

        if route.across_sessions:
            return await self._on_primary_alone(route.name, on)
        session = None if route.of_user else subject
        # The copy key a write of this kind leaves; a read's: that of the subject's writes.
        key = copy_key(route.journaled or ("profile" if route.of_user else "save"), subject)
        if route.journaled is None:
            found = await self._read(on, key, session, whole=route.whole)
            if route.session_version and not self._sides.serves_secondary(key):
                self._saw(session, found)
            return found
        assert journal is not None, f"{route.name} is journaled: it says how"
        return await self._write(
            on, journal, key=key, session=session if route.session_version else None
        )

    async def newest(self, session_id: str, limit: int) -> list[Message]:
        found = await super().newest(session_id, limit)
        key = _session(session_id)
        if self._sides.serves_secondary(key) and self._sides.partial(key) and len(found) < limit:
            self._sides.check_secondary_read(key, session_id, whole=True)  # says why
        return found

    async def erase_user(self, user_id: str, *, vacuum: bool = True) -> ErasureReceipt:
        """Erase on the primary only, with nothing pending: an erasure must reach the store
        of record, and journaled writes of the user's sessions must not outlive it."""
        await self._require_healthy("erase_user")
        return await self.primary.erase_user(user_id, vacuum=vacuum)

    async def export_user(
        self, user_id: str, *, batch_size: int = 1000
    ) -> AsyncGenerator[bytes, None]:
        """From the primary only, while it is healthy (as ``list_sessions``): it alone
        holds every session of the user."""
        await self._require_healthy("export_user")
        async for chunk in self.primary.export_user(user_id, batch_size=batch_size):
            yield chunk

    async def import_user(self, bundle: AsyncIterable[bytes] | Iterable[bytes]) -> ImportReceipt:
        """Into the primary only, while it is healthy: never journaled, as one write."""
        await self._require_healthy("import_user")
        return await self.primary.import_user(bundle)

    async def iter_messages(
        self, session_id: str, *, batch_size: int = 1000
    ) -> AsyncGenerator[Message, None]:
        """The serving side's messages, streamed (chosen when the first batch is read)."""
        async with AsyncExitStack() as stack:
            stream = await self._read(
                lambda store: _first_batch(stack, store, session_id, batch_size),
                _session(session_id),
                session_id,
                whole=True,
            )
            for message in stream.first:
                yield message
            async for message in stream.rest:
                yield message

    @asynccontextmanager
    async def reader(self, session_id: str) -> AsyncIterator[SessionReader]:
        """The serving side's reader (chosen when it is opened)."""
        async with AsyncExitStack() as stack:
            yield await self._read(
                lambda store: stack.enter_async_context(store.reader(session_id)),
                _session(session_id),
                session_id,
                whole=True,
            )

    # -- routing ----------------------------------------------------------------------

    async def _require_healthy(self, operation: str) -> None:
        """StorageUnavailableError unless the primary serves every key: while the journal
        holds writes, neither side holds everything."""
        await self._sides.ready()
        if self._sides.mode != "healthy":
            raise StorageUnavailableError(
                f"{operation} needs the primary with the fallback journal replayed: retry "
                "when the primary is back (reconcile() replays the journal)"
            )

    async def _on_primary_alone(
        self, operation: str, action: Callable[[Store], Awaitable[Result]]
    ) -> Result:
        """A read across sessions (a user's listing): on the primary, the store of record,
        while it serves every key.  The secondary holds only an outage's writes, so it
        never answers: when the primary fails, the store fails over (for the other
        operations) and this read fails with it."""
        await self._require_healthy(operation)
        try:
            return await action(self.primary)
        except StorageUnavailableError as error:
            await self._sides.fail_over(error)
            raise

    async def _read(
        self,
        action: Callable[[Store], Awaitable[Result]],
        key: str,
        session: str | None = None,
        *,
        whole: bool = False,
    ) -> Result:
        """``action`` on the side serving ``key``.  On the secondary, a read of a session
        this process saw on the primary is refused where the secondary would show less
        (``whole``: the read shows the whole history)."""
        await self._sides.ready()
        if not self._sides.serves_secondary(key):
            try:
                return await action(self.primary)
            except StorageUnavailableError as error:
                await self._sides.fail_over(error)
        if session is not None:
            self._sides.check_secondary_read(key, session, whole=whole)
        self.stats.degraded_calls += 1
        return await action(self.secondary)

    async def _write(
        self,
        action: Callable[[Store], Awaitable[Result]],
        operation: Callable[[], Operation],
        *,
        key: str,
        session: str | None = None,
    ) -> Result:
        """``action`` on the side serving ``key``; on the secondary, journaled before
        returning.

        ``operation`` describes the write for the journal; it is built once the secondary
        accepted the write (so the secondary's rules, in their order, judge the input).
        ``key``: the journal's copy key, ``session``: the id whose version a result is.
        """
        await self._sides.ready()
        await self._sides.settle_unanswered(key)
        uncertain = False
        # The primary records the id with the write (storage/write_ids.py): if its reply
        # is lost, replay asks whether it applied the write.
        write_id = new_write_id()
        if not self._sides.serves_secondary(key):
            try:
                return self._saw(session, await self._on_primary(action, write_id))
            except StorageUnavailableError as error:
                await self._sides.fail_over(error)
                uncertain = True  # the primary may have applied it before failing
        async with self._sides.secondary_write(key, uncertain=uncertain) as to_secondary:
            if not to_secondary:  # its journal entries were replayed meanwhile
                try:
                    return self._saw(session, await self._on_primary(action, write_id))
                except StorageUnavailableError as error:
                    await self._sides.fail_over(error)
                    uncertain = True
            await self._sides.require_durable()
            self.stats.degraded_calls += 1
            result = await action(self.secondary)
            seen = self._sides.seen(session) if session else None
            await self._sides.record(
                key,
                replace(
                    operation(),
                    primary_version=seen,
                    uncertain=uncertain,
                    write_id=write_id,
                ),
            )
            return result

    async def _on_primary(
        self, action: Callable[[Store], Awaitable[Result]], write_id: str
    ) -> Result:
        with carrying([write_id]):
            return await action(self.primary)

    def _saw(self, session: str | None, result: Result) -> Result:
        """Remember the session's version on the primary (a delete's None: 0)."""
        if session is not None:
            self._sides.saw(session, result if isinstance(result, int) else 0)
        return result


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


def _session(session_id: str) -> str:
    return copy_key("save", session_id)
