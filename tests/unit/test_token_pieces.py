"""A message's stored count, made of pieces (head, content, envelope by shape), is the
count tiktoken gives its whole contract element (tokens.py)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone

import pytest

from ctxstore.models import Message
from ctxstore.timestamps import with_nanoseconds
from ctxstore.tokens import TokenCounter, contract_message

PIECES = ("hello", " world", "123", "4567", "。", "你好", "'s", " ", "\n", "\t", '"', "\\",
          "😀", "٣٤٥", "x1y2", "  ", ",", "{}", "Z", "0", "999", "1000")  # fmt: skip


def _messages(seed: int, count: int) -> list[Message]:
    rng = random.Random(seed)

    def text(n: int) -> str:
        return "".join(rng.choice(PIECES) for _ in range(n))

    found = []
    for i in range(count):
        moment = datetime(
            1 + rng.randrange(9998), 1 + rng.randrange(12), 1 + rng.randrange(28),
            rng.randrange(24), rng.randrange(60), rng.randrange(60),
            rng.choice([0, rng.randrange(10**6)]),
            tzinfo=rng.choice([UTC, timezone(timedelta(minutes=rng.choice([330, -480, 60])))]),
        )  # fmt: skip
        stamp = with_nanoseconds(moment, rng.choice([0, rng.randrange(1, 1000)]))
        turn_id = rng.choice([f"turn_{i:04d}", text(rng.randrange(1, 6)), str(i), f"{i}-{i * 7}"])
        found.append(
            Message(
                role=rng.choice(["user", "assistant", "system", "tool"]),
                content=text(rng.randrange(0, 25)),
                turn_id=turn_id,
                timestamp=rng.choice([stamp, stamp, None]),
            )
        )
    return found


class _Subclass(TokenCounter):
    """Counts as tiktoken does, but is not TokenCounter itself: no shapes."""


@pytest.mark.parametrize("counter", [TokenCounter("cl100k_base"), TokenCounter("o200k_base"),
                                     _Subclass("cl100k_base")])  # fmt: skip
def test_stored_cost_is_the_whole_elements(counter: TokenCounter) -> None:
    fill = datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=UTC)
    for message in _messages(7, 1500):
        whole = counter.element_cost(contract_message(message, "", fill))
        if message.timestamp is None:
            assert (
                counter.untimed_cost(message)
                + counter.fill_cost(contract_message(message, "", fill)["timestamp"])
                == whole
            ), message
        else:
            assert counter.message_cost(message) == whole, message
