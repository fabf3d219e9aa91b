"""Exporting and importing everything held about a user (issue 51, item 2): a user of 100
sessions of 1,000 messages of Chinese text.

The target: export at 20,000 messages a second or more, in memory that stays flat
however much the user holds (the bundle is streamed, never whole in memory).

Seeded through the library (``save`` of each session's 1,000 messages at once, a profile,
a summary and a state per session) in a scratch database; a second user holds 10 such
sessions.  Measured through ``PostgresStorage`` (no encryption at rest), what a caller of
``export_user`` and ``import_user`` waits for:

- ``export``: the 100-session user's bundle, read whole and hashed (as the CLI writes it),
  the median of ``--rounds`` runs, in messages a second;
- ``import``: that bundle into a second scratch database (once: a user is imported once),
  checked by exporting it there again, byte for byte;
- ``peak memory``: tracemalloc's peak while exporting the 10-session and the 100-session
  user (separate runs, tracemalloc slows Python down): flat if streamed, ten times the
  first if not.

Run: CTXSTORE_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
     python -m benchmarks.bench_export_user [--rounds 3]
     (without the variable: the embedded server)
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import time
import tracemalloc
from dataclasses import dataclass

from sqlalchemy import URL

from benchmarks.common import bench_server, scratch_database, table
from ctxstore import Message, PostgresStorage
from ctxstore.progress import Progress

SESSION_MESSAGES = 1_000
#: The users measured, by how many sessions each has.
USERS = {"bench-10": 10, "bench-100": 100}
MEASURED = "bench-100"
TURN = (
    "我右膝疼痛两周了，上下楼梯的时候加重，早上起床有点僵硬，活动一会儿会好一些。",
    "明白。疼痛是在膝盖前侧、内侧还是外侧？有没有肿胀、发热或者打软腿的情况？",
)


@dataclass(frozen=True)
class Exported:
    bundle: bytes
    seconds: float


def conversation(session: int) -> list[Message]:
    """A session's 1,000 messages: a patient and the assistant in turns, each numbered."""
    return [
        Message(
            role="user" if number % 2 == 0 else "assistant",
            content=f"{TURN[number % 2]}（第{session}次问诊，第{number}条）",
        )
        for number in range(SESSION_MESSAGES)
    ]


async def seed(url: URL) -> float:
    started = time.perf_counter()
    total = sum(USERS.values()) * SESSION_MESSAGES
    progress = Progress("seed", total)
    async with PostgresStorage.from_url(url) as storage:
        for user_id, sessions in USERS.items():
            await storage.save_profile(user_id, {"age": 41, "known_limitations": ["左膝旧伤"]})
            for number in range(sessions):
                session_id = f"{user_id}-{number:03d}"
                await storage.save(session_id, conversation(number), user_id=user_id)
                await storage.save_summary(
                    session_id, "右膝疼痛两周，上下楼梯加重", covers_until=SESSION_MESSAGES - 1
                )
                await storage.save_state(session_id, {"stage": "triage", "pain_level": 4})
                progress.advance(SESSION_MESSAGES)
    progress.finish()
    return time.perf_counter() - started


async def export(storage: PostgresStorage, user_id: str, *, keep: bool = True) -> Exported:
    """The user's bundle, read whole; ``keep=False`` hashes the chunks and drops them (the
    memory runs: keeping them would measure the bundle, not the export)."""
    chunks: list[bytes] = []
    digest = hashlib.sha256()
    started = time.perf_counter()
    async for chunk in storage.export_user(user_id):
        digest.update(chunk)
        if keep:
            chunks.append(chunk)
    return Exported(b"".join(chunks), time.perf_counter() - started)


async def measure_export(url: URL, rounds: int) -> Exported:
    """The median run's bundle and time (every run's bundle the same bytes)."""
    async with PostgresStorage.from_url(url) as storage:
        await export(storage, "bench-10")  # warm: the connections, the statements
        runs = [await export(storage, MEASURED) for _ in range(rounds)]
    if len({run.bundle for run in runs}) != 1:
        raise RuntimeError("two exports of the same data gave different bundles")
    return sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]


async def measure_import(url: URL, bundle: bytes) -> float:
    async with PostgresStorage.from_url(url) as storage:
        chunks = [bundle[at : at + (1 << 20)] for at in range(0, len(bundle), 1 << 20)]
        started = time.perf_counter()
        receipt = await storage.import_user(chunks)
        seconds = time.perf_counter() - started
        if receipt.messages != USERS[MEASURED] * SESSION_MESSAGES:
            raise RuntimeError(f"imported {receipt.messages:,} messages")
        if (await export(storage, MEASURED)).bundle != bundle:
            raise RuntimeError("the imported user exports another bundle")
    return seconds


async def peak_memory(url: URL) -> dict[str, int]:
    """tracemalloc's peak while exporting each user (after a warm run, so the peaks are
    the export's own, not the first statements' and imports')."""
    peaks = {}
    async with PostgresStorage.from_url(url) as storage:
        await export(storage, "bench-10", keep=False)
        for user_id in USERS:
            tracemalloc.start()
            try:
                await export(storage, user_id, keep=False)
                peaks[user_id] = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
    return peaks


def report(exported: Exported, import_seconds: float, peaks: dict[str, int]) -> str:
    messages = USERS[MEASURED] * SESSION_MESSAGES
    rows = [
        (
            "export",
            f"{messages:,}",
            f"{exported.seconds:.2f}",
            f"{messages / exported.seconds:,.0f}",
        ),
        ("import", f"{messages:,}", f"{import_seconds:.2f}", f"{messages / import_seconds:,.0f}"),
    ]
    speeds = table(rows, ("", "messages", "seconds", "messages/s"))
    memory = table(
        [
            (
                f"{USERS[user_id]} sessions",
                f"{USERS[user_id] * SESSION_MESSAGES:,}",
                f"{peak / 2**20:.1f}",
            )
            for user_id, peak in peaks.items()
        ],
        ("export of", "messages", "tracemalloc peak MiB"),
    )
    return f"{speeds}\n\n{memory}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="timed exports (the median)")
    args = parser.parse_args()
    with bench_server() as server, scratch_database(server) as source:
        print(f"seeding {sum(USERS.values()) * SESSION_MESSAGES:,} messages")
        seeded = asyncio.run(seed(source))
        exported = asyncio.run(measure_export(source, args.rounds))
        with scratch_database(server) as target:
            import_seconds = asyncio.run(measure_import(target, exported.bundle))
        peaks = asyncio.run(peak_memory(source))
    print(f"\nseeded in {seeded:.1f} s; the bundle of {MEASURED}: {len(exported.bundle):,} bytes")
    print(f"median of {args.rounds} exports; one import, exported again byte for byte\n")
    print(report(exported, import_seconds, peaks))


if __name__ == "__main__":
    main()
