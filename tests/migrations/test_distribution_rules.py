"""The schema stays distributable by session (docs/scaling.md), read from the catalog of a
database migrated to head: a future revision that breaks a rule fails here, on plain
PostgreSQL, before anyone tries it on Citus."""

from __future__ import annotations

import re

import asyncpg
from sqlalchemy import URL

from ctxstore.db.distribute import DISTRIBUTION_COLUMN, REFERENCE_TABLES

# Every unique key (primary keys, unique constraints and unique indexes) with its columns.
_KEYS = """
SELECT c.relname AS table_name, i.relname AS key_name, x.indisprimary AS is_primary,
       array_agg(a.attname ORDER BY k.ordinality) AS columns
  FROM pg_index AS x
  JOIN pg_class AS c ON c.oid = x.indrelid
  JOIN pg_class AS i ON i.oid = x.indexrelid
  CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, ordinality)
  LEFT JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum = k.attnum
 WHERE x.indisunique AND c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
 GROUP BY 1, 2, 3"""

_FOREIGN_KEYS = """
SELECT k.conname, t.relname AS source, f.relname AS target,
       ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY AS n(attnum, i)
               JOIN pg_attribute AS a ON a.attrelid = k.conrelid AND a.attnum = n.attnum
              ORDER BY n.i) AS columns,
       ARRAY(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY AS n(attnum, i)
               JOIN pg_attribute AS a ON a.attrelid = k.confrelid AND a.attnum = n.attnum
              ORDER BY n.i) AS target_columns
  FROM pg_constraint AS k
  JOIN pg_class AS t ON t.oid = k.conrelid JOIN pg_class AS f ON f.oid = k.confrelid
 WHERE k.contype = 'f' AND t.relnamespace = 'public'::regnamespace"""

_SESSION_TABLES = """
SELECT c.relname FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid
 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
   AND a.attname = $1 AND NOT a.attisdropped"""


async def connect(url: URL) -> asyncpg.Connection:
    return await asyncpg.connect(
        host=url.host or str(url.query["host"]),  # a Unix socket folder: the embedded server
        port=url.port, user=url.username, password=url.password, database=url.database,
    )  # fmt: skip


def _reference_or_placement(name: str) -> str | None:
    """The reference table ``name`` is, or is a Citus placement of (None: neither)."""
    base = re.sub(r"_\d+$", "", name)
    return base if name in REFERENCE_TABLES or base in REFERENCE_TABLES else None


async def distribution_problems(url: URL) -> tuple[set[str], list[str]]:
    """The session tables, and every way the schema breaks the rules of distribution."""
    connection = await connect(url)
    try:
        named = {row[0] for row in await connection.fetch(_SESSION_TABLES, DISTRIBUTION_COLUMN)}
        # On every node, not sharded by session (legal_holds names sessions), nor their
        # placements on a Citus coordinator (legal_holds_102052).
        sessions = {name for name in named if _reference_or_placement(name) is None}
        keys = await connection.fetch(_KEYS)
        foreign = await connection.fetch(_FOREIGN_KEYS)
    finally:
        await connection.close()
    problems = []
    keyed = {row["table_name"] for row in keys if row["is_primary"]}
    for table in sorted(sessions - keyed):
        problems.append(f"{table} has no primary key")
    for row in keys:
        if row["table_name"] in sessions and DISTRIBUTION_COLUMN not in row["columns"]:
            problems.append(f"key {row['key_name']} of {row['table_name']} lacks session_id")
    for row in foreign:
        source, target, name = row["source"], row["target"], row["conname"]
        if source in sessions and target in sessions:
            pairs = dict(zip(row["columns"], row["target_columns"], strict=True))
            if pairs.get(DISTRIBUTION_COLUMN) != DISTRIBUTION_COLUMN:
                problems.append(f"{name}: {source} -> {target} not on session_id")
        elif source in sessions and target not in REFERENCE_TABLES:
            problems.append(f"{name}: {source} -> {target}, which is no reference table")
        elif source not in sessions and target in sessions:
            problems.append(f"{name}: {source} (not sharded) -> session table {target}")
    return sessions, problems


async def test_every_key_of_a_session_table_includes_session_id(database_url: URL) -> None:
    sessions, problems = await distribution_problems(database_url)
    assert {"sessions", "messages", "summaries", "consultation_states"} <= sessions
    assert "consultation_state_history" in sessions
    assert problems == []


async def test_the_rules_catch_tables_that_break_them(database_url: URL) -> None:
    connection = await connect(database_url)
    try:
        await connection.execute(
            """
            CREATE TABLE session_notes (
                session_id text NOT NULL REFERENCES sessions ON DELETE CASCADE,
                note_id int UNIQUE, body text);
            CREATE TABLE audit (id int PRIMARY KEY, about text REFERENCES sessions);
            """
        )
    finally:
        await connection.close()
    _, problems = await distribution_problems(database_url)
    assert "session_notes has no primary key" in problems
    assert "key session_notes_note_id_key of session_notes lacks session_id" in problems
    assert "audit_about_fkey: audit (not sharded) -> session table sessions" in problems
