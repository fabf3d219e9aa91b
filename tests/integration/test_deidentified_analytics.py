"""Issue 13, item 1: as a real login in the analytics role, over seeded data, no row of
anything the role can read holds a user id, a session id or a free-text value fewer than
k consultations share; the role reads neither the tables nor the pseudonym key.

What the role reads is listed from the catalog's ACLs and checked against the list below:
a new grant fails here until it is reviewed (and then attacked by the loops, which read
every relation and function the catalog says the role may).  The free-text counts are the
months ``ctxstore analytics refresh`` published (revision 1004).

The database is migrated here (not copied from the template: a copy keeps the template's
roles and PUBLIC's database privileges), with the default k = 5.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from ctxstore import Message, PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import MONTHLY_REPORTS, REPORTS, run_report
from ctxstore.commands.months import next_month, publication_day
from ctxstore.db import migrations
from ctxstore.db.admin import quote_identifier
from ctxstore.db.engine import create_engine
from ctxstore.db.roles import PREFIX_ENV, RoleNames, recorded_role_names
from tests.pg_harness import PgTestServer

K = 5
START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
MONTH = START.date().replace(day=1)
#: The first day a refresh publishes the month of the consultations.
TODAY = publication_day(MONTH)
# Every value fewer than K consultations share carries this marker, and no other does: no
# cell the analytics role reads may contain it.
RARE = "zq"

# What the analytics role may read: exactly these views and functions (the reports:
# SECURITY DEFINER functions, revision 0012).
VIEWS = {
    "analytics_consultations",
    "analytics_stage_history",
    "analytics_stage_reached",
    "analytics_stage_changes",
    "analytics_stage_funnel",
    "analytics_stage_transitions",
    "analytics_complaint_frequencies",
    "analytics_body_part_frequencies",
    "analytics_symptom_frequencies",
    "analytics_red_flag_frequencies",
    "analytics_symptom_duration_frequencies",
    # the published months (revision 1004)
    "analytics_monthly_values",
    "analytics_monthly_withheld",
    "analytics_monthly_red_flags",
    "analytics_suppression",
}
WINDOW = "timestamp with time zone,timestamp with time zone"
# The free-text counts and red-flag counts: the months the owner's refresh published.
MONTH_FUNCTIONS = {
    f"analytics_{name}_v1(date,date)"
    for name in ("month_values", "month_withheld", "red_flag_months")
}
FUNCTIONS = {
    *MONTH_FUNCTIONS,
    *(f"analytics_{report}_v2({WINDOW})" for report in ("funnel", "transitions")),
    # small groups suppressed (revision 0019); no red-flag rate (revision 1004)
    f"analytics_overview_v4({WINDOW})",
    f"analytics_durations_v3({WINDOW})",
    "analytics_min_group_size_v1()",
}
KINDS = ("chief_complaint", "body_part", "symptom", "red_flag", "symptom_duration")


def consultation(i: int) -> dict[str, Any]:
    """Consultation i's final state: common values in at least K consultations (and not in
    at least K), rare ones (marked) in fewer -- including K - 1, the largest count still
    hidden.  Of each kind, the consultations holding a rare value number K or more, so no
    common value is withheld to keep that residual from being small (revision 1004)."""
    return {
        "stage": ("collecting_details", "assessing", "advising")[i % 3],
        "chief_complaint": "common knee ache"
        if i < 6
        else ("pair complaint zq" if i < 8 else f"rare complaint {i} zq"),
        # knee: 7 of 12, so 5 without (revision 0016 hides a value fewer than k lack)
        "body_parts": ["knee"]
        if i < 7
        else (["rare elbow zq"] if i < 7 + K - 1 else ["rare wrist zq"]),
        "symptoms": ["swelling"]
        if i < K
        else (["rare tingling zq"] if i < 2 * K - 1 else ["rare numbness zq"] if i == 9 else []),
        # every consultation with the common red flag has a rare one too
        "red_flags": (["cannot bear weight"] if 3 <= i < 3 + K else [])
        + (["rare fever zq"] if i in (3, 4, 5) else ["rare rash zq"] if i in (6, 7) else []),
        "duration": "three days"
        if i < K
        else (
            "rare since childhood zq"
            if i < 2 * K - 1
            else "rare since birth zq"
            if i == 9
            else None
        ),
        "pain_level": i % 11,
    }


@dataclass
class Seeded:
    url: URL
    login_url: URL
    roles: RoleNames
    session_ids: list[str]
    user_ids: list[str]
    starts: list[datetime]


async def seed(url: URL) -> tuple[list[str], list[str], list[datetime]]:
    session_ids = [f"sess-{uuid.uuid4().hex}" for _ in range(12)]
    user_ids = [f"user-{uuid.uuid4().hex}" for _ in range(11)]
    # one UTC month (on one day): revision 1004 counts free text per month, a value shown
    # for k or more consultations with it and k or more without
    starts = [START + timedelta(minutes=50 * i) for i in range(12)]
    async with PostgresStorage.from_url(url) as storage:
        for i, session_id in enumerate(session_ids):
            user_id = user_ids[min(i, 10)]  # the last two share a user
            messages = [
                Message(
                    role="user",
                    content=f"my knee, {RARE} rare words {i}",
                    timestamp=starts[i],
                ),
                Message(
                    role="assistant",
                    content="how long?",
                    timestamp=starts[i] + timedelta(minutes=3 + i),
                ),
            ]
            await storage.save(session_id, messages, user_id=user_id)
            await storage.save_state(session_id, {"stage": "greeting"})
            await storage.save_state(session_id, consultation(i))
            await storage.save_summary(session_id, f"summary {RARE} {i}", covers_until=1)
            await storage.save_profile(user_id, {"age": 30 + i, "gender": f"g {RARE}"})
        await refresh_aggregates(storage, today=TODAY, show=False)
    return session_ids, user_ids, starts


async def create_login(url: URL, role: str) -> tuple[str, str]:
    # Under the run's role prefix: the harness drops it even if this test cannot.
    login = f"{os.environ.get(PREFIX_ENV, 'ctxstore_test')}_login_{uuid.uuid4().hex[:8]}"
    password = uuid.uuid4().hex
    engine = create_engine(url, pooled=False)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(f"CREATE ROLE {login} LOGIN PASSWORD '{password}' IN ROLE {role}")
            )
    finally:
        await engine.dispose()
    return login, password


async def drop_login(url: URL, login: str) -> None:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(f"DROP ROLE IF EXISTS {quote_identifier(login)}"))
    finally:
        await engine.dispose()


async def read_roles(url: URL) -> RoleNames:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as conn:
            names = await conn.run_sync(recorded_role_names)
    finally:
        await engine.dispose()
    assert names is not None
    return names


@contextmanager
def analytics_database(pg_server: PgTestServer, kind: str) -> Iterator[tuple[URL, URL]]:
    """A database of its own at head, and a login in its analytics role: (its URL, the
    login's URL).  Both dropped after."""
    name = pg_server.new_name(kind)
    url = pg_server.create(name)
    login = None
    try:
        migrations.upgrade(url)
        roles = asyncio.run(read_roles(url))
        login, password = asyncio.run(create_login(url, roles.analytics))
        yield url, url.set(username=login, password=password)
    finally:
        pg_server.drop(name)
        if login is not None:
            asyncio.run(drop_login(pg_server.url, login))


@pytest.fixture(scope="module")
def seeded(pg_server: PgTestServer) -> Iterator[Seeded]:
    with analytics_database(pg_server, "deid") as (url, login_url):
        session_ids, user_ids, starts = asyncio.run(seed(url))
        roles = asyncio.run(read_roles(url))
        yield Seeded(url, login_url, roles, session_ids, user_ids, starts)


@pytest.fixture
async def analyst(seeded: Seeded) -> AsyncIterator[AsyncConnection]:
    """A connection of the analytics login itself (no superuser anywhere on it)."""
    engine = create_engine(seeded.login_url, pooled=False)
    try:
        async with engine.connect() as conn:
            assert (
                await conn.execute(
                    text("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
                )
            ).scalar() is False
            yield conn
    finally:
        await engine.dispose()


def texts(value: Any) -> list[str]:
    if isinstance(value, list | tuple):
        return [piece for item in value for piece in texts(item)]
    return [] if value is None else [str(value)]


def assert_clean(where: str, rows: list[Any], seeded: Seeded) -> None:
    identifiers = [*seeded.session_ids, *seeded.user_ids]
    for row in rows:
        for cell in texts(tuple(row)):
            assert RARE not in cell, f"{where}: rare free text {cell!r}"
            assert "sess-" not in cell and "user-" not in cell, f"{where}: an id in {cell!r}"
            for identifier in identifiers:
                assert identifier not in cell, f"{where}: {identifier!r}"


async def readable_relations(analyst: AsyncConnection) -> set[str]:
    readable = await analyst.execute(
        text(
            """
            SELECT c.relname FROM pg_class AS c
              JOIN pg_namespace AS n ON n.oid = c.relnamespace
             WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
               AND n.nspname NOT LIKE 'pg\\_toast%'
               AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
               AND has_any_column_privilege(c.oid, 'SELECT')
            """
        )
    )
    return set(readable.scalars())


async def executable_functions(analyst: AsyncConnection) -> dict[str, int]:
    """Each function the role may run (name(argument types)) and its number of arguments."""
    executable = await analyst.execute(
        text(
            """
            SELECT p.oid::regprocedure::text, p.pronargs FROM pg_proc AS p
              JOIN pg_namespace AS n ON n.oid = p.pronamespace
             WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
               AND has_function_privilege(p.oid, 'EXECUTE')
            """
        )
    )
    return {signature: int(arguments) for signature, arguments in executable}


async def test_every_relation_and_function_the_role_reads_holds_no_id_and_no_rare_text(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    relations = await readable_relations(analyst)
    assert relations == VIEWS
    functions = await executable_functions(analyst)
    assert set(functions) == FUNCTIONS
    seen = 0
    for relation in sorted(relations):
        rows = list(await analyst.execute(text(f"SELECT * FROM {relation}")))
        assert_clean(relation, rows, seeded)
        seen += len(rows)
    for signature, arguments in sorted(functions.items()):
        name = signature.split("(")[0]
        rows = list(
            await analyst.execute(text(f"SELECT * FROM {name}({', '.join(['NULL'] * arguments)})"))
        )
        assert_clean(signature, rows, seeded)
        seen += len(rows)
    assert seen > 50  # the views are not simply empty
    consultations = list(await analyst.execute(text("SELECT * FROM analytics_consultations")))
    assert len(consultations) == 12


async def test_free_text_shows_only_for_k_consultations_or_more(analyst: AsyncConnection) -> None:
    async def values(view: str, column: str) -> dict[str, int]:
        rows = await analyst.execute(text(f"SELECT {column}, consultations FROM {view}"))
        return {str(value): int(count) for value, count in rows}

    assert (await analyst.execute(text("SELECT * FROM analytics_suppression"))).scalar() == K
    assert await values("analytics_complaint_frequencies", "chief_complaint") == {
        "common knee ache": 6
    }
    assert await values("analytics_body_part_frequencies", "body_part") == {"knee": 7}
    assert await values("analytics_symptom_frequencies", "symptom") == {"swelling": K}
    assert await values("analytics_red_flag_frequencies", "red_flag") == {"cannot bear weight": K}
    assert await values("analytics_symptom_duration_frequencies", "symptom_duration") == {
        "three days": K
    }
    red_flags = await analyst.execute(
        text("SELECT month, consultations, with_red_flags FROM analytics_monthly_red_flags")
    )
    assert [tuple(row) for row in red_flags] == [(MONTH, 12, K)]


async def test_the_monthly_counts_suppress_the_same_way_over_any_months(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    """Every month function over all time and over windows of months (the only windows
    revision 1004 takes): no rare value, no count below K, the same values as all time."""
    functions = sorted(signature.split("(")[0] for signature in MONTH_FUNCTIONS)
    before, after = (MONTH - timedelta(days=1)).replace(day=1), next_month(MONTH)
    windows: list[tuple[date | None, date | None]] = [(None, None), (MONTH, after)]
    windows += [(before, MONTH), (MONTH, None), (None, MONTH), (None, after), (before, after)]
    found: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for function in functions:
        for since, until in windows:
            rows = list(
                await analyst.execute(
                    text(f"SELECT * FROM {function}(CAST(:s AS date), CAST(:u AS date))"),
                    {"s": since, "u": until},
                )
            )
            assert_clean(f"{function} {since} {until}", rows, seeded)
            if function == "analytics_month_values_v1":
                assert all(count >= K for _, _, _, count in rows), rows
                for kind, _, value, _ in rows:
                    found[kind].add(value)
    assert found == {
        "chief_complaint": {"common knee ache"},
        "body_part": {"knee"},
        "symptom": {"swelling"},
        "red_flag": {"cannot bear weight"},
        "symptom_duration": {"three days"},
    }


async def test_every_report_runs_as_the_role_and_shows_nothing_hidden(seeded: Seeded) -> None:
    """The reports are functions run as the owner: the analyst gets what the owner gets,
    all time and over windows, and no id or rare value in any cell."""
    windows = [(None, None), (MONTH, next_month(MONTH)), (MONTH, None)]
    owner = create_engine(seeded.url, pooled=False)
    analyst = create_engine(seeded.login_url, pooled=False)
    try:
        for name in REPORTS:
            for since, until in windows:
                mine = await run_report(analyst, name, since=since, until=until, today=TODAY)
                theirs = await run_report(owner, name, since=since, until=until, today=TODAY)
                assert mine.render("json") == theirs.render("json"), name
                assert_clean(name, mine.rows, seeded)
                if mine.periods is not None:
                    assert_clean(name, mine.periods.rows, seeded)
                if name in MONTHLY_REPORTS:
                    assert mine.rows, name  # the month is published: the probe works
        overview = await run_report(analyst, "overview")
        assert overview.rows[0][0] == len(seeded.session_ids)
    finally:
        await owner.dispose()
        await analyst.dispose()


@pytest.mark.parametrize(
    "relation",
    [
        "sessions",
        "messages",
        "summaries",
        "consultation_states",
        "consultation_state_history",
        "user_profiles",
        "ctxstore_pseudonym_key",
        "ctxstore_analytics_settings",
        "ctxstore_roles",
    ],
)
async def test_the_role_reads_no_table_and_not_the_key(
    analyst: AsyncConnection, relation: str
) -> None:
    with pytest.raises(DBAPIError, match="permission denied"):
        await analyst.execute(text(f"SELECT * FROM {relation} LIMIT 1"))


async def test_no_predicate_of_the_caller_sees_a_hidden_row(analyst: AsyncConnection) -> None:
    """The views are security barriers: a predicate that fails on a rare value (here by a
    cast error, whose message would quote it) only ever sees the rows the view shows."""
    leaky = "CASE WHEN {c} LIKE '%zq%' THEN {c}::int > 0 ELSE true END"
    for view, column in (
        ("analytics_monthly_values", "value"),
        ("analytics_complaint_frequencies", "chief_complaint"),
        ("analytics_body_part_frequencies", "body_part"),
        ("analytics_symptom_frequencies", "symptom"),
        ("analytics_red_flag_frequencies", "red_flag"),
        ("analytics_symptom_duration_frequencies", "symptom_duration"),
    ):
        where = leaky.format(c=column)
        rows = list(await analyst.execute(text(f"SELECT {column} FROM {view} WHERE {where}")))
        assert rows and all(RARE not in row[0] for row in rows)


async def test_the_role_can_create_nothing_to_leak_through(analyst: AsyncConnection) -> None:
    for ddl in (
        "CREATE FUNCTION pg_temp.leak(text) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
        "CREATE TEMPORARY TABLE scratch (x int)",
        "CREATE TABLE public.scratch (x int)",
    ):
        with pytest.raises(DBAPIError, match="permission denied"):
            await analyst.execute(text(ddl))
        await analyst.rollback()


async def test_the_planner_statistics_of_the_tables_stay_hidden(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    engine = create_engine(seeded.url, pooled=False)
    try:
        async with engine.connect() as conn:
            await (await conn.execution_options(isolation_level="AUTOCOMMIT")).execute(
                text("ANALYZE")
            )
    finally:
        await engine.dispose()
    # Of no table at all: the month cells and the 1.0 day cells included.
    visible = await analyst.execute(
        text("SELECT DISTINCT tablename FROM pg_stats WHERE schemaname = 'public'")
    )
    assert list(visible.scalars()) == []
    owner = create_engine(seeded.url, pooled=False)
    try:
        async with owner.connect() as conn:
            analyzed = await conn.execute(
                text(
                    "SELECT count(DISTINCT tablename) FROM pg_stats WHERE schemaname = 'public' "
                    "AND tablename IN ('sessions', 'analytics_month_cells')"
                )
            )
            assert analyzed.scalar() == 2  # there are statistics to hide
    finally:
        await owner.dispose()


async def test_the_pseudonym_is_hmac_sha256_of_the_session_id(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    engine = create_engine(seeded.url, pooled=False)
    try:
        async with engine.connect() as conn:
            inner, outer = (
                await conn.execute(text("SELECT inner_pad, outer_pad FROM ctxstore_pseudonym_key"))
            ).one()
    finally:
        await engine.dispose()
    key = bytes(byte ^ 0x36 for byte in inner)  # the key, zero-padded to 64 bytes
    assert bytes(byte ^ 0x5C for byte in key) == bytes(outer)
    assert key[32:] == bytes(32) and len(set(key[:32])) > 8  # 32 random bytes
    expected = {
        hmac.new(key, session_id.encode(), hashlib.sha256).hexdigest()
        for session_id in seeded.session_ids
    }
    shown = set(
        (await analyst.execute(text("SELECT consultation FROM analytics_consultations"))).scalars()
    )
    assert shown == expected
    history = await analyst.execute(
        text("SELECT DISTINCT consultation FROM analytics_stage_history")
    )
    assert set(history.scalars()) == expected
