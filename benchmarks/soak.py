"""Soak: 16 clients doing turns for 30 s while a connection is killed every 100 ms.

Each turn appends a user and an assistant message with a unique turn id.  A call that
fails with StorageUnavailableError may or may not have committed (the connection died
around the COMMIT); the client then looks for its turn id before trying again, so a turn
counts as acknowledged exactly once.  At the end, the acknowledged messages must equal the
messages found, with no duplicates and every client's turns in order.

Run: python -m benchmarks.soak [--clients 16] [--seconds 30] [--kill-every 0.1]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import time

from sqlalchemy import URL, text

from benchmarks.common import bench_database
from ctxstore import EngineSettings, Message, PostgresStorage
from ctxstore.db.engine import create_engine
from ctxstore.errors import StorageUnavailableError


async def client(
    storage: PostgresStorage, index: int, deadline: float, stats: dict[str, int]
) -> int:
    session = f"soak-{index:02d}"
    acknowledged = 0
    turn = 0
    while time.monotonic() < deadline:
        turn_id = f"c{index}-t{turn}"
        pair = [
            Message(role="user", content=f"问题 {turn}", turn_id=turn_id),
            Message(role="assistant", content=f"回答 {turn}", turn_id=turn_id),
        ]
        while True:
            try:
                await storage.append(session, pair)
                break
            except StorageUnavailableError:
                stats["errors"] += 1
                if await landed(storage, session, turn_id, stats):
                    stats["ambiguous_committed"] += 1
                    break
                await asyncio.sleep(0.01)
        acknowledged += 2
        turn += 1
    return acknowledged


async def landed(
    storage: PostgresStorage, session: str, turn_id: str, stats: dict[str, int]
) -> bool:
    """Did the failed append commit?  Read the newest messages (retrying reads)."""
    while True:
        try:
            async with storage.reader(session) as reader:
                head = await reader.head()
                newest = await reader.newest(head.message_count, 2)
            return any(stored.message.turn_id == turn_id for stored in newest)
        except StorageUnavailableError:
            stats["errors"] += 1
            await asyncio.sleep(0.01)


async def killer(url: URL, deadline: float, every: float) -> int:
    engine = create_engine(url, pooled=False)
    killed = 0
    try:
        async with engine.connect() as conn:
            while time.monotonic() < deadline:
                await asyncio.sleep(every)
                pids = (
                    (
                        await conn.execute(
                            text(
                                "SELECT pid FROM pg_stat_activity WHERE application_name = "
                                "'ctxstore-soak' AND pid <> pg_backend_pid()"
                            )
                        )
                    )
                    .scalars()
                    .all()
                )
                if pids:
                    await conn.execute(
                        text("SELECT pg_terminate_backend(:pid)"), {"pid": random.choice(pids)}
                    )
                    killed += 1
                await conn.commit()
    finally:
        await engine.dispose()
    return killed


async def main(url: URL, clients: int, seconds: float, every: float) -> None:
    settings = EngineSettings(application_name="ctxstore-soak", pool_size=clients)
    stats = {"errors": 0, "ambiguous_committed": 0}
    async with PostgresStorage.from_url(url, settings=settings, operation_timeout=10) as storage:
        deadline = time.monotonic() + seconds
        results = await asyncio.gather(
            killer(url, deadline, every),
            *(client(storage, index, deadline, stats) for index in range(clients)),
        )
        killed, acknowledged = results[0], sum(results[1:])
        found = 0
        duplicates = out_of_order = 0
        for index in range(clients):
            messages = await storage.load(f"soak-{index:02d}")
            found += len(messages)
            turns = [int(m.turn_id.split("-t")[1]) for m in messages[::2] if m.turn_id]
            duplicates += len(turns) - len(set(turns))
            out_of_order += sum(1 for a, b in itertools.pairwise(turns) if b != a + 1)
    every_ms = every * 1000
    print(
        f"\nsoak: {clients} clients, {seconds:.0f} s, a connection killed every {every_ms:.0f} ms"
    )
    print(f"  connections killed:            {killed:,}")
    print(f"  errors seen by clients:        {stats['errors']:,}")
    print(f"  failed calls that had committed: {stats['ambiguous_committed']:,}")
    print(f"  acknowledged messages:         {acknowledged:,}")
    print(f"  messages found:                {found:,}")
    print(f"  duplicate turns: {duplicates}, turns out of order: {out_of_order}")
    verdict = (
        "EQUAL" if acknowledged == found and not duplicates and not out_of_order else "MISMATCH"
    )
    print(f"  acknowledged == found: {verdict}")
    if verdict != "EQUAL":
        raise SystemExit(1)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--kill-every", type=float, default=0.1)
    options = parser.parse_args()
    with bench_database() as database_url:
        asyncio.run(main(database_url, options.clients, options.seconds, options.kill_every))
