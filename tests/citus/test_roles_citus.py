"""The database's roles on every node of the cluster, logins in them, and the analytics
reports, on the distributed database."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.analytics import REPORTS
from ctxstore.db.roles import RoleNames
from tests.citus.cluster import CitusCluster
from tests.citus.conftest import ctxstore, query
from tests.conformance.contract import KNEE_STATE, turn


def plain(url: URL) -> str:
    return url.render_as_string(hide_password=False)


async def recorded_roles(url: URL) -> RoleNames:
    rows = await query(url, "SELECT kind, role_name FROM ctxstore_roles")
    return RoleNames(**{str(kind): str(name) for kind, name in rows})


async def on_node(url: URL, port: int, sql: str, *args: object) -> list[object]:
    return [tuple(row) for row in await query(url.set(port=port), sql, *args)]


@pytest.fixture
async def logins(citus_cluster: CitusCluster, database_url: URL) -> AsyncIterator[dict[str, URL]]:
    """A LOGIN with a password in the app role and one in the analytics role, made on the
    coordinator (Citus creates them on the workers); dropped after."""
    roles = await recorded_roles(database_url)
    suffix = uuid.uuid4().hex[:8]
    made: dict[str, URL] = {}
    for kind, role in (("app", roles.app), ("analytics", roles.analytics)):
        name = f"ctxstore_test_{kind}_{suffix}"
        await query(database_url, f"CREATE ROLE {name} LOGIN PASSWORD 'secret' IN ROLE {role}")
        made[kind] = database_url.set(username=name, password="secret")
    try:
        yield made
    finally:
        for login in made.values():
            await query(database_url, f"DROP ROLE {login.username}")


async def test_the_roles_are_on_every_node(citus_cluster: CitusCluster, database_url: URL) -> None:
    roles = await recorded_roles(database_url)
    facts = "SELECT rolname, rolcanlogin FROM pg_roles WHERE rolname = ANY($1) ORDER BY 1"
    names = list(roles.all())
    everywhere = sorted(names)
    for port in citus_cluster.ports:
        found = await on_node(database_url, port, facts, names)
        assert [name for name, _ in found] == everywhere, port  # type: ignore[misc]
        # The owner logs in on the workers only: Citus reaches the shards in its name
        # inside SECURITY DEFINER functions.  Clients connect to the coordinator.
        may_log_in = {name for name, login in found if login}  # type: ignore[misc]
        expected = set() if port == citus_cluster.coordinator_port else {roles.owner}
        assert may_log_in == expected, port
    # A worker where the owner lost its LOGIN (re-created by Citus with the coordinator's
    # attributes, as on a worker added later) gets it back from `db distribute`.
    worker = citus_cluster.worker_ports[0]
    await on_node(
        database_url,
        worker,
        "DO $$ BEGIN SET LOCAL citus.enable_alter_role_propagation TO off; "
        f"ALTER ROLE {roles.owner} NOLOGIN; END $$",
    )
    assert "nothing to do" in ctxstore("db", "distribute", "--database-url", plain(database_url))
    assert await on_node(database_url, worker, facts, [roles.owner]) == [(roles.owner, True)]


async def test_an_app_login_runs_whole_turns_and_its_commands(logins: dict[str, URL]) -> None:
    app = logins["app"]
    async with PostgresStorage.from_url(app) as storage:
        await storage.save("a1", turn(1), user_id="u-app")
        await storage.append("a1", [Message(role="user", content="又一轮")])
        await storage.save_state("a1", KNEE_STATE)
        await storage.save_summary("a1", "knee pain, two weeks", covers_until=0)
        await storage.save_profile("u-app", {"age": 41})
        assert [m.content for m in await storage.load("a1")][-1] == "又一轮"
        state = await storage.load_state("a1")
        assert state is not None
        summary = await storage.load_summary("a1")
        assert summary is not None and summary.text == "knee pain, two weeks"
    url = plain(app)
    assert "3" in ctxstore("seed-sample", "--sessions", "3", "--database-url", url)
    ctxstore("purge-expired", "--database-url", url)
    ctxstore("upgrade-data", "--database-url", url)
    master = f"m:{base64.b64encode(os.urandom(32)).decode()}"
    ctxstore("rotate-keys", "--database-url", url, env={"CTXSTORE_MASTER_KEYS": master})
    assert "erased user 'u-app'" in ctxstore("erase-user", "u-app", "--database-url", url)


async def published_afresh(database_url: URL) -> str:
    """``analytics refresh`` as the owner (conftest empties the published months with the
    sessions before each test)."""
    refreshed = ctxstore("analytics", "refresh", "--database-url", plain(database_url))
    assert refreshed.startswith("published "), refreshed
    return refreshed


async def test_every_report_runs_on_the_cluster(database_url: URL) -> None:
    """Windowed and all time, through the SECURITY DEFINER report functions: the daily
    ones over the shards (SQLSTATE 08006 while the owner could not log in on the
    workers), the monthly ones over the months published on the coordinator."""
    url = plain(database_url)
    ctxstore("seed-sample", "--sessions", "30", "--database-url", url)
    await published_afresh(database_url)
    for report in REPORTS:
        windowed = ctxstore(
            "analytics", report, "--since", "2020-01", "--format", "json",
            "--database-url", url,
        )  # fmt: skip
        all_time = ctxstore("analytics", report, "--format", "json", "--database-url", url)
        assert json.loads(windowed) == json.loads(all_time), report


async def test_an_analytics_login_runs_every_report(
    database_url: URL, logins: dict[str, URL]
) -> None:
    """The de-identified reports as an analyst runs them: a login in the analytics role,
    which reads the views and nothing under them."""
    owner, analyst = plain(database_url), plain(logins["analytics"])
    ctxstore("seed-sample", "--sessions", "12", "--database-url", owner)
    await published_afresh(database_url)
    for report in REPORTS:
        for window in ((), ("--since", "2020-01")):
            arguments = ("analytics", report, *window, "--format", "json", "--database-url")
            assert json.loads(ctxstore(*arguments, analyst)) == json.loads(
                ctxstore(*arguments, owner)
            ), (report, window)


# The monthly test's two months: long published (the CLI refreshes on the real date).
SHOWN_MONTH = datetime(2020, 3, 2, 8, tzinfo=UTC)
WITHHELD_MONTH = datetime(2020, 4, 6, 8, tzinfo=UTC)


def month_state(tag: str, index: int, *, knee: bool, flagged: bool) -> dict[str, object]:
    return {
        **KNEE_STATE,
        "chief_complaint": f"complaint {index % 5} {tag}",
        "body_parts": ["knee"] if knee else [],
        "red_flags": [f"fever {tag}"] if flagged else [],
    }


async def consultations_in_two_months(database_url: URL, tag: str) -> None:
    """10 consultations in March 2020: "knee" in 5 (5 have it, 5 don't: shown), red flags
    in the other 5 (shown); 10 in April 2020: "knee" and red flags in 3 (fewer than k:
    withheld).  In each month 5 complaints, each in 2 (all withheld)."""
    async with PostgresStorage.from_url(database_url) as storage:
        for month, shown in ((SHOWN_MONTH, True), (WITHHELD_MONTH, False)):
            for index in range(10):
                session_id = f"month-{tag}-{month:%m}-{index}"
                start = month + timedelta(days=index, minutes=index)
                messages = [Message(role="user", content="hi", timestamp=start)]
                await storage.save(session_id, messages, user_id=f"u-{tag}")
                knee = index < (5 if shown else 3)
                flagged = index >= 5 if shown else index < 3
                state = month_state(tag, index, knee=knee, flagged=flagged)
                await storage.save_state(session_id, state)


async def test_an_analyst_gets_monthly_counts_on_the_cluster(
    database_url: URL, logins: dict[str, URL]
) -> None:
    """Revision 1004 on the cluster: the owner's refresh publishes each month on the
    coordinator; a value (and a month's red-flag count) shows when k of the month's
    consultations have it and k don't, with what each month withholds; a window not on
    the first of a month is refused."""
    tag = uuid.uuid4().hex[:6]
    await consultations_in_two_months(database_url, tag)
    refreshed = await published_afresh(database_url)
    assert refreshed.startswith("published 2 months (20 consultations"), refreshed
    analyst = plain(logins["analytics"])

    def read(report: str) -> dict[str, Any]:
        window = ("--since", "2020-03", "--until", "2020-05", "--format", "json")
        return json.loads(ctxstore("analytics", report, *window, "--database-url", analyst))

    body_parts, complaints, red_flags = map(read, ("body-parts", "complaints", "red-flags"))
    assert body_parts["rows"] == [
        {"month": "2020-03", "body_part": "knee", "consultations": 5, "share": 0.5}
    ]
    # April's one withheld value held by 3: both counts are themselves withheld (1 to k-1)
    assert body_parts["periods"] == [
        {"month": "2020-03", "consultations": 10, "shown_values": 1, "withheld_values": 0,
         "withheld_consultations": 0},
        {"month": "2020-04", "consultations": 10, "shown_values": 0, "withheld_values": None,
         "withheld_consultations": None},
    ]  # fmt: skip
    assert complaints["rows"] == []
    withheld = [(m["withheld_values"], m["withheld_consultations"]) for m in complaints["periods"]]
    assert withheld == [(5, 10), (5, 10)]
    assert red_flags["rows"] == [
        {"month": "2020-03", "consultations": 10, "with_red_flags": 5, "share": 0.5},
        {"month": "2020-04", "consultations": 10, "with_red_flags": None, "share": None},
    ]
    refused = "SELECT * FROM analytics_month_values_v1($1, NULL)"
    with pytest.raises(asyncpg.InvalidParameterValueError, match="first day of a month") as error:
        await query(logins["analytics"], refused, SHOWN_MONTH.date())
    assert error.value.sqlstate == "22023"


@pytest.fixture
async def scratch_distributed(citus_cluster: CitusCluster) -> AsyncIterator[URL]:
    """A database of its own, migrated and distributed; dropped after."""
    url = await citus_cluster.create_database(f"ctxstore_revisions_{os.getpid()}")
    try:
        await asyncio.to_thread(ctxstore, "db", "upgrade", "--database-url", plain(url))
        await asyncio.to_thread(ctxstore, "db", "distribute", "--database-url", plain(url))
        yield url
    finally:
        await citus_cluster.drop_database(url.database or "")


_KINDS = """
SELECT logicalrelid::text, partmethod, repmodel FROM pg_dist_partition
 WHERE logicalrelid::text NOT LIKE 'pg_%' ORDER BY 1"""


async def test_every_revision_runs_both_ways_on_a_distributed_database(
    scratch_distributed: URL,
) -> None:
    url, cli = scratch_distributed, plain(scratch_distributed)
    kinds = await query(url, _KINDS)
    async with PostgresStorage.from_url(url) as storage:
        for index in range(8):
            await storage.save(f"s{index}", turn(index), user_id=f"u{index % 3}")
            await storage.save_state(f"s{index}", KNEE_STATE)
        await storage.save_profile("u1", {"age": 50})
    [(messages,)] = await query(url, "SELECT count(*) FROM messages")
    assert messages == sum(len(turn(index)) for index in range(8))
    async with PostgresStorage.from_url(url) as storage:
        await storage.append("s1", [Message(role="user", content="after the round trip")])
        await storage.save_state("s1", KNEE_STATE)
        assert (await storage.load("s1"))[-1].content == "after the round trip"
    ctxstore("analytics", "complaints", "--since", "2020-01-01", "--database-url", cli)
    # The baseline is the lowest revision: below it nothing is left to keep distributed;
    # upgraded, it is distributed again.
    ctxstore("db", "downgrade", "base", "--database-url", cli)
    ctxstore("db", "upgrade", "--database-url", cli)
    ctxstore("db", "distribute", "--database-url", cli)
    assert await query(url, _KINDS) == kinds
