"""In-memory storage for tests and local development; same contract as PostgreSQL."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

from ctxstore.models import Message
from ctxstore.storage.base import (
    DEFAULT_LIMITS,
    Limits,
    MessageInput,
    check_new_message,
    check_session_id,
    coerce_messages,
)


@dataclass
class _Entry:
    messages: tuple[Message, ...]
    version: int
    expires_at: float | None


class MemoryStorage:
    """A dict of sessions behind an asyncio lock.

    ``ttl_seconds`` bounds how long an untouched session lives, so a long-running dev
    server cannot leak memory; expired sessions behave as missing and are swept on write.
    """

    def __init__(
        self,
        *,
        ttl_seconds: float | None = None,
        limits: Limits = DEFAULT_LIMITS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._sessions: dict[str, _Entry] = {}
        self._lock = asyncio.Lock()
        self._ttl = ttl_seconds
        self._limits = limits
        self._clock = clock

    async def __aenter__(self) -> MemoryStorage:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        async with self._lock:
            self._sessions.clear()

    def _live(self, session_id: str) -> _Entry | None:
        entry = self._sessions.get(session_id)
        if entry is not None and entry.expires_at is not None and entry.expires_at <= self._clock():
            del self._sessions[session_id]
            return None
        return entry

    def _sweep(self) -> None:
        now = self._clock()
        expired = [
            key
            for key, entry in self._sessions.items()
            if entry.expires_at is not None and entry.expires_at <= now
        ]
        for key in expired:
            del self._sessions[key]

    async def save(self, session_id: str, messages: Sequence[MessageInput]) -> None:
        check_session_id(session_id, self._limits)
        validated = coerce_messages(messages, self._limits)
        for position, message in enumerate(validated):
            check_new_message(message, position, self._limits)
        # Deep copies: later mutation of the caller's metadata must not change stored data.
        stored = tuple(message.model_copy(deep=True) for message in validated)
        async with self._lock:
            if self._ttl is not None:
                self._sweep()
            previous = self._live(session_id)
            self._sessions[session_id] = _Entry(
                messages=stored,
                version=(previous.version if previous else 0) + 1,
                expires_at=self._clock() + self._ttl if self._ttl is not None else None,
            )

    async def load(self, session_id: str) -> list[Message]:
        check_session_id(session_id, self._limits)
        async with self._lock:
            entry = self._live(session_id)
            if entry is None:
                return []
            return [message.model_copy(deep=True) for message in entry.messages]

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id, self._limits)
        async with self._lock:
            self._sessions.pop(session_id, None)

    async def exists(self, session_id: str) -> bool:
        check_session_id(session_id, self._limits)
        async with self._lock:
            return self._live(session_id) is not None

    def __len__(self) -> int:
        return len(self._sessions)
