"""Rolling deploys (docs/production.md, "Rolling deploys"): migrate, then roll.

Code N runs on schema N and on a schema a later release only added to: a revision this
code does not know, applied while its server runs and before another starts, leaves both
ready and writing.  Code started on a schema it can't run on (missing, or behind) says so
at start, in its log and in /readyz, and a store refuses to open on it.  Real PostgreSQL,
real ``ctxstore serve``.
"""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import URL, text

from ctxstore import Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.db.compat import PRERELEASE_HEAD, SchemaState, code_revisions
from ctxstore.db.engine import create_engine
from ctxstore.errors import SchemaMissingError
from tests.http.live import LiveServer, Tokens

pytestmark = pytest.mark.postgres

#: The later release's revision: an id this code's migrations don't hold.
LATER = "later0001"
TURN = [
    {"role": "user", "content": "我膝盖有下坠感"},
    {"role": "assistant", "content": "多久了？"},
]

# What a later release may add (docs/design.md: from 1.0 on a revision only adds): a table
# of its own and nullable columns on the two hot tables this code reads and writes.
ADDITIVE_REVISION = '''\
"""A later release's additive revision (tests/http/test_rolling_deploys.py)."""

import sqlalchemy as sa
from alembic import op

revision = "{revision}"
down_revision = "{head}"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "later_release_notes",
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("note", sa.Text, nullable=False),
    )
    op.add_column("sessions", sa.Column("later_note", sa.Text, nullable=True))
    op.add_column("messages", sa.Column("later_note", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("messages", "later_note")
    op.drop_column("sessions", "later_note")
    op.drop_table("later_release_notes")
'''


def later_release_migrations(folder: Path) -> Path:
    """A copy of this code's migrations with one more revision on top of its head, as
    the next release would ship them."""
    copy = folder / "alembic"
    shutil.copytree(
        migrations.script_location(), copy, ignore=shutil.ignore_patterns("__pycache__")
    )
    revision = ADDITIVE_REVISION.format(revision=LATER, head=code_revisions().head)
    (copy / "versions" / f"{LATER}_additive.py").write_text(revision, encoding="utf-8")
    return copy


def apply_later_release(url: URL, folder: Path) -> None:
    """`ctxstore db upgrade` as the later release runs it (its migrations, this URL)."""
    config = migrations.alembic_config(url)
    config.set_main_option("script_location", str(later_release_migrations(folder)))
    command.upgrade(config, "head")


async def fetch(url: URL, sql: str) -> list[Any]:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.begin() as connection:
            return list((await connection.execute(text(sql))).all())
    finally:
        await engine.dispose()


def revision_behind_head() -> str:
    """A revision this code counts as behind its head: the one before it, or, where the
    head is 1.0's baseline, the last pre-release head (0.x's: behind it too)."""
    script = ScriptDirectory.from_config(migrations.alembic_config())
    previous = script.get_revision(code_revisions().head).down_revision
    return previous if isinstance(previous, str) else PRERELEASE_HEAD


@pytest.fixture
def behind_database_url(database_url: URL) -> URL:
    """A database whose recorded revision is behind this code's head.  Only the record:
    readiness and the startup check read nothing else (and from 1.0's baseline on, no
    database this code can migrate is behind it)."""
    behind = revision_behind_head()
    recorded = f"UPDATE alembic_version SET version_num = '{behind}' RETURNING version_num"
    assert asyncio.run(fetch(database_url, recorded)) == [(behind,)]
    return database_url


#: The database each schema a server can't run on is tested on.
DATABASES = {"behind": "behind_database_url", "missing": "empty_database_url"}


def schema_lines(log: str) -> list[str]:
    return [line for line in log.splitlines() if " ctxstore.schema: " in line]


def session_id() -> str:
    return f"s-{uuid.uuid4().hex[:12]}"


def write_and_read(live: LiveServer, tokens: Tokens) -> None:
    """A session written and read over HTTP."""
    path = f"{live.base_url}/v1/sessions/{session_id()}/messages"
    written = httpx.post(path, json={"messages": TURN}, headers=tokens.header(), timeout=30)
    assert written.status_code == 201, written.text
    read = httpx.get(path, headers=tokens.header(), timeout=30)
    assert read.status_code == 200, read.text
    assert [m["content"] for m in read.json()["messages"]] == [m["content"] for m in TURN]


def readiness(live: LiveServer, tokens: Tokens, token: str | None = None) -> httpx.Response:
    headers = tokens.header(token) if token else {}
    return httpx.get(f"{live.base_url}/readyz", headers=headers, timeout=30)


# -- ahead: a later release's additive revision ------------------------------------------------


def test_a_later_releases_additive_revision_leaves_running_and_new_servers_ready(
    database_url: URL, tokens: Tokens, tmp_path: Path
) -> None:
    running = LiveServer.on(database_url, tokens).start()
    try:
        write_and_read(running, tokens)  # its connections hold prepared statements
        apply_later_release(database_url, tmp_path)  # migrate, while it serves ...
        assert migrations.current(database_url) == LATER
        added = asyncio.run(
            fetch(
                database_url,
                "SELECT attrelid::regclass::text FROM pg_attribute WHERE attname = 'later_note' "
                "UNION ALL SELECT to_regclass('later_release_notes')::text ORDER BY 1",
            )
        )
        assert added == [("later_release_notes",), ("messages",), ("sessions",)]
        # ... and it is still ready, and still writes and reads
        assert readiness(running, tokens).json() == {"status": "ready"}
        write_and_read(running, tokens)
        restarted = LiveServer.on(database_url, tokens).start()  # ... then roll
        try:
            assert readiness(restarted, tokens).json() == {"status": "ready"}
            detail = readiness(restarted, tokens, tokens.admin).json()
            assert detail["revision"] == LATER
            assert detail["detail"].startswith(
                f"schema ahead at revision {LATER}: a later release's additive revisions"
            )
            write_and_read(restarted, tokens)
            assert restarted.terminate() == 0
            # What the startup check logged: the state, the revision, no warning.
            (line,) = schema_lines(restarted.log())
            assert f"INFO ctxstore.schema: schema check: state=ahead revision={LATER}" in line
        finally:
            restarted.close()
        assert running.terminate() == 0
        (line,) = schema_lines(running.log())
        assert f"state=at head revision={code_revisions().head}" in line
        assert "Traceback" not in running.log()
    finally:
        running.close()


async def test_a_store_opens_and_writes_on_a_schema_a_later_release_added_to(
    database_url: URL, tmp_path: Path
) -> None:
    await asyncio.to_thread(apply_later_release, database_url, tmp_path)
    turn = [Message.model_validate(m) for m in TURN]
    async with PostgresStorage.from_url(database_url) as store:
        found = await store.check_schema()
        assert (found.state, found.revision, found.runnable) == (SchemaState.AHEAD, LATER, True)
        assert await store.save("s", turn[:1], user_id="u1") == 1
        assert await store.append("s", turn[1:]) == 2
        assert await store.save_state("s", {"stage": "assessing"}) == 1
        await store.save_summary("s", "膝盖下坠感", covers_until=1)
        assert await store.load("s") == turn
        state = await store.load_state("s")
        assert state is not None and state.value.stage == "assessing"
        summary = await store.load_summary("s")
        assert summary is not None and summary.text == "膝盖下坠感"


# -- behind, missing: not ready, said at start ---------------------------------------------


@pytest.mark.parametrize("schema", ["behind", "missing"])
def test_a_server_on_a_schema_it_cannot_run_on_says_so_at_start_and_in_readyz(
    schema: str, tokens: Tokens, request: pytest.FixtureRequest
) -> None:
    url: URL = request.getfixturevalue(DATABASES[schema])
    revision = revision_behind_head() if schema == "behind" else None
    live = LiveServer.on(url, tokens).start()  # it starts: /readyz can say why
    try:
        # At start, before any request: one warning naming the revision and the fix.
        (line,) = schema_lines(live.log())
        assert "WARNING ctxstore.schema: schema check: " in line
        assert f"revision={revision} head={code_revisions().head}" in line
        assert "run `ctxstore db upgrade`" in line
        anonymous = readiness(live, tokens)
        assert anonymous.status_code == 503
        assert anonymous.json() == {"status": "not ready"}
        assert anonymous.headers["Retry-After"] == "2"
        detailed = readiness(live, tokens, tokens.admin)
        assert detailed.status_code == 503
        problem = detailed.json()
        assert problem["type"] == "https://ctxstore.dev/problems/schema-missing"
        assert "run `ctxstore db upgrade`" in problem["detail"]
        named = f"revision {revision}" if revision else "no ctxstore schema (no revision)"
        assert named in problem["detail"] and named in line
        if schema == "missing":
            # Not ready until the migrations run; then ready, without a restart.
            migrations.upgrade(url, "head")
            assert readiness(live, tokens).json() == {"status": "ready"}
            write_and_read(live, tokens)
        assert live.terminate() == 0
        assert "Traceback" not in live.log()
    finally:
        live.close()


@pytest.mark.parametrize("schema", ["behind", "missing"])
def test_a_store_refuses_to_open_on_a_schema_it_cannot_run_on(
    schema: str, request: pytest.FixtureRequest
) -> None:
    url: URL = request.getfixturevalue(DATABASES[schema])
    revision = revision_behind_head() if schema == "behind" else None

    async def open_it() -> None:
        async with PostgresStorage.from_url(url):
            pytest.fail("opened on a schema this code can't run on")

    with pytest.raises(SchemaMissingError) as refused:
        asyncio.run(open_it())
    error = refused.value
    assert str(error).startswith("opening the store failed: schema ")
    assert "run `ctxstore db upgrade`" in str(error)
    assert (error.current_revision, error.head_revision) == (revision, code_revisions().head)
