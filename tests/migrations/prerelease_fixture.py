"""Make ``golden/prerelease-0026.sql``: a database written by ctxstore 0.x, dumped.

It ran once, with the last pre-release's code (commit 437ac84, schema revision 0026), and
can be rerun from a worktree of that commit::

    git worktree add /tmp/ctxstore-0x 437ac84
    cp tests/migrations/prerelease_*.py /tmp/ctxstore-0x/tests/migrations/
    cd /tmp/ctxstore-0x && PYTHONPATH=src:. python -m tests.migrations.prerelease_fixture \\
        postgresql://postgres@127.0.0.1:5432/postgres > golden/prerelease-0026.sql

It creates a scratch database and its roles (named as ``DUMP_ROLES``), upgrades it with
0.x's ``ctxstore db upgrade``, writes ``prerelease_data`` through 0.x's public API, prints
``pg_dump`` of it and drops the database and the roles.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import date

from sqlalchemy import URL, make_url

from ctxstore import PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.db import migrations
from ctxstore.encryption import Encryption, Keyring
from ctxstore.settings import load_settings
from ctxstore.storage.write_ids import carrying
from tests.migrations import prerelease_data as data

DATABASE = "ctxstore_prerelease_fixture"


async def write(url: URL) -> None:
    sealing = Encryption(Keyring({data.MASTER_KEY_ID: data.MASTER_KEY}))
    for sealed in (False, True):
        async with PostgresStorage.from_url(url, encryption=sealing if sealed else None) as store:
            for number in range(data.CONSULTATIONS):
                await write_consultation(store, number, sealed=sealed)
    async with PostgresStorage.from_url(url) as store:
        await write_extras(store)
        opening = Encryption(Keyring({data.MASTER_KEY_ID: data.MASTER_KEY}), accept_plaintext=True)
        await refresh_aggregates(store, opening, today=date(2026, 12, 5), show=False)


async def write_consultation(store: PostgresStorage, number: int, *, sealed: bool) -> None:
    session_id = data.session_id(number, sealed=sealed)
    user_id = data.user_id(number)
    await store.save(session_id, data.turn(number)[:1], user_id=user_id)
    if number == 1:
        with carrying([data.WRITE_ID]):
            await store.append(session_id, data.turn(number)[1:], user_id=user_id)
    else:
        await store.append(session_id, data.turn(number)[1:], user_id=user_id)
    for state in data.states(number):
        await store.save_state(session_id, state)
    await store.save_summary(session_id, data.summary(number), covers_until=1)
    if not sealed:
        await store.save_profile(user_id, data.profile(number))


async def write_extras(store: PostgresStorage) -> None:
    from langgraph.checkpoint.base import empty_checkpoint  # noqa: PLC0415

    from ctxstore.adapters.langgraph import CtxstoreSaver  # noqa: PLC0415
    from ctxstore.summaries import SummaryQueue  # noqa: PLC0415

    await SummaryQueue(store).enqueue(data.session_id(2, sealed=False), 1)
    saver = CtxstoreSaver(store)
    config = {"configurable": {"thread_id": data.graph_thread(), "checkpoint_ns": ""}}
    made = empty_checkpoint()
    made["channel_values"] = {"notes": "膝盖"}
    made["channel_versions"] = {"notes": 1}
    await saver.aput(config, made, {"source": "input", "step": -1}, {"notes": 1})


#: pg_dump prints this CHECK with its BETWEEN nested, and parsed again it is a flat AND:
#: the same test, another tree.  As revision 0021 wrote it, restored it is the same tree.
NESTED_CHECK = (
    "CHECK (((ts_nanos IS NULL) OR (((ts_nanos >= 1) AND (ts_nanos <= 999)) AND (ts IS NOT NULL))))"
)
AS_WRITTEN = "CHECK ((ts_nanos IS NULL) OR (ts_nanos BETWEEN 1 AND 999 AND ts IS NOT NULL))"


def as_written(dump: str) -> str:
    if NESTED_CHECK not in dump:
        raise SystemExit("pg_dump printed ck_messages_ts_nanos_below_a_microsecond otherwise")
    return dump.replace(NESTED_CHECK, AS_WRITTEN)


def psql(server: URL, statement: str) -> None:
    command = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", str(server), "-c", statement]
    subprocess.run(command, check=True)


def main(server_url: str) -> None:
    server = make_url(server_url)
    url = server.set(database=DATABASE)
    plain = url.render_as_string(hide_password=False)
    psql(server, f"CREATE DATABASE {DATABASE}")
    try:
        names = {f"{kind}_role": name for kind, name in data.DUMP_ROLES.items()}
        migrations.upgrade(url, "head", settings=load_settings().replaced(names))
        asyncio.run(write(url))
        dump = subprocess.run(
            ["pg_dump", "--inserts", "-d", plain],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        sys.stdout.write(as_written(dump))
    finally:
        psql(server, f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        for name in data.DUMP_ROLES.values():
            psql(server, f"DROP ROLE IF EXISTS {name}")


if __name__ == "__main__":
    main(sys.argv[1])
