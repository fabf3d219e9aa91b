"""``ctxstore analytics refresh``: the free-text counts the analytics role reads.

A sealed consultation state holds its free text (complaint, body parts, symptoms, red
flags, duration) only in its sealed document (revision 0018), so SQL can't count it.  The
refresh, run as the owner with the keys, opens each day's current states in this process
and stores, per UTC day, each value with the number of the day's consultations that have
it, in ``analytics_value_cells``, only where at least k of them have it and at least k
don't (k: the analytics minimum group size).  Nothing fewer than k share is stored, so
the analytics role, its EXPLAIN included, can't learn of it.

Days are refreshed one transaction each, in order.  ``analytics_refreshed_days`` records
what a day was computed from (its sessions, a fingerprint of their state versions, k):
a refresh does only the days whose record no longer matches, so a refresh interrupted
anywhere resumes where it stopped, and a nightly one does the days that changed.  The
current UTC day is never refreshed: counts of a day still filling up, taken twice, would
difference to the consultations that arrived in between.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from decimal import Decimal
from typing import Any

from ctxstore.encryption import Encryption
from ctxstore.errors import CtxStoreError
from ctxstore.formats.documents import load_state
from ctxstore.models import STATE_FORMAT
from ctxstore.progress import Progress
from ctxstore.storage.postgres import PostgresStorage, rows, sql
from ctxstore.storage.postgres.keys import DataKeys
from ctxstore.storage.postgres.statement import Driver

#: Data keys kept unwrapped between days (a user's consultations are often on nearby
#: days); past this many the cache starts again, so memory stays bounded.
KEYS_KEPT = 50_000

#: What a day's cells were computed from: (sessions, fingerprint, k).
Basis = tuple[int, Decimal, int]


@dataclass
class RefreshReport:
    """What ``analytics refresh`` did."""

    days_refreshed: int = 0
    #: Days whose sessions and states had not changed since their last refresh.
    days_unchanged: int = 0
    #: Days with no consultation left (deleted, erased, expired): their cells removed.
    days_emptied: int = 0
    consultations: int = 0
    cells: int = 0
    #: Days left for the next refresh, each with the first state it could not open.
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [
            f"refreshed {self.days_refreshed:,} days ({self.consultations:,} consultations, "
            f"{self.cells:,} value cells shown) in {self.seconds:.1f} s; "
            f"{self.days_unchanged:,} days unchanged, {self.days_emptied:,} emptied; "
            f"failed: {len(self.failed):,}"
        ]
        lines += [f"  failed: {reason}" for reason in self.failed[:20]]
        if len(self.failed) > 20:
            lines.append(f"  ... and {len(self.failed) - 20} more")
        return "\n".join(lines)


def free_text_values(state: Mapping[str, Any]) -> dict[str, set[str]]:
    """kind -> the distinct values one consultation's state document (current format)
    counts once each; anything but text is not a value."""

    def texts(field: str) -> set[str]:
        found = state.get(field)
        listed = found if isinstance(found, list) else [found]
        return {value for value in listed if isinstance(value, str) and value}

    return {
        "chief_complaint": texts("chief_complaint"),
        "body_part": texts("body_parts"),
        "symptom": texts("symptoms"),
        "red_flag": texts("red_flags"),
        "symptom_duration": texts("duration"),
    }


def shown_cells(
    states: list[Mapping[str, Any]], day_size: int, k: int
) -> list[tuple[str, str, int]]:
    """(kind, value, consultations) of one day: k or more have it and k or more don't."""
    counted: Counter[tuple[str, str]] = Counter()
    for state in states:
        for kind, values in free_text_values(state).items():
            counted.update((kind, value) for value in values)
    return sorted(
        (kind, value, n) for (kind, value), n in counted.items() if n >= k and day_size - n >= k
    )


async def refresh_aggregates(
    storage: PostgresStorage,
    encryption: Encryption | None = None,
    *,
    today: date | None = None,
    show: bool = True,
) -> RefreshReport:
    """Refresh the cells of every changed UTC day before ``today`` (default: the current
    UTC day).  ``encryption`` opens sealed states; without it a day holding one is left
    for a refresh that has the keys, and reported."""
    started = time.monotonic()
    report = RefreshReport()
    end = today or datetime.now(UTC).date()
    async with storage.maintenance("refreshing the analytics aggregates") as driver:
        k = int(await sql.ANALYTICS_MIN_GROUP_SIZE.fetchval(driver))
        scanned, stale = await _stale_days(driver, end, k)
        keys = DataKeys(encryption) if encryption is not None else None
        report.days_unchanged = len(scanned) - sum(day in scanned for day in stale)
        progress = Progress(
            "refreshing analytics",
            sum(scanned[day][0] for day in stale if day in scanned),
            shown=show,
        )
        for day in stale:
            if day not in scanned:
                await _forget_day(driver, day)
                report.days_emptied += 1
                continue
            await _refresh_day(driver, keys, day, (*scanned[day], k), report)
            _bound_key_cache(keys)
            progress.advance(scanned[day][0])
        if stale:
            progress.finish()
    report.seconds = time.monotonic() - started
    return report


def _bound_key_cache(keys: DataKeys | None) -> None:
    if keys is not None and len(keys.loaded) > KEYS_KEPT:
        keys.clear()


async def _stale_days(
    driver: Driver, end: date, k: int
) -> tuple[dict[date, tuple[int, Decimal]], list[date]]:
    """The sessions and fingerprint of each day before ``end`` that has consultations, and
    the days to refresh: changed since their last refresh (or refreshed with another
    ``k``), never refreshed, or refreshed but emptied since."""
    scanned: dict[date, tuple[int, Decimal]] = {
        row["day"]: (int(row["sessions"]), row["fingerprint"])
        for row in await sql.DAY_FINGERPRINTS.fetch(driver, before=_midnight(end))
    }
    recorded: dict[date, Basis] = {
        row["day"]: (int(row["sessions"]), row["fingerprint"], int(row["min_group_size"]))
        for row in await sql.REFRESHED_DAYS.fetch(driver)
    }
    stale = sorted(
        day
        for day in scanned.keys() | {day for day in recorded if day < end}
        if day not in scanned or recorded.get(day) != (*scanned[day], k)
    )
    return scanned, stale


async def _forget_day(driver: Driver, day: date) -> None:
    """A day with no consultation left: its cells and its refresh record removed."""
    async with driver.transaction():
        await sql.DELETE_DAY_CELLS.execute(driver, day=day)
        await sql.FORGET_REFRESHED_DAY.execute(driver, day=day)


async def _refresh_day(
    driver: Driver, keys: DataKeys | None, day: date, basis: Basis, report: RefreshReport
) -> None:
    """One day's cells replaced, and its basis recorded, in one transaction."""
    found = await sql.DAY_STATES.fetch(
        driver, start=_midnight(day), end=_midnight(day + timedelta(days=1))
    )
    states: list[Mapping[str, Any]] = []
    try:
        key_ids = {row["key_id"] for row in found if row["key_id"] is not None}
        loaded = await keys.load(driver, key_ids) if keys is not None else None
        for row in found:
            if row["version"] is not None:
                states.append(_opened(row, loaded))
    except CtxStoreError as error:
        report.failed.append(f"day {day.isoformat()}: {error}")
        return
    sessions, fingerprint, k = basis
    cells = shown_cells(states, len(found), k)
    async with driver.transaction():
        await sql.DELETE_DAY_CELLS.execute(driver, day=day)
        if cells:
            kinds, values, counts = (list(column) for column in zip(*cells, strict=True))
            await sql.INSERT_DAY_CELLS.execute(
                driver, day=day, kinds=kinds, values=values, counts=counts
            )
        await sql.RECORD_REFRESHED_DAY.execute(
            driver, day=day, sessions=sessions, fingerprint=fingerprint, k=k
        )
    report.days_refreshed += 1
    report.consultations += len(found)
    report.cells += len(cells)


def _opened(row: Any, keys: rows.Keys | None) -> Mapping[str, Any]:
    """The state's document in the current format.  A sealed document is what ctxstore
    wrote (the seal is authenticated), so one in the current format is read as it is,
    without validating it again: that validation was most of a refresh's time."""
    document = rows.state_document(row, row["session_id"], keys)
    if row["format_version"] == STATE_FORMAT and isinstance(document, dict):
        return document
    return load_state(document, row["format_version"], session_id=row["session_id"]).document()


def _midnight(day: date) -> datetime:
    return datetime.combine(day, clock(), tzinfo=UTC)
