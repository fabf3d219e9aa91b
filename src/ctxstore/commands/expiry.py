"""``ctxstore purge-expired``: delete sessions past their expires_at, in batches.

Expired sessions already behave as missing; this reclaims their space.  With a
retention age (``--older-than-days``) sessions whose last write is older than it go too.
Each batch is one short statement that skips sessions a writer renewed meanwhile (they
go in a later run).  Sessions under a legal hold (``ctxstore hold``) stay, counted in the
summary.  The fallback journal's write ids recorded over WRITE_IDS_KEPT ago go too: a
journal entry is replayed long before (storage/replay.py).

``dry_run`` deletes nothing and counts what a run would delete now, by the batches' own
conditions: a run right after it, with no write between, deletes exactly that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.progress import Progress
from ctxstore.storage.postgres import PostgresStorage, sql

#: How long the write ids of applied writes are kept (revision 0020): longer than any
#: outage whose journal is still to be replayed.
WRITE_IDS_KEPT = timedelta(days=7)


@dataclass
class PurgeReport:
    sessions: int = 0
    messages: int = 0
    batches: int = 0
    seconds: float = 0.0
    #: Write ids of applied writes, recorded over WRITE_IDS_KEPT ago, forgotten.
    write_ids: int = 0
    #: Sessions the purge would have deleted but kept, under a legal hold, and their messages.
    held_sessions: int = 0
    held_messages: int = 0
    retained_days: int | None = None
    #: Nothing deleted: the counts are what a run would delete now.
    dry_run: bool = False

    def summary(self) -> str:
        what = "expired sessions"
        if self.retained_days is not None:
            what = f"expired sessions and sessions idle over {self.retained_days} days"
        held = (
            f"; kept {self.held_sessions:,} such sessions ({self.held_messages:,} messages) "
            "under a legal hold"
        )
        if self.dry_run:
            return (
                f"dry run, nothing deleted: would purge {self.sessions:,} {what} "
                f"({self.messages:,} messages, with their summaries and states){held}"
            )
        return (
            f"purged {self.sessions:,} {what} ({self.messages:,} messages, "
            f"with their summaries and states) in {self.batches:,} batches, "
            f"and {self.write_ids:,} write ids older than {WRITE_IDS_KEPT.days} days{held}, "
            f"{self.seconds:.1f} s"
        )


async def purge_expired(
    driver: Any,
    *,
    batch_size: int = 1000,
    older_than: timedelta | None = None,
    show: bool = True,
    dry_run: bool = False,
) -> PurgeReport:
    report = PurgeReport(
        retained_days=older_than.days if older_than is not None else None, dry_run=dry_run
    )
    started = time.monotonic()
    with translated("purge-expired"):
        due = await sql.PURGE_DUE.fetchrow(driver, age=older_than)
        if dry_run:
            report.sessions, report.messages = int(due["sessions"]), int(due["messages"])
            await _count_held(driver, report, older_than)
            return report
        progress = Progress("purging sessions", int(due["sessions"]), shown=show)
        while True:
            rows = await sql.PURGE_EXPIRED_BATCH.fetch(driver, batch_size=batch_size)
            if not rows and older_than is not None:
                rows = await sql.PURGE_OLD_BATCH.fetch(
                    driver, batch_size=batch_size, age=older_than
                )
            if not rows:
                break
            report.batches += 1
            report.sessions += len(rows)
            report.messages += sum(row["message_count"] for row in rows)
            progress.advance(len(rows))
        progress.finish()
        for statement in (sql.FORGET_SESSION_WRITES_BATCH, sql.FORGET_PROFILE_WRITES_BATCH):
            while forgotten := int(
                await statement.fetchval(driver, batch_size=batch_size, age=WRITE_IDS_KEPT)
            ):
                report.write_ids += forgotten
        await _count_held(driver, report, older_than)
    report.seconds = time.monotonic() - started
    return report


async def _count_held(driver: Any, report: PurgeReport, older_than: timedelta | None) -> None:
    held = await sql.PURGE_HELD.fetchrow(driver, age=older_than)
    report.held_sessions, report.held_messages = int(held["sessions"]), int(held["messages"])


async def purge_store(
    storage: PostgresStorage,
    *,
    batch_size: int = 1000,
    older_than: timedelta | None = None,
    show: bool = True,
    dry_run: bool = False,
) -> PurgeReport:
    """:func:`purge_expired` on ``storage``'s database."""
    async with storage.maintenance("purge-expired") as driver:
        return await purge_expired(
            driver, batch_size=batch_size, older_than=older_than, show=show, dry_run=dry_run
        )
