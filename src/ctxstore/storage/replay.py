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

Exactly once, by write id: each entry carries the id of its write, and the primary
records the ids a write applied in the same transaction (storage/write_ids.py; revision
0020 on PostgreSQL).  Replay asks which of a key's entries the primary applied (one query
per batch) and applies only the others, with their ids: the write of the call that failed
over (*uncertain*: its reply was lost, not necessarily its write) and a replay
interrupted by a crash are each applied once, whatever other processes wrote since.

A primary that records no ids (a Memory or Redis primary, or entries of an older journal
without ids) falls back to what the journal itself knows: an append is applied at the
primary version recorded in the journal's mark first, so one interrupted by a crash is
recognised on the next replay (the version moved and the primary ends with its
messages); an uncertain append is looked for among the session's latest
UNCERTAIN_WINDOW messages and applied only when its messages (times included) are not
there; saves, deletes and documents are applied again (last write wins).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from ctxstore.errors import ConflictError, CtxStoreError, StorageUnavailableError
from ctxstore.models import Message
from ctxstore.retry import Retry
from ctxstore.storage.journal import Entry, Journal, Operation, Position
from ctxstore.storage.rules import NEW_SESSION
from ctxstore.storage.store import Store
from ctxstore.storage.write_ids import carrying, is_write_id

#: Conflicts in a row (other writers on the same session) before replay tries again later:
#: each conflict reads the session's head again.
CONFLICTS = Retry(ConflictError, attempts=20)
#: Messages replay appends in one statement when it joins a run of journaled appends.
RUN_MESSAGES = 1000
#: Messages other writers may have appended after an uncertain append that landed (the
#: call that failed over): replay looks for it among this many of the latest.
UNCERTAIN_WINDOW = 1000


@dataclass
class ReplayReport:
    replayed: int = 0
    quarantined: int = 0
    #: Sessions whose primary version changed during the outage (merged by the policy).
    moved_on: int = 0
    #: Entries still in the journal (the primary went away again, or kept conflicting).
    remaining: int = 0
    #: Entries that vanished from the journal before they were replayed (FallbackStats).
    lost: int = 0


@dataclass
class Outcome:
    """What one ``replay`` call did with the oldest entries it was given."""

    replayed: int = 0
    quarantined: int = 0
    moved: bool = False
    refusal: str = ""

    @property
    def handled(self) -> int:
        return self.replayed + self.quarantined


@dataclass(frozen=True)
class _Head:
    version: int
    count: int


class Replayer:
    """Applies journal entries to the primary; which key when is storage/failover.py's."""

    def __init__(self, primary: Store, journal: Journal) -> None:
        self.primary = primary
        self.journal = journal
        #: Where replay's own last write left each session (no read needed after it).
        self._left_at: dict[str, _Head] = {}
        #: Appends this process marked and that may have been applied (see _suspects).
        self._marked: dict[str, Position] = {}
        self._loaded_marks: dict[str, Position] | None = None
        #: Entry id -> whether the primary applied its write (None: it can't tell), for
        #: the entries of the batch being replayed.
        self._applied: dict[str, bool | None] = {}
        #: Entries whose removal the journal never answered (its home went away): gone or
        #: not, their writes were handled, so one found missing later was not lost.
        self.unsure_removals: set[str] = set()

    async def remove(self, entry_ids: Sequence[str]) -> None:
        """Drop handled entries from the journal (noted as unsure if it doesn't answer)."""
        try:
            await self.journal.remove(entry_ids)
        except StorageUnavailableError:
            self.unsure_removals.update(entry_ids)
            raise
        self.unsure_removals.difference_update(entry_ids)

    def settled(self, key: str) -> int | None:
        """The key has nothing left to replay: forget it; the version replay left it at."""
        head = self._left_at.pop(key, None)
        return head.version if head is not None else None

    async def replay(self, entries: Sequence[Entry]) -> Outcome:
        """Apply the oldest of ``entries`` (one session's pending entries, oldest first):
        a run holding a save as one save, a run of appends as one append, anything else
        alone; remove what was applied.
        Refused entries are quarantined; unavailability and conflicts propagate with the
        entries still in the journal."""
        first = entries[0]
        if first.operation is None:
            await self.journal.quarantine(first, first.problem)
            return Outcome(quarantined=1, refusal=first.problem)
        await self._ask_applied(entries)
        if self._applied.get(first.id):
            await self.remove([first.id])  # applied before: its reply was lost
            del self._applied[first.id]
            return Outcome(replayed=1)
        # Runs stop at an entry the primary applied: it is skipped on its own turn.
        applied = (i for i, entry in enumerate(entries) if self._applied.get(entry.id))
        entries = entries[: next(applied, None)]
        try:
            outcome = await self._replay_unapplied(entries)
        except BaseException:
            self._applied.clear()  # what was attempted may have been applied: ask again
            raise
        for entry in entries[: outcome.handled]:
            self._applied.pop(entry.id, None)
        return outcome

    async def _ask_applied(self, entries: Sequence[Entry]) -> None:
        """Which of ``entries`` of the first one's key the primary applied: asked once
        per batch."""
        first = entries[0].operation
        if first is None or entries[0].id in self._applied:
            return
        same_key = [
            entry
            for entry in entries
            if entry.operation is not None
            and entry.operation.copy_key == first.copy_key
            and entry.id not in self._applied
        ]
        asked = [
            op.write_id
            for entry in same_key
            if (op := entry.operation) is not None and is_write_id(op.write_id)
        ]
        found = await self.primary.applied_writes(
            first.key, asked, profile=first.copy_key.startswith("profile:")
        )
        for entry in same_key:
            write_id = entry.operation.write_id if entry.operation else ""
            self._applied[entry.id] = (
                None if found is None or not is_write_id(write_id) else write_id in found
            )

    def _tells(self, entry: Entry) -> bool:
        """Whether the primary said if ``entry``'s write was applied (it was not)."""
        return self._applied.get(entry.id) is not None

    async def _replay_unapplied(self, entries: Sequence[Entry]) -> Outcome:
        """``replay`` of entries the primary did not apply, or can't tell."""
        first = entries[0]
        assert first.operation is not None
        joined = _superseded_by_a_save(entries)
        if joined is not None:
            entry, operation, covered = joined
            try:
                with carrying(_write_ids(entries[:covered])):
                    moved = await self._apply(entry, operation)
            except (StorageUnavailableError, ConflictError):
                raise
            except CtxStoreError:
                pass  # the joined save was refused: one at a time decides
            else:
                await self.remove([entry.id for entry in entries[:covered]])
                return Outcome(replayed=covered, moved=moved)
        run = await self._append_run(entries)
        if len(run) > 1:
            try:
                with carrying(_write_ids([entry for entry, _ in run])):
                    moved = await self._append(run)
            except (StorageUnavailableError, ConflictError):
                raise
            except CtxStoreError:
                pass  # together too much for the primary: one at a time decides
            else:
                await self.remove([entry.id for entry, _ in run])
                return Outcome(replayed=len(run), moved=moved)
        try:
            with carrying(_write_ids([first])):
                moved = await self._apply(first, first.operation)
        except (StorageUnavailableError, ConflictError):
            raise
        except CtxStoreError as error:
            await self.journal.quarantine(first, str(error))
            return Outcome(quarantined=1, refusal=str(error))
        await self.remove([first.id])
        return Outcome(replayed=1, moved=moved)

    async def _append_run(self, entries: Sequence[Entry]) -> list[tuple[Entry, Operation]]:
        """The leading appends no earlier attempt may have applied (at most RUN_MESSAGES
        messages, one user id): they can go to the primary as one."""
        suspects = await self._suspects()
        run: list[tuple[Entry, Operation]] = []
        messages = 0
        for entry in entries:
            op = entry.operation
            if op is None or op.kind != "append" or op.uncertain or entry.id in suspects:
                break
            if run and (
                messages + len(op.messages) > RUN_MESSAGES or op.user_id != run[0][1].user_id
            ):
                break
            run.append((entry, op))
            messages += len(op.messages)
        return run

    async def _append(self, run: Sequence[tuple[Entry, Operation]]) -> bool:
        """Append the run's messages in one statement, each entry marked with its place."""
        first = run[0][1]
        messages = [message for _, op in run for message in op.messages]

        async def append(head: _Head) -> _Head:
            positions: dict[str, Position] = {}
            start = head.count
            for entry, op in run:
                positions[entry.id] = Position(head.version, start)
                start += len(op.messages)
            await self.journal.mark(positions)
            self._marked.update(positions)
            version = await self.primary.append(
                first.key,
                messages,
                expected_version=head.version or NEW_SESSION,
                user_id=first.user_id,
            )
            for entry_id in positions:
                del self._marked[entry_id]
            return _Head(version, head.count + len(messages))

        return await self._write_at_head(first, append)

    async def _write_at_head(
        self, op: Operation, write: Callable[[_Head], Awaitable[_Head]]
    ) -> bool:
        """``write`` at the session's head (where the replay left it, or read), read again
        and retried after a conflict; True when the primary had moved on from ``op``'s base."""
        base = self._base(op)
        head = self._left_at.get(op.key)
        moved = False

        async def attempt() -> bool:
            nonlocal head, moved
            if head is None:
                head = await self._head(op.key)
                # An uncertain write may itself be what moved the version.
                moved = moved or (base is not None and head.version != base and not op.uncertain)
            try:
                self._left_at[op.key] = await write(head)
            except ConflictError:
                head = None  # another writer between our read and our write: read again
                raise
            return moved

        return await CONFLICTS.run(attempt, exhausted=_kept_changing(op.key))

    def _base(self, op: Operation) -> int | None:
        left = self._left_at.get(op.key)
        return left.version if left is not None else op.primary_version

    async def _apply(self, entry: Entry, op: Operation) -> bool:
        """Apply one operation; True when the primary had moved on from what it was based on."""
        primary = self.primary
        if op.kind == "delete":
            await primary.delete(op.key)
            self._left_at[op.key] = _Head(0, 0)
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
        if op.kind == "append":
            if not self._tells(entry) and (op.uncertain or entry.id in await self._suspects()):
                found = await self._head(op.key)
                if await self._already_appended(entry, op, found):
                    self._left_at[op.key] = found
                    return False
            return await self._append([(entry, op)])

        async def save(head: _Head) -> _Head:
            version = await self.primary.save(
                op.key,
                list(op.messages),
                expected_version=head.version or NEW_SESSION,
                user_id=op.user_id,
            )
            return _Head(version, len(op.messages))

        return await self._write_at_head(op, save)

    async def _suspects(self) -> dict[str, Position]:
        """Appends that may have reached the primary: marked by a replay that then stopped
        (in an earlier process: the journal's marks), or marked here and not confirmed."""
        if self._loaded_marks is None:
            self._loaded_marks = await self.journal.marks()
        return {**self._loaded_marks, **self._marked}

    async def _already_appended(self, entry: Entry, op: Operation, head: _Head) -> bool:
        """Whether an interrupted replay, or the failed call itself, already appended it."""
        length = len(op.messages)
        position = (await self._suspects()).get(entry.id)
        if position is not None:
            if head.version <= position.version:
                return False  # nothing was written at or after that version
            start = position.start
            if start < 0 or start + length > head.count:
                return False
            return await self._span(op.key, start, start + length) == list(op.messages)
        if not op.uncertain or length == 0:
            return False
        # The failed call's append may have landed, with other writers' after it: look for
        # its messages (times included) among the session's latest.
        start = max(0, head.count - length - UNCERTAIN_WINDOW)
        tail = await self._span(op.key, start, head.count)
        wanted = list(op.messages)
        return any(
            tail[index : index + length] == wanted for index in range(len(tail) - length + 1)
        )

    async def _head(self, session_id: str) -> _Head:
        async with self.primary.reader(session_id) as reader:
            head = await reader.head()
        return _Head(head.version, head.message_count) if head.exists else _Head(0, 0)

    async def _span(self, session_id: str, start: int, stop: int) -> list[Message]:
        async with self.primary.reader(session_id) as reader:
            return await reader.span(start, stop)


def _write_ids(entries: Sequence[Entry]) -> list[str]:
    return [entry.operation.write_id for entry in entries if entry.operation is not None]


def _superseded_by_a_save(entries: Sequence[Entry]) -> tuple[Entry, Operation, int] | None:
    """A leading run of saves and appends that holds a save, as one save: the last save's
    list plus the messages appended after it (what the run leaves the session holding;
    everything before that save is overwritten by it).  None when there is no such run
    of two or more.  A save is idempotent, so no mark is needed however often it is
    applied."""
    last_save: int | None = None
    length = 0
    for index, entry in enumerate(entries):
        op = entry.operation
        if op is None or op.kind not in ("save", "append"):
            break
        if op.kind == "save":
            last_save = index
        length = index + 1
    if last_save is None or length < 2:
        return None
    covered = entries[:length]
    operations = [entry.operation for entry in covered if entry.operation is not None]
    save = operations[last_save]
    messages = [*save.messages]
    for op in operations[last_save + 1 :]:
        messages += op.messages
    user_ids = [op.user_id for op in operations if op.user_id is not None]
    joined = replace(
        save,
        messages=tuple(messages),
        user_id=user_ids[-1] if user_ids else None,
        primary_version=operations[0].primary_version,
        uncertain=False,
    )
    return covered[last_save], joined, length


def _kept_changing(session_id: str) -> Callable[[ConflictError], ConflictError]:
    def give_up(_error: ConflictError) -> ConflictError:
        return ConflictError(f"session {session_id!r} kept changing on the primary during replay")

    return give_up
