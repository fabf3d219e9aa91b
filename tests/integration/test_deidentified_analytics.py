"""Issue 13, item 1: as a real login in the analytics role, over seeded data, no row of
anything the role can read holds a user id, a session id or a free-text value fewer than
k consultations share; the role reads neither the tables nor the pseudonym key.

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
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from ctxstore import Message, PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import REPORTS, run_report
from ctxstore.db import migrations
from ctxstore.db.admin import quote_identifier
from ctxstore.db.engine import create_engine
from ctxstore.db.roles import PREFIX_ENV, RoleNames, recorded_role_names
from tests.pg_harness import PgTestServer

K = 5
START = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
# Every value fewer than K consultations share carries this marker, and no other does: no
# cell the analytics role reads may contain it.
RARE = "zq"

# What the analytics role may read: exactly these views, the frequency function, and the
# reports (SECURITY DEFINER functions, revision 0012).
VIEWS = {
    "analytics_consultations",
    "analytics_stage_history",
    "analytics_stage_reached",
    "analytics_stage_changes",
    "analytics_stage_funnel",
    "analytics_stage_transitions",
    "analytics_red_flags_daily",
    "analytics_red_flags_weekly",
    "analytics_complaint_frequencies",
    "analytics_body_part_frequencies",
    "analytics_symptom_frequencies",
    "analytics_red_flag_frequencies",
    "analytics_symptom_duration_frequencies",
    "analytics_suppression",
}
WINDOW = "timestamp with time zone,timestamp with time zone"
# The free-text counts: the cells the owner's refresh stored (revision 0018).
FUNCTION = f"analytics_frequencies_v3(text,{WINDOW})"
FUNCTIONS = {
    FUNCTION,
    *(f"analytics_{report}_v2({WINDOW})" for report in ("funnel", "transitions")),
    # small groups suppressed (revision 0019)
    f"analytics_overview_v3({WINDOW})",
    f"analytics_durations_v3({WINDOW})",
    f"analytics_red_flags_v3(text,{WINDOW})",
    "analytics_min_group_size_v1()",
}
KINDS = ("chief_complaint", "body_part", "symptom", "red_flag", "symptom_duration")


def consultation(i: int) -> dict[str, Any]:
    """Consultation i's final state: common values in at least K consultations, rare ones
    (marked) in fewer -- including K - 1, the largest count still hidden."""
    return {
        "stage": ("collecting_details", "assessing", "advising")[i % 3],
        "chief_complaint": "common knee ache"
        if i < 6
        else ("pair complaint zq" if i < 8 else f"rare complaint {i} zq"),
        # knee: 7 of 12, so 5 without (revision 0016 hides a value fewer than k lack)
        "body_parts": (["knee"] if i < 7 else []) + (["rare elbow zq"] if i < K - 1 else []),
        "symptoms": (["swelling"] if i < K else []) + (["rare tingling zq"] if i == 11 else []),
        "red_flags": (["cannot bear weight"] if 3 <= i < 3 + K else [])
        + (["rare fever zq"] if i in (0, 9) else []),
        "duration": "three days" if i < K else ("rare since childhood zq" if i == 10 else None),
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
    # one UTC day: revision 0016 counts free text per day, a day's cell shown for k or
    # more consultations with the value and k or more without
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
        await refresh_aggregates(storage, show=False)
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


@pytest.fixture(scope="module")
def seeded(pg_server: PgTestServer) -> Iterator[Seeded]:
    name = pg_server.new_name("deid")
    url = pg_server.create(name)
    login = None
    try:
        migrations.upgrade(url)
        session_ids, user_ids, starts = asyncio.run(seed(url))
        roles = asyncio.run(read_roles(url))
        login, password = asyncio.run(create_login(url, roles.analytics))
        yield Seeded(
            url,
            url.set(username=login, password=password),
            roles,
            session_ids,
            user_ids,
            starts,
        )
    finally:
        pg_server.drop(name)
        if login is not None:
            asyncio.run(drop_login(pg_server.url, login))


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


async def test_every_relation_the_role_reads_holds_no_id_and_no_rare_text(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
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
    relations = set(readable.scalars())
    assert relations == VIEWS
    seen = 0
    for relation in sorted(relations):
        rows = list(await analyst.execute(text(f"SELECT * FROM {relation}")))
        assert_clean(relation, rows, seeded)
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


async def test_the_windowed_counts_suppress_the_same_way(
    seeded: Seeded, analyst: AsyncConnection
) -> None:
    executable = await analyst.execute(
        text(
            """
            SELECT p.oid::regprocedure::text FROM pg_proc AS p
              JOIN pg_namespace AS n ON n.oid = p.pronamespace
             WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
               AND has_function_privilege(p.oid, 'EXECUTE')
            """
        )
    )
    assert set(executable.scalars()) == FUNCTIONS
    # All time and windows of whole days (revision 0016 refuses any other).
    day = START.replace(hour=0)
    windows: list[tuple[datetime | None, datetime | None]] = [(None, None)]
    windows += [(day + timedelta(days=n), day + timedelta(days=n + 1)) for n in range(-1, 2)]
    windows += [(day, None), (None, day), (None, day + timedelta(days=1))]
    found: dict[str, set[str]] = {kind: set() for kind in KINDS}
    for kind in KINDS:
        for since, until in windows:
            rows = list(
                await analyst.execute(
                    text("SELECT * FROM analytics_frequencies_v3(:k, :s, :u)"),
                    {"k": kind, "s": since, "u": until},
                )
            )
            assert_clean(f"{kind} {since} {until}", rows, seeded)
            assert all(count >= K for _, count in rows), rows
            found[kind] |= {value for value, _ in rows}
    assert found["chief_complaint"] == {"common knee ache"}
    assert found["symptom"] == {"swelling"}
    with pytest.raises(DBAPIError, match="unknown kind"):
        await analyst.execute(text("SELECT * FROM analytics_frequencies_v3('document')"))


async def test_every_report_runs_as_the_role_and_shows_nothing_hidden(seeded: Seeded) -> None:
    """The reports are functions run as the owner: the analyst gets what the owner gets,
    all time and over windows, and no id or rare value in any cell."""
    day = START.replace(hour=0)
    windows = [(None, None), (day, day + timedelta(days=1)), (day, None)]
    owner = create_engine(seeded.url, pooled=False)
    analyst = create_engine(seeded.login_url, pooled=False)
    try:
        for name in REPORTS:
            for since, until in windows:
                mine = await run_report(analyst, name, since=since, until=until)
                theirs = await run_report(owner, name, since=since, until=until)
                assert (mine.columns, mine.rows) == (theirs.columns, theirs.rows), name
                assert_clean(name, mine.rows, seeded)
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
    visible = await analyst.execute(
        text(
            "SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename IN "
            "('sessions', 'consultation_states', 'consultation_state_history', 'messages')"
        )
    )
    assert visible.scalar() == 0


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
