"""``ctxstore analytics refresh``: the monthly free-text counts the analytics role reads.

A sealed consultation state holds its free text (complaint, body parts, symptoms, red
flags, duration) only in its sealed document (revision 0018), so SQL can't count it.  The
refresh, run as the owner with the keys, opens a month's current states in this process
and publishes, per UTC calendar month (revision 1004), each value with the number of the
month's consultations that have it, only where at least k of them have it and at least k
don't (k: the analytics minimum group size), with what each kind withholds and the
month's red-flag count under the same rule.  Nothing fewer than k share is stored, so the
analytics role, its EXPLAIN included, can't learn of it.

A month is the only period: no two shown figures subtract into a smaller group.  It is
published once, by the first refresh :data:`SETTLE_DAYS` days after it ends (so that the
consultations begun on its last days have settled), one transaction each, and never
changes after (but when k changes: it is published again from the consultations still
held).  Two readings of a month thus never differ by a consultation that changed in
between; a refresh interrupted anywhere resumes at the first month not yet published, and
a nightly one publishes nothing until a month is due.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from typing import Any

from ctxstore.commands.months import first_unpublished_month, next_month, publication_day
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

#: The kinds of free text counted, in the order reports list them.
KINDS = ("chief_complaint", "body_part", "symptom", "red_flag", "symptom_duration")


@dataclass
class RefreshReport:
    """What ``analytics refresh`` did."""

    months_published: int = 0
    #: Months published before, with today's k: they never change.
    months_unchanged: int = 0
    #: Months published with another k whose consultations changed since: republished,
    #: their figures would show the change (an erasure's, say), so they stay as they were,
    #: hidden until k is set back.
    months_left: list[str] = field(default_factory=list)
    consultations: int = 0
    cells: int = 0
    #: Months left for the next refresh, each with the first state it could not open.
    failed: list[str] = field(default_factory=list)
    #: The next month to publish and the first day a refresh publishes it.
    next_month: date | None = None
    seconds: float = 0.0

    def summary(self) -> str:
        lines = [
            f"published {_months(self.months_published)} ({self.consultations:,} "
            f"consultations, {self.cells:,} value cells shown) in {self.seconds:.1f} s; "
            f"{_months(self.months_unchanged)} already published, "
            f"{_months(len(self.months_left))} left at another k; failed: {len(self.failed):,}"
        ]
        lines += [f"  left: {month}" for month in self.months_left[:20]]
        lines += [f"  failed: {reason}" for reason in self.failed[:20]]
        if len(self.failed) > 20:
            lines.append(f"  ... and {len(self.failed) - 20} more")
        if self.next_month is not None:
            lines.append(
                f"  next: {self.next_month:%Y-%m} appears with the first refresh on or after "
                f"{publication_day(self.next_month).isoformat()}"
            )
        return "\n".join(lines)


def _months(count: int) -> str:
    return f"{count:,} month" + ("" if count == 1 else "s")


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


@dataclass(frozen=True)
class KindFigures:
    """What a month shows and withholds of one kind of free text."""

    kind: str
    shown_values: int
    #: Values withheld; None for 1 to k-1 (one alone would be pinned by the next figure),
    #: or when it would tell a withheld red-flag count.
    withheld_values: int | None
    #: Consultations holding a withheld value: 0 or at least k (see _complemented), or
    #: None: fewer than k hold one with nothing shown, or the red-flag count is withheld.
    withheld_consultations: int | None


@dataclass(frozen=True)
class MonthFigures:
    """A month as published: every figure passes k, or is withheld (None)."""

    consultations: int
    with_red_flags: int | None
    kinds: list[KindFigures]
    #: (kind, value, consultations), each shared by k or more and not by all but fewer.
    cells: list[tuple[str, str, int]]


def month_figures(held: list[dict[str, set[str]]], consultations: int, k: int) -> MonthFigures:
    """The figures of a month whose ``consultations`` (states or not) hold ``held`` (one
    :func:`free_text_values` per state): a figure of n consultations shows only when
    n >= k and consultations - n >= k."""

    def shown(n: int) -> bool:
        return n >= k and consultations - n >= k

    counted: Counter[tuple[str, str]] = Counter()
    for one in held:
        counted.update((kind, value) for kind, found in one.items() for value in found)
    with_red_flags = sum(1 for one in held if one["red_flag"])
    red_flags_shown = shown(with_red_flags)
    cells, kinds = [], []
    for kind in KINDS:
        of_kind = {value: n for (of, value), n in counted.items() if of == kind}
        passing = _complemented(held, kind, of_kind, {v for v, n in of_kind.items() if shown(n)}, k)
        withheld = len(of_kind) - len(passing)
        holding = sum(1 for one in held if one[kind] - passing)
        # With the red-flag count withheld, what the types withhold (even "nothing": the
        # shown types would then add up to it) would tell it.
        tells_flags = kind == "red_flag" and not red_flags_shown
        kinds.append(
            KindFigures(
                kind,
                len(passing),
                None if tells_flags or 0 < withheld < k else withheld,
                None if tells_flags or 0 < holding < k else holding,
            )
        )
        cells += [(kind, value, of_kind[value]) for value in passing]
    return MonthFigures(
        consultations, with_red_flags if red_flags_shown else None, kinds, sorted(cells)
    )


def _complemented(
    held: list[dict[str, set[str]]], kind: str, counts: dict[str, int], passing: set[str], k: int
) -> set[str]:
    """``passing`` less the fewest smallest values that leave no group of 1 to k-1 among
    the consultations holding a value of ``kind``: those holding a withheld one, only
    withheld ones, only shown ones, and both.  A month's consultations with a body part
    (countable per consultation) or with a red flag, less the shown values and the
    withheld count, would otherwise be such a group."""
    passing = set(passing)
    having = [one[kind] for one in held if one[kind]]
    while passing:
        some_withheld = sum(1 for found in having if found - passing)
        only_withheld = sum(1 for found in having if not found & passing)
        groups = (
            some_withheld,
            only_withheld,
            len(having) - some_withheld,
            some_withheld - only_withheld,
        )
        if not any(0 < n < k for n in groups):
            break
        passing.remove(min(passing, key=lambda value: (counts[value], value)))
    return passing


async def refresh_aggregates(
    storage: PostgresStorage,
    encryption: Encryption | None = None,
    *,
    today: date | None = None,
    show: bool = True,
) -> RefreshReport:
    """Publish every month due by ``today`` (default: the current UTC day) and not yet
    published with today's k.  ``encryption`` opens sealed states; without it a month
    holding one is left for a refresh that has the keys, and reported."""
    started = time.monotonic()
    report = RefreshReport()
    open_from = first_unpublished_month(today or datetime.now(UTC).date())
    async with storage.maintenance("refreshing the analytics aggregates") as driver:
        k = int(await sql.ANALYTICS_MIN_GROUP_SIZE.fetchval(driver))
        held = {
            row["month"]: int(row["sessions"])
            for row in await sql.MONTH_SESSIONS.fetch(driver, before=_midnight(open_from))
        }
        published: dict[date, tuple[int, str]] = {
            row["month"]: (int(row["min_group_size"]), row["fingerprint"])
            for row in await sql.PUBLISHED_MONTHS.fetch(driver)
        }
        due = sorted(month for month in held if published.get(month, (None,))[0] != k)
        report.months_unchanged = sum(of == k for of, _ in published.values())
        report.months_left = [
            f"{month:%Y-%m}: published at k={of}; none of its consultations is left"
            for month, (of, _) in sorted(published.items())
            if of != k and month not in held
        ]
        keys = DataKeys(encryption) if encryption is not None else None
        progress = Progress("refreshing analytics", sum(held[month] for month in due), shown=show)
        for month in due:
            await _publish_month(driver, keys, month, (k, published.get(month)), report)
            progress.advance(held[month])
        if due:
            progress.finish()
    report.next_month = open_from
    report.seconds = time.monotonic() - started
    return report


async def _publish_month(
    driver: Driver,
    keys: DataKeys | None,
    month: date,
    k_and_before: tuple[int, tuple[int, str] | None],
    report: RefreshReport,
) -> None:
    """One month's figures written in one transaction, its states read a day at a time.
    Published before (with another k), it is republished only from the very consultations
    it was published from."""
    k, before = k_and_before
    held: list[dict[str, set[str]]] = []
    seen: list[str] = []
    day = month
    while day < next_month(month):
        try:
            await _read_day(driver, keys, day, held, seen)
        except CtxStoreError as error:
            report.failed.append(f"month {month:%Y-%m}, day {day.isoformat()}: {error}")
            return
        day += timedelta(days=1)
    fingerprint = hashlib.sha256("\n".join(sorted(seen)).encode()).hexdigest()
    if before is not None and before[1] != fingerprint:
        report.months_left.append(
            f"{month:%Y-%m}: published at k={before[0]}; its consultations changed since"
        )
        return
    if not seen:
        return
    figures = month_figures(held, len(seen), k)
    async with driver.transaction():
        await _write_month(driver, month, figures, k, fingerprint)
    report.months_published += 1
    report.consultations += len(seen)
    report.cells += len(figures.cells)


async def _read_day(
    driver: Driver,
    keys: DataKeys | None,
    day: date,
    held: list[dict[str, set[str]]],
    seen: list[str],
) -> None:
    """Add to ``held`` the free text of each state first active on ``day``, and to ``seen``
    each of its consultations with its state's version and time (the month's fingerprint)."""
    found = await sql.DAY_STATES.fetch(
        driver, start=_midnight(day), end=_midnight(day + timedelta(days=1))
    )
    key_ids = {row["key_id"] for row in found if row["key_id"] is not None}
    loaded = await keys.load(driver, key_ids) if keys is not None else None
    held.extend(
        free_text_values(_opened(row, loaded)) for row in found if row["version"] is not None
    )
    seen.extend(f"{row['session_id']}@{row['version']}@{row['updated_at']}" for row in found)
    _bound_key_cache(keys)


async def _write_month(
    driver: Driver, month: date, figures: MonthFigures, k: int, fingerprint: str
) -> None:
    await sql.FORGET_MONTH.execute(driver, month=month)
    await sql.PUBLISH_MONTH.execute(
        driver,
        month=month,
        consultations=figures.consultations,
        with_red_flags=figures.with_red_flags,
        k=k,
        fingerprint=fingerprint,
    )
    await sql.PUBLISH_MONTH_KINDS.execute(
        driver,
        month=month,
        kinds=[one.kind for one in figures.kinds],
        shown=[one.shown_values for one in figures.kinds],
        withheld=[one.withheld_values for one in figures.kinds],
        withheld_consultations=[one.withheld_consultations for one in figures.kinds],
    )
    if figures.cells:
        kinds, values, counts = (list(column) for column in zip(*figures.cells, strict=True))
        await sql.PUBLISH_MONTH_CELLS.execute(
            driver, month=month, kinds=kinds, values=values, counts=counts
        )


def _bound_key_cache(keys: DataKeys | None) -> None:
    if keys is not None and len(keys.loaded) > KEYS_KEPT:
        keys.clear()


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
