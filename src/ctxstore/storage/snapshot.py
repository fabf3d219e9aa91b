"""SnapshotReader: a SessionReader over a session already read into memory.

The backends that read a whole session at one instant (memory, Redis) serve context
assembly from that copy.  Their messages carry no stored token count: each is counted
with the storage's counter, and says so (``token_encoding``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from ctxstore.models import ConsultationState, Message, Summary, UserProfile, Versioned
from ctxstore.storage.base import SessionHead, StoredMessage, WindowHint
from ctxstore.tokens import TokenCounter

ProfileLookup = Callable[[str], Awaitable[Versioned[UserProfile] | None]]


@dataclass(frozen=True)
class SessionCopy:
    """One session as it was at one instant."""

    version: int
    messages: list[Message]
    created_at: datetime | None
    user_id: str | None
    summary: Summary | None
    state: Versioned[ConsultationState] | None


class SnapshotReader:
    """SessionReader over a SessionCopy (None: no such session)."""

    def __init__(
        self, copy: SessionCopy | None, counter: TokenCounter, profile: ProfileLookup
    ) -> None:
        self._copy = copy
        self._counter = counter
        self._profile = profile

    async def head(self, window: WindowHint | None = None) -> SessionHead:
        copy = self._copy
        if copy is None:
            return SessionHead(False, 0, 0, None, None)
        return SessionHead(True, copy.version, len(copy.messages), copy.created_at, copy.user_id)

    async def latest_summary(self) -> Summary | None:
        return self._copy.summary if self._copy else None

    async def state(self) -> Versioned[ConsultationState] | None:
        if self._copy is None or self._copy.state is None:
            return None
        state = self._copy.state
        return Versioned(state.value.model_copy(deep=True), state.version, state.updated_at)

    async def profile(self, user_id: str) -> Versioned[UserProfile] | None:
        return await self._profile(user_id)

    async def newest(
        self, before: int, limit: int, token_budget: int | None = None
    ) -> list[StoredMessage]:
        if self._copy is None:
            return []
        messages = self._copy.messages
        stop = min(before, len(messages))
        positions = range(stop - 1, max(stop - limit, 0) - 1, -1)
        return [
            StoredMessage(
                position,
                messages[position].model_copy(deep=True),
                self._counter.message_cost(messages[position]),
                self._counter.count_label,
            )
            for position in positions
        ]

    async def span(self, start: int, stop: int) -> list[Message]:
        if self._copy is None:
            return []
        return [message.model_copy(deep=True) for message in self._copy.messages[start:stop]]

    async def token_total(self, after: int) -> tuple[int, int]:
        if self._copy is None:
            return 0, 0
        tail = self._copy.messages[after + 1 :]
        tokens = 0
        for message in tail:
            cost = self._counter.message_cost(message)
            tokens += cost if cost is not None else len(message.content) + 16
        return len(tail), tokens
