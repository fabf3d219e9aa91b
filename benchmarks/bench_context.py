"""Context build time by session length, in one run (issue 5).

ContextBuilder.build at an 8,000-token budget for sessions of 100, 1,000 and 10,000
messages (with state, profile, summary and two knowledge items), round-robin.
Target: the 10,000 case within 2x of the 100 case.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import ContextBuilder, ContextManager, Message, PostgresStorage, TokenBudget
from ctxstore.commands.demo import KNOWLEDGE, STATES

SIZES = (100, 1_000, 10_000)
TRIALS = 40
BUDGET = 8_000


def history(count: int) -> list[Message]:
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=(
                f"第{i}条：膝盖走路时有下坠感，上下楼梯更明显，大约一周。"
                if i % 2 == 0
                else f"第{i}条：是否伴随疼痛或肿胀？之前有没有扭伤？请描述一下具体的感觉。"
            ),
            turn_id=f"turn_{i // 2:05d}",
            timestamp="2026-11-29T08:15:02.123+08:00",
        )
        for i in range(count)
    ]


async def main(url: URL) -> None:
    async with PostgresStorage.from_url(url) as storage:
        await storage.save_profile("u", {"age": 34, "gender": "female"})
        for size in SIZES:
            session = f"ctx-{size}"
            await storage.save(session, history(size), user_id="u")
            await storage.save_state(session, STATES[-1])
            await storage.save_summary(session, "膝盖下坠感一周，走路明显。", covers_until=9)
        builder = ContextBuilder(storage)
        manager = ContextManager(storage)

        def build(size: int):  # type: ignore[no-untyped-def]
            async def run() -> None:
                contract = await builder.build(
                    f"ctx-{size}", "turn_x", "那我现在应该怎么锻炼？", KNOWLEDGE, BUDGET
                )
                assert contract.meta.included_message_count > 0

            return run

        def window(size: int):  # type: ignore[no-untyped-def]
            async def run() -> None:
                await manager.get_context(f"ctx-{size}", TokenBudget(BUDGET))

            return run

        builds = await interleaved_medians({str(s): build(s) for s in SIZES}, trials=TRIALS)
        windows = await interleaved_medians({str(s): window(s) for s in SIZES}, trials=TRIALS)
        sample = await builder.build(
            f"ctx-{SIZES[-1]}", "t", "那我现在应该怎么锻炼？", KNOWLEDGE, BUDGET
        )
        used = builder.counter.count(sample.to_json())
    base_build, base_window = builds[str(SIZES[0])], windows[str(SIZES[0])]
    print(f"\nContextBuilder.build at {BUDGET:,} tokens, median of {TRIALS}")
    print(
        table(
            [
                (
                    f"{size:,}",
                    f"{builds[str(size)]:.2f}",
                    f"{builds[str(size)] / base_build:.2f}x",
                    f"{windows[str(size)]:.2f}",
                    f"{windows[str(size)] / base_window:.2f}x",
                )
                for size in SIZES
            ],
            ("stored messages", "build ms", "vs 100", "get_context ms", "vs 100"),
        )
    )
    ratio = builds[str(SIZES[-1])] / base_build
    print(f"target 10,000/100 <= 2.0: {ratio:.2f} {'met' if ratio <= 2.0 else 'MISSED'}")
    print(
        f"the 10,000-message contract: {used:,} of {BUDGET:,} tokens, "
        f"{sample.meta.included_message_count} messages"
    )


if __name__ == "__main__":
    with bench_database() as database_url:
        asyncio.run(main(database_url))
