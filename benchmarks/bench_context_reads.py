"""A context's first read in one statement against four: ContextBuilder.build on a
200-message session with a summary, a state and a profile, the reader reading its head,
summary, state and profile in one statement (as it does) against the same reader made to
read them one by one (as it did), interleaved rounds of one run.

Run: python -m benchmarks.bench_context_reads [--rounds 20] [--builds 50]
     (PostgreSQL: $CTXSTORE_BENCH_DATABASE_URL or the embedded server)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import ContextBuilder, Message, PostgresStorage
from ctxstore.storage.base import SessionHead
from ctxstore.storage.postgres import reader, sql
from ctxstore.storage.postgres import store as store_module

START = datetime(2026, 12, 3, tzinfo=UTC)


class FourStatements(reader.PostgresSessionReader):
    """The reader as it was: the head alone, then each document in a statement of its own."""

    async def head(self) -> SessionHead:
        row = await sql.SESSION_HEAD.fetchrow(self._driver, sid=self.session_id)
        self._head = SessionHead(
            True, int(row["version"]), int(row["message_count"]), row["created_at"], row["user_id"]
        )
        return self._head

    def _document(self, prefix: str, present: str) -> Any:
        return reader._UNREAD


async def run(url: URL, args: argparse.Namespace) -> None:
    async with PostgresStorage.from_url(url) as storage:
        messages = [
            Message(
                role=("user", "assistant")[index % 2],
                content=f"第{index}条消息：膝盖下坠感 knee",
                turn_id=f"t{index // 2}",
                timestamp=START + timedelta(seconds=index),
            )
            for index in range(200)
        ]
        await storage.save("bench", messages, user_id="u")
        await storage.save_summary("bench", "早前：膝盖下坠感", covers_until=99)
        await storage.save_state("bench", {"stage": "collecting_details"})
        await storage.save_profile("u", {"age": 46})
        builder = ContextBuilder(storage)
        readers = {"one statement": reader.PostgresSessionReader, "four statements": FourStatements}
        times: dict[str, list[float]] = {name: [] for name in readers}
        try:
            for _ in range(args.rounds):
                for name, kind in readers.items():
                    store_module.PostgresSessionReader = kind  # what _reader() builds
                    started = time.perf_counter()
                    for _ in range(args.builds):
                        await builder.build("bench", "t", "下一步？", token_budget=2000)
                    times[name].append((time.perf_counter() - started) / args.builds * 1e3)
        finally:
            store_module.PostgresSessionReader = reader.PostgresSessionReader
        await storage.delete("bench")
        await storage.delete_profile("u")
    one, four = (statistics.median(times[name]) for name in readers)
    rows = [
        ("one statement", f"{one:.3f}", "1.00x"),
        ("four statements", f"{four:.3f}", f"{four / one:.2f}x"),
    ]
    print(table(rows, ("build, 2,000 tokens", "median ms", "vs one")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--builds", type=int, default=50)
    args = parser.parse_args()
    with bench_database() as url:
        asyncio.run(run(url, args))


if __name__ == "__main__":
    main()
