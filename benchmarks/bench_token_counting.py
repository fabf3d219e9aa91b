"""Does counting tokens at write still pay for itself?  (Issue 23: decide with figures.)

A turn's two messages are counted (their contract element cost, cl100k_base) when they
are written.  The alternative counts a message when a context read first needs it and
writes the count back.  In one run, interleaved, on one database:

- ``append`` of a turn with the messages counted (as shipped);
- the same append with the counting skipped (a counter that answers 0 at once): the
  append alone;
- counting the turn's two messages on their own (client CPU);
- the write-back the alternative needs: one UPDATE setting the two rows' token_count.

Run: python -m benchmarks.bench_token_counting [--trials N]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, raw_connection, table
from ctxstore import Message, PostgresStorage
from ctxstore.tokens import TokenCounter

QUESTION = "我右膝盖上下楼梯时疼，已经两周了，早上起来有点僵硬，休息后会好一些。需要去医院吗？"
ANSWER = (
    "膝盖上下楼梯疼痛两周、晨僵、休息后缓解，常见于髌股关节疼痛或早期骨关节炎。"
    "如果出现明显肿胀、发热、无法负重或夜间痛，请尽快就医。"
)


class NotCounting(TokenCounter):
    """Answers 0 without counting: the append's cost with the counting taken out."""

    encoding_name = "not-counted"

    def count(self, text: str) -> int:
        return 0


def turn(number: int) -> list[Message]:
    stamp = datetime.now(UTC)
    return [
        Message(role="user", content=QUESTION, turn_id=f"t{number}", timestamp=stamp),
        Message(role="assistant", content=ANSWER, turn_id=f"t{number}", timestamp=stamp),
    ]


async def main(url: URL, trials: int) -> None:
    counter = TokenCounter()
    numbers = itertools.count()
    async with (
        PostgresStorage.from_url(url) as counted,
        PostgresStorage.from_url(url, token_counter=NotCounting()) as uncounted,
    ):
        for storage, session in ((counted, "counted"), (uncounted, "uncounted")):
            for _ in range(500):  # sessions of 1,000 messages, as in bench_turn
                await storage.append(session, turn(next(numbers)))
        raw = await raw_connection(url)
        try:

            async def count_turn() -> Any:
                return [counter.message_cost(m) for m in turn(0)]

            async def write_back() -> Any:
                return await raw.execute(
                    "UPDATE messages SET token_count = m.cost FROM unnest($2::int[], $3::int[])"
                    " AS m(seq, cost) WHERE session_id = $1 AND messages.seq = m.seq",
                    "counted",
                    [10, 11],
                    [40, 41],
                )

            medians = await interleaved_medians(
                {
                    "append, counted at write": lambda: counted.append(
                        "counted", turn(next(numbers))
                    ),
                    "append, not counted": lambda: uncounted.append(
                        "uncounted", turn(next(numbers))
                    ),
                    "counting the turn alone": count_turn,
                    "write-back of two counts": write_back,
                },
                trials,
            )
        finally:
            await raw.close()
    base = medians["append, counted at write"]
    rows = [(name, f"{ms * 1000:,.0f}", f"{ms / base:.2f}x") for name, ms in medians.items()]
    print(f"\none turn (2 messages), median of {trials}, interleaved")
    print(table(rows, ("what", "µs", "/ counted append")))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=400)
    options = parser.parse_args()
    with bench_database() as database_url:
        asyncio.run(main(database_url, options.trials))
