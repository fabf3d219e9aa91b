"""The fallback's operation journal: the writes served while the primary was down, in order.

FallbackStorage records each write the secondary accepted here before the caller hears
back, so an acknowledged write is either in the primary or in the journal.  Replay
(storage/replay.py) applies the journal to the primary in order.  A journal lives with
the secondary: ``MemoryJournal`` in this process (lost with it, like a MemoryStorage),
``RedisJournal`` (storage/redis/journal.py) in Redis, where a restarted process finds it.

Besides the operations a journal keeps:

- the *marks*: for each append replay is applying, the primary version and message
  position it applies it at, so that one interrupted by a crash is neither lost nor
  applied twice;
- the *quarantine*: operations the primary refused, with the reason (never retried);
- the *copies*: what the secondary still holds of replayed writes, removed once the
  primary serves again, so that a later outage never reads or resurrects them.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, Literal, get_args

from ctxstore.errors import CorruptDataError
from ctxstore.formats.messages import message_from_document, message_to_document
from ctxstore.models import Message

OperationKind = Literal["save", "append", "delete", "state", "summary", "profile", "delete_profile"]
KINDS: tuple[str, ...] = get_args(OperationKind)
#: Operations on a user's profile; every other kind is keyed by a session id.
PROFILE_KINDS = frozenset({"profile", "delete_profile"})


def copy_key(kind: OperationKind, key: str) -> str:
    """``session:<id>`` or ``profile:<user id>``: what a write of ``kind`` leaves behind."""
    return f"{'profile' if kind in PROFILE_KINDS else 'session'}:{key}"


@dataclass(frozen=True)
class Operation:
    """One acknowledged write, with what replay needs to apply it again."""

    kind: OperationKind
    #: The session id (the user id for a profile).
    key: str
    messages: tuple[Message, ...] = ()
    user_id: str | None = None
    #: A state's or profile's document, in the current format.
    document: dict[str, Any] | None = None
    text: str | None = None
    covers_until: int | None = None
    token_count: int | None = None
    #: The version the caller based the write on (``expected_version``; None: unconditional).
    based_on: int | None = None
    #: The session's version on the primary when this process last saw it (None: unknown).
    primary_version: int | None = None
    #: The primary failed during this very call: it may have applied the write already.
    uncertain: bool = False
    #: Unique per write: finds the entry of a call whose journal write had no reply.
    write_id: str = ""

    @property
    def copy_key(self) -> str:
        """What the secondary holds because of this write (see Journal.copies)."""
        return copy_key(self.kind, self.key)

    def to_json(self) -> str:
        document: dict[str, Any] = {"kind": self.kind, "key": self.key}
        if self.messages:
            document["messages"] = [message_to_document(m) for m in self.messages]
        optional = {
            "user_id": self.user_id,
            "document": self.document,
            "text": self.text,
            "covers_until": self.covers_until,
            "token_count": self.token_count,
            "based_on": self.based_on,
            "primary_version": self.primary_version,
            "write_id": self.write_id or None,
        }
        document.update({name: value for name, value in optional.items() if value is not None})
        if self.uncertain:
            document["uncertain"] = True
        return json.dumps(document, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes, entry_id: str) -> Operation:
        try:
            document = json.loads(raw)
            kind = document["kind"]
            if kind not in KINDS:
                raise ValueError(f"unknown kind {kind!r}")
            key = str(document["key"])
            messages = tuple(
                message_from_document(item, session_id=key, position=position)
                for position, item in enumerate(document.get("messages", ()))
            )
            return cls(
                kind=kind,
                key=key,
                messages=messages,
                user_id=document.get("user_id"),
                document=document.get("document"),
                text=document.get("text"),
                covers_until=document.get("covers_until"),
                token_count=document.get("token_count"),
                based_on=document.get("based_on"),
                primary_version=document.get("primary_version"),
                uncertain=bool(document.get("uncertain", False)),
                write_id=str(document.get("write_id") or ""),
            )
        except CorruptDataError:
            raise
        except (ValueError, KeyError, TypeError) as error:
            raise CorruptDataError(
                f"journal entry {entry_id} can't be read ({type(error).__name__}: {error})"
            ) from None


@dataclass(frozen=True)
class Entry:
    id: str
    #: None when the stored entry can't be read (``problem`` says why): it is quarantined.
    operation: Operation | None
    problem: str = ""

    def describe(self) -> tuple[str, str]:
        """(kind, key) for reports."""
        if self.operation is None:
            return "unreadable", ""
        return self.operation.kind, self.operation.key


@dataclass(frozen=True)
class Position:
    """Where replay appends an entry's messages: at the primary's session ``version``,
    from message position ``start`` on."""

    version: int
    start: int

    def encode(self) -> str:
        return f"{self.version}:{self.start}"

    @classmethod
    def decode(cls, raw: str) -> Position:
        version, _, start = raw.partition(":")
        return cls(int(version), int(start or 0))


@dataclass(frozen=True)
class Durability:
    """What an acknowledged journal entry survives."""

    #: It survives a crash of the journal's home (and of this process).
    durable: bool
    #: How, in words (logged, and in FallbackStats.journal).
    how: str
    #: A crash of this process alone doesn't lose it (the journal lives elsewhere).
    outlives_process: bool = True

    @property
    def can_lose(self) -> bool:
        """An acknowledged entry can be lost by a crash of the journal's home, which
        outlives this process (a journal in process memory is lost with the process,
        as documented, and is not this case)."""
        return self.outlives_process and not self.durable


@dataclass(frozen=True)
class Quarantined:
    entry_id: str
    kind: str
    key: str
    reason: str


class Journal(ABC):
    """An ordered, durable-as-its-home list of operations (see the module docstring)."""

    @abstractmethod
    async def record(self, operation: Operation) -> str:
        """Append ``operation`` and note its copy in the secondary; the entry id (ids grow in
        journal order).  Returns once the entry is as durable as ``durability`` says;
        StorageUnavailableError if it can't be made so (nothing acknowledged)."""

    async def durability(self) -> Durability:
        """What an entry survives, as the journal's home is configured now."""
        return Durability(False, "in this process's memory (lost with it)", outlives_process=False)

    @abstractmethod
    async def head(self, limit: int, *, after: str | None = None) -> list[Entry]:
        """Up to ``limit`` entries, oldest first (after the entry id ``after``)."""

    @abstractmethod
    async def get_many(self, entry_ids: Sequence[str]) -> list[Entry | None]:
        """The entries, in the order asked (None: not in the journal)."""

    @abstractmethod
    async def remove(self, entry_ids: Sequence[str]) -> None:
        """Drop replayed entries and their marks."""

    @abstractmethod
    async def size(self) -> int: ...

    @abstractmethod
    async def mark(self, positions: Mapping[str, Position]) -> None:
        """Replay is about to append these entries where their positions say."""

    @abstractmethod
    async def marks(self) -> dict[str, Position]:
        """Every mark: entry id -> position."""

    async def find(self, write_id: str) -> str | None:
        """The id of the entry recording the write ``write_id``, if the journal has it
        (a scan: only asked after a journal write whose reply never came)."""
        async for entry in self.scan():
            if entry.operation is not None and entry.operation.write_id == write_id:
                return entry.id
        return None

    async def scan(self, page: int = 1000) -> AsyncIterator[Entry]:
        """Every entry, oldest first."""
        after: str | None = None
        while entries := await self.head(page, after=after):
            for entry in entries:
                yield entry
            after = entries[-1].id

    @abstractmethod
    async def quarantine(self, entry: Entry, reason: str) -> None:
        """Move ``entry`` out of the journal into the quarantine, with the reason."""

    @abstractmethod
    async def quarantined(self) -> list[Quarantined]: ...

    @abstractmethod
    async def copies(self) -> set[str]: ...

    @abstractmethod
    async def drop_copies(self, keys: Iterable[str]) -> None: ...


@dataclass
class MemoryJournal(Journal):
    """A journal in this process: as durable as the MemoryStorage it sits beside."""

    _entries: dict[str, Operation] = field(default_factory=dict)
    _next: int = 0
    _marks: dict[str, Position] = field(default_factory=dict)
    _quarantine: list[Quarantined] = field(default_factory=list)
    _copies: set[str] = field(default_factory=set)

    async def record(self, operation: Operation) -> str:
        self._next += 1
        entry_id = f"{self._next:020d}"
        self._entries[entry_id] = operation
        self._copies.add(operation.copy_key)
        return entry_id

    async def head(self, limit: int, *, after: str | None = None) -> list[Entry]:
        # Ids are zero-padded counters: their order as text is the journal's order.
        later = (item for item in self._entries.items() if after is None or item[0] > after)
        return [Entry(key, op) for key, op in islice(later, limit)]

    async def get_many(self, entry_ids: Sequence[str]) -> list[Entry | None]:
        found = ((entry_id, self._entries.get(entry_id)) for entry_id in entry_ids)
        return [Entry(key, op) if op is not None else None for key, op in found]

    async def remove(self, entry_ids: Sequence[str]) -> None:
        for entry_id in entry_ids:
            self._entries.pop(entry_id, None)
            self._marks.pop(entry_id, None)

    async def size(self) -> int:
        return len(self._entries)

    async def mark(self, positions: Mapping[str, Position]) -> None:
        self._marks.update(positions)

    async def marks(self) -> dict[str, Position]:
        return dict(self._marks)

    async def quarantine(self, entry: Entry, reason: str) -> None:
        self._quarantine.append(Quarantined(entry.id, *entry.describe(), reason))
        await self.remove([entry.id])

    async def quarantined(self) -> list[Quarantined]:
        return list(self._quarantine)

    async def copies(self) -> set[str]:
        return set(self._copies)

    async def drop_copies(self, keys: Iterable[str]) -> None:
        self._copies.difference_update(keys)
