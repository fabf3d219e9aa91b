"""ContextManager: add messages to a session without ever losing one.

The original design's last-write-wins save let two workers racing on one session drop a
message.  Here:

- inside a process, writes to one session are serialized by a per-session lock, so they
  never conflict with each other;
- across processes, each write is an append at the version this process last saw
  (optimistic concurrency, checked by the storage): the storage's own record of it
  (``storage.knowledge``) when it keeps one, else the stored version, read first; when
  another process got there first, the manager takes the version the conflict reports
  and retries after a jittered exponential backoff;
- when the retries run out, RetriesExhaustedError says so; nothing was written.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

from ctxstore.context.compression import (
    CompressionStrategy,
    ContextWindow,
    TokenBudget,
    storage_counter,
)
from ctxstore.errors import ConflictError, RetriesExhaustedError
from ctxstore.storage.base import MessageInput, VersionedStorage
from ctxstore.tokens import TokenCounter


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try when other processes keep writing the same session."""

    max_attempts: int = 12
    base_delay: float = 0.002
    max_delay: float = 0.2

    def delay(self, attempt: int, draw: Callable[[], float]) -> float:
        """Full-jitter exponential backoff before attempt ``attempt + 1``."""
        ceiling = min(self.max_delay, self.base_delay * (2**attempt))
        return float(ceiling * draw())


class _Knowledge(Protocol):
    """What the manager reads of a storage's ``knowledge`` (storage/knowledge.py)."""

    def version(self, session_id: str) -> int | None: ...


@dataclass
class _SessionLock:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    users: int = 0


class ContextManager:
    """Serialized, retried writes of a session's messages over a VersionedStorage.

    ``token_counter`` defaults to the storage's own, the one its stored counts are made
    with, so contexts use them instead of recounting.
    """

    def __init__(
        self,
        storage: VersionedStorage,
        *,
        retry: RetryPolicy | None = None,
        random_draw: Callable[[], float] = random.random,
        strategy: CompressionStrategy | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.storage = storage
        self.strategy: CompressionStrategy = strategy or TokenBudget(4000)
        self.token_counter = token_counter or storage_counter(storage) or TokenCounter()
        self.retry = retry or RetryPolicy()
        self._draw = random_draw
        self._locks: dict[str, _SessionLock] = {}
        self.conflicts = 0  # observable: how often another writer got there first

    @asynccontextmanager
    async def _serialized(self, session_id: str) -> AsyncIterator[None]:
        """This process's writes to one session, one at a time; the lock goes when unused."""
        entry = self._locks.setdefault(session_id, _SessionLock())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0:
                del self._locks[session_id]

    async def _last_seen_version(self, session_id: str) -> int:
        """The storage's record of the version it last read or wrote (a stale one costs
        one retry); a storage without one is asked.  Looked up on every write: a
        FallbackStorage's is the record of whichever side now serves."""
        knowledge: _Knowledge | None = getattr(self.storage, "knowledge", None)
        known = knowledge.version(session_id) if knowledge is not None else None
        return known if known is not None else await self.storage.version(session_id)

    async def add_message(
        self, session_id: str, message: MessageInput, *, user_id: str | None = None
    ) -> int:
        """Append one message; returns the session's new version."""
        return await self.add_messages(session_id, [message], user_id=user_id)

    async def add_messages(
        self, session_id: str, messages: Sequence[MessageInput], *, user_id: str | None = None
    ) -> int:
        """Append messages as one write (they stay contiguous); the new version."""
        async with self._serialized(session_id):
            expected = await self._last_seen_version(session_id)
            for attempt in range(self.retry.max_attempts):
                try:
                    version = await self.storage.append(
                        session_id, messages, expected_version=expected, user_id=user_id
                    )
                except ConflictError as conflict:
                    self.conflicts += 1
                    expected = conflict.current_version or 0
                    if attempt + 1 == self.retry.max_attempts:
                        raise RetriesExhaustedError(
                            f"session {session_id!r}: other writers won "
                            f"{self.retry.max_attempts} times in a row; nothing was written",
                            session_id=session_id,
                            current_version=conflict.current_version,
                            expected_version=conflict.expected_version,
                        ) from conflict
                    await asyncio.sleep(self.retry.delay(attempt, self._draw))
                    continue
                return version
            raise AssertionError("unreachable: the loop returns or raises")

    async def get_context(
        self, session_id: str, strategy: CompressionStrategy | None = None
    ) -> ContextWindow:
        """Messages plus summary for the next LLM call, chosen by the strategy.

        Reads only what the window needs, whatever the session's length.
        """
        chosen = strategy or self.strategy
        return await chosen.window(self.storage, session_id, self.token_counter)
