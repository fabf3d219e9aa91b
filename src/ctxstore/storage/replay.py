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
from dataclasses import dataclass, field

from ctxstore.errors import ConflictError, CtxStoreError, StorageUnavailableError
from ctxstore.models import Message
from ctxstore.storage.journal import Entry, Journal, Mark, Operation
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
    #: "kind key" -> why the primary refused it, for this replay's quarantined entries.
    refused: dict[str, str] = field(default_factory=dict)


class Replayer:
    def __init__(self, primary: Store, journal: Journal, *, batch: int = 100) -> None:
        self.primary = primary
        self.journal = journal
        self.batch = batch
        #: The primary version replay last left each session at (moved-on detection).
        self._left_at: dict[str, int] = {}

    async def drain(self) -> ReplayReport:
        """Apply every entry, oldest first, until the journal is empty or replay must stop.

        Raises StorageUnavailableError when the primary or the journal stops answering
        (what was applied stays applied and out of the journal).
        """
        report = ReplayReport()
        moved: set[str] = set()
        try:
            while entries := await self.journal.head(self.batch):
                for entry in entries:
                    if entry.operation is None:
                        await self._quarantine(entry, entry.problem, report)
                        continue
                    try:
                        if await self._apply(entry, entry.operation):
                            moved.add(entry.operation.key)
                    except ConflictError as error:
                        logger.warning("replay paused: %s", error)
                        report.remaining = await self.journal.size()
                        return report
                    except StorageUnavailableError:
                        raise
                    except CtxStoreError as error:
                        await self._quarantine(entry, str(error), report)
                        continue
                    await self.journal.remove(entry.id)
                    report.replayed += 1
        finally:
            report.moved_on = len(moved)
            if moved:
                logger.warning(
                    "%d sessions changed on the primary during the outage; merged by the "
                    "journal policy (appends after, saves and deletes win)",
                    len(moved),
                )
        return report

    def finished(self) -> None:
        """The journal is empty and the primary serves: versions seen from now on are its."""
        self._left_at.clear()

    async def _quarantine(self, entry: Entry, reason: str, report: ReplayReport) -> None:
        await self.journal.quarantine(entry, reason)
        kind, key = entry.describe()
        report.quarantined += 1
        report.refused[f"{kind} {key}"] = reason
        logger.error("journal entry %s (%s %r) quarantined: %s", entry.id, kind, key, reason)

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
        moved = False
        for _ in range(CONFLICT_ATTEMPTS):
            tail_length = len(messages) if op.kind == "append" else 0
            current, tail = await self._head(op.key, tail_length)
            moved = moved or (base is not None and current != base)
            if op.kind == "append" and await self._already_appended(entry, op, current, tail):
                return moved
            expected = current or NEW_SESSION
            try:
                if op.kind == "save":
                    version = await self.primary.save(
                        op.key, messages, expected_version=expected, user_id=op.user_id
                    )
                else:
                    await self.journal.mark(Mark(entry.id, current))
                    version = await self.primary.append(
                        op.key, messages, expected_version=expected, user_id=op.user_id
                    )
            except ConflictError:
                continue  # another writer between our read and our write: read again
            self._left_at[op.key] = version
            return moved
        raise ConflictError(f"session {op.key!r} kept changing on the primary during replay")

    async def _already_appended(
        self, entry: Entry, op: Operation, current: int, tail: list[Message]
    ) -> bool:
        """Whether an interrupted replay, or the failed call itself, already appended it."""
        mark = await self.journal.marked()
        interrupted = mark is not None and mark.entry_id == entry.id and current > mark.version
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
