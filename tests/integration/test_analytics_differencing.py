"""Issues 24 and 50: the analytics role can't re-identify a consultation by differencing.

Issue 24 (revision 0016): windows of whole days.  Issue 50 (revision 1004): free-text
counts and red-flag counts are published per UTC calendar month only, each figure shown
only when k of the month's consultations have it and k don't; the all-time views sum the
shown months.  Here, as a real login in the analytics role, with k = 5, over three
published months built so that a naive design would leak (a value held by 3 in September
and 6 in October; a value all but 2 have; a month of 3): no window, no sum of months and
no report differences to a count below k; a window that is not a first day of a month is
refused (SQL, Python and the command line); a consultation's month is the UTC month of its
first activity, to the microsecond; and EXPLAIN tells a suppressed value from an absent one
no better than chance.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ctxstore import Message, PostgresStorage
from ctxstore.cli import main
from ctxstore.cli.options import whole_day
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import FREQUENCY_REPORTS, MONTHLY_REPORTS, REPORTS, run_report
from ctxstore.commands.months import publication_day
from ctxstore.db.engine import create_engine
from ctxstore.errors import InvalidInputError
from tests.integration import test_deidentified_analytics as deidentified
from tests.integration.test_deidentified_analytics import analytics_database
from tests.pg_harness import PgTestServer

K = 5
SEP, OCT, NOV, DEC = date(2026, 9, 1), date(2026, 10, 1), date(2026, 11, 1), date(2026, 12, 1)
#: The first day a refresh publishes November: September to November are published.
TODAY = publication_day(NOV)
#: The ends a window may have: none, or a first day of a month.
ENDS: list[date | None] = [None, SEP, OCT, NOV, DEC]
BUCKETS = {"under 5 min", "5-15 min", "15-60 min", "1-24 h", "over 1 day"}
#: A report's column of each kind of free text.
KIND_OF_REPORT = {
    "complaints": "chief_complaint",
    "body-parts": "body_part",
    "symptoms": "symptom",
    "red-flag-types": "red_flag",
    "symptom-durations": "symptom_duration",
}
#: The views of the months, each over its function.
MONTH_VIEWS = {
    "analytics_monthly_values": "analytics_month_values_v1",
    "analytics_monthly_withheld": "analytics_month_withheld_v1",
    "analytics_monthly_red_flags": "analytics_red_flag_months_v1",
}
#: The all-time view of each kind.
ALL_TIME_VIEWS = {
    "chief_complaint": "analytics_complaint_frequencies",
    "body_part": "analytics_body_part_frequencies",
    "symptom": "analytics_symptom_frequencies",
    "red_flag": "analytics_red_flag_frequencies",
    "symptom_duration": "analytics_symptom_duration_frequencies",
}


def midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


@dataclass(frozen=True)
class Consultation:
    """One consultation: its first message's time (explicit: it decides the month) and
    its final state's free text."""

    start: datetime
    complaint: str | None = None
    body_parts: tuple[str, ...] = ()
    red_flags: tuple[str, ...] = ()
    symptoms: tuple[str, ...] = ()
    duration: str | None = None
    minutes: float = 10.0
    user_id: str = field(default_factory=lambda: f"user-{uuid.uuid4().hex}")


async def consult(storage: PostgresStorage, one: Consultation) -> str:
    """Save ``one`` through the public API; its session id."""
    session_id = f"sess-{uuid.uuid4().hex}"
    later = one.start + timedelta(minutes=one.minutes)
    messages = [
        Message(role="user", content="hello", timestamp=one.start),
        Message(role="assistant", content="tell me more", timestamp=later),
    ]
    await storage.save(session_id, messages, user_id=one.user_id)
    state = {
        "stage": "assessing",
        "chief_complaint": one.complaint,
        "body_parts": list(one.body_parts),
        "red_flags": list(one.red_flags),
        "symptoms": list(one.symptoms),
        "duration": one.duration,
    }
    await storage.save_state(session_id, state)
    return session_id


# The consultations straddling September's end: the last microsecond of September in
# UTC, and 01:30 on October 1 at +02:00 (still September in UTC), against the first
# microsecond of October.
LAST_MOMENT = datetime(2026, 9, 30, 23, 59, 59, 999_999, tzinfo=UTC)
LOCAL_FIRST = datetime(2026, 10, 1, 1, 30, tzinfo=timezone(timedelta(hours=2)))
FIRST_MOMENT = midnight(OCT)
# Minutes each consultation lasts, by index: every duration bucket appears.
LASTING = (1.0, 7.0, 20.0, 90.0, 60.0 * 30)


def at(day: date, i: int) -> datetime:
    return midnight(day) + timedelta(hours=9, minutes=30 * i, microseconds=i + 1)


def september(i: int) -> Consultation:
    """12 consultations.  headache 7 (shown: 5 lack it); sore throat 3, fever 2 (held);
    "three days" 10 (all but 2: held); "boundary early" 5, two of them the last
    consultations of September in UTC (shown only if both count in September);
    "cannot bear weight" 5 (shown, and the month's red-flag count 5)."""
    return Consultation(
        {10: LAST_MOMENT, 11: LOCAL_FIRST}.get(i, at(date(2026, 9, 10), i)),
        complaint="headache" if i < 7 else ("sore throat" if i < 10 else "fever"),
        body_parts=("boundary early",) if i in (3, 4, 5, 10, 11) else (),
        red_flags=("cannot bear weight",) if i < 5 else (),
        duration="three days" if i < 10 else None,
        minutes=LASTING[i % len(LASTING)],
    )


def october(i: int) -> Consultation:
    """12 consultations.  sore throat 6, headache 6 (shown); "boundary late" 5, one of them
    at October's first microsecond (shown only if it counts in October); 2 with a red flag
    (held, and the month's red-flag count withheld)."""
    return Consultation(
        FIRST_MOMENT if i == 0 else at(date(2026, 10, 15), i),
        complaint="sore throat" if i < 6 else "headache",
        body_parts=("boundary late",) if i < 5 else (),
        red_flags=("cannot bear weight",) if i < 2 else (),
        minutes=LASTING[i % len(LASTING)],
    )


def november(i: int) -> Consultation:
    """3 consultations (fewer than k): every one with sore throat and three days."""
    return Consultation(at(date(2026, 11, 5), i), complaint="sore throat", duration="three days")


DATASET = [
    *(september(i) for i in range(12)),
    *(october(i) for i in range(12)),
    *(november(i) for i in range(3)),
]
#: Each month's consultations and its red-flag count as published (None: withheld).
MONTHS: dict[date, tuple[int, int | None]] = {SEP: (12, 5), OCT: (12, None), NOV: (3, None)}
#: (kind, month, value): consultations -- every figure the months show.
SHOWN: dict[tuple[str, date, str], int] = {
    ("chief_complaint", SEP, "headache"): 7,
    ("body_part", SEP, "boundary early"): 5,
    ("red_flag", SEP, "cannot bear weight"): 5,
    ("chief_complaint", OCT, "sore throat"): 6,
    ("chief_complaint", OCT, "headache"): 6,
    ("body_part", OCT, "boundary late"): 5,
}


@dataclass
class Seeded:
    url: URL
    login_url: URL


async def seed(url: URL) -> None:
    async with PostgresStorage.from_url(url) as storage:
        for one in DATASET:
            await consult(storage, one)
        await refresh_aggregates(storage, today=TODAY, show=False)


@pytest.fixture(scope="module")
def seeded(pg_server: PgTestServer) -> Iterator[Seeded]:
    with analytics_database(pg_server, "diff") as (url, login_url):
        asyncio.run(seed(url))
        yield Seeded(url, login_url)


# A connection of the analytics login (that module's fixture, over this module's database)
analyst = deidentified.analyst


# What the role may run, read from the catalog's ACLs (so that a new grant is attacked too).
EXECUTABLE = """
    SELECT p.proname, pg_get_function_identity_arguments(p.oid)
      FROM pg_proc AS p JOIN pg_namespace AS n ON n.oid = p.pronamespace
     WHERE n.nspname = 'public' AND has_function_privilege(p.oid, 'EXECUTE')
"""
READABLE = """
    SELECT c.relname, pg_get_viewdef(c.oid)
      FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND has_any_column_privilege(c.oid, 'SELECT')
"""


async def month_functions(conn: AsyncConnection) -> list[str]:
    """The functions the role may run over a window of months."""
    rows = await conn.execute(text(EXECUTABLE))
    return sorted(name for name, arguments in rows if arguments == "since date, until date")


async def day_functions(conn: AsyncConnection) -> list[str]:
    """The functions the role may run over a window of whole days."""
    rows = await conn.execute(text(EXECUTABLE))
    window = "since timestamp with time zone, until timestamp with time zone"
    return sorted(name for name, arguments in rows if arguments == window)


async def month_relations(conn: AsyncConnection) -> list[str]:
    """The views the role reads whose rows come from the published months."""
    functions = await month_functions(conn)
    rows = await conn.execute(text(READABLE))
    return sorted(name for name, body in rows if any(f in (body or "") for f in functions))


async def fetch(conn: AsyncConnection, sql: str, **values: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in await conn.execute(text(sql), values)), key=repr)


async def in_window(
    conn: AsyncConnection, function: str, since: date | str | None, until: date | str | None
) -> list[tuple[Any, ...]]:
    """``function``'s rows over the window, each end written as a literal (a date, or any
    text the role might send)."""

    def literal(end: date | str | None) -> str:
        return "NULL" if end is None else f"'{end}'"

    return await fetch(conn, f"SELECT * FROM {function}({literal(since)}, {literal(until)})")


def inside(month: date, since: date | None, until: date | None) -> bool:
    return (since is None or month >= since) and (until is None or month < until)


async def test_each_month_shows_only_what_k_have_and_k_lack(analyst: AsyncConnection) -> None:
    cells = await fetch(
        analyst, "SELECT kind, month, value, consultations FROM analytics_monthly_values"
    )
    assert {(kind, month, value): n for kind, month, value, n in cells} == SHOWN
    months = await fetch(
        analyst, "SELECT month, consultations, with_red_flags FROM analytics_monthly_red_flags"
    )
    assert {month: (n, flagged) for month, n, flagged in months} == MONTHS
    for (_, month, _), n in SHOWN.items():
        assert n >= K and MONTHS[month][0] - n >= K


async def test_no_window_or_sum_of_months_differences_to_a_small_count(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    """Nested and overlapping windows: every answer is the shown month figures inside it,
    so any difference of two answers is a sum of shown figures.  Sore throat is held by 3
    in September, 6 in October and 3 in November: every window and the all-time view say
    6 (October) or nothing, never 9 or 12, so no subtraction yields September's 3."""
    whole = {
        function: await in_window(analyst, function, None, None)
        for function in await month_functions(analyst)
    }
    assert set(whole) == {
        "analytics_month_values_v1",
        "analytics_month_withheld_v1",
        "analytics_red_flag_months_v1",
    }
    for since, until in itertools.product(ENDS, ENDS):
        for function, every_month in whole.items():
            month = 0 if function == "analytics_red_flag_months_v1" else 1
            expected = [row for row in every_month if inside(row[month], since, until)]
            assert await in_window(analyst, function, since, until) == expected, (since, until)
    # The views over the months: what their function answers over all time.
    for view, function in MONTH_VIEWS.items():
        assert await fetch(analyst, f"SELECT * FROM {view}") == whole[function], view
    # The all-time views: each value's sum over the months that show it.
    for kind, view in ALL_TIME_VIEWS.items():
        summed: Counter[str] = Counter()
        for (of, _, value), n in SHOWN.items():
            summed.update({value: n} if of == kind else {})
        shown = await fetch(analyst, f"SELECT * FROM {view}")
        assert dict(shown) == dict(summed), view
    everything = dict(await fetch(analyst, "SELECT * FROM analytics_complaint_frequencies"))
    october_only = await in_window(analyst, "analytics_month_values_v1", OCT, NOV)
    sore_throat = [n for kind, _, value, n in october_only if value == "sore throat"]
    assert everything["sore throat"] == 6 and everything["sore throat"] - sum(sore_throat) == 0


async def test_the_reports_of_any_months_are_the_shown_figures(seeded: Seeded) -> None:
    """The frequency and red-flag reports, run by the login over every window of months:
    each row is one month's shown figure, and each period what the month withholds."""
    engine = create_engine(seeded.login_url, pooled=False)
    try:
        for since, until in itertools.product(ENDS, ENDS):
            for name in MONTHLY_REPORTS:
                report = await run_report(
                    engine, name, since=since, until=until, limit=1000, today=TODAY
                )
                assert report.rows == expected_rows(name, since, until), (name, since, until)
                if name in FREQUENCY_REPORTS:
                    assert report.periods is not None
                    periods = [row[:2] for row in report.periods.rows]
                    assert periods == [
                        (f"{month:%Y-%m}", n)
                        for month, (n, _) in sorted(MONTHS.items())
                        if inside(month, since, until)
                    ]
    finally:
        await engine.dispose()


def expected_rows(name: str, since: date | None, until: date | None) -> list[tuple[Any, ...]]:
    """What ``name`` must list over the window: the shown figures, ordered as it orders."""
    if name == "red-flags":
        return [
            (f"{month:%Y-%m}", n, flagged, None if flagged is None else round_share(flagged, n))
            for month, (n, flagged) in sorted(MONTHS.items())
            if inside(month, since, until)
        ]
    kind = KIND_OF_REPORT[name]
    found = [
        (f"{month:%Y-%m}", value, n, round_share(n, MONTHS[month][0]))
        for (of, month, value), n in SHOWN.items()
        if of == kind and inside(month, since, until)
    ]
    return sorted(found, key=lambda row: (row[0], -row[2], row[1]))


def round_share(part: int, whole: int) -> Decimal:
    """``part / whole`` as SQL's round(numeric, 4) gives it."""
    return (Decimal(part) / Decimal(whole)).quantize(Decimal("0.0001"), rounding=ROUND_HALF_UP)


# Windows a month function must refuse: an end that is not the first day of a month,
# whatever the other end (the same day, an earlier one, none).
NOT_MONTHS = [
    ("2026-10-02", None),
    (None, "2026-10-02"),
    ("2026-10-02", "2026-10-02"),
    ("2026-10-15", "2026-09-30"),
    ("2026-09-01", "2026-09-30"),
    ("2026-10-02 00:00:00", "2026-11-01"),
]


async def test_the_month_functions_refuse_a_window_that_is_not_months(
    analyst: AsyncConnection,
) -> None:
    functions = await month_functions(analyst)
    assert len(functions) == 3
    for function, (since, until) in itertools.product(functions, NOT_MONTHS):
        with pytest.raises(DBAPIError, match="must be the first day of a month") as refused:
            await in_window(analyst, function, since, until)
        assert getattr(refused.value.orig, "sqlstate", None) == "22023", (function, since)
        await analyst.rollback()
    # An empty window of months, or a reversed one, answers nothing (and nothing negative).
    for function in functions:
        for empty in ((OCT, OCT), (NOV, SEP)):
            assert await in_window(analyst, function, *empty) == []


async def test_the_month_figures_are_the_same_in_any_session_time_zone(
    analyst: AsyncConnection,
) -> None:
    """The months are UTC's: a session at +14 or -10 reads the same rows."""
    functions = await month_functions(analyst)
    answers = []
    for zone in ("UTC", "Pacific/Kiritimati", "Pacific/Honolulu"):
        await analyst.execute(text(f"SET TIME ZONE '{zone}'"))
        answers.append(
            [await in_window(analyst, f, since, None) for f in functions for since in ENDS]
        )
    await analyst.execute(text("SET TIME ZONE 'UTC'"))
    assert answers[0] == answers[1] == answers[2]


async def test_the_day_functions_refuse_windows_differing_by_a_microsecond(
    analyst: AsyncConnection,
) -> None:
    """The attack of issue 24 on what still takes days: a window and the same one a
    microsecond shorter."""
    shorter = (midnight(OCT) + timedelta(microseconds=1)).isoformat()
    functions = await day_functions(analyst)
    assert functions == [
        "analytics_durations_v3",
        "analytics_funnel_v2",
        "analytics_overview_v4",
        "analytics_transitions_v2",
    ]
    for function in functions:
        for window in (f"'{shorter}', NULL", f"NULL, '{shorter}'"):
            with pytest.raises(DBAPIError, match=r"must be a whole day \(UTC midnight\)"):
                await analyst.execute(text(f"SELECT * FROM {function}({window})"))
            await analyst.rollback()
    # The pre-release reports that took any window are gone (the 1.0 baseline drops them).
    for previous in (
        "analytics_value_frequencies('chief_complaint', NULL, NULL)",
        "analytics_frequencies_v1('chief_complaint', NULL, NULL)",
        "analytics_overview_v1(NULL, NULL)",
    ):
        with pytest.raises(DBAPIError, match="does not exist"):
            await analyst.execute(text(f"SELECT * FROM {previous}"))
        await analyst.rollback()


# run_report's windows that are not months: another day, a moment that is not UTC
# midnight, and the first of a month at midnight in a zone east or west of UTC.
EAST = timezone(timedelta(hours=2))
WEST = timezone(timedelta(hours=-5))
NOT_MONTH_ENDS: list[tuple[date | datetime, str]] = [
    (date(2026, 10, 2), "first day of a month"),
    (midnight(date(2026, 10, 2)), "first day of a month"),
    (midnight(date(2026, 10, 31)), "first day of a month"),
    (midnight(OCT) + timedelta(microseconds=1), r"whole day \(UTC midnight\)"),
    (datetime(2026, 10, 1, tzinfo=EAST), r"whole day \(UTC midnight\)"),
    (datetime(2026, 10, 1, tzinfo=WEST), r"whole day \(UTC midnight\)"),
]


async def test_run_report_refuses_a_window_that_is_not_months(seeded: Seeded) -> None:
    engine = create_engine(seeded.login_url, pooled=False)
    try:
        for name in MONTHLY_REPORTS:
            for end, refusal in NOT_MONTH_ENDS:
                for window in ({"since": end}, {"until": end}, {"since": end, "until": end}):
                    with pytest.raises(InvalidInputError, match=refusal):
                        await run_report(engine, name, today=TODAY, **window)  # type: ignore[arg-type]
            with pytest.raises(InvalidInputError, match="first day of a month"):
                await run_report(engine, name, since=date(2026, 10, 15), until=date(2026, 9, 30))
            # October 1 as a date, a UTC midnight and 20:00 the day before at -04:00: one month.
            answers = [
                (await run_report(engine, name, since=since, until=NOV, today=TODAY)).rows
                for since in (
                    OCT,
                    midnight(OCT),
                    midnight(OCT).astimezone(timezone(-timedelta(hours=4))),
                )
            ]
            assert answers[0] == answers[1] == answers[2] == expected_rows(name, OCT, NOV)
            for since, until in ((OCT, OCT), (NOV, SEP)):
                assert (await run_report(engine, name, since=since, until=until)).rows == []
        # The daily reports take any whole day, and nothing else.
        for name in set(REPORTS) - set(MONTHLY_REPORTS):
            await run_report(engine, name, since=date(2026, 10, 2), until=date(2026, 10, 16))
            with pytest.raises(InvalidInputError, match=r"whole day \(UTC midnight\)"):
                await run_report(engine, name, since=datetime(2026, 10, 1, tzinfo=EAST))
    finally:
        await engine.dispose()


def exit_code(argv: list[str]) -> int | str | None:
    """``ctxstore`` run in this process: its exit code, a usage error's (2) included."""
    try:
        return main(argv)
    except SystemExit as stopped:
        return stopped.code


def test_the_command_line_takes_months_and_refuses_other_windows(
    seeded: Seeded, capsys: pytest.CaptureFixture[str]
) -> None:
    assert whole_day("2026-10") == whole_day("2026-10-01") == midnight(OCT)
    for bad in ("2026-10-01T00:00:00.000001", "2026-10-01T00:00+02:00", "2026-10-01 05:00"):
        with pytest.raises(argparse.ArgumentTypeError, match="not a whole day"):
            whole_day(bad)
    login = seeded.login_url.render_as_string(hide_password=False)
    command = ["analytics", "complaints", "--database-url", login, "--format", "json"]
    capsys.readouterr()
    refused = {
        # a whole day that is not a first
        "--since 2026-10-02": "must be the first day of a month",
        "--until 2026-10-31": "must be the first day of a month",
        # midnight of the 1st at +02:00 is September 30 in UTC; at -05:00, 05:00 UTC
        "--since 2026-10-01T00:00+02:00": "not a whole day (UTC midnight)",
        "--until 2026-10-01T00:00-05:00": "not a whole day (UTC midnight)",
    }
    for window, reason in refused.items():
        assert exit_code([*command, *window.split()]) == 2, window  # a usage error
        printed = capsys.readouterr()
        assert reason in printed.err and printed.out == "", window
    assert exit_code([*command, "--since", "2026-10", "--until", "2026-11"]) == 0
    printed = json.loads(capsys.readouterr().out)
    listed = [
        (row["month"], row["chief_complaint"], row["consultations"]) for row in printed["rows"]
    ]
    assert listed == [("2026-10", "headache", 6), ("2026-10", "sore throat", 6)]


async def test_a_consultation_counts_in_the_utc_month_of_its_first_activity(
    analyst: AsyncConnection,
) -> None:
    """September 30 23:59:59.999999 UTC and October 1 01:30 at +02:00 are September's;
    October 1 00:00:00 UTC is October's: each month holds 12, and each boundary value is
    shown (5 with it) in its month only."""
    days = Counter(
        day
        for (day,) in await fetch(analyst, "SELECT first_day FROM analytics_consultations")
        if date(2026, 9, 30) <= day <= date(2026, 10, 1)
    )
    assert days == {date(2026, 9, 30): 2, date(2026, 10, 1): 1}
    rows = await fetch(analyst, "SELECT month, consultations FROM analytics_monthly_red_flags")
    assert dict(rows) == {month: n for month, (n, _) in MONTHS.items()}
    boundary = await fetch(
        analyst,
        "SELECT month, value, consultations FROM analytics_monthly_values "
        "WHERE value LIKE 'boundary%'",
    )
    assert set(boundary) == {(SEP, "boundary early", 5), (OCT, "boundary late", 5)}


async def test_a_value_all_but_a_few_have_shows_nowhere(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    """ "three days": 10 of September's 12 (2 without) and 3 of November's 3.  No relation
    the role reads, no month function over any window, no report names it."""
    found = []
    for relation in await month_relations(analyst):
        found += await fetch(analyst, f"SELECT * FROM {relation}")
    for function in await month_functions(analyst):
        for since in ENDS:
            found += await in_window(analyst, function, since, None)
    assert found and not [row for row in found if "three days" in map(str, row)]
    assert await fetch(analyst, "SELECT * FROM analytics_symptom_duration_frequencies") == []
    engine = create_engine(seeded.login_url, pooled=False)
    try:
        report = await run_report(engine, "symptom-durations", today=TODAY)
    finally:
        await engine.dispose()
    assert report.rows == [] and "three days" not in report.render("json")


async def test_the_consultations_view_holds_no_time_below_the_day_and_no_red_flag(
    analyst: AsyncConnection,
) -> None:
    columns = await fetch(
        analyst,
        "SELECT column_name, data_type FROM information_schema.columns "
        "WHERE table_name = 'analytics_consultations'",
    )
    types = dict(columns)
    assert types["first_day"] == "date" and types["duration_bucket"] == "text"
    assert not [
        column
        for column, kind in types.items()
        if kind.startswith(("timestamp", "time ", "interval")) or "second" in column
    ]
    assert not [column for column in types if "red" in column]
    rows = await fetch(analyst, "SELECT first_day, duration_bucket FROM analytics_consultations")
    assert len(rows) == len(DATASET)
    assert {day for day, _ in rows} == {one.start.astimezone(UTC).date() for one in DATASET}
    assert {bucket for _, bucket in rows} == BUCKETS
    moments = await fetch(analyst, "SELECT DISTINCT first_activity FROM analytics_stage_history")
    assert all(moment == midnight(moment.date()) for (moment,) in moments)
    # the exact view is the owner's only
    with pytest.raises(DBAPIError, match="permission denied"):
        await analyst.execute(text("SELECT * FROM analytics_consultation_details"))


def _plan_counts(plan: object) -> list[tuple[str, object, object, object]]:
    """Each node of an EXPLAIN (ANALYZE, FORMAT JSON) plan: its type, the rows it
    returned, its loops and the rows its filter removed (no timings: they differ run to
    run)."""
    found: list[tuple[str, object, object, object]] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            if "Node Type" in node:
                found.append(
                    (
                        str(node["Node Type"]),
                        node.get("Actual Rows"),
                        node.get("Actual Loops"),
                        node.get("Rows Removed by Filter"),
                    )
                )
            stack.extend(value for value in node.values() if isinstance(value, list | dict))
    return sorted(found, key=repr)


# Each way the role reads a value's count, filtered on the value.
FILTERED = [
    "SELECT * FROM analytics_complaint_frequencies WHERE chief_complaint = :value",
    "SELECT * FROM analytics_monthly_values WHERE value = :value",
    "SELECT * FROM analytics_month_values_v1() WHERE value = :value",
    "SELECT * FROM analytics_month_values_v1('2026-09-01', '2026-10-01') WHERE value = :value",
    "SELECT * FROM analytics_month_values_v1(NULL, '2026-12-01') "
    "WHERE kind = 'chief_complaint' AND value = :value",
]


COUNTED = [
    "SELECT * FROM analytics_monthly_red_flags WHERE with_red_flags = :n",
    "SELECT * FROM analytics_red_flag_months_v1() WHERE with_red_flags = :n",
]


async def test_explain_analyze_tells_a_suppressed_value_from_none(
    analyst: AsyncConnection,
) -> None:
    """The issue's oracle: EXPLAIN (ANALYZE) of a frequency view filtered on a value
    showed "Rows Removed by Filter: 1" for a value 2 consultations hold (suppressed) and
    nothing for one no consultation holds.  Every view and month function reads only the
    shown figures, so the two plans count the same rows, in every way the role reads."""
    for query in FILTERED:
        plans = {}
        for value in ("fever", "HIV", "headache"):  # held by 2 (September), none, 7 + 6
            explained = await analyst.execute(
                text(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}"), {"value": value}
            )
            plans[value] = _plan_counts(explained.scalar_one())
        assert plans["fever"] == plans["HIV"], query
        assert plans["headache"] != plans["HIV"], query  # a shown value shows: the probe works
    # A withheld count (October's 2 with a red flag) against one no month has (3), and a
    # shown one (September's 5).
    for query in COUNTED:
        counted = {}
        for n in (2, 3, 5):
            explained = await analyst.execute(
                text(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}"), {"n": n}
            )
            counted[n] = _plan_counts(explained.scalar_one())
        assert counted[2] == counted[3] != counted[5], query


async def owner_reads(url: URL, sql: str) -> list[tuple[Any, ...]]:
    engine: AsyncEngine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as conn:
            return await fetch(conn, sql)
    finally:
        await engine.dispose()


async def test_the_dataset_would_leak_without_the_months(seeded: Seeded) -> None:
    """What the attacks above defeat is there: the owner counts sore throat 3 in
    September, three days 10 of 12, the boundary values 5 only with the boundary
    consultations, and 2 red flags in October."""
    counted = await owner_reads(
        seeded.url,
        """
        SELECT date_trunc('month', s.first_activity_at AT TIME ZONE 'UTC')::date,
               c.chief_complaint, c.duration, count(*)
          FROM sessions AS s JOIN consultation_states AS c USING (session_id)
         GROUP BY 1, 2, 3
        """,
    )
    complaints: Counter[tuple[date, str]] = Counter()
    durations: Counter[tuple[date, str]] = Counter()
    for month, complaint, duration, n in counted:
        complaints[month, complaint] += n
        durations[month, duration] += n
    assert complaints[SEP, "sore throat"] == 3 and complaints[SEP, "fever"] == 2
    assert durations[SEP, "three days"] == 10 and durations[NOV, "three days"] == 3
