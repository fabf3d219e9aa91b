"""Where every table of the distributed database lives, against the placement distribute.py
declares (docs/citus.md): a table that a revision adds without placing it fails here."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.db.distribute import COORDINATOR_TABLES, DISTRIBUTION_COLUMN, REFERENCE_TABLES
from tests.citus.cluster import CitusCluster
from tests.citus.conftest import ctxstore, query
from tests.conformance.contract import KNEE_STATE

# Every table of the schema (Citus's shards on the coordinator left out), its placement
# read from pg_dist_partition, and whether it has a session_id column.
_PLACEMENTS = """
SELECT c.relname,
       CASE WHEN p.logicalrelid IS NULL THEN 'coordinator'
            WHEN p.partmethod = 'h' AND p.colocationid = s.colocationid THEN 'distributed'
            WHEN p.partmethod = 'h' THEN 'distributed apart from sessions'
            WHEN p.repmodel = 't' THEN 'reference'
            ELSE 'a Citus local table' END AS placement,
       EXISTS (SELECT FROM pg_attribute AS a WHERE a.attrelid = c.oid
                  AND a.attname = $1 AND NOT a.attisdropped) AS by_session
  FROM pg_class AS c
  LEFT JOIN pg_dist_partition AS p ON p.logicalrelid = c.oid
  CROSS JOIN (SELECT colocationid FROM pg_dist_partition
               WHERE logicalrelid = 'sessions'::regclass) AS s
 WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'sessions'::regclass)
   AND c.relkind IN ('r', 'p') AND NOT c.relispartition
   AND NOT relation_is_a_known_shard(c.oid)
 ORDER BY 1"""


def declared(table: str, by_session: bool) -> str:
    """The placement distribute.py gives ``table`` (its lists in the order it reads them)."""
    if table in COORDINATOR_TABLES:
        return "coordinator"
    if table in REFERENCE_TABLES:
        return "reference"
    return "distributed" if by_session else "in no list"


async def test_every_table_is_placed_as_declared(
    citus_cluster: CitusCluster, database_url: URL
) -> None:
    rows = await query(database_url, _PLACEMENTS, DISTRIBUTION_COLUMN)
    found = {row["relname"]: row["placement"] for row in rows}
    expected = {row["relname"]: declared(row["relname"], row["by_session"]) for row in rows}
    misplaced = [
        f"{table}: {found[table]} on the cluster; distribute.py: {expected[table]}"
        for table in sorted(found)
        if found[table] != expected[table]
    ]
    stale = sorted({*REFERENCE_TABLES, *COORDINATOR_TABLES} - set(found))
    misplaced += [f"{table}: not in the schema; distribute.py: declared" for table in stale]
    assert misplaced == [], "\n".join(misplaced)
    # Coordinator-only: no worker has a copy.
    for port in citus_cluster.worker_ports:
        copies = await query(
            database_url.set(port=port),
            "SELECT relname FROM pg_class WHERE relname = ANY($1)",
            list(COORDINATOR_TABLES),
        )
        assert copies == [], (port, copies)


async def test_published_months_are_reported_from_the_coordinator(database_url: URL) -> None:
    """``analytics refresh`` publishes the months on the coordinator, and the report reads
    them there: 10 consultations of June 2021, "knee" in 5 (k = 5 have it, 5 don't)."""
    first = datetime(2021, 6, 1, 9, tzinfo=UTC)
    tag = uuid.uuid4().hex[:6]
    async with PostgresStorage.from_url(database_url) as storage:
        for index in range(10):
            session_id = f"placed-{tag}-{index}"
            start = first + timedelta(days=index)
            await storage.save(session_id, [Message(role="user", content="hi", timestamp=start)])
            parts = ["knee"] if index < 5 else []
            await storage.save_state(session_id, {**KNEE_STATE, "body_parts": parts})
    url = database_url.render_as_string(hide_password=False)
    assert ctxstore("analytics", "refresh", "--database-url", url).startswith("published ")
    cells = await query(
        database_url, "SELECT month, value, consultations FROM analytics_month_cells"
    )
    assert [tuple(cell) for cell in cells] == [(first.date(), "knee", 5)]
    window = ("--since", "2021-06", "--until", "2021-07", "--format", "json")
    shown = json.loads(ctxstore("analytics", "body-parts", *window, "--database-url", url))
    assert shown["rows"] == [
        {"month": "2021-06", "body_part": "knee", "consultations": 5, "share": 0.5}
    ]
