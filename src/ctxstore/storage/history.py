"""History: the list PostgresStorage.load returns, which remembers where it came from.

A service loads a session, appends the new turn and saves the list: full-overwrite
semantics.  Proving that the saved list still starts with the stored one normally means
hashing every message (O(n)).  A History knows it: it records the stored count and
content hash when it is loaded or saved, and forgets them the moment it is changed in
any way but appending (``append``, ``extend``, ``+=``).  Messages are immutable except
their metadata: loaded messages without metadata share a read-only empty dict, and the
loaded messages that carry metadata, and every message added since, are re-checked on
save.  A save of a History whose prefix is untouched then costs the new messages only,
whatever the session's length.

Anything else (a plain list, a History edited in the middle) takes the general path:
same result, O(n) hashing.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, SupportsIndex

from ctxstore.models import Message, digest_of


@dataclass(frozen=True)
class Origin:
    """The stored state a History's first ``count`` messages are known to equal."""

    session_id: str
    count: int
    content_hash: bytes
    hasher: Any  # hashlib's sha256 object, having consumed every digest
    #: (position, full digest) of the messages with metadata, which is a mutable dict
    metadata_digests: tuple[tuple[int, bytes], ...]

    def prefix_intact(self, messages: list[Message]) -> bool:
        if len(messages) < self.count:
            return False
        return all(
            digest_of(messages[position]) == digest for position, digest in self.metadata_digests
        )


class History(list[Message]):
    """A list of Messages that tracks whether it still extends the stored session."""

    __slots__ = ("origin",)

    def __init__(self, messages: Iterable[Message] = (), origin: Origin | None = None) -> None:
        super().__init__(messages)
        self.origin = origin

    # Copies and pickles are plain lists of messages: the origin (with its hash state,
    # which can't be pickled) describes this object only.

    def __copy__(self) -> History:
        return History(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> History:
        return History(copy.deepcopy(list(self), memo))

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (list, (list(self),))

    # Every mutation but appending forgets the origin.

    def __setitem__(self, index: Any, value: Any) -> None:
        self.origin = None
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        self.origin = None
        super().__delitem__(index)

    def __imul__(self, times: SupportsIndex) -> History:
        self.origin = None
        super().__imul__(times)
        return self

    def insert(self, index: SupportsIndex, value: Message) -> None:
        self.origin = None
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> Message:
        self.origin = None
        return super().pop(index)

    def remove(self, value: Message) -> None:
        self.origin = None
        super().remove(value)

    def clear(self) -> None:
        self.origin = None
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self.origin = None
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self.origin = None
        super().reverse()
