"""History: the list ``load`` returns.

A service loads a session, appends the new turn and saves the list: full-overwrite
semantics.  PostgresStorage remembers the very messages it loaded or saved
(storage/knowledge.py), so saving any list that starts with them (this History after
``append``, ``history + [q, a]``, ``[*history, q, a]``) costs the new messages only.
A History also counts its edits (every change but appending), so the store knows in
O(1) that the History it handed out has only grown; any other list is compared with
the stored messages at C speed.  Anything else (an edit in the middle, a new list of
equal messages) takes the general path: same result, O(n) hashing.
"""

from __future__ import annotations

import copy
from typing import Any, SupportsIndex

from ctxstore.models import Message


class History(list[Message]):
    """A list of the session's Messages, oldest first.  Copies and pickles are plain lists."""

    __slots__ = ("edits",)

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        #: Changes other than appending so far (the store compares it, never you).
        self.edits = 0

    def __copy__(self) -> History:
        return History(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> History:
        return History(copy.deepcopy(list(self), memo))

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (list, (list(self),))

    # Every change but appending (append, extend, +=) counts as an edit.

    def __setitem__(self, index: Any, value: Any) -> None:
        self.edits += 1
        super().__setitem__(index, value)

    def __delitem__(self, index: Any) -> None:
        self.edits += 1
        super().__delitem__(index)

    def __imul__(self, times: SupportsIndex) -> History:
        self.edits += 1
        super().__imul__(times)
        return self

    def insert(self, index: SupportsIndex, value: Message) -> None:
        self.edits += 1
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> Message:
        self.edits += 1
        return super().pop(index)

    def remove(self, value: Message) -> None:
        self.edits += 1
        super().remove(value)

    def clear(self) -> None:
        self.edits += 1
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        self.edits += 1
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        self.edits += 1
        super().reverse()
