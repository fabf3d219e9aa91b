"""``ctxstore upgrade-data``: every stored row rewritten in the current format.

Loads always upgrade old rows in memory (formats/).  This command writes the upgraded form
back, safely while the service runs: each session (or state row) is read, upgraded in
Python, then written in one short transaction that only applies if the row is still at
the version that was read (optimistic concurrency).  Upgrading changes a row's format,
not its meaning, so versions are not bumped and no writer sees a conflict because of it.
A session whose version moved meanwhile is simply read again.

It also repairs message times stored as -infinity or infinity (an earlier ctxstore sent
Go's zero and maximum times through asyncpg, which stores exactly those two instants so):
each gets back the instant it stood for, in its own UTC offset.  One whose offset puts
that instant outside years 1-9999 can't be repaired and is reported as failed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta, timezone

from ctxstore.db.errors import translated
from ctxstore.errors import CtxStoreError
from ctxstore.formats.documents import load_state
from ctxstore.models import MESSAGE_FORMAT, STATE_FORMAT
from ctxstore.progress import Progress, counted
from ctxstore.storage.postgres import PostgresStorage, rows, sql
from ctxstore.storage.postgres.rewrite import upgrade_session_messages
from ctxstore.storage.postgres.statement import Driver
from ctxstore.timestamps import FIRST_INSTANT, LAST_INSTANT, postgres_timestamp
from ctxstore.tokens import TokenCounter


@dataclass
class UpgradeReport:
    """What ``upgrade-data`` did."""

    messages_upgraded: int = 0
    sessions_upgraded: int = 0
    states_upgraded: int = 0
    history_upgraded: int = 0
    #: Message times stored as +-infinity, given back the instant they stood for.
    timestamps_repaired: int = 0
    retried: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rows_upgraded(self) -> int:
        return self.messages_upgraded + self.states_upgraded + self.history_upgraded

    def summary(self) -> str:
        lines = [
            f"upgraded {counted(self.rows_upgraded, 'row')} in {self.seconds:.1f} s: "
            f"{counted(self.messages_upgraded, 'message')} in "
            f"{counted(self.sessions_upgraded, 'session')}, "
            f"{counted(self.states_upgraded, 'consultation state')}, "
            f"{counted(self.history_upgraded, 'state-history row')}; "
            f"{self.timestamps_repaired:,} infinite message times repaired",
            f"retried after concurrent writes: {self.retried:,}; failed: {len(self.failed):,}",
        ]
        lines += [f"  failed: {reason}" for reason in self.failed[:20]]
        if len(self.failed) > 20:
            lines.append(f"  ... and {len(self.failed) - 20} more")
        return "\n".join(lines)


async def _upgrade_states(driver: Driver, table: str, report: UpgradeReport, batch: int) -> int:
    done = 0
    after: tuple[str, int] = ("", 0)
    while True:
        found = await sql.LEGACY_STATES[table].fetch(
            driver,
            current=STATE_FORMAT,
            after_session=after[0],
            after_version=after[1],
            batch_size=batch,
        )
        if not found:
            return done
        for row in found:
            session_id, version, document, old = (
                row["session_id"],
                row["version"],
                row["document"],
                row["format_version"],
            )
            after = (session_id, version)
            try:
                state = load_state(document, old, session_id=session_id)
            except CtxStoreError as error:
                report.failed.append(f"{table} {session_id!r} v{version}: {error}")
                continue
            status = await sql.REWRITE_STATE[table].execute(
                driver, sid=session_id, version=version, old_format=old, **rows.state_values(state)
            )
            if status.endswith(" 1"):
                done += 1
            else:
                report.retried += 1  # moved on meanwhile: the new row is already current


async def _repair_timestamps(driver: Driver, report: UpgradeReport, batch: int) -> int:
    done = 0
    after: tuple[str, int] = ("", -1)
    while True:
        found = await sql.INFINITE_TIMESTAMPS.fetch(
            driver, after_session=after[0], after_seq=after[1], batch_size=batch
        )
        if not found:
            break
        for row in found:
            session_id, position, late = row["session_id"], row["seq"], row["late"]
            after = (session_id, position)
            offset = row["ts_offset"] or 0
            try:
                instant = LAST_INSTANT if late else FIRST_INSTANT
                moment = instant.astimezone(timezone(timedelta(seconds=offset)))
            except (ValueError, OverflowError):
                report.failed.append(
                    f"session {session_id!r} message {position}: stored as "
                    f"{'infinity' if late else '-infinity'} with UTC offset {offset} s, "
                    "which is no time in years 1-9999: not repaired"
                )
                continue
            status = await sql.REPAIR_TIMESTAMP.execute(
                driver, sid=session_id, seq=position, ts=postgres_timestamp(moment)
            )
            done += status.endswith(" 1")
    await sql.REPAIR_ACTIVITY_TIMES.execute(driver)
    return done


async def upgrade_data(
    driver: Driver,
    *,
    batch_size: int = 500,
    show: bool = True,
    token_counter: TokenCounter | None = None,
) -> UpgradeReport:
    """Upgrade every stored row to the current formats, in short transactions."""
    counter = token_counter or TokenCounter()
    report = UpgradeReport()
    started = time.monotonic()
    with translated("upgrade-data"):
        pending = int(await sql.COUNT_LEGACY_MESSAGES.fetchval(driver, current=MESSAGE_FORMAT))
        pending += int(await sql.COUNT_INFINITE_TIMESTAMPS.fetchval(driver))
        for table in sql.STATE_TABLES:
            pending += int(
                await sql.COUNT_LEGACY_STATES[table].fetchval(driver, current=STATE_FORMAT)
            )
        progress = Progress("upgrading rows", pending, shown=show)
        # First: a legacy row with an infinite time could not be read to be upgraded.
        report.timestamps_repaired = await _repair_timestamps(driver, report, batch_size)
        progress.advance(report.timestamps_repaired)
        sessions = [
            row["session_id"]
            for row in await sql.SESSIONS_WITH_LEGACY_MESSAGES.fetch(driver, current=MESSAGE_FORMAT)
        ]
        for session_id in sessions:
            try:
                count, retries = await upgrade_session_messages(driver, session_id, counter)
            except CtxStoreError as error:
                report.failed.append(f"session {session_id!r}: {error}")
                continue
            report.retried += retries
            if count:
                report.messages_upgraded += count
                report.sessions_upgraded += 1
                progress.advance(count)
        report.states_upgraded = await _upgrade_states(
            driver, "consultation_states", report, batch_size
        )
        report.history_upgraded = await _upgrade_states(
            driver, "consultation_state_history", report, batch_size
        )
        progress.advance(report.states_upgraded + report.history_upgraded)
        progress.finish()
    report.seconds = time.monotonic() - started
    return report


async def upgrade_store(
    storage: PostgresStorage, *, batch_size: int = 500, show: bool = True
) -> UpgradeReport:
    """:func:`upgrade_data` on ``storage``'s database."""
    async with storage.maintenance("upgrade-data") as driver:
        return await upgrade_data(driver, batch_size=batch_size, show=show)
