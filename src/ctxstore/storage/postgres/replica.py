"""Context reads on a streaming replica, and this process always reading its own writes.

A replica replays the primary's WAL some time behind it.  Context windows and contract
assembly tolerate that lag for what *other* processes wrote, but a worker that has just
appended a turn must see it in the next window.  Rather than wait for the replica to
replay a WAL position, each read compares what the replica holds for the session (its
version, latest summary, state and its user's profile: one indexed query, in the read's
own snapshot) with what this process last wrote there; anything behind, and the read
goes to the primary instead.  Nothing extra runs on the write path.

The marks are per process and bounded (the least recently written are dropped first):
a session written long ago by this process is read like one written by another.
"""

from __future__ import annotations

import functools
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any, Concatenate, Literal, ParamSpec, Protocol, TypeVar

from ctxstore.models import Summary
from ctxstore.storage.base import SessionHead

#: A session this process deleted: the replica may still show it.
GONE = -1
#: After the replica could not be reached, the primary serves every read this long.
REPLICA_RETRY_SECONDS = 5.0


@dataclass(frozen=True)
class Written:
    """The newest versions this process wrote to one session."""

    version: int = 0
    summary_version: int = 0
    state_version: int = 0


class WrittenMarks:
    def __init__(self, capacity: int = 100_000) -> None:
        self._sessions: OrderedDict[str, Written] = OrderedDict()
        self._profiles: OrderedDict[str, int] = OrderedDict()
        self._capacity = capacity
        #: Context reads sent to the primary because the replica was behind, or could not
        #: be reached (observable).
        self.behind = 0
        self.unavailable = 0
        self._down_until = 0.0

    def replica_usable(self) -> bool:
        """False for a while after the replica could not be reached: reads then go to
        the primary without first waiting on a connect timeout each."""
        return time.monotonic() >= self._down_until

    def replica_failed(self) -> None:
        self.unavailable += 1
        self._down_until = time.monotonic() + REPLICA_RETRY_SECONDS

    def _put(self, table: OrderedDict[str, Any], key: str, value: Any) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self._capacity:
            table.popitem(last=False)

    def wrote(self, session_id: str, **versions: int) -> None:
        """Versions a write produced (``version``, ``summary_version``, ``state_version``)."""
        current = self._sessions.get(session_id, Written())
        if current.version == GONE:
            current = Written()
        newer = {
            name: max(getattr(current, name), value)
            for name, value in versions.items()
            if value is not None
        }
        self._put(self._sessions, session_id, replace(current, **newer))

    def deleted(self, session_id: str) -> None:
        self._put(self._sessions, session_id, Written(version=GONE))

    def wrote_profile(self, user_id: str, version: int) -> None:
        self._put(self._profiles, user_id, max(self._profiles.get(user_id, 0), version))

    def deleted_profile(self, user_id: str) -> None:
        self._put(self._profiles, user_id, GONE)

    def caught_up(self, session_id: str, found: Any) -> bool:
        """Whether a replica row of REPLICA_FRESHNESS (None: no session there) holds
        everything this process wrote to the session and to its user's profile."""
        mine = self._sessions.get(session_id)
        if found is None:
            return mine is None or mine.version == GONE
        if mine is not None and not _holds(found, mine):
            return False
        user_id = found["user_id"]
        profile = self._profiles.get(user_id) if user_id is not None else None
        if profile is None:
            return True
        if profile == GONE:
            return found["profile_version"] is None
        return (found["profile_version"] or 0) >= profile


def _holds(found: Any, mine: Written) -> bool:
    """Whether a REPLICA_FRESHNESS row holds every write of ``mine`` to the session."""
    return (
        mine.version != GONE
        and found["version"] >= mine.version
        and (found["summary_version"] or 0) >= mine.summary_version
        and (found["state_version"] or 0) >= mine.state_version
    )


def head_of(found: Any) -> SessionHead:
    """The SessionHead a REPLICA_FRESHNESS row already holds (spares the reader a query)."""
    if found is None:
        return SessionHead(False, 0, 0, None, None)
    return SessionHead(
        True,
        int(found["version"]),
        int(found["message_count"]),
        found["created_at"],
        found["user_id"],
    )


class _Marks(Protocol):
    @property
    def written(self) -> WrittenMarks: ...


_Store = TypeVar("_Store", bound=_Marks)
_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")
Kind = Literal["messages", "summary", "state", "profile"]


def recorded(
    kind: Kind,
) -> Callable[
    [Callable[Concatenate[_Store, str, _Args], Coroutine[Any, Any, _Result]]],
    Callable[Concatenate[_Store, str, _Args], Coroutine[Any, Any, _Result]],
]:
    """A write hook whose result (a version, or a Summary) is marked as written by this
    process, for the session (or the user, for ``profile``) of its first argument."""

    def decorate(
        write: Callable[Concatenate[_Store, str, _Args], Coroutine[Any, Any, _Result]],
    ) -> Callable[Concatenate[_Store, str, _Args], Coroutine[Any, Any, _Result]]:
        @functools.wraps(write)
        async def marking(
            store: _Store, key: str, /, *args: _Args.args, **kwargs: _Args.kwargs
        ) -> _Result:
            result = await write(store, key, *args, **kwargs)
            marks = store.written
            if kind == "profile":
                marks.wrote_profile(key, int(result))  # type: ignore[call-overload]
            elif kind == "summary":
                assert isinstance(result, Summary)
                marks.wrote(key, summary_version=result.summary_version)
            elif kind == "state":
                marks.wrote(key, state_version=int(result))  # type: ignore[call-overload]
            else:
                marks.wrote(key, version=int(result))  # type: ignore[call-overload]
            return result

        return marking

    return decorate
