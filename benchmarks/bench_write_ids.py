"""What recording a journal write id costs a write, and what asking costs a replay.

FallbackStorage sends each write to PostgreSQL with a write id, which the write records in
its own transaction (revision 0020): an append, a state, a save of a grown list, with and
without an id, interleaved, as medians and ratios.  Then a replay of journaled appends to
distinct sessions (each asks once which of its entries the primary applied) against the
same replay when the primary can't tell.

Run: python -m benchmarks.bench_write_ids [--trials 400] [--entries 2000]
     (PostgreSQL: $CTXSTORE_BENCH_DATABASE_URL or the embedded server)
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import MemoryStorage, Message, PostgresStorage
from ctxstore.progress import Progress
from ctxstore.storage.journal import Operation
from ctxstore.storage.replay import Replayer
from ctxstore.storage.write_ids import carrying, new_write_id


def carried(action: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    async def with_id() -> Any:
        with carrying([new_write_id()]):
            return await action()

    return with_id


class NoIds(PostgresStorage):
    """The same primary, answering as one that records no write ids."""

    async def _applied(self, subject: str, write_ids: Any, *, profile: bool) -> None:
        return None


async def writes(storage: PostgresStorage, trials: int) -> list[tuple[str, str, str, str]]:
    turn = [0]
    grown: list[Message] = [Message(role="user", content="first")]

    async def append(session: str) -> None:
        turn[0] += 1
        await storage.append(session, [Message(role="user", content=f"turn {turn[0]}")])

    async def state(session: str) -> None:
        turn[0] += 1
        await storage.save_state(session, {"stage": "assessing", "chief_complaint": str(turn[0])})

    async def save(session: str) -> None:
        grown.append(Message(role="assistant", content=f"reply {len(grown)}"))
        await storage.save(session, list(grown))

    for session in ("plain", "with-id", "grown-plain", "grown-with-id"):
        await storage.save(session, [Message(role="user", content="first")])
    actions = {
        "append": lambda: append("plain"),
        "append + id": carried(lambda: append("with-id")),
        "save_state": lambda: state("plain"),
        "save_state + id": carried(lambda: state("with-id")),
        "save (grown)": lambda: save("grown-plain"),
        "save (grown) + id": carried(lambda: save("grown-with-id")),
    }
    medians = await interleaved_medians(actions, trials, shuffled=True, progress="writes")
    return [
        (kind, f"{medians[kind]:.3f}", f"{medians[kind + ' + id']:.3f}",
         f"{medians[kind + ' + id'] / medians[kind]:.2f}x")
        for kind in ("append", "save_state", "save (grown)")
    ]  # fmt: skip


async def replay(storage: PostgresStorage, entries: int, tells: bool) -> float:
    """Seconds to replay ``entries`` journaled appends, each to its own session."""
    journal = MemoryStorage().open_journal("bench")
    tag = "ids" if tells else "no-ids"
    for index in range(entries):
        await journal.record(
            Operation(
                "append",
                f"replay-{tag}-{index}",
                messages=(Message(role="user", content=f"journaled {index}"),),
                write_id=new_write_id(),
            )
        )
    replayer = Replayer(storage, journal)
    bar = Progress(f"replay ({tag})", entries)
    started = time.perf_counter()
    while batch := await journal.head(100):
        for entry in batch:
            outcome = await replayer.replay([entry])
            bar.advance(outcome.handled)
    bar.finish()
    return time.perf_counter() - started


async def run(url: URL, args: argparse.Namespace) -> None:
    async with PostgresStorage.from_url(url) as storage, NoIds.from_url(url) as no_ids:
        rows = await writes(storage, args.trials)
        with_ids = await replay(storage, args.entries, tells=True)
        without = await replay(no_ids, args.entries, tells=False)
    print(table(rows, ("write", "median ms", "with a write id", "ratio")))
    print(
        table(
            [
                ("asks the primary (write ids)", f"{args.entries / with_ids:,.0f}"),
                ("can't ask (journal marks only)", f"{args.entries / without:,.0f}"),
                ("time, asking / not", f"{with_ids / without:.2f}x"),
            ],
            (f"replay of {args.entries:,} appends", "entries/s"),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--entries", type=int, default=2000)
    args = parser.parse_args()
    with bench_database() as url:
        asyncio.run(run(url, args))


if __name__ == "__main__":
    main()
