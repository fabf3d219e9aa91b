"""Which messages go into a context: the original design's compression strategies.

Every strategy reads only what its window needs: the newest messages in chunks, newest
first (a backward range scan of the primary key), never the whole history.

Token counts: a storage counts each message when it writes it, with its own
``token_counter``.  A strategy counts with the counter it is given (the manager's, by
default the storage's).  A stored count is used only when it was made with that
counter's encoding (``StoredMessage.token_encoding``); any other is recounted (see
``cost_of``), so a count in one encoding is never taken for another.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from ctxstore.errors import ConflictError, InvalidInputError
from ctxstore.models import Message, Summary, core_digest_of
from ctxstore.storage.base import SessionHead, SessionReader, StoredMessage
from ctxstore.storage.store import VersionedStorage
from ctxstore.timestamps import go_timestamp
from ctxstore.tokens import TokenCounter, contract_message, legacy_fill

#: ``summarizer(old_messages, previous_summary) -> new summary text``
Summarizer = Callable[[Sequence[Message], str | None], Awaitable[str]]


@dataclass(frozen=True)
class ContextWindow:
    """The messages (oldest first) and summary a context serves, with their cost."""

    messages: list[Message]
    first_position: int
    summary: Summary | None
    token_count: int
    total_messages: int
    version: int

    @property
    def summary_version(self) -> int:
        return self.summary.summary_version if self.summary else 0


def storage_counter(storage: object) -> TokenCounter | None:
    """The counter a storage makes its stored counts with (None: it has none)."""
    counter = getattr(storage, "token_counter", None)
    return counter if isinstance(counter, TokenCounter) else None


def chosen_counter(
    storage: object, token_counter: TokenCounter | None = None, model: str | None = None
) -> TokenCounter:
    """What a context is counted with: ``token_counter``, else the encoding ``model`` uses
    (``"gpt-4o"``: o200k_base), else the storage's own counter, else cl100k_base."""
    if model is not None:
        if token_counter is not None:
            raise InvalidInputError("give a token_counter or a model, not both")
        return TokenCounter.for_model(model)
    return token_counter or storage_counter(storage) or TokenCounter()


def cost_of(stored: StoredMessage, counter: TokenCounter) -> int | None:
    """A message's contract cost counted with ``counter``.

    The stored count when it was made with ``counter``'s encoding, else the message is
    counted now: a count without an encoding, or in another one, is never used.  None
    when the message has no turn_id or timestamp: its cost depends on the session's fill
    (see ``message_cost``; an untimed count is the cost without the fill).
    """
    if stored.token_count is not None and stored.token_encoding == counter.count_label:
        return stored.token_count
    return counter.message_cost(stored.message)


def message_cost(stored: StoredMessage, head: SessionHead, counter: TokenCounter) -> int:
    """A message's contract cost with ``counter``, the session's fill included if needed."""
    cost = cost_of(stored, counter)
    if cost is not None:
        return cost
    created = head.created_at or datetime(1970, 1, 1, tzinfo=UTC)
    message = stored.message
    if type(created) is not datetime:  # a subclass may carry more than its fields show
        return _filled_cost(message, stored.position, created, counter)
    if stored.token_count is not None and stored.token_encoding == counter.untimed_label:
        # Stored short of its fill time (TokenCounter.untimed_cost): the fill's part added.
        fill = (counter, created, created.utcoffset())
        return stored.token_count + _kept(fill, lambda: counter.fill_cost(go_timestamp(created)))
    # The cost of a message with a fill depends only on what the key names: its role,
    # content and turn id (its core digest, of every field but metadata), its position
    # when the turn id is filled, the session's creation time with its offset, and the
    # counter (equal only to a counter of its own class and encoding).
    key = (
        counter,
        core_digest_of(message),
        stored.position if message.turn_id is None else -1,
        created,
        created.utcoffset(),
    )
    return _kept(key, lambda: _filled_cost(message, stored.position, created, counter))


def _kept(key: tuple[object, ...], count: Callable[[], int]) -> int:
    """``count()``, kept in _FILLED_COSTS under ``key``."""
    try:
        found = _FILLED_COSTS.get(key)
    except TypeError:  # a counter that can't be hashed: counted every time
        return count()
    if found is None:
        found = count()
        if len(_FILLED_COSTS) >= FILLED_COSTS_KEPT:
            del _FILLED_COSTS[next(iter(_FILLED_COSTS))]  # the oldest entry
        _FILLED_COSTS[key] = found
    return found


#: Costs of messages counted with the session's fill (no count can be stored for them:
#: the fill is the session's), or of the fill alone for an untimed stored count, kept
#: per process so a session's next context does not count them again.  Keyed by
#: digests, never by text; about 200 bytes an entry.
FILLED_COSTS_KEPT = 16384
_FILLED_COSTS: dict[tuple[object, ...], int] = {}


def _filled_cost(message: Message, position: int, created: datetime, counter: TokenCounter) -> int:
    turn_id, stamp = legacy_fill(position, created)
    return counter.element_cost(contract_message(message, turn_id, stamp))


async def walk_newest(
    reader: SessionReader,
    head: SessionHead,
    *,
    floor: int = -1,
    chunk: int = 64,
    token_budget: int | None = None,
) -> AsyncIterator[StoredMessage]:
    """Messages newest first, down to (not including) position ``floor``, in chunks.

    ``token_budget`` lets the reader stop a chunk where the stored counts run out.  It is
    only a hint, in the stored counts' encoding: when the caller counts with another one,
    a chunk cut short costs one more read, never a different window.
    """
    before = head.message_count
    size = max(1, chunk)
    while before > floor + 1:
        rows = await reader.newest(before, min(size, before - floor - 1), token_budget)
        if not rows:
            return
        for stored in rows:
            if stored.position <= floor:
                return
            yield stored
        before = rows[-1].position
        size = min(size * 2, 4096)


async def select_newest(
    reader: SessionReader,
    head: SessionHead,
    counter: TokenCounter,
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
    floor: int = -1,
) -> tuple[list[StoredMessage], list[int]]:
    """The newest messages within the limits, oldest first, with their costs.

    Stops at the first message that does not fit, so the window is contiguous.
    """
    chosen: list[StoredMessage] = []
    costs: list[int] = []
    total = 0
    chunk = max_messages or (max_tokens // 40 + 16 if max_tokens else 256)
    async for stored in walk_newest(
        reader, head, floor=floor, chunk=min(chunk, 1024), token_budget=max_tokens
    ):
        if max_messages is not None and len(chosen) >= max_messages:
            break
        cost = message_cost(stored, head, counter)
        if max_tokens is not None and total + cost > max_tokens:
            break
        chosen.append(stored)
        costs.append(cost)
        total += cost
    chosen.reverse()
    costs.reverse()
    return chosen, costs


class CompressionStrategy(Protocol):
    """Decides which messages (and which summary) a context carries."""

    async def window(
        self, storage: VersionedStorage, session_id: str, counter: TokenCounter
    ) -> ContextWindow: ...


def _window(
    head: SessionHead, chosen: list[StoredMessage], costs: list[int], summary: Summary | None
) -> ContextWindow:
    return ContextWindow(
        messages=[stored.message for stored in chosen],
        first_position=chosen[0].position if chosen else head.message_count,
        summary=summary,
        token_count=sum(costs),
        total_messages=head.message_count,
        version=head.version,
    )


async def _newest_window(
    storage: VersionedStorage,
    session_id: str,
    counter: TokenCounter,
    *,
    max_messages: int | None = None,
    max_tokens: int | None = None,
) -> ContextWindow:
    async with storage.reader(session_id) as reader:
        head = await reader.head()
        summary = await reader.latest_summary()
        chosen, costs = await select_newest(
            reader, head, counter, max_messages=max_messages, max_tokens=max_tokens
        )
    return _window(head, chosen, costs, summary)


@dataclass(frozen=True)
class SlidingWindow:
    """The newest ``max_messages`` messages, with the latest summary."""

    max_messages: int

    def __post_init__(self) -> None:
        if self.max_messages < 0:
            raise InvalidInputError("max_messages must be >= 0")

    async def window(
        self, storage: VersionedStorage, session_id: str, counter: TokenCounter
    ) -> ContextWindow:
        return await _newest_window(storage, session_id, counter, max_messages=self.max_messages)


@dataclass(frozen=True)
class TokenBudget:
    """The newest messages whose contract cost fits ``max_tokens``, with the latest summary."""

    max_tokens: int

    def __post_init__(self) -> None:
        if self.max_tokens < 0:
            raise InvalidInputError("max_tokens must be >= 0")

    async def window(
        self, storage: VersionedStorage, session_id: str, counter: TokenCounter
    ) -> ContextWindow:
        return await _newest_window(storage, session_id, counter, max_tokens=self.max_tokens)


@dataclass(frozen=True)
class SummarizeOldest:
    """Summary + recent messages: when the unsummarized history passes ``trigger_tokens``,
    everything but the newest ``keep_recent`` messages is folded into the next summary
    version by ``summarizer`` (called outside any database transaction), inside the call
    that asked for the context: for tests and demos.  Services summarize in the
    background instead (``ctxstore.summaries.SummarizeInBackground``)."""

    summarizer: Summarizer
    keep_recent: int
    trigger_tokens: int

    async def window(
        self, storage: VersionedStorage, session_id: str, counter: TokenCounter
    ) -> ContextWindow:
        due = await summary_due(storage, session_id, counter, self.keep_recent, self.trigger_tokens)
        if due.until is not None:
            with suppress(ConflictError):  # another worker summarized first: serve theirs
                await summarize_span(storage, session_id, self.summarizer, due.summary, due.until)
        return await summary_window(storage, session_id, counter)


@dataclass(frozen=True)
class SummaryDue:
    """A session's latest summary, and how far the next one should reach."""

    summary: Summary | None
    #: The last position to fold into the next summary; None: the trigger has not passed.
    until: int | None

    @property
    def covered(self) -> int:
        return self.summary.covers_until if self.summary else -1


async def summary_due(
    storage: VersionedStorage,
    session_id: str,
    counter: TokenCounter,
    keep_recent: int,
    trigger_tokens: int,
) -> SummaryDue:
    """Whether the history after the latest summary passes ``trigger_tokens``: then all
    but the newest ``keep_recent`` messages are due to be summarized."""
    async with storage.reader(session_id) as reader:
        head, summary = await reader.head(), await reader.latest_summary()
        return await _due(storage, reader, head, summary, counter, keep_recent, trigger_tokens)


async def summary_window(
    storage: VersionedStorage,
    session_id: str,
    counter: TokenCounter,
    max_tokens: int | None = None,
) -> ContextWindow:
    """The latest summary and the messages after it (the newest that fit ``max_tokens``)."""
    async with storage.reader(session_id) as reader:
        head, summary = await reader.head(), await reader.latest_summary()
        return await _window_after(reader, head, summary, counter, max_tokens)


async def due_and_window(
    storage: VersionedStorage,
    session_id: str,
    counter: TokenCounter,
    keep_recent: int,
    trigger_tokens: int,
    max_tokens: int | None = None,
) -> tuple[SummaryDue, ContextWindow]:
    """``summary_due`` and ``summary_window`` of one snapshot (the window does not wait
    for the summary, so both read the same state)."""
    async with storage.reader(session_id) as reader:
        head, summary = await reader.head(), await reader.latest_summary()
        due = await _due(storage, reader, head, summary, counter, keep_recent, trigger_tokens)
        return due, await _window_after(reader, head, summary, counter, max_tokens)


async def _due(
    storage: VersionedStorage,
    reader: SessionReader,
    head: SessionHead,
    summary: Summary | None,
    counter: TokenCounter,
    keep_recent: int,
    trigger_tokens: int,
) -> SummaryDue:
    covered = summary.covers_until if summary else -1
    if _counts_with(storage, counter):
        _, tokens = await reader.token_total(covered)
    else:  # the stored counts are in another encoding: count what the trigger needs
        tokens = await _tokens_over(reader, head, counter, covered, trigger_tokens)
    until = head.message_count - keep_recent - 1
    passed = tokens > trigger_tokens and until > covered
    return SummaryDue(summary, until if passed else None)


async def _window_after(
    reader: SessionReader,
    head: SessionHead,
    summary: Summary | None,
    counter: TokenCounter,
    max_tokens: int | None,
) -> ContextWindow:
    floor = summary.covers_until if summary else -1
    chosen, costs = await select_newest(reader, head, counter, max_tokens=max_tokens, floor=floor)
    return _window(head, chosen, costs, summary)


async def summarize_span(
    storage: VersionedStorage,
    session_id: str,
    summarizer: Summarizer,
    previous: Summary | None,
    until: int,
) -> None:
    """Fold the messages after ``previous`` through position ``until`` into the next
    summary version; ConflictError when another one was stored since ``previous``."""
    covered = previous.covers_until if previous else -1
    async with storage.reader(session_id) as reader:
        old = await reader.span(covered + 1, until + 1)
    text = await summarizer(old, previous.text if previous else None)
    # A summary's stored count says nothing of its encoding, so it is only ever made
    # with the storage's own counter, like its message counts (context code never
    # reads it: the builder counts the summary inside the contract it builds).
    own = storage_counter(storage)
    await storage.save_summary(
        session_id,
        text,
        covers_until=until,
        token_count=own.count(text) if own is not None else None,
        expected_version=previous.summary_version if previous else 0,
    )


def _counts_with(storage: VersionedStorage, counter: TokenCounter) -> bool:
    """Whether the storage's stored counts are in ``counter``'s encoding."""
    own = storage_counter(storage)
    return own is not None and own.count_label == counter.count_label


async def _tokens_over(
    reader: SessionReader, head: SessionHead, counter: TokenCounter, floor: int, limit: int
) -> int:
    """The tokens after position ``floor`` counted with ``counter``, or the first total
    past ``limit``: only as much of the history as the trigger decision needs."""
    total = 0
    async for stored in walk_newest(reader, head, floor=floor, chunk=limit // 40 + 16):
        total += message_cost(stored, head, counter)
        if total > limit:
            break
    return total


_SENTENCE_END = re.compile(r"(?<=[。！？!?.])\s*")


def extractive_summarizer(max_chars: int = 600) -> Summarizer:
    """A summarizer for demos and tests: NOT an LLM.

    It keeps the previous summary and the first sentence of each user message, in order,
    without repeats, cut to ``max_chars``.  Deterministic, offline, instant.
    """

    async def summarize(messages: Sequence[Message], previous: str | None) -> str:
        parts: list[str] = [previous] if previous else []
        for message in messages:
            if message.role != "user":
                continue
            first = _SENTENCE_END.split(message.content.strip(), maxsplit=1)[0]
            first = first.strip().rstrip("。！？!?.")
            if first and first not in parts:
                parts.append(first)
        text = "；".join(parts) or "（无）"
        return text if len(text) <= max_chars else text[: max_chars - 1] + "…"

    return summarize
