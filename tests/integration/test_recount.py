"""``ctxstore recount``: stored token counts backfilled in another encoding, sealed rows too."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.recount import recount_store
from ctxstore.context.builder import ContextBuilder
from ctxstore.encryption import Encryption, Keyring
from ctxstore.tokens import TokenCounter
from tests.conformance.contract import timed_history
from tests.pg_harness import rows

O200K = TokenCounter("o200k_base")
CL100K = TokenCounter("cl100k_base")


def history(count: int) -> list[Message]:
    return timed_history(count, text="第{n}轮：膝盖疼了一周，上下楼梯时明显 🤒 knee pain, turn {n}")


@pytest.fixture
async def sealed(database_url: URL) -> AsyncIterator[PostgresStorage]:
    encryption = Encryption(Keyring({"k1": bytes(range(32))}))
    async with PostgresStorage.from_url(database_url, encryption=encryption) as storage:
        yield storage


async def stored_counts(storage: PostgresStorage) -> list[tuple[object, ...]]:
    return await rows(
        storage.engine.url,
        "SELECT session_id, seq, token_count, token_encoding FROM messages "
        "ORDER BY session_id, seq",
    )


async def test_every_countable_message_is_recounted_once(sealed: PostgresStorage) -> None:
    await sealed.save("a", history(25))
    await sealed.save("b", history(3))
    untimed = Message(role="user", content="a turn id, no time: 膝盖疼", turn_id="t1")
    await sealed.save("legacy", [Message(role="user", content="no turn id, no time"), untimed])
    before = await stored_counts(sealed)
    assert {row[3] for row in before} == {CL100K.count_label, CL100K.untimed_label, None}
    assert before[-1][2:] == (CL100K.untimed_cost(untimed), CL100K.untimed_label)

    report = await recount_store(sealed, O200K, batch_size=7, show=False)
    assert (report.recounted, report.sessions, report.uncountable) == (29, 3, 1)
    assert "recounted 29 messages in 3 sessions with o200k_base" in report.summary()
    after = {(row[0], row[1]): row for row in await stored_counts(sealed)}
    for session_id, messages in (("a", history(25)), ("b", history(3))):
        for position, message in enumerate(messages):
            _, _, count, label = after[(session_id, position)]
            assert (count, label) == (O200K.message_cost(message), O200K.count_label)
    assert after[("legacy", 0)][2:] == (None, None)  # counted when read, with its fill
    assert after[("legacy", 1)][2:] == (O200K.untimed_cost(untimed), O200K.untimed_label)
    assert any(
        O200K.message_cost(m) != CL100K.message_cost(m) for m in history(25)
    )  # the two encodings really differ here

    again = await recount_store(sealed, O200K, show=False)
    assert (again.recounted, again.uncountable) == (0, 1)


async def test_a_storage_counting_with_the_new_encoding_uses_the_counts(
    database_url: URL,
) -> None:
    async with PostgresStorage.from_url(database_url) as old:
        await old.save("a", history(40))
        await recount_store(old, O200K, show=False)
    async with PostgresStorage.from_url(database_url, token_counter=O200K) as new:
        async with new.reader("a") as reader:
            stored = await reader.newest(40, 40)
        assert all(s.token_encoding == O200K.count_label for s in stored)
        contract = await ContextBuilder(new).build("a", "t", "继续", token_budget=900)
        assert O200K.count(contract.to_json()) <= 900
        await new.append("a", history(1))  # written in its own encoding from now on
    assert (await stored_counts(new))[-1][3] == O200K.count_label


def test_the_command_shows_progress_and_refuses_an_unknown_encoding(database_url: URL) -> None:
    env = {**os.environ, "CTXSTORE_DATABASE_URL": database_url.render_as_string(False)}

    def ctxstore(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxstore.cli", *args],
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    import asyncio  # noqa: PLC0415

    async def seed() -> None:
        async with PostgresStorage.from_url(database_url) as storage:
            await storage.save("a", history(12))

    asyncio.run(seed())
    done = ctxstore("recount", "--model", "gpt-4o", "--batch-size", "5")
    assert done.returncode == 0, done.stderr
    assert "recounted 12 messages in 1 session with o200k_base" in done.stdout
    assert "recounting with o200k_base [" in done.stderr and "100%" in done.stderr
    refused = ctxstore("recount", "--encoding", "o300k")
    assert refused.returncode != 0 and "o300k" in refused.stderr
    assert "Traceback" not in refused.stderr
    unknown = ctxstore("recount", "--model", "claude-opus")
    assert unknown.returncode != 0 and "unknown model" in unknown.stderr
