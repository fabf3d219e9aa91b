"""The cost of encryption at rest, plain vs encrypted in one run (issue 13 item 4).

Two stores on one database, one without and one with ``Encryption``, timed round-robin:
appending one turn (user + assistant) to a session, the same by two processes in turn (so
neither knows what the other appended: a sealed append then reads the session's chain
first), loading a 1,000-message session, and the 8,000-token context window
(ContextManager.get_context) of that session.
Targets (issue 24): append and window within 10% of plain, load within 30%.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from sqlalchemy import URL

from benchmarks.bench_context import history
from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import ContextManager, Message, PostgresStorage, TokenBudget
from ctxstore.encryption import Encryption, Keyring

TRIALS = 200
STORED = 1_000
BUDGET = 8_000
TARGET = 1.10
TARGETS = {f"load {STORED:,} messages": 1.30}


async def main(url: URL) -> None:
    encryption = Encryption(Keyring({"bench": os.urandom(32)}))
    async with (
        PostgresStorage.from_url(url) as plain,
        PostgresStorage.from_url(url, encryption=encryption) as sealed,
        PostgresStorage.from_url(url) as plain_other,
        PostgresStorage.from_url(url, encryption=encryption) as sealed_other,
    ):
        stores = {"plain": plain, "encrypted": sealed}
        others = {"plain": plain_other, "encrypted": sealed_other}
        for name, storage in stores.items():
            await storage.save(f"load-{name}", history(STORED), user_id=f"u-{name}")
            await storage.save(f"grow-{name}", history(10), user_id=f"u-{name}")

        def append(name: str) -> Callable[[], Awaitable[object]]:
            storage, turn = (
                stores[name],
                [
                    Message(role="user", content="膝盖上下楼梯时疼，怎么办？"),
                    Message(role="assistant", content="先减少爬楼，冰敷十五分钟，观察是否肿胀。"),
                ],
            )
            return lambda: storage.append(f"grow-{name}", turn, user_id=f"u-{name}")

        def alternating(name: str) -> Callable[[], Awaitable[object]]:
            writers, turns = (stores[name], others[name]), [0]
            turn = [
                Message(role="user", content="还疼吗？"),
                Message(role="assistant", content="好多了。"),
            ]

            def one() -> Awaitable[object]:
                turns[0] += 1
                writer = writers[turns[0] % 2]
                return writer.append(f"shared-{name}", turn, user_id=f"u-{name}")

            return one

        def load(name: str) -> Callable[[], Awaitable[object]]:
            storage = stores[name]
            return lambda: storage.load(f"load-{name}")

        def window(name: str) -> Callable[[], Awaitable[object]]:
            manager = ContextManager(stores[name])
            return lambda: manager.get_context(f"load-{name}", TokenBudget(BUDGET))

        results = {}
        for label, make in (
            ("append one turn", append),
            ("append, two writers in turn", alternating),
            (f"load {STORED:,} messages", load),
            (f"{BUDGET:,}-token window", window),
        ):
            medians = await interleaved_medians({n: make(n) for n in stores}, trials=TRIALS)
            results[label] = (medians["plain"], medians["encrypted"])
    rows = [
        (
            label,
            f"{plain_ms:.3f}",
            f"{sealed_ms:.3f}",
            f"{sealed_ms / plain_ms:.2f}x",
            "met" if sealed_ms / plain_ms <= TARGETS.get(label, TARGET) else "MISSED",
            f"{TARGETS.get(label, TARGET):.2f}x",
        )
        for label, (plain_ms, sealed_ms) in results.items()
    ]
    print(f"\nEncryption at rest: median ms of {TRIALS}, interleaved")
    print(table(rows, ("operation", "plain ms", "encrypted ms", "ratio", "", "target")))


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
