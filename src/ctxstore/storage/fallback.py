"""FallbackStorage: keep answering while the primary is down, lose nothing acknowledged.

A router over two Stores.  Each call goes to the primary; when it raises
StorageUnavailableError the store turns *degraded*: calls go to the secondary, and each
write the secondary accepts is recorded in the journal (storage/journal.py, kept in the
secondary) before the caller hears back.  Both sides are Stores, so they accept the same
inputs the same way.

At most every ``probe_interval`` seconds a degraded call checks whether the primary
answers again; when it does, the journal is replayed into the primary in order
(storage/replay.py holds the merge policy).  New writes keep going to the journal while
it drains; for the last entries they wait, so the switch back loses none.  Then the
primary serves again and the secondary's copies of replayed writes are removed, so a
later outage never reads or resurrects them.

With a Redis secondary the journal survives the process: a new FallbackStorage with the
same secondary and ``journal_name`` finds it, starts degraded and replays it.  Give each
worker process its own stable ``journal_name``.  The degraded state is observable:
``degraded``, ``stats``, ``quarantined()`` and log lines on every change.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar

from ctxstore.errors import CtxStoreError, StorageUnavailableError
from ctxstore.keyed_locks import KeyedLocks
from ctxstore.models import (
    ConsultationState,
    Message,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage import rules
from ctxstore.storage.base import AsyncClosing, MessageInput, SessionReader
from ctxstore.storage.journal import Journal, Operation, Quarantined, copy_key
from ctxstore.storage.replay import Replayer, ReplayReport
from ctxstore.storage.rules import Limits
from ctxstore.storage.store import Store
from ctxstore.tokens import TokenCounter

logger = logging.getLogger("ctxstore.fallback")
Result = TypeVar("Result")
PROBE_SESSION = "__ctxstore_probe__"
#: Sessions whose primary version the fallback remembers (for the merge policy's count).
SEEN_VERSIONS = 10_000


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


class FallbackStorage(AsyncClosing):
    """The whole storage contract over a primary (PostgreSQL) and a secondary (Redis, memory)."""

    def __init__(
        self,
        primary: Store,
        secondary: Store,
        *,
        journal_name: str = "default",
        probe_interval: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.primary = primary
        self.secondary = secondary
        self.journal: Journal = secondary.open_journal(journal_name)
        self.probe_interval = probe_interval
        self._clock = clock
        self._replayer = Replayer(primary, self.journal)
        self._degraded_since: float | None = None
        self._last_probe = 0.0
        self._started = False
        #: Held while switching sides (failover cleanup, replay, recovery).
        self._switch = asyncio.Lock()
        #: Cleared while the last journal entries drain: new writes wait for the switch.
        self._open = asyncio.Event()
        self._open.set()
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._key_locks = KeyedLocks()
        self._seen: OrderedDict[str, int] = OrderedDict()
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

    async def quarantined(self) -> list[Quarantined]:
        """Journaled writes the primary refused, with the reason (kept for an operator)."""
        return await self.journal.quarantined()

    # -- messages -----------------------------------------------------------------------

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        return await self._write_messages(
            "save", session_id, messages, expected_version=expected_version, user_id=user_id
        )

    async def append(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        return await self._write_messages(
            "append", session_id, messages, expected_version=expected_version, user_id=user_id
        )

    async def _write_messages(
        self,
        kind: Literal["save", "append"],
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None,
        user_id: str | None,
    ) -> int:
        async def write(store: Store) -> int:
            method = store.save if kind == "save" else store.append
            return await method(
                session_id, messages, expected_version=expected_version, user_id=user_id
            )

        return await self._write(
            write,
            lambda: Operation(
                kind,
                session_id,
                messages=tuple(rules.coerce_messages(messages, self.secondary.limits)),
                user_id=user_id,
                based_on=expected_version,
            ),
            key=copy_key(kind, session_id),
            session=session_id,
        )

    async def load(self, session_id: str) -> list[Message]:
        return await self._read(lambda store: store.load(session_id))

    async def version(self, session_id: str) -> int:
        version = await self._read(lambda store: store.version(session_id))
        if not self.degraded:
            self._saw(session_id, version)
        return version

    async def delete(self, session_id: str) -> None:
        async def delete(store: Store) -> int:
            await store.delete(session_id)
            return 0

        await self._write(
            delete,
            lambda: Operation("delete", session_id),
            key=copy_key("delete", session_id),
            session=session_id,
        )

    async def exists(self, session_id: str) -> bool:
        return await self._read(lambda store: store.exists(session_id))

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
        return await self._write(
            lambda store: store.save_summary(
                session_id,
                text,
                covers_until=covers_until,
                token_count=token_count,
                expected_version=expected_version,
            ),
            lambda: Operation(
                "summary",
                session_id,
                text=text,
                covers_until=covers_until,
                token_count=token_count,
                based_on=expected_version,
            ),
            key=copy_key("summary", session_id),
        )

    async def load_summary(
        self, session_id: str, summary_version: int | None = None
    ) -> Summary | None:
        return await self._read(lambda store: store.load_summary(session_id, summary_version))

    async def save_state(
        self,
        session_id: str,
        state: ConsultationState | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        return await self._write(
            lambda store: store.save_state(session_id, state, expected_version=expected_version),
            lambda: Operation(
                "state",
                session_id,
                document=rules.check_state(state, self.secondary.limits).document(),
                based_on=expected_version,
            ),
            key=copy_key("state", session_id),
        )

    async def load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        return await self._read(lambda store: store.load_state(session_id))

    async def state_history(self, session_id: str) -> list[StateChange]:
        return await self._read(lambda store: store.state_history(session_id))

    async def save_profile(
        self,
        user_id: str,
        profile: UserProfile | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        return await self._write(
            lambda store: store.save_profile(user_id, profile, expected_version=expected_version),
            lambda: Operation(
                "profile",
                user_id,
                document=rules.check_profile(profile, self.secondary.limits).document(),
                based_on=expected_version,
            ),
            key=copy_key("profile", user_id),
        )

    async def load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        return await self._read(lambda store: store.load_profile(user_id))

    async def delete_profile(self, user_id: str) -> None:
        async def delete(store: Store) -> None:
            await store.delete_profile(user_id)

        await self._write(
            delete,
            lambda: Operation("delete_profile", user_id),
            key=copy_key("delete_profile", user_id),
        )

    async def snapshot(self, session_id: str) -> SessionSnapshot:
        return await self._read(lambda store: store.snapshot(session_id))

    async def iter_messages(
        self, session_id: str, *, batch_size: int = 1000
    ) -> AsyncGenerator[Message, None]:
        """The serving side's messages, streamed (chosen when the first batch is read)."""
        async with AsyncExitStack() as stack:
            stream = await self._read(
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
            yield await self._read(
                lambda store: stack.enter_async_context(store.reader(session_id))
            )

    # -- routing ----------------------------------------------------------------------

    async def _read(self, action: Callable[[Store], Awaitable[Result]]) -> Result:
        await self._ready()
        if not self.degraded:
            try:
                return await action(self.primary)
            except StorageUnavailableError as error:
                await self._fail_over(error)
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
        """``action`` on the serving side; while degraded, journaled before returning.

        ``operation`` describes the write for the journal; it is built once the secondary
        accepted the write (so the secondary's rules, in their order, judge the input).
        ``key``: the journal's copy key, ``session``: the id whose version a result is.
        """
        await self._ready()
        await self._open.wait()
        uncertain = False
        if not self.degraded:
            try:
                result = await action(self.primary)
            except StorageUnavailableError as error:
                await self._fail_over(error)
                uncertain = True  # the primary may have applied it before failing
            else:
                if session is not None and isinstance(result, int):
                    self._saw(session, result)
                return result
        self.stats.degraded_calls += 1
        self._in_flight += 1
        self._idle.clear()
        try:
            # One writer per key between the secondary and the journal: same order in both.
            async with self._key_locks.hold(key):
                result = await action(self.secondary)
                seen = self._seen.get(session) if session else None
                await self.journal.record(
                    replace(operation(), primary_version=seen, uncertain=uncertain)
                )
            self.stats.journaled += 1
            return result
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    def _saw(self, session_id: str, version: int) -> None:
        self._seen[session_id] = version
        self._seen.move_to_end(session_id)
        if len(self._seen) > SEEN_VERSIONS:
            self._seen.popitem(last=False)

    # -- switching sides ------------------------------------------------------------------

    async def _ready(self) -> None:
        """On the first call, a journal left by an earlier process means: start degraded."""
        if not self._started:
            async with self._switch:
                if not self._started:
                    left = await self.journal.size()
                    if left:
                        logger.warning(
                            "the fallback journal holds %d writes from before: serving from "
                            "the secondary until they are replayed",
                            left,
                        )
                        self._degraded_since = self._clock()
                        self._last_probe = self._clock() - self.probe_interval
                    self._started = True
        if self.degraded and not self._switch.locked():
            await self._maybe_recover()

    async def _fail_over(self, error: CtxStoreError) -> None:
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
        finally:
            self._open.set()
        self.stats.recoveries += 1
        logger.warning(
            "primary storage is back after %.1f s: journal replayed (%d writes)",
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
        """Replay the journal now (and switch back when it is empty and the primary answers).

        Raises StorageUnavailableError when the primary doesn't answer.
        """
        await self._ready()
        async with self._switch:
            if not self.degraded:
                report = await self._replay()  # e.g. entries quarantined and re-queued
                report.remaining = await self.journal.size()
                return report
            self._last_probe = self._clock()
            await self.primary.exists(PROBE_SESSION)
            await self._recover()
        return ReplayReport(
            replayed=self.stats.replayed,
            quarantined=self.stats.quarantined,
            moved_on=self.stats.moved_on,
            remaining=await self.journal.size(),
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
