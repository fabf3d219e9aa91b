"""Reports over consultations, for product and clinical teams.

Every report is a SECURITY DEFINER function, so the reports run under the analytics role,
on PostgreSQL and on Citus alike.  That role reads no message content, summary text,
profile, user id or session id: consultations are pseudonymous.

Two kinds of report:

- **Monthly** (:data:`MONTHLY_REPORTS`: the free-text frequencies and ``red-flags``):
  figures ``ctxstore analytics refresh`` published per UTC calendar month
  (ctxstore.commands.aggregates, revision 1004).  A value (complaint, body part, symptom,
  red flag, symptom duration) and a month's red-flag count show only when at least k of
  the month's consultations have it and at least k don't (k: ``min_group_size``, default
  5, see :func:`set_min_group_size`); each report says what its months withhold.  The
  month is the only period, so ``since`` and ``until`` are first days of months.
- **Daily** (overview, funnel, transitions, durations): structured fields over whole UTC
  days; an average, median or percentile over fewer than k consultations is NULL.

``since`` and ``until`` select consultations by their first activity (the first message's
time, else the session's creation): ``since <= first_activity < until``; each a
:class:`~datetime.date` or a UTC midnight, or None (open).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import TYPE_CHECKING, Any

from ctxstore.commands.months import SETTLE_DAYS, month_start, publication_day
from ctxstore.commands.report_text import Report
from ctxstore.errors import ConfigurationError, CtxStoreError, InvalidInputError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

# SQLAlchemy, the driver errors and the settings are imported by the functions that query:
# `ctxstore analytics`'s parser needs REPORTS only (ctxstore.cli builds every command's
# parser for `ctxstore --help`).

#: The consultation stages in funnel order; stages not listed follow, by name.
STAGE_ORDER = ("greeting", "collecting_details", "assessing", "advising", "completed")


_DAYS = "CAST(:since AS timestamptz), CAST(:until AS timestamptz)"
_MONTHS = "CAST(:since AS date), CAST(:until AS date)"

REPORT_SQL: dict[str, str] = {
    "overview": f"SELECT * FROM analytics_overview_v4({_DAYS})",
    "funnel": f"SELECT * FROM analytics_funnel_v2({_DAYS})",
    "transitions": f"SELECT * FROM analytics_transitions_v2({_DAYS})",
    "durations": f"SELECT * FROM analytics_durations_v3({_DAYS})",
    "red-flags": f"""
        SELECT to_char(r.month, 'YYYY-MM') AS month, r.consultations, r.with_red_flags, r.share
          FROM analytics_red_flag_months_v1({_MONTHS}) AS r
         ORDER BY r.month""",
}

#: report: the kind of value it counts (also its value column).  Each lists, per month,
#: the values k or more of the month's consultations have (and k or more don't).
FREQUENCY_KINDS = {
    "complaints": "chief_complaint",
    "body-parts": "body_part",
    "symptoms": "symptom",
    "red-flag-types": "red_flag",
    "symptom-durations": "symptom_duration",
}
for _report, _kind in FREQUENCY_KINDS.items():
    REPORT_SQL[_report] = f"""
        SELECT to_char(v.month, 'YYYY-MM') AS month, v.value AS {_kind}, v.consultations,
               round(v.consultations::numeric / w.consultations, 4) AS share
          FROM (SELECT f.*, row_number() OVER (PARTITION BY f.month
                                               ORDER BY f.consultations DESC, f.value) AS rank
                  FROM analytics_month_values_v1({_MONTHS}) AS f
                 WHERE f.kind = :kind) AS v
          JOIN analytics_month_withheld_v1({_MONTHS}) AS w
            ON w.month = v.month AND w.kind = v.kind
         WHERE v.rank <= :limit
         ORDER BY v.month, v.consultations DESC, v.value"""

#: k, as the analytics role (and the owner) may read it.
_MIN_GROUP_SIZE_SQL = "SELECT min_group_size FROM analytics_min_group_size_v1()"

#: What each month of a frequency report holds and withholds.
_PERIODS_SQL = f"""
    SELECT to_char(w.month, 'YYYY-MM') AS month, w.consultations, w.shown_values,
           w.withheld_values, w.withheld_consultations
      FROM analytics_month_withheld_v1({_MONTHS}) AS w
     WHERE w.kind = :kind
     ORDER BY w.month"""

REPORTS = tuple(REPORT_SQL)
#: The reports that list free-text values (small counts withheld).
FREQUENCY_REPORTS = tuple(FREQUENCY_KINDS)
#: The reports over published months.
MONTHLY_REPORTS = ("red-flags", *FREQUENCY_REPORTS)
#: Rows a frequency report may list: far more than anyone reads, so a mistyped limit fails
#: with a clear error instead of PostgreSQL's (LIMIT is a signed 64-bit integer).
MAX_LIMIT = 1_000_000


def _order_funnel(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    rank = {stage: index for index, stage in enumerate(STAGE_ORDER)}
    ordered = sorted(rows, key=lambda row: (rank.get(row[0], len(rank)), row[0]))
    first = ordered[0][1] if ordered else 0
    return [
        (
            *row,
            round(row[1] / first, 4) if first else None,
            round(row[2] / row[1], 4) if row[1] else None,
        )
        for row in ordered
    ]


def whole_day(name: str, value: date | datetime | None) -> datetime | None:
    """``value`` as the UTC midnight it is: a window of whole days only, so no two
    windows differ by one consultation (issue 24).  A naive datetime is taken as UTC."""
    if value is None:
        return None
    if not isinstance(value, date):
        raise InvalidInputError(
            f"{name} must be a date or a datetime at UTC midnight, not {type(value).__name__}"
        )
    if not isinstance(value, datetime):
        return datetime.combine(value, time(), tzinfo=UTC)
    try:
        moment = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInputError(
            f"{name} {value.isoformat()} is outside years 1-9999 in UTC"
        ) from None
    if moment.time() != time():
        raise InvalidInputError(
            f"{name} must be a whole day (UTC midnight), such as {moment.date().isoformat()}, "
            f"not {value.isoformat()}: analytics windows are whole days, so that no two "
            "windows differ by a single consultation"
        )
    return moment


def first_of_month(name: str, value: date | datetime | None) -> date | None:
    """``value`` as the month it starts: monthly figures have no other period (issue 50)."""
    moment = whole_day(name, value)
    if moment is None:
        return None
    if moment.day != 1:
        raise InvalidInputError(
            f"{name} must be the first day of a month, such as "
            f"{moment.date().replace(day=1).isoformat()}, not {moment.date().isoformat()}: "
            "these figures are published per calendar month, the only period they have, so "
            "that no two of them subtract into a smaller group"
        )
    return moment.date()


async def run_report(
    engine: AsyncEngine,
    name: str,
    *,
    since: date | datetime | None = None,
    until: date | datetime | None = None,
    limit: int = 20,
    today: date | None = None,
) -> Report:
    """Run one of REPORTS from ``since`` to ``until`` (see the module): whole days, or
    first days of months for :data:`MONTHLY_REPORTS`; ``today`` (default: the current
    UTC day) dates the note on when this month's consultations appear."""
    if name not in REPORT_SQL:
        raise InvalidInputError(f"unknown report {name!r}; choose from {', '.join(REPORTS)}")
    window = first_of_month if name in MONTHLY_REPORTS else whole_day
    parameters: dict[str, Any] = {"since": window("since", since), "until": window("until", until)}
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(
            f"limit must be an integer from 1 to {MAX_LIMIT:,} (rows of a frequency report "
            f"per month), not {limit!r}"
        )
    if name in FREQUENCY_KINDS:
        parameters |= {"kind": FREQUENCY_KINDS[name], "limit": limit}
    from sqlalchemy import text  # noqa: PLC0415 - see the imports

    from ctxstore.db.errors import translated  # noqa: PLC0415

    with translated(f"analytics report {name}"):
        async with engine.connect() as conn:
            result = await conn.execute(text(REPORT_SQL[name]), parameters)
            report = Report(name, list(result.keys()), [tuple(row) for row in result])
            if name in MONTHLY_REPORTS:
                report = await _monthly(conn, report, parameters, today)
    if name == "funnel":
        return Report(
            name, [*report.columns, "share_of_first", "drop_off_rate"], _order_funnel(report.rows)
        )
    return report


async def _monthly(
    conn: Any, report: Report, parameters: dict[str, Any], today: date | None
) -> Report:
    """``report`` with its months (a frequency report) and the notes that explain it."""
    from sqlalchemy import text  # noqa: PLC0415 - see the imports

    k = (await conn.execute(text(_MIN_GROUP_SIZE_SQL))).scalar_one()
    periods = None
    if "kind" in parameters:
        found = await conn.execute(text(_PERIODS_SQL), parameters)
        periods = Report(
            "months",
            list(found.keys()),
            [tuple(row) for row in found],
            empty="(no month published in this window yet)",
        )
    this_month = month_start(today or datetime.now(UTC).date())
    notes = (
        f"A figure shows when at least {k} of its month's consultations have it and at "
        f"least {k} don't; blank: withheld (fewer than {k}, or all but fewer than {k}; "
        f"withheld_values blank: 1 to {k - 1}).",
        f"A month appears once `ctxstore analytics refresh` runs {SETTLE_DAYS} days after it "
        f"ends: consultations begun in {this_month:%Y-%m} appear from "
        f"{publication_day(this_month).isoformat()}.",
    )
    shown_months = periods.rows if periods is not None else report.rows
    empty = (
        "(no month published in this window yet)"
        if not shown_months
        else "(every value of these months is withheld: see their counts below)"
    )
    return Report(report.name, report.columns, report.rows, periods, notes, empty)


async def min_group_size(engine: AsyncEngine) -> int:
    """The fewest consultations a free-text value must have to show (analytics role or
    owner may read it)."""
    from sqlalchemy import text  # noqa: PLC0415 - see the imports

    from ctxstore.db.errors import translated  # noqa: PLC0415

    with translated("reading the analytics min group size"):
        async with engine.connect() as conn:
            value = await conn.execute(text(_MIN_GROUP_SIZE_SQL))
            return int(value.scalar_one())


async def set_min_group_size(engine: AsyncEngine, size: int) -> int:
    """Set the small-cell threshold of every analytics view and report; needs the owner
    role (the migrating login).  Returns the previous value."""
    from sqlalchemy import text  # noqa: PLC0415 - see the imports

    from ctxstore.db.errors import translated  # noqa: PLC0415
    from ctxstore.settings import MIN_GROUP_SIZE_RANGE  # noqa: PLC0415

    low, high = MIN_GROUP_SIZE_RANGE
    if type(size) is not int or not low <= size <= high:
        raise InvalidInputError(
            f"min group size must be a whole number from {low} to {high:,} (consultations a "
            f"free-text value needs to show; 1 would show every value), not {size!r}"
        )
    try:
        with translated("setting the analytics min group size"):
            async with engine.begin() as conn:
                previous = await conn.execute(
                    text("SELECT min_group_size FROM ctxstore_analytics_settings FOR UPDATE")
                )
                before = int(previous.scalar_one())
                await conn.execute(
                    text("UPDATE ctxstore_analytics_settings SET min_group_size = :k"),
                    {"k": size},
                )
    except CtxStoreError as error:
        if error.details.get("sqlstate") != "42501":
            raise
        raise ConfigurationError(
            "setting the analytics min group size needs the database's owner role (the "
            "login that runs `ctxstore db upgrade`): the analytics and app roles may not "
            "change it"
        ) from error
    return before
