"""The session operations both adapters need beyond load, append and delete.

- ``newest``: the last ``limit`` messages, read from one snapshot in a backward range
  scan, so it costs the same at 10 and at 10,000 stored messages;
- ``pop_newest``: remove and return the last message, atomically under concurrency: the
  shortened list is saved only at the version it was read at, else read again.  Two
  poppers never get the same message, and an append landing in between is never lost.
"""

from __future__ import annotations

from ctxstore.errors import ConflictError
from ctxstore.models import Message
from ctxstore.retry import Retry, jittered
from ctxstore.storage.store import VersionedStorage

#: One pop against writers that keep changing the session: read again, after a pause
#: that spreads competing poppers out (up to 50 ms).
POP_RACE = Retry(ConflictError, attempts=100, wait=jittered(0.002, cap=0.05))


async def newest(storage: VersionedStorage, session_id: str, limit: int) -> list[Message]:
    """The session's last ``limit`` messages, oldest first (``limit`` >= 0)."""
    return await storage.newest(session_id, limit)


async def pop_newest(
    storage: VersionedStorage, session_id: str, user_id: str | None = None
) -> Message | None:
    """Remove the session's last message and return it; None when there is none."""

    async def pop() -> Message | None:
        async with storage.reader(session_id) as reader:
            head = await reader.head()
            if not head.message_count:
                return None
            messages = await reader.span(0, head.message_count)
        # A ConflictError: another writer got there first.
        await storage.save(
            session_id, messages[:-1], expected_version=head.version, user_id=user_id
        )
        return messages[-1]

    return await POP_RACE.run(
        pop,
        exhausted=lambda _error: ConflictError(
            f"session {session_id!r} kept changing: no pop succeeded in "
            f"{POP_RACE.attempts} attempts",
            session_id=session_id,
        ),
    )
