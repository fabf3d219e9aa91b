"""SummarizeInBackground: the context never waits for an LLM."""

from __future__ import annotations

from dataclasses import dataclass

from ctxstore.context.compression import ContextWindow, due_and_window
from ctxstore.errors import InvalidInputError
from ctxstore.storage.store import VersionedStorage
from ctxstore.summaries.queue import SummaryQueue
from ctxstore.tokens import TokenCounter


@dataclass(frozen=True)
class SummarizeInBackground:
    """Summary + recent messages, summarized off the request path.

    When the history after the latest summary passes ``trigger_tokens``, a summary job
    for all but the newest ``keep_recent`` messages is enqueued (once per session, however
    many workers ask) and a summarize worker runs the LLM.  Meanwhile every context is
    served at once: the latest summary and the messages after it, the newest that fit
    ``max_tokens`` when given (else all of them).
    """

    queue: SummaryQueue
    keep_recent: int
    trigger_tokens: int
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.keep_recent < 0 or self.trigger_tokens < 0:
            raise InvalidInputError("keep_recent and trigger_tokens must be >= 0")
        if self.max_tokens is not None and self.max_tokens < 0:
            raise InvalidInputError("max_tokens must be >= 0")

    async def window(
        self, storage: VersionedStorage, session_id: str, counter: TokenCounter
    ) -> ContextWindow:
        due, window = await due_and_window(
            storage, session_id, counter, self.keep_recent, self.trigger_tokens, self.max_tokens
        )
        if due.until is not None:
            await self.queue.enqueue(session_id, due.until)
        return window
