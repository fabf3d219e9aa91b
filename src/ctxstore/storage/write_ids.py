"""Journal write ids, carried to the primary with the write they name.

FallbackStorage gives each write an id, and replay sends the ids of the journal entries
it applies.  A backend that records them (PostgresStorage, revision 0020) stores them in
the transaction of the write, so a replay asks which entries the primary applied instead
of guessing, whatever other processes wrote since.

A context variable, not a parameter of every write: the ids pass through the Store
facade and its rules untouched, and a backend that can't record them ignores them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_CARRIED: ContextVar[tuple[str, ...]] = ContextVar("ctxstore_write_ids", default=())


def new_write_id() -> str:
    return uuid.uuid4().hex


def is_write_id(value: str) -> bool:
    """Whether ``value`` is a write id a backend can record (a journal written before
    write ids were recorded may hold none, or another form)."""
    try:
        return uuid.UUID(value).hex == value
    except ValueError:
        return False


@contextmanager
def carrying(write_ids: Iterable[str]) -> Iterator[None]:
    """The writes made inside carry ``write_ids`` (those that are write ids)."""
    token = _CARRIED.set(tuple(value for value in write_ids if is_write_id(value)))
    try:
        yield
    finally:
        _CARRIED.reset(token)


def carried() -> tuple[str, ...]:
    """The write ids the current write carries (none outside ``carrying``)."""
    return _CARRIED.get()
