"""Summarizers the summarize-worker tests load by name (``module:name``), as a user's are.

Each call is recorded as a line in the file ``CTXSTORE_TEST_SUMMARIZER_LOG`` names, so
a test counts the LLM calls every worker process made.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

from ctxstore.models import Message

LOG_ENV = "CTXSTORE_TEST_SUMMARIZER_LOG"


async def slow_counted(messages: Sequence[Message], previous: str | None) -> str:
    """Takes half a second, as an LLM call takes seconds, and records that it ran."""
    # One short append, before the wait: the record survives whatever happens next.
    with open(os.environ[LOG_ENV], "a", encoding="utf-8") as log:  # noqa: ASYNC230
        log.write(f"{os.getpid()} {len(messages)}\n")
    await asyncio.sleep(0.5)
    return f"{previous or ''}[{len(messages)} messages]"


def not_async(messages: Sequence[Message], previous: str | None) -> str:
    return "a summarizer must be async"
