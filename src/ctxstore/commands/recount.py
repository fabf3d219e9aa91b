"""``ctxstore recount``: the stored token counts backfilled in another encoding.

Each message's contract cost is stored when it is written, labelled with the encoding of
the storage's counter (``TokenCounter.count_label``); a reader counting with another
encoding recounts such a message every time it reads it.  After a service moves to
another encoding (``CTXSTORE_TOKEN_ENCODING=o200k_base``, for GPT-4o and later), this
command recounts the stored messages once, a session at a time and ``batch_size``
messages per statement, through the storage's own reader (so sealed messages are opened
with their keys).  It is safe while the service runs: messages never change once
written, and a row a writer counted under the new label meanwhile is left as it is.
A message with a turn id and no time keeps its count without the session's fill time
(``TokenCounter.untimed_cost``, under ``untimed_label``); one with no turn id (older
formats) keeps no count: its fill depends on its position, and it is counted when read.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ctxstore.progress import Progress, counted
from ctxstore.storage.postgres import PostgresStorage, sql
from ctxstore.tokens import TokenCounter


@dataclass
class RecountReport:
    """What ``recount`` did."""

    encoding: str
    recounted: int = 0
    sessions: int = 0
    #: Messages under another label that keep no count (no turn id).
    uncountable: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"recounted {counted(self.recounted, 'message')} in "
            f"{counted(self.sessions, 'session')} with {self.encoding} in {self.seconds:.1f} s; "
            f"{counted(self.uncountable, 'message')} of older formats keep no stored count "
            "(counted when read)"
        )


async def recount_store(
    storage: PostgresStorage, counter: TokenCounter, *, batch_size: int = 500, show: bool = True
) -> RecountReport:
    """Store every message's count in ``counter``'s encoding where it is in another one."""
    report = RecountReport(counter.encoding_name)
    started = time.monotonic()
    labels = {"encoding": counter.count_label, "untimed": counter.untimed_label}
    async with storage.maintenance("recount") as driver:
        pending = int(await sql.COUNT_TO_RECOUNT.fetchval(driver, **labels))
        sessions = [
            row["session_id"] for row in await sql.SESSIONS_TO_RECOUNT.fetch(driver, **labels)
        ]
    progress = Progress(f"recounting with {counter.encoding_name}", pending, shown=show)
    for session_id in sessions:
        done = await _recount_session(storage, session_id, counter, batch_size, report, progress)
        report.sessions += done > 0
    progress.finish()
    report.seconds = time.monotonic() - started
    return report


async def _recount_session(
    storage: PostgresStorage,
    session_id: str,
    counter: TokenCounter,
    batch_size: int,
    report: RecountReport,
    progress: Progress,
) -> int:
    """Recount one session, newest first, ``batch_size`` messages a read and a write."""
    current = {counter.count_label, counter.untimed_label}
    done = 0
    async with storage.reader(session_id) as reader:
        before = (await reader.head()).message_count
    while before > 0:
        async with storage.reader(session_id) as reader:
            found = await reader.newest(before, batch_size)
        if not found:
            break
        before = found[-1].position
        stale = [stored for stored in found if stored.token_encoding not in current]
        seqs: list[int] = []
        counts: list[int] = []
        labels: list[str] = []
        for stored in stale:
            cost, label = counter.stored_cost(stored.message)
            if cost is None or label is None:
                report.uncountable += 1
            else:
                seqs.append(stored.position)
                counts.append(cost)
                labels.append(label)
        if seqs:
            async with storage.maintenance("recount") as driver:
                status = await sql.STORE_RECOUNT.execute(
                    driver, sid=session_id, seqs=seqs, counts=counts, labels=labels
                )
            written = int(status.split()[-1])
            report.recounted += written
            done += written
        progress.advance(len(stale))
    return done
