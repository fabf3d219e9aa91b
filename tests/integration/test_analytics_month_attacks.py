"""Issue 50: attacks on the published months, by a real login in the analytics role.

Each attack runs with k = 5 on a database of its own, over a dataset on which it would
succeed against a naive design (one that republished a month on every refresh, published
the month still filling up, kept a per-consultation red-flag column, or showed each
figure that passes k on its own); each test checks that what it attacks is really there.

- repeated queries: a state change, a consultation backdated into a published month, a
  deletion and an erasure, then a refresh: every figure the role reads is byte-identical;
- the current month and one that ended fewer than 7 days ago show in no figure;
- what a month withholds (its withheld consultations, its red-flag count) is blank below k,
  and a total the role reads minus the shown values is never a group of 1 to k - 1;
- no red flag of a day: the per-consultation view has no red-flag column, and the day
  reports that had one are denied (42501).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from ctxstore import PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import MONTHLY_REPORTS, run_report
from ctxstore.commands.months import next_month, publication_day
from ctxstore.db.engine import create_engine
from tests.integration.test_analytics_differencing import (
    Consultation,
    at,
    consult,
    fetch,
    in_window,
    month_functions,
    month_relations,
)
from tests.integration.test_deidentified_analytics import analytics_database
from tests.pg_harness import PgTestServer

K = 5


@dataclass
class Fresh:
    url: URL
    login_url: URL


@pytest.fixture
def fresh(pg_server: PgTestServer) -> Iterator[Fresh]:
    """A database of its own at head, k = 5, and a login in its analytics role."""
    with analytics_database(pg_server, "months") as (url, login_url):
        yield Fresh(url, login_url)


async def seed(url: URL, consultations: list[Consultation]) -> list[str]:
    async with PostgresStorage.from_url(url) as storage:
        return [await consult(storage, one) for one in consultations]


async def refresh(url: URL, today: date) -> None:
    async with PostgresStorage.from_url(url) as storage:
        await refresh_aggregates(storage, today=today, show=False)


async def as_login(fresh: Fresh, sql: str, **values: Any) -> list[tuple[Any, ...]]:
    engine = create_engine(fresh.login_url, pooled=False)
    try:
        async with engine.connect() as conn:
            return await fetch(conn, sql, **values)
    finally:
        await engine.dispose()


async def read_months(fresh: Fresh, months: list[date], today: date) -> dict[str, Any]:
    """Every figure the login reads of the published months: each view over them, each
    month function over all time and over each one of ``months``, and each monthly
    report as JSON over the same windows."""
    windows: list[tuple[date | None, date | None]] = [(None, None)]
    windows += [(month, next_month(month)) for month in months]
    engine = create_engine(fresh.login_url, pooled=False)
    taken: dict[str, Any] = {}
    try:
        async with engine.connect() as conn:
            assert (await conn.execute(text("SELECT * FROM analytics_suppression"))).scalar() == K
            relations = await month_relations(conn)
            assert len(relations) == 8  # the three monthly views, the five all-time ones
            for relation in relations:
                taken[relation] = await fetch(conn, f"SELECT * FROM {relation}")
            for function in await month_functions(conn):
                for since, until in windows:
                    taken[f"{function}({since}, {until})"] = await in_window(
                        conn, function, since, until
                    )
        for name in MONTHLY_REPORTS:
            for since, until in windows:
                report = await run_report(engine, name, since=since, until=until, today=today)
                taken[f"{name} {since} {until}"] = report.render("json")
    finally:
        await engine.dispose()
    return taken


async def read_everything(fresh: Fresh) -> str:
    """Every row of every relation and function the login may read (the catalog's ACLs
    say which), and every monthly report as JSON: one text to search."""
    engine = create_engine(fresh.login_url, pooled=False)
    found: list[str] = []
    try:
        async with engine.connect() as conn:
            # JIT compiling the per-consultation views takes longer than running them here.
            await conn.execute(text("SET jit = off"))
            relations = await conn.execute(
                text(
                    "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n "
                    "ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
                    "AND has_any_column_privilege(c.oid, 'SELECT')"
                )
            )
            for relation in list(relations.scalars()):
                found += map(repr, await fetch(conn, f"SELECT * FROM {relation}"))
            functions = await conn.execute(
                text(
                    "SELECT p.proname, p.pronargs FROM pg_proc AS p WHERE "
                    "p.pronamespace = 'public'::regnamespace "
                    "AND has_function_privilege(p.oid, 'EXECUTE')"
                )
            )
            for name, arguments in list(functions):
                nulls = ", ".join(["NULL"] * arguments)
                found += map(repr, await fetch(conn, f"SELECT * FROM {name}({nulls})"))
        # The other reports are the functions above, whose rows hold no free text.
        for report in MONTHLY_REPORTS:
            found.append((await run_report(engine, report, limit=1000)).render("json"))
    finally:
        await engine.dispose()
    return "\n".join(found)


# -- Repeated queries ------------------------------------------------------------------

SEP = date(2026, 9, 1)


def september(i: int) -> Consultation:
    """12 consultations: headache 5 (shown: exactly k), sore throat 7 (shown: exactly k
    lack it), the red flag with the headaches (5: shown).  Each change below alone moves
    a shown figure across k."""
    return Consultation(
        at(date(2026, 9, 10), i),
        complaint="headache" if i < 5 else "sore throat",
        red_flags=("cannot bear weight",) if i < 5 else (),
    )


async def change_september(url: URL, session_ids: list[str], erased_user: str) -> None:
    """A state change, a consultation backdated into September, a deletion, an erasure."""
    async with PostgresStorage.from_url(url) as storage:
        await storage.save_state(
            session_ids[0], {"stage": "advising", "chief_complaint": "migraine"}
        )
        await consult(
            storage,
            Consultation(
                at(date(2026, 9, 20), 0), complaint="sore throat", red_flags=("cannot bear weight",)
            ),
        )
        await storage.delete(session_ids[5])
        await storage.erase_user(erased_user)


async def test_a_published_month_reads_the_same_after_its_consultations_change(
    fresh: Fresh,
) -> None:
    consultations = [september(i) for i in range(12)]
    session_ids = await seed(fresh.url, consultations)
    today = publication_day(SEP)
    await refresh(fresh.url, today)
    before = await read_months(fresh, [SEP], today)
    cells = before["analytics_monthly_values"]
    assert ("chief_complaint", SEP, "headache", 5) in cells  # published: there is a target

    await change_september(fresh.url, session_ids, erased_user=consultations[1].user_id)
    for later in (today, today + timedelta(days=90)):
        await refresh(fresh.url, later)
        assert await read_months(fresh, [SEP], today) == before, later

    # Against a design that republished, the same reading would differ: republish it.
    engine = create_engine(fresh.url, pooled=False)
    try:
        async with engine.begin() as conn:
            await conn.execute(text("DELETE FROM analytics_months WHERE month = :m"), {"m": SEP})
    finally:
        await engine.dispose()
    await refresh(fresh.url, today)
    assert await read_months(fresh, [SEP], today) != before


# -- The current month and the unsettled one -------------------------------------------

NOV, DEC, JAN = date(2026, 11, 1), date(2026, 12, 1), date(2027, 1, 1)
#: December ended 4 days before; January is this month.
UNSETTLED_TODAY = date(2027, 1, 5)


def in_month(month: date, i: int, marker: str) -> Consultation:
    """One of a month's 12 consultations: ``marker`` complaint and red flag for 6 (each
    shown when the month is published), headache for the others."""
    start = at(month.replace(day=2) + timedelta(days=i % 3), i)
    if month == DEC and i == 11:
        start = datetime(2026, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    return Consultation(
        start,
        complaint=f"{marker} cough" if i < 6 else "headache",
        red_flags=(f"{marker} flag",) if i < 6 else (),
    )


async def months_shown(fresh: Fresh) -> set[date]:
    """Every month a row of a month view or function names."""
    months: set[date] = set()
    for function, column in (
        ("analytics_month_values_v1", 1),
        ("analytics_month_withheld_v1", 1),
        ("analytics_red_flag_months_v1", 0),
    ):
        months |= {row[column] for row in await as_login(fresh, f"SELECT * FROM {function}()")}
    return months


async def test_the_current_month_and_the_unsettled_one_show_in_no_figure(fresh: Fresh) -> None:
    await seed(
        fresh.url,
        [
            *(in_month(NOV, i, "november") for i in range(12)),
            *(in_month(DEC, i, "december") for i in range(12)),
            *(in_month(JAN, i, "january") for i in range(12)),
        ],
    )
    for today in (UNSETTLED_TODAY, UNSETTLED_TODAY, publication_day(DEC) - timedelta(days=1)):
        await refresh(fresh.url, today)
        everything = await read_everything(fresh)
        assert "november cough" in everything and "november flag" in everything
        assert "december" not in everything and "january" not in everything, today
        assert await months_shown(fresh) == {NOV}, today
    # The first refresh a week after December ends publishes it: the markers were there.
    await refresh(fresh.url, publication_day(DEC))
    everything = await read_everything(fresh)
    assert "december cough" in everything and "december flag" in everything
    assert "january" not in everything
    assert await months_shown(fresh) == {NOV, DEC}


# -- What a month withholds ------------------------------------------------------------

JUN, JUL, AUG = date(2026, 6, 1), date(2026, 7, 1), date(2026, 8, 1)


def withholding(month: date, i: int) -> Consultation:
    """June: 12, a complaint for 3 only, a red flag for 4 (fewer than k have one).
    July: 12, sore throat for all, a red flag for 8 (fewer than k have none).
    August: 12, a red flag for 6 (shown).  September: 4, every figure withheld."""
    flagged = {JUN: 4, JUL: 8, AUG: 6, SEP: 2}[month]
    complaint = ("fever" if i < 3 else None) if month == JUN else "sore throat"
    return Consultation(
        at(month.replace(day=11), i),
        complaint=complaint,
        red_flags=("chest pain",) if i < flagged else (),
    )


def small(n: int | None) -> bool:
    return n is not None and 0 < n < K


async def test_a_withheld_count_is_blank_below_k_and_above_all_but_k(fresh: Fresh) -> None:
    sizes = {JUN: 12, JUL: 12, AUG: 12, SEP: 4}
    await seed(fresh.url, [withholding(m, i) for m, n in sizes.items() for i in range(n)])
    await refresh(fresh.url, publication_day(SEP))
    red_flags = {
        month: (n, flagged, share)
        for month, n, flagged, share in await as_login(
            fresh, "SELECT * FROM analytics_monthly_red_flags"
        )
    }
    assert {month: n for month, (n, _, _) in red_flags.items()} == sizes
    assert {month: flagged for month, (_, flagged, _) in red_flags.items()} == {
        JUN: None,  # 4 have one
        JUL: None,  # 4 have none
        AUG: 6,
        SEP: None,
    }
    for month, (n, flagged, share) in red_flags.items():
        assert (flagged is None) == (share is None)
        assert flagged is None or K <= flagged <= n - K, month
    withheld = {
        (kind, month): (shown, values, consultations)
        for kind, month, _, shown, values, consultations in await as_login(
            fresh, "SELECT * FROM analytics_monthly_withheld"
        )
    }
    assert len(withheld) == 5 * len(sizes)
    for key, (_, values, consultations) in withheld.items():
        assert not small(values) and not small(consultations), key
    # June: 3 hold a complaint, all withheld; 4 a red flag.  July: the 8 holding the
    # withheld red flag would be the red-flag count 12 - 4.  September: 4 in all.
    assert withheld["chief_complaint", JUN][2] is None
    assert withheld["red_flag", JUN][2] is None
    assert withheld["red_flag", JUL][2] is None
    assert withheld["chief_complaint", SEP][2] is None
    engine = create_engine(fresh.login_url, pooled=False)
    try:
        report = await run_report(engine, "red-flags", today=publication_day(SEP))
    finally:
        await engine.dispose()
    assert [row[2] for row in report.rows] == [None, None, 6, None]


# A total the role reads of each kind, per month: the consultations holding a value of it.
TOTALS = {
    "chief_complaint": "count(*) FILTER (WHERE has_chief_complaint)",
    "symptom_duration": "count(*) FILTER (WHERE has_symptom_duration)",
    "body_part": "count(*) FILTER (WHERE body_part_count > 0)",
    "symptom": "count(*) FILTER (WHERE symptom_count > 0)",
}
SINGLE_VALUED = {"chief_complaint", "symptom_duration"}
OCT = date(2026, 10, 1)


def residual_month(month: date, i: int) -> Consultation:
    """October (12): headache 6, sore throat 5, rash 1; three days 6, a week 5, a year 1:
    the totals less the two shown values leave 1.  November (20): a red flag for 9,
    "cannot bear weight" for 8 of them; 3 of those also "fever", 2 "rash", and the ninth
    "rash" only: shown 8, with red flags 9, holding a withheld type 6.  Also a symptom for
    15: swelling for 10 (shown), 2 of them with cramp too, and 5 with tingling or numbness
    only: holding a withheld symptom 7, of whom 2 also swelling.  December (20): November's
    red flags as body parts ("knee", "ankle", "wrist")."""
    if month == OCT:
        complaint = "headache" if i < 6 else ("sore throat" if i < 11 else "rash")
        duration = "three days" if i < 6 else ("a week" if i < 11 else "a year")
        return Consultation(at(date(2026, 10, 7), i), complaint=complaint, duration=duration)
    common = ("cannot bear weight",) if i < 8 else ()
    rare = ("fever",) if i < 3 else (("rash",) if i in (3, 4, 8) else ())
    if month == NOV:
        symptoms = (("swelling",) if i < 10 else ()) + (("cramp",) if i < 2 else ())
        symptoms += ("tingling",) if 10 <= i < 13 else (("numbness",) if i in (13, 14) else ())
        return Consultation(at(date(2026, 11, 7), i), red_flags=common + rare, symptoms=symptoms)
    parts = {"cannot bear weight": "knee", "fever": "ankle", "rash": "wrist"}
    return Consultation(
        at(date(2026, 12, 7), i), body_parts=tuple(parts[value] for value in common + rare)
    )


async def residuals(fresh: Fresh) -> dict[tuple[date, str], dict[str, int]]:
    """What the login derives per month and kind: a total it reads (consultations with a
    value of the kind) less the shown values, or less the consultations holding a withheld
    value: groups the k rule must cover as well."""
    totals: dict[tuple[date, str], int] = {}
    for kind, counted in TOTALS.items():
        rows = await as_login(
            fresh,
            f"SELECT date_trunc('month', first_day)::date, {counted} "
            "FROM analytics_consultations GROUP BY 1",
        )
        totals |= {(month, kind): n for month, n in rows}
    for month, _, flagged, _ in await as_login(fresh, "SELECT * FROM analytics_monthly_red_flags"):
        if flagged is not None:
            totals[month, "red_flag"] = flagged
    shown: dict[tuple[date, str], list[int]] = defaultdict(list)
    for kind, month, _, n in await as_login(fresh, "SELECT * FROM analytics_monthly_values"):
        shown[month, kind].append(n)
    holding = {
        (month, kind): consultations
        for kind, month, _, _, _, consultations in await as_login(
            fresh, "SELECT * FROM analytics_monthly_withheld"
        )
    }
    derived: dict[tuple[date, str], dict[str, int]] = {}
    for (month, kind), total in totals.items():
        found = {}
        values = shown.get((month, kind), [])
        if kind in SINGLE_VALUED or len(values) == 1:
            # no shown value overlaps another: the total less them holds only withheld ones
            found["only withheld values"] = total - sum(values)
        if holding.get((month, kind)) is not None:
            found["only shown values"] = total - holding[month, kind]
            if len(values) == 1:
                found["a shown and a withheld value"] = values[0] - found["only shown values"]
        derived[month, kind] = found
    return derived


async def test_no_total_less_the_shown_values_is_a_small_group(fresh: Fresh) -> None:
    """Complementary suppression: with each figure shown on its own merits, October's
    consultations with a complaint (12) less headache (6) and sore throat (5) are the 1
    with rash; November's 9 with a red flag less the 8 with "cannot bear weight" are the 1
    whose red flags are all withheld types, and the 9 less the 6 holding a withheld type
    are the 3 whose only red flag is "cannot bear weight"; November's 15 with a symptom
    (symptom_count) less the 7 holding a withheld one are 8, and swelling's 10 less those 8
    the 2 with swelling and a withheld symptom; December as November's red flags, its
    total read from analytics_consultations.body_part_count."""
    sizes = {OCT: 12, NOV: 20, DEC: 20}
    await seed(fresh.url, [residual_month(m, i) for m, n in sizes.items() for i in range(n)])
    await refresh(fresh.url, publication_day(DEC))
    derived = await residuals(fresh)
    for month, kind in ((OCT, "chief_complaint"), (OCT, "symptom_duration"), (NOV, "red_flag")):
        assert derived.get((month, kind)), (month, kind)  # the attack has its figures
    leaks = {
        (f"{month:%Y-%m}", kind, group): n
        for (month, kind), found in derived.items()
        for group, n in found.items()
        if small(n)
    }
    assert leaks == {}


# -- No red flag of a day --------------------------------------------------------------

#: What revision 1004 took from the analytics role: each gives "permission denied".
REVOKED = [
    "SELECT * FROM analytics_frequencies_v3('red_flag', NULL, NULL)",
    "SELECT * FROM analytics_red_flags_v3('day', NULL, NULL)",
    "SELECT * FROM analytics_overview_v3(NULL, NULL)",
    "SELECT * FROM analytics_red_flags_daily",
    "SELECT * FROM analytics_red_flags_weekly",
]
#: What the role reads of red flags: a month's count and the types' counts, by month and
#: all time (the months summed).
RED_FLAG_READERS = {
    "analytics_monthly_red_flags",
    "analytics_red_flag_frequencies",
    "analytics_red_flag_months_v1",
}
# The columns of every relation the role reads and of every function it runs.
COLUMNS = """
    SELECT c.relname, a.attname FROM pg_class AS c
      JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
     WHERE c.relnamespace = 'public'::regnamespace AND has_any_column_privilege(c.oid, 'SELECT')
    UNION ALL
    SELECT p.proname, f.name
      FROM pg_proc AS p, unnest(p.proargnames, p.proargmodes) AS f(name, mode)
     WHERE p.pronamespace = 'public'::regnamespace AND has_function_privilege(p.oid, 'EXECUTE')
       AND f.mode = 't'
"""


async def attempt(conn: AsyncConnection, sql: str) -> str | None:
    """The SQLSTATE ``sql`` fails with as the login (None: it answered)."""
    try:
        await conn.execute(text(sql))
    except DBAPIError as error:
        await conn.rollback()
        return str(getattr(error.orig, "sqlstate", "?"))
    return None


async def test_no_red_flag_of_a_day_can_be_counted(fresh: Fresh) -> None:
    """October 14: 10 consultations, 5 with a red flag.  The month shows 5 of 10; no day
    does, through any column or report the role has."""
    day = date(2026, 10, 14)
    await seed(
        fresh.url,
        [
            Consultation(at(day, i), red_flags=("cannot bear weight",) if i < 5 else ())
            for i in range(10)
        ],
    )
    await refresh(fresh.url, publication_day(OCT))
    months = await as_login(fresh, "SELECT month, with_red_flags FROM analytics_monthly_red_flags")
    assert months == [(OCT, 5)]
    engine = create_engine(fresh.login_url, pooled=False)
    try:
        async with engine.connect() as conn:
            for sql in REVOKED:
                assert await attempt(conn, sql) == "42501", sql
            for column in ("has_red_flags", "red_flag_count"):
                by_day = (
                    f"SELECT first_day, count(*) FILTER (WHERE {column}::int > 0) "
                    "FROM analytics_consultations GROUP BY 1"
                )
                assert await attempt(conn, by_day) == "42703", column  # no such column
            columns = await fetch(conn, COLUMNS)
    finally:
        await engine.dispose()
    naming = {relation for relation, column in columns if "red" in column}
    assert naming == RED_FLAG_READERS
