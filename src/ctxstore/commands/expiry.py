"""``ctxstore purge-expired``: delete what is past its time, in batches.

Sessions past their expires_at already behave as missing; this reclaims their space.
The owner's retention periods (``ctxstore retention``, revision 1007) remove more, each
kind of data by its own period:

- ``messages``: a session whose last write is older goes, whole (``--older-than-days``
  sets this period for one run);
- ``summaries``: summary versions written before, but each session's latest;
- ``state_history``: state changes recorded before, but each session's latest;
- ``profiles``: a profile not written since, whose user wrote no session since;
- ``ledger``: the ledger's entries of contracts recorded before (revision 1009), each
  chain's oldest first, and the pieces no entry kept uses; what remains still verifies.

What a legal hold covers (``ctxstore hold``) stays, counted in the summary.  Each batch is
short and checks the holds after it locked its rows, as placing a hold locks them: what
a hold covers when placed is never removed.  The fallback journal's write ids recorded
over WRITE_IDS_KEPT ago go too (storage/replay.py).

``dry_run`` deletes nothing and counts what a run would delete now, by the batches' own
conditions: a run right after it, with no write between, deletes exactly that.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.progress import Progress
from ctxstore.storage.postgres import PostgresStorage, sql
from ctxstore.storage.postgres.statement import Statement

#: How long the write ids of applied writes are kept (revision 0020): longer than any
#: outage whose journal is still to be replayed.
WRITE_IDS_KEPT = timedelta(days=7)


@dataclass
class Removed:
    """One kind of data: what the purge removed (or would), and what a hold kept."""

    removed: int = 0
    held: int = 0


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
    #: The retention periods applied, and what each kind besides sessions lost.
    periods: dict[str, timedelta] = field(default_factory=dict)
    kinds: dict[str, Removed] = field(default_factory=dict)

    def summary(self) -> str:
        what = "expired sessions"
        if self.retained_days is not None:
            what = f"expired sessions and sessions idle over {self.retained_days} days"
        held = (
            f"; kept {self.held_sessions:,} such sessions ({self.held_messages:,} messages) "
            "under a legal hold"
        )
        kinds = "".join(f"; {self._kind_line(kind)}" for kind in self.kinds)
        if self.dry_run:
            return (
                f"dry run, nothing deleted: would purge {self.sessions:,} {what} "
                f"({self.messages:,} messages, with their summaries and states){held}{kinds}"
            )
        return (
            f"purged {self.sessions:,} {what} ({self.messages:,} messages, "
            f"with their summaries and states) in {self.batches:,} batches, "
            f"and {self.write_ids:,} write ids older than {WRITE_IDS_KEPT.days} days{held}"
            f"{kinds}, {self.seconds:.1f} s"
        )

    def _kind_line(self, kind: str) -> str:
        found, days = self.kinds[kind], self.periods[kind].days
        verb = "would remove" if self.dry_run else "removed"
        return (
            f"{kind}: {verb} {found.removed:,} older than {days} days "
            f"({found.held:,} kept under a legal hold)"
        )


async def purge_expired(
    driver: Any,
    *,
    batch_size: int = 1000,
    older_than: timedelta | None = None,
    show: bool = True,
    dry_run: bool = False,
) -> PurgeReport:
    started = time.monotonic()
    with translated("purge-expired"):
        periods = await retention_periods(driver)
        older_than = older_than or periods.get("messages")
        report = PurgeReport(
            retained_days=older_than.days if older_than is not None else None,
            dry_run=dry_run,
            periods=periods,
        )
        await _purge_sessions(driver, report, batch_size, older_than, show)
        for kind in ("summaries", "state_history"):
            if kind in periods:
                report.kinds[kind] = await _thin(
                    driver, THINNINGS[kind], periods[kind], batch_size, dry_run, show
                )
        if "profiles" in periods:
            report.kinds["profiles"] = await _purge_profiles(
                driver, periods["profiles"], batch_size, dry_run
            )
        if "ledger" in periods:
            report.kinds["ledger"] = await _purge_ledger(
                driver, periods["ledger"], batch_size, dry_run
            )
        if not dry_run:
            report.write_ids = await _forget_write_ids(driver, batch_size)
    report.seconds = time.monotonic() - started
    return report


async def retention_periods(driver: Any) -> dict[str, timedelta]:
    return {row["data_class"]: row["keep_for"] for row in await sql.RETENTION_PERIODS.fetch(driver)}


async def _purge_sessions(
    driver: Any,
    report: PurgeReport,
    batch_size: int,
    older_than: timedelta | None,
    show: bool,
) -> None:
    due = await sql.PURGE_DUE.fetchrow(driver, age=older_than)
    if report.dry_run:
        report.sessions, report.messages = int(due["sessions"]), int(due["messages"])
    else:
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
    held = await sql.PURGE_HELD.fetchrow(driver, age=older_than)
    report.held_sessions, report.held_messages = int(held["sessions"]), int(held["messages"])


@dataclass(frozen=True)
class Thinning:
    """Old rows of one kind inside sessions that stay: the sessions holding some (in id
    order), how many would go or are held, and the removal from locked sessions."""

    what: str
    sessions: Statement
    count: Statement
    purge: Statement


THINNINGS = {
    "summaries": Thinning(
        "summary versions",
        sql.SESSIONS_WITH_OLD_SUMMARIES,
        sql.COUNT_OLD_SUMMARIES,
        sql.PURGE_OLD_SUMMARIES,
    ),
    "state_history": Thinning(
        "state changes",
        sql.SESSIONS_WITH_OLD_STATE_CHANGES,
        sql.COUNT_OLD_STATE_CHANGES,
        sql.PURGE_OLD_STATE_CHANGES,
    ),
}


async def _thin(
    driver: Any, thinning: Thinning, keep_for: timedelta, batch_size: int, dry_run: bool, show: bool
) -> Removed:
    due = int(await thinning.count.fetchval(driver, keep_for=keep_for, held=False))
    found = Removed(removed=due)
    if not dry_run:
        found.removed = 0
        progress = Progress(f"purging old {thinning.what}", due, shown=show)
        after = ""
        while ids := [
            row["session_id"]
            for row in await thinning.sessions.fetch(
                driver, keep_for=keep_for, after=after, batch_size=batch_size
            )
        ]:
            async with driver.transaction():
                await sql.LOCK_SESSIONS.execute(driver, session_ids=ids)
                gone = len(await thinning.purge.fetch(driver, session_ids=ids, keep_for=keep_for))
            found.removed += gone
            progress.advance(gone)
            after = ids[-1]
        progress.finish()
    found.held = int(await thinning.count.fetchval(driver, keep_for=keep_for, held=True))
    return found


async def _purge_profiles(
    driver: Any, keep_for: timedelta, batch_size: int, dry_run: bool
) -> Removed:
    """Profiles not written within ``keep_for`` whose users wrote no session within it
    and are under no hold: checked after the batch's profiles are locked."""
    found, after = Removed(), ""
    while users := [
        row["user_id"]
        for row in await sql.OLD_PROFILES.fetch(
            driver, keep_for=keep_for, after=after, batch_size=batch_size
        )
    ]:
        after = users[-1]
        async with driver.transaction():
            if not dry_run:
                await sql.LOCK_PROFILES.execute(driver, user_ids=users)
            held = {row["user_id"] for row in await sql.HELD_USERS.fetch(driver, user_ids=users)}
            active = {
                row["user_id"]
                for row in await sql.ACTIVE_USERS.fetch(driver, user_ids=users, keep_for=keep_for)
            }
            due = [user for user in users if user not in held and user not in active]
            found.held += len(held - active)
            if dry_run:
                found.removed += len(due)
            else:
                found.removed += len(
                    await sql.PURGE_PROFILES.fetch(driver, user_ids=due, keep_for=keep_for)
                )
    return found


async def _purge_ledger(
    driver: Any, keep_for: timedelta, batch_size: int, dry_run: bool
) -> Removed:
    """The ledger's entries recorded before ``keep_for``, oldest first in each chain; a
    chain under a hold is kept (revision 1009)."""
    found, after = Removed(), ""
    while chains := await sql.CHAINS_TO_PURGE.fetch(
        driver, keep_for=keep_for, after=after, batch_size=batch_size
    ):
        after = chains[-1]["session_id"]
        for chain in chains:  # a call a chain: on Citus, on the chain's worker
            entries, held = await sql.PURGE_CHAIN.fetchval(
                driver, session_id=chain["session_id"], keep_for=keep_for, dry_run=dry_run
            )
            if held:
                found.held += entries
            else:
                found.removed += entries
    return found


async def _forget_write_ids(driver: Any, batch_size: int) -> int:
    forgotten_in_all = 0
    for statement in (sql.FORGET_SESSION_WRITES_BATCH, sql.FORGET_PROFILE_WRITES_BATCH):
        while forgotten := int(
            await statement.fetchval(driver, batch_size=batch_size, age=WRITE_IDS_KEPT)
        ):
            forgotten_in_all += forgotten
    return forgotten_in_all


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
