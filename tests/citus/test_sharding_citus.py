"""How the distributed database runs ctxstore: where the tables live, where each session
write and read goes (the remote commands Citus logs, EXPLAIN), and what a later revision
or an existing database gets from ``ctxstore db distribute``."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.db.distribute import REFERENCE_TABLES
from ctxstore.db.engine import EngineSettings
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import StorageError
from ctxstore.models import MESSAGE_FORMAT
from ctxstore.storage.postgres import sql
from ctxstore.tokens import TokenCounter
from tests.citus.cluster import CitusCluster
from tests.citus.conftest import REPO, ctxstore, new_distributed_database, query
from tests.conformance.contract import KNEE_STATE, turn
from tests.migrations.test_distribution_rules import distribution_problems

COUNTER_LABEL = TokenCounter().count_label
UNTIMED_LABEL = TokenCounter().untimed_label
SESSION_TABLES = {
    "sessions", "messages", "summaries", "consultation_states", "consultation_state_history",
    "applied_session_writes", "summary_jobs", "graph_checkpoints", "graph_channel_values",
    "graph_writes", "contract_chains", "contract_pieces", "contract_entries",
    "contract_responses",
}  # fmt: skip


async def test_session_tables_are_colocated_and_the_rest_replicated(database_url: URL) -> None:
    rows = await query(
        database_url,
        "SELECT logicalrelid::regclass::text, partmethod::text, repmodel::text, colocationid "
        "FROM pg_dist_partition",
    )
    kinds = {row[0]: (row[1], row[2], row[3]) for row in rows}
    groups = {kinds[table][2] for table in SESSION_TABLES}
    assert {kinds[table][0] for table in SESSION_TABLES} == {"h"} and len(groups) == 1
    replicated = {name for name, kind in kinds.items() if kind[:2] == ("n", "t")}
    assert replicated == set(REFERENCE_TABLES)
    # COORDINATOR_TABLES stay on the coordinator, unmanaged (test_placement_citus.py)
    assert set(kinds) == {*SESSION_TABLES, *REFERENCE_TABLES}
    sessions, problems = await distribution_problems(database_url)
    assert sessions == SESSION_TABLES and problems == []


# -- writes: one shard, one worker, a plain commit ------------------------------------------


class RemoteCommands:
    """What Citus sends to the workers for a store's calls (a pool of one connection)."""

    def __init__(self) -> None:
        self.notices: list[tuple[str, str]] = []

    def __call__(self, _connection: Any, message: Any) -> None:
        if message.message.startswith("issuing "):
            self.notices.append((message.message, message.detail or ""))

    def taken(self) -> list[tuple[str, str]]:
        taken, self.notices = self.notices, []
        return taken


@pytest.fixture
async def shard_groups(database_url: URL) -> dict[int, str]:
    """Shard id -> the hash range it covers (colocated shards share it)."""
    rows = await query(database_url, "SELECT shardid, shardminvalue FROM pg_dist_shard")
    return {row[0]: row[1] or "reference" for row in rows}


async def logged_store(
    url: URL, encryption: Encryption | None = None
) -> tuple[PostgresStorage, RemoteCommands]:
    settings = EngineSettings(
        pool_size=1, extra_server_settings={"citus.log_remote_commands": "on"}
    )
    storage = PostgresStorage.from_url(url, settings=settings, encryption=encryption)
    remote = RemoteCommands()

    # Each call's connection gets the listener as it is lent, and loses it when it comes
    # back, so a connection used for something else logs nothing here.
    def watch(connection: Any) -> Callable[[], None]:
        connection.add_log_listener(remote)
        return lambda: connection.remove_log_listener(remote)

    await storage.watch_connections(watch, at_every_checkout=True)
    return storage, remote


SHARD = re.compile(r"\b(?:sessions|messages|summaries|consultation_states|"
                   r"consultation_state_history|data_keys|user_profiles)_(\d+)\b")  # fmt: skip
SERVER = re.compile(r"on server \S+@([\w.]+:\d+)")


def writes(
    storage: PostgresStorage, user: str | None
) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    edited = [Message(role="user", content="edited"), *turn(1)]
    return [
        ("save of a new session", lambda: storage.save("w", turn(0), user_id=user)),
        ("save extending the list", lambda: storage.save("w", [*turn(0), *turn(1)])),
        ("save of an edited list", lambda: storage.save("w", edited)),
        ("append", lambda: storage.append("w", turn(2))),
        ("append at a version", lambda: storage.append("w", turn(3), expected_version=4)),
        (
            "append to a new session",
            lambda: storage.append("n", turn(0), expected_version=0, user_id=user),
        ),
        ("save_summary", lambda: storage.save_summary("w", "a summary", covers_until=1)),
        ("save_state", lambda: storage.save_state("w", KNEE_STATE)),
        (
            "save_state at a version",
            lambda: storage.save_state("w", KNEE_STATE, expected_version=1),
        ),
        ("first save_state", lambda: storage.save_state("n", KNEE_STATE, expected_version=0)),
        ("delete", lambda: storage.delete("n")),
    ]


@pytest.mark.parametrize("sealed", [False, True], ids=["plaintext", "encrypted"])
async def test_every_session_write_runs_on_one_shard_and_commits_once(
    database_url: URL, shard_groups: dict[int, str], sealed: bool
) -> None:
    encryption = Encryption(Keyring({"k": os.urandom(32)})) if sealed else None
    user = "u" if sealed else None
    storage, remote = await logged_store(database_url, encryption)
    async with storage:
        if sealed:  # the user's data key exists (creating it writes every node)
            await storage.save("warm", [], user_id=user)
            remote.taken()
        for name, write in writes(storage, user):
            await write()
            issued = remote.taken()
            assert issued, name
            servers = {match.group(1) for _, detail in issued if (match := SERVER.search(detail))}
            groups = {shard_groups[int(id_)] for text, _ in issued for id_ in SHARD.findall(text)}
            assert len(servers) == 1, (name, issued)
            # a call of a session's SQL function is delegated whole to its worker (one
            # command naming no shard); any other command names the session's shards
            delegated = all("ctxstore_" in text for text, _ in issued) and not groups
            assert delegated or len(groups) == 1, (name, issued)
            assert "reference" not in groups, (name, issued)
            assert not [text for text, _ in issued if "PREPARE TRANSACTION" in text], name
        assert [m.content for m in await storage.load("w")] == [
            "edited",
            *(m.content for i in (1, 2, 3) for m in turn(i)),
        ]


# -- reads: router queries -------------------------------------------------------------------

READS: dict[str, tuple[Any, dict[str, Any]]] = {
    "load": (sql.LOAD_SESSION, {"current": MESSAGE_FORMAT}),
    "version": (sql.SESSION_VERSION, {}),
    "head": (sql.SESSION_HEAD, {}),
    "head, summary, state, profile and first chunk": (
        sql.SESSION_HEAD_AND_DOCUMENTS,
        {"limit": 5, "budget": 100, "encoding": COUNTER_LABEL, "untimed": UNTIMED_LABEL},
    ),
    "window": (sql.NEWEST, {"before": 10, "limit": 5}),
    "window within a budget": (
        sql.NEWEST_WITHIN,
        {
            "before": 10,
            "limit": 5,
            "budget": 100,
            "encoding": COUNTER_LABEL,
            "untimed": UNTIMED_LABEL,
        },
    ),
    "span": (sql.SPAN, {"start": 0, "stop": 2}),
    "token total": (sql.TOKEN_TOTAL, {"after": -1, "encoding": COUNTER_LABEL}),
    "latest summary": (sql.LATEST_SUMMARY, {}),
    "summary at": (sql.SUMMARY_AT, {"summary_version": 1}),
    "state": (sql.CURRENT_STATE, {}),
    "state history": (sql.STATE_HISTORY, {}),
}  # fmt: skip


@pytest.fixture
async def written(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("r", [*turn(0), *turn(1)], user_id="u")
        await storage.save_summary("r", "summary", covers_until=1)
        await storage.save_state("r", KNEE_STATE)
        await storage.save_profile("u", {"age": 30})
        yield storage


@pytest.mark.parametrize("name", READS)
async def test_session_reads_are_router_queries(written: PostgresStorage, name: str) -> None:
    statement, values = READS[name]
    async with written.driver() as driver:
        plan = await driver.fetch("EXPLAIN " + statement.sql, *statement.arguments(
            {"sid": "r", **values}
        ))  # fmt: skip
    lines = [row[0] for row in plan]
    assert "Custom Scan (Citus Adaptive)" in lines[0], lines
    assert any(line.strip() == "Task Count: 1" for line in lines), lines


async def test_the_profile_is_read_from_one_node(written: PostgresStorage) -> None:
    async with written.driver() as driver:
        plan = await driver.fetch("EXPLAIN " + sql.CURRENT_PROFILE.sql, "u")
    text = "\n".join(row[0] for row in plan)
    assert "Task Count: 1" in text and "user_profiles_" in text, text  # a reference table


async def test_a_snapshot_reads_one_worker(written: PostgresStorage, database_url: URL) -> None:
    storage, remote = await logged_store(database_url)
    async with storage:
        snapshot = await storage.snapshot("r")
    assert snapshot.state_version == 1 and snapshot.profile_version == 1
    servers = {m.group(1) for _, detail in remote.taken() if (m := SERVER.search(detail))}
    assert len(servers) == 1


# -- distributing, and revisions after it ------------------------------------------------------


@pytest.fixture
async def scratch_database(citus_cluster: CitusCluster) -> AsyncIterator[URL]:
    """A database of its own on the cluster, migrated but not distributed; dropped after."""
    url = await citus_cluster.create_database(f"ctxstore_scratch_{os.getpid()}")
    try:
        await asyncio.to_thread(migrations.upgrade, url)
        yield url
    finally:
        await citus_cluster.drop_database(url.database or "")


class Traffic:
    """One reader and one writer looping on a store until stopped."""

    def __init__(self, storage: PostgresStorage) -> None:
        self.storage, self.done = storage, asyncio.Event()
        self.reads, self.appended, self.cycles = 0, 0, 0
        self.read_errors: list[Exception] = []
        self.write_errors: list[Exception] = []

    async def read(self) -> None:
        while not self.done.is_set():
            try:
                assert await self.storage.load("s7") == turn(7)
                self.reads += 1
            except Exception as error:
                self.read_errors.append(error)

    async def write(self) -> None:
        while not self.done.is_set():
            try:
                await self.storage.append("live", turn(self.appended))
                self.appended += 1
            except Exception as error:
                self.write_errors.append(error)
            try:
                await self.storage.save("gone", turn(0))
                await self.storage.delete("gone")
                self.cycles += 1
            except Exception as error:
                self.write_errors.append(error)


async def distributed_by_the_command(url: URL) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ctxstore.cli", "db", "distribute", "--database-url",
        url.render_as_string(hide_password=False), cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    out = (await process.communicate())[0].decode()
    assert process.returncode == 0, out
    return out


async def test_an_existing_database_is_distributed_while_it_serves(scratch_database: URL) -> None:
    url = scratch_database
    async with PostgresStorage.from_url(url) as storage:  # its connections predate it all
        for index in range(20):
            await storage.save(f"s{index}", turn(index), user_id=f"u{index % 3}")
            await storage.save_state(f"s{index}", KNEE_STATE)
        await storage.save_profile("u1", {"age": 50})
        traffic = Traffic(storage)
        loops = [asyncio.create_task(traffic.read()), asyncio.create_task(traffic.write())]
        out = await distributed_by_the_command(url)
        traffic.done.set()
        await asyncio.gather(*loops)
        assert "sessions" in out and "data_keys" in out, out
        assert traffic.read_errors == [] and traffic.reads > 0
        assert traffic.appended > 0 and traffic.cycles > 0
        # A write that meets the conversion may fail (Citus refuses a statement of the
        # not yet distributed functions, SQLSTATE 0A000, or the conversion's locks end it):
        # at most one, as a ctxstore error, and it fails whole (the "live" list below holds
        # exactly the appends that succeeded).
        assert len(traffic.write_errors) <= 1, traffic.write_errors
        assert all(isinstance(e, StorageError) for e in traffic.write_errors), traffic.write_errors
        for _ in range(20):  # every pooled connection, from now on
            await storage.save("gone", turn(0))
            await storage.delete("gone")
        live = await storage.load("live")
        assert live == [m for index in range(traffic.appended) for m in turn(index)]
        assert (await storage.snapshot("s4")).state_version == 1
        await storage.delete("s3")
    [(left,)] = await query(url, "SELECT count(*) FROM consultation_state_history")
    assert left == 19  # the delete cascaded on the shard
    rows = await query(url, "SELECT partmethod::text FROM pg_dist_partition")
    assert sorted(row[0] for row in rows) == ["h"] * len(SESSION_TABLES) + ["n"] * len(
        REFERENCE_TABLES
    )
    [(valid,)] = await query(
        url, "SELECT bool_and(convalidated) FROM pg_constraint WHERE contype = 'f'"
    )
    assert valid  # every key back, and checked
    assert "nothing to do" in ctxstore(
        "db", "distribute", "--database-url", url.render_as_string(hide_password=False)
    )


REVISION = '''
"""A later revision on a distributed database: a new session table, made by op.create_table
with keys to sessions and data_keys, and one made by raw SQL.

Revision ID: 9001
Revises: {head}
"""

import sqlalchemy as sa
from alembic import op

revision = "9001"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_notes",
        sa.Column("session_id", sa.Text(), sa.ForeignKey("sessions.session_id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("note_id", sa.Integer(), primary_key=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("key_id", sa.BigInteger(),
                  sa.ForeignKey("data_keys.key_id", deferrable=True, initially="DEFERRED")),
    )
    op.execute("CREATE TABLE session_tags (session_id text NOT NULL, tag text NOT NULL, "
               "PRIMARY KEY (session_id, tag))")


def downgrade() -> None:
    op.drop_table("session_tags")
    op.drop_table("session_notes")
'''


def test_a_later_revision_keeps_new_session_tables_distributed(
    citus_cluster: CitusCluster, tmp_path: Path
) -> None:
    url = new_distributed_database(citus_cluster)
    try:
        scripts = tmp_path / "alembic"
        shutil.copytree(migrations.script_location(), scripts)
        (scripts / "versions" / "9001_session_notes.py").write_text(
            textwrap.dedent(REVISION.format(head=migrations.head_revision()))
        )
        config = migrations.alembic_config(url)
        config.set_main_option("script_location", str(scripts))
        command.upgrade(config, "head")

        async def check() -> None:
            rows = await query(
                url,
                "SELECT logicalrelid::regclass::text, partmethod::text, colocationid "
                "FROM pg_dist_partition WHERE logicalrelid::regclass::text "
                "IN ('sessions', 'session_notes', 'session_tags')",
            )
            assert {(row[1], row[2]) for row in rows} == {("h", rows[0][2])} and len(rows) == 3
            async with PostgresStorage.from_url(url) as storage:
                await storage.save("noted", turn(0))
            await query(url, "INSERT INTO session_notes VALUES ('noted', 1, 'n', NULL)")
            async with PostgresStorage.from_url(url) as storage:
                await storage.delete("noted")
            # the cascade from the sharded sessions reached the new table on its shard
            assert await query(url, "SELECT 1 FROM session_notes") == []

        asyncio.run(check())
    finally:
        asyncio.run(citus_cluster.drop_database(url.database or ""))
