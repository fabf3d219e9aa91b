"""History: the list ``load`` returns.

A service loads a session, appends the new turn and saves the list: full-overwrite
semantics.  The store remembers the very messages it loaded or saved
(storage/knowledge.py), so saving any list that starts with them (this History after
``append``, ``history + [q, a]``, ``[*history, q, a]``) costs the new messages only,
whatever the session's length.  Anything else (an edit in the middle, a new list of
equal messages) takes the general path: same result, O(n) hashing.
"""

from __future__ import annotations

import copy
from typing import Any, SupportsIndex

from ctxstore.models import Message


class History(list[Message]):
    """A list of the session's Messages, oldest first.  Copies and pickles are plain lists."""

    __slots__ = ()

    def __copy__(self) -> History:
        return History(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> History:
        return History(copy.deepcopy(list(self), memo))

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (list, (list(self),))
