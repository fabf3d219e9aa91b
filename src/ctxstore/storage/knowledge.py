"""What PostgresStorage last knew of each session, in one object (``storage.knowledge``).

It records here, per session, the version it last read or wrote, the stored
message count, the content hash, a hasher that has consumed every stored digest, and
where the very Message objects it stored can be found again: a later save of any list
that starts with those same objects (the loaded ``History``, ``history + [q, a]``,
``[*history, q, a]``) is recognised without hashing the stored part again, so it costs
the new messages only.

Only ever a hint: the database re-checks count and hash in the statement that writes,
so a stale entry costs one slower save, never correctness.  A list extending a loaded
History is found again without copying either (StoredList).  Three operations change it:
``after_load``, ``after_write`` and ``forget``.  Bounded: least recently used sessions
go first, and at most ``max_messages`` message references are kept in all.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ctxstore.models import EMPTY_METADATA, Message, digest_of
from ctxstore.storage.history import History

Hasher = Any  # hashlib's HASH object (not importable for annotations)


@dataclass(frozen=True)
class MetadataWatch:
    """How to tell that stored messages' metadata dicts (the only mutable part of a
    message) still hold what was stored: a digest for each non-empty one, and the empty
    ones themselves (still empty: checked at C speed).  The shared read-only empty dict
    of loaded messages can't change, so it is not watched."""

    digests: tuple[tuple[int, bytes], ...] = ()
    empty: tuple[dict[str, Any], ...] = ()

    def extended(
        self, messages: Sequence[Message], digests: Sequence[bytes], first: int = 0
    ) -> MetadataWatch:
        """This watch plus ``messages`` (with their ``digests``) stored from ``first`` on."""
        pairs = enumerate(zip(messages, digests, strict=True), first)
        return self.watching((position, m, digest) for position, (m, digest) in pairs)

    def watching(self, stored: Iterable[tuple[int, Message, bytes]]) -> MetadataWatch:
        """This watch plus each (position, message, digest) of ``stored``."""
        watched = list(self.digests)
        empty = list(self.empty)
        for position, message, digest in stored:
            metadata = message.__dict__["metadata"]
            if metadata is EMPTY_METADATA:
                continue
            if metadata:
                watched.append((position, digest))
            else:
                empty.append(metadata)
        return MetadataWatch(tuple(watched), tuple(empty))

    def intact(self, stored: Sequence[Message]) -> bool:
        """``stored``: a list starting with the stored messages (or equal ones)."""
        if any(self.empty):
            return False
        try:
            return all(digest_of(stored[position]) == digest for position, digest in self.digests)
        except (TypeError, ValueError):  # changed into something not JSON: the rules say why
            return False


@dataclass(frozen=True)
class StoredList:
    """Where the stored messages can be found again, without copying them: the first
    ``base_count`` items of ``base`` (the History they were loaded into or saved from,
    trusted while it has only grown, else a list of the store's own), then ``tail`` (a
    copy of what a list extending them added)."""

    base: list[Message]
    #: The History's edit count when it was recorded (None: a private copy).
    edits: int | None
    base_count: int
    tail: tuple[Message, ...] = ()

    @classmethod
    def of(cls, messages: list[Message]) -> StoredList:
        if isinstance(messages, History):
            return cls(messages, messages.edits, len(messages))
        return cls(messages[:], None, len(messages))

    def held(self) -> int:
        return self.base_count + len(self.tail)

    def messages(self) -> list[Message]:
        """The stored messages, as a new list."""
        return [*self.base[: self.base_count], *self.tail]

    def extended_by(self, whole: Sequence[Message]) -> StoredList:
        """After ``whole``, a list starting with these (``starts``), was stored: O(new)."""
        if whole is self.base and not self.tail:
            return StoredList.of(self.base)  # the very History, only grown
        tail = self.tail + tuple(whole[self.held() :])
        if len(tail) > self.base_count:  # mostly new: one list of the store's own
            whole_copy = [*self.base[: self.base_count], *tail]
            return StoredList(whole_copy, None, len(whole_copy))
        return replace(self, tail=tail)

    def starts(self, candidate: list[Message] | tuple[Message, ...]) -> bool:
        """True when ``candidate`` starts with the stored messages."""
        base, count = self.base, self.base_count
        if self.edits is not None and (
            not isinstance(base, History) or base.edits != self.edits or len(base) < count
        ):
            return False  # the History was edited: where the stored list is, is lost
        if len(candidate) < self.held():
            return False
        if candidate is not base:
            head = candidate[:count]
            # same objects compare at C speed: list equality checks identity first
            if (head if type(head) is list else list(head)) != (
                base if len(base) == count else base[:count]
            ):
                return False
        return not self.tail or tuple(candidate[count : self.held()]) == self.tail


@dataclass(frozen=True)
class Known:
    """One session as this process last saw it stored."""

    version: int
    #: Stored message count and content hash (None: not known).
    count: int | None = None
    content_hash: bytes | None = None
    #: A sha256 that has consumed every stored digest, to extend the hash by new ones.
    hasher: Hasher | None = None
    #: The stored messages themselves, to recognise a list that extends them.
    stored: StoredList | None = None
    watch: MetadataWatch = MetadataWatch()

    def extended(
        self,
        version: int,
        located: StoredList,
        added: Sequence[Message],
        digests: Sequence[bytes],
        hasher: Hasher,
    ) -> Known:
        """After ``added`` (with ``digests``, consumed by ``hasher``) went after these:
        what is now stored, found again through ``located``."""
        count = self.count or 0
        return Known(
            version,
            count + len(added),
            hasher.digest(),
            hasher,
            located,
            self.watch.extended(added, digests, count),
        )


class SessionKnowledge:
    def __init__(self, capacity: int = 10_000, max_messages: int = 200_000) -> None:
        self._entries: OrderedDict[str, Known] = OrderedDict()
        self._capacity = capacity
        self._max_messages = max_messages
        self._held = 0  # message references held by all entries

    def get(self, session_id: str) -> Known | None:
        entry = self._entries.get(session_id)
        if entry is not None:
            self._entries.move_to_end(session_id)
        return entry

    def after_load(self, session_id: str, known: Known) -> None:
        self._put(session_id, known)

    def after_write(self, session_id: str, known: Known) -> None:
        self._put(session_id, known)

    def forget(self, session_id: str) -> None:
        entry = self._entries.pop(session_id, None)
        if entry is not None and entry.stored is not None:
            self._held -= entry.stored.held()

    def stored_prefix(self, session_id: str, messages: object) -> Known | None:
        """The entry when ``messages`` starts with exactly the stored messages, else None.

        Same objects compare at C speed (list equality checks identity first); messages
        with metadata are re-hashed, since their dict may have been changed in place.
        """
        entry = self.get(session_id)
        if entry is None or entry.stored is None or not isinstance(messages, list | tuple):
            return None
        if not entry.stored.starts(messages):
            return None
        if not entry.watch.intact(messages):
            return None
        return entry

    def _put(self, session_id: str, known: Known) -> None:
        self.forget(session_id)
        held = known.stored.held() if known.stored is not None else 0
        if held > self._max_messages:  # too long to keep: the hash still helps
            known = Known(known.version, known.count, known.content_hash, known.hasher)
            held = 0
        self._held += held
        self._entries[session_id] = known
        while len(self._entries) > self._capacity or self._held > self._max_messages:
            self.forget(next(iter(self._entries)))
