"""Summaries that count say one thing or many (issue 28: "1 sessions")."""

from __future__ import annotations

import pytest

from ctxstore.progress import counted


@pytest.mark.parametrize(
    ("number", "noun", "plural", "said"),
    [
        (0, "session", None, "0 sessions"),
        (1, "session", None, "1 session"),
        (1_000, "session", None, "1,000 sessions"),
        (1, "summary", "summaries", "1 summary"),
        (2, "summary", "summaries", "2 summaries"),
    ],
)
def test_counts_say_one_thing_or_many(
    number: int, noun: str, plural: str | None, said: str
) -> None:
    assert counted(number, noun, plural) == said
