"""Replay: a fallback journal applied to the primary in order, each entry exactly once.

The merge policy (docs/design.md, "Fallback"): each operation is applied as the write it
was, in journal order.

- ``append``: the messages go after whatever the primary holds, so messages other
  workers wrote to the primary during the outage are kept, before the outage's;
- ``save``: the primary's list becomes the saved list (the last write wins, as for any
  save), so an edit or a redaction made during the outage stays applied;
- ``delete``: the session goes, with whatever other workers added (an erasure is never
  undone); a delete followed by a save replays both;
- state, summary and profile: the outage's document becomes the current one (last write
  wins); a summary the primary already holds is not written twice; a deleted profile goes.

The primary "moved on" when its session version differs from the one the fallback last
saw before the outage: those sessions are counted and logged, and the same policy
applies.  An operation the primary refuses (invalid there, corrupt in the journal) is
quarantined with the reason and the rest goes on; unavailability stops the replay where
it is, to resume later.

Exactly once: an append is applied at the primary version recorded in the journal's mark
first, so one interrupted by a crash is recognised on the next replay (the version moved
and the primary ends with its messages) and not applied twice.  Saves, deletes and
documents are idempotent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ctxstore.errors import ConflictError, CtxStoreError, StorageUnavailableError
from ctxstore.models import Message
from ctxstore.storage.journal import Entry, Journal, Operation
from ctxstore.storage.rules import NEW_SESSION
from ctxstore.storage.store import Store

logger = logging.getLogger("ctxstore.fallback")
#: Conflicts in a row (other writers on the same session) before replay tries again later.
CONFLICT_ATTEMPTS = 20


@dataclass
class ReplayReport:
    replayed: int = 0
    quarantined: int = 0
    #: Sessions whose primary version changed during the outage (merged by the policy).
    moved_on: int = 0
    #: Entries still in the journal (the primary went away again, or kept conflicting).
    remaining: int = 0


class Replayer:
    """Applies journal entries to the primary; which entry when is storage/failover.py's."""

    def __init__(self, primary: Store, journal: Journal) -> None:
        self.primary = primary
        self.journal = journal
        #: The primary version replay last left each session at (moved-on detection).
        self._left_at: dict[str, int] = {}
        #: Appends this process marked and may have applied (see _suspects).
        self._marked: set[str] = set()
        self._loaded_marks: dict[str, int] | None = None

    def settled(self, key: str) -> int | None:
        """The key has nothing left to replay: forget it; the version replay left it at."""
        return self._left_at.pop(key, None)

    async def replay(self, entry: Entry) -> bool:
        """Apply ``entry`` and remove it from the journal; True when the primary had moved
        on from what it was based on.  A refused entry is quarantined (and re-raised as
        Refused); unavailability and conflicts propagate with the entry still there."""
        if entry.operation is None:
            await self.journal.quarantine(entry, entry.problem)
            raise Refused(entry, entry.problem)
        try:
            moved = await self._apply(entry, entry.operation)
        except (StorageUnavailableError, ConflictError):
            raise
        except CtxStoreError as error:
            await self.journal.quarantine(entry, str(error))
            raise Refused(entry, str(error)) from error
        await self.journal.remove(entry.id)
        return moved

    async def _apply(self, entry: Entry, op: Operation) -> bool:
        """Apply one operation; True when the primary had moved on from what it was based on."""
        primary = self.primary
        if op.kind == "delete":
            await primary.delete(op.key)
            self._left_at[op.key] = 0
        elif op.kind == "state":
            await primary.save_state(op.key, op.document or {})
        elif op.kind == "profile":
            await primary.save_profile(op.key, op.document or {})
        elif op.kind == "delete_profile":
            await primary.delete_profile(op.key)
        elif op.kind == "summary":
            await self._apply_summary(op)
        else:
            return await self._apply_messages(entry, op)
        return False

    async def _apply_summary(self, op: Operation) -> None:
        latest = await self.primary.load_summary(op.key)
        if latest is not None and (latest.text, latest.covers_until) == (
            op.text,
            op.covers_until,
        ):
            return  # applied before an interruption
        await self.primary.save_summary(
            op.key, op.text or "", covers_until=op.covers_until or 0, token_count=op.token_count
        )

    async def _apply_messages(self, entry: Entry, op: Operation) -> bool:
        messages = list(op.messages)
        base = self._left_at.get(op.key, op.primary_version)
        # Replay's own last write on this session: its version, without a read.
        known = self._left_at.get(op.key)
        suspect = op.kind == "append" and (op.uncertain or entry.id in await self._suspects())
        moved = False
        for _ in range(CONFLICT_ATTEMPTS):
            if known is None or suspect:
                current, tail = await self._head(op.key, len(messages) if suspect else 0)
                # An uncertain write may itself be what moved the version.
                moved = moved or (base is not None and current != base and not op.uncertain)
                if suspect and await self._already_appended(entry, op, current, tail):
                    return moved
            else:
                current = known
            expected = current or NEW_SESSION
            try:
                if op.kind == "save":
                    version = await self.primary.save(
                        op.key, messages, expected_version=expected, user_id=op.user_id
                    )
                else:
                    await self.journal.mark(entry.id, current)
                    self._marked.add(entry.id)
                    version = await self.primary.append(
                        op.key, messages, expected_version=expected, user_id=op.user_id
                    )
            except ConflictError:
                known = None  # another writer between our read and our write: read again
                continue
            except StorageUnavailableError:
                if op.kind == "append":
                    self._marked.add(entry.id)  # it may have committed: check next time
                raise
            self._left_at[op.key] = version
            self._marked.discard(entry.id)
            return moved
        raise ConflictError(f"session {op.key!r} kept changing on the primary during replay")

    async def _suspects(self) -> set[str]:
        """Entries an append of which may have reached the primary: marked by a replay that
        then stopped (in an earlier process: the journal's marks), or that failed here."""
        if self._loaded_marks is None:
            self._loaded_marks = await self.journal.marks()
        return self._marked | self._loaded_marks.keys()

    async def _already_appended(
        self, entry: Entry, op: Operation, current: int, tail: list[Message]
    ) -> bool:
        """Whether an interrupted replay, or the failed call itself, already appended it."""
        marked = await self.journal.marked(entry.id)
        interrupted = marked is not None and current > marked
        return (interrupted or op.uncertain) and tail == list(op.messages)

    async def _head(self, session_id: str, count: int) -> tuple[int, list[Message]]:
        """The session's version and its last ``count`` messages, from one snapshot."""
        async with self.primary.reader(session_id) as reader:
            head = await reader.head()
            if not head.exists:
                return 0, []
            if count == 0:
                return head.version, []
            start = max(0, head.message_count - count)
            return head.version, await reader.span(start, head.message_count)


class Refused(Exception):
    """The primary refused an entry: it is in the quarantine now."""

    def __init__(self, entry: Entry, reason: str) -> None:
        super().__init__(reason)
        self.entry = entry
        self.reason = reason
