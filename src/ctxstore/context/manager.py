"""ContextManager: add messages to a session without ever losing one, or failing.

The Go service's original last-write-wins save let two workers racing on one session
drop a message.  Here every write is an ``append``: the storage gives the new messages
their positions in the statement (or script, or lock) that stores them, so a write
doesn't depend on anything it read and has no race to lose.  However many writers, in
however many processes, every append succeeds once.  Inside a process, writes to one
session go one at a time, so each writer's messages keep its order and each call's
messages stay contiguous.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxstore.context.compression import (
    CompressionStrategy,
    ContextWindow,
    TokenBudget,
    chosen_counter,
)
from ctxstore.keyed_locks import KeyedLocks
from ctxstore.storage.base import MessageInput
from ctxstore.storage.store import VersionedStorage
from ctxstore.tokens import TokenCounter


class ContextManager:
    """Appends of a session's messages over a VersionedStorage, one at a time per session.

    ``token_counter`` defaults to the encoding of ``model`` when given (``"gpt-4o"``:
    o200k_base), else the storage's own, the one its stored counts are made with, so
    contexts use them instead of recounting.
    """

    def __init__(
        self,
        storage: VersionedStorage,
        *,
        strategy: CompressionStrategy | None = None,
        token_counter: TokenCounter | None = None,
        model: str | None = None,
    ) -> None:
        self.storage = storage
        self.strategy: CompressionStrategy = strategy or TokenBudget(4000)
        self.token_counter = chosen_counter(storage, token_counter, model)
        self._locks = KeyedLocks()

    async def add_message(
        self, session_id: str, message: MessageInput, *, user_id: str | None = None
    ) -> int:
        """Append one message; returns the session's new version."""
        return await self.add_messages(session_id, [message], user_id=user_id)

    async def add_messages(
        self, session_id: str, messages: Sequence[MessageInput], *, user_id: str | None = None
    ) -> int:
        """Append messages as one write (they stay contiguous); the new version."""
        async with self._locks.hold(session_id):
            return await self.storage.append(session_id, messages, user_id=user_id)

    async def get_context(
        self, session_id: str, strategy: CompressionStrategy | None = None
    ) -> ContextWindow:
        """Messages plus summary for the next LLM call, chosen by the strategy.

        Reads only what the window needs, whatever the session's length.
        """
        chosen = strategy or self.strategy
        return await chosen.window(self.storage, session_id, self.token_counter)
