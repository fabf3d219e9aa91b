"""Context assembly on PostgreSQL reads only its window, and uses stored token counts."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import URL, text

from ctxstore import ContextBuilder, ContextManager, Message, PostgresStorage, TokenBudget
from ctxstore.storage.base import StoredMessage
from ctxstore.storage.postgres import PostgresSessionReader, sql
from ctxstore.storage.postgres.sql import NEWEST, NEWEST_WITHIN
from ctxstore.tokens import TokenCounter


def long_history(count: int) -> list[Message]:
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=f"第{i}条：膝盖走路时有下坠感。",
            turn_id=f"turn_{i // 2:05d}",
            timestamp="2026-11-29T08:15:02+08:00",
        )
        for i in range(count)
    ]


async def test_token_counts_are_stored_when_messages_are_written(
    pg_storage: PostgresStorage,
) -> None:
    history = long_history(6)
    await pg_storage.save("s", history[:4])
    await pg_storage.append("s", history[4:])
    untimed = Message(role="user", content="a turn id, no time", turn_id="t9")
    await pg_storage.save("s", [*history, Message(role="user", content="no turn id"), untimed])
    async with pg_storage.engine.connect() as conn:
        found = await conn.execute(
            text("SELECT token_count, token_encoding FROM messages ORDER BY seq")
        )
        stored = [(row[0], row[1]) for row in found]
    counter = TokenCounter()
    assert stored[:6] == [(counter.message_cost(m), counter.count_label) for m in history]
    assert all(isinstance(count, int) and count > 10 for count, _ in stored[:6])
    assert stored[6] == (None, None)  # its turn id is filled by position: counted when used
    # Short of the session's creation time, its fill: added when used.
    assert stored[7] == (counter.untimed_cost(untimed), counter.untimed_label)


async def test_a_10000_message_context_reads_only_its_window(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("big", long_history(10_000))
        requested: list[int] = []

        def log(query: Any) -> None:
            for statement in (NEWEST, NEWEST_WITHIN, sql.SESSION_HEAD_AND_DOCUMENTS):
                if query.query == statement.sql:
                    requested.append(query.args[statement.parameters.index("limit")])

        await storage.watch_connections(lambda connection: connection.add_query_logger(log))
        contract = await ContextBuilder(storage).build("big", "t", "继续", token_budget=8000)
        window = await ContextManager(storage).get_context("big", TokenBudget(8000))
    assert contract.meta.included_message_count > 100
    assert len(window.messages) > 100
    assert requested and sum(requested) < 2 * 8000 // 40 + 64  # rows asked for, not 10,000
    print(f"rows requested for two 8,000-token windows of 10,000 messages: {sum(requested)}")


async def test_a_contract_reads_its_head_and_documents_in_one_statement(
    database_url: URL,
) -> None:
    """The head, the latest summary, the state and the user's profile: one statement, not
    four round trips (issue 27: the context route's reads)."""
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("s", long_history(20), user_id="u1")
        await storage.save_summary("s", "早前：膝盖下坠感", covers_until=9)
        await storage.save_state("s", {"stage": "assessing", "pain_level": "4"})
        await storage.save_profile("u1", {"age": 46, "known_limitations": ["膝"]})
        issued: list[str] = []
        await storage.watch_connections(
            lambda connection: connection.add_query_logger(lambda query: issued.append(query.query))
        )
        contract = await ContextBuilder(storage).build("s", "t", "继续", token_budget=8000)
        missing = await ContextBuilder(storage).build("none", "t", "你好", token_budget=8000)
    context = contract.context
    assert context.conversation_summary == "早前：膝盖下坠感"
    assert context.consultation_state.stage == "assessing"
    assert context.user_profile is not None and context.user_profile.age == 46
    assert contract.meta.included_message_count == 10  # after the summary's messages
    assert missing.context.recent_messages == [] and missing.context.user_profile is None
    # The window's first chunk comes with them, and one statement needs no transaction:
    # each build is one round trip (no BEGIN, no COMMIT).
    assert issued == [sql.SESSION_HEAD_AND_DOCUMENTS.sql] * 2


async def test_a_build_whose_session_moves_between_its_reads_reads_again(
    database_url: URL, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head and first chunk are read outside a transaction; a second chunk begins
    one and finds the session rewritten: the build starts over in one transaction and
    serves the new messages only, never a mix of the two."""
    short = [
        Message(role="user" if i % 2 == 0 else "assistant", content=f"旧{i}", turn_id=f"t{i}")
        for i in range(400)
    ]
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("s", short)
        issued: list[str] = []
        await storage.watch_connections(
            lambda connection: connection.add_query_logger(lambda query: issued.append(query.query))
        )
        original = PostgresSessionReader.newest
        rewrites = 0

        async def newest_after_a_rewrite(
            reader: PostgresSessionReader, before: int, limit: int, token_budget: int | None = None
        ) -> list[StoredMessage]:
            nonlocal rewrites
            if reader._window is None and rewrites == 0:  # the second chunk, the first time
                rewrites += 1
                renewed = [m.model_copy(update={"content": f"新{i}"}) for i, m in enumerate(short)]
                await storage.save("s", renewed, expected_version=1)
            return await original(reader, before, limit, token_budget)

        monkeypatch.setattr(PostgresSessionReader, "newest", newest_after_a_rewrite)
        contract = await ContextBuilder(storage).build("s", "t", "继续", token_budget=8000)
    contents = [m.content for m in contract.context.recent_messages]
    assert rewrites == 1 and len(contents) > 216  # past the first chunk (8000 // 40 + 16)
    assert all(text.startswith("新") for text in contents)
    assert contents[-1] == "新399"
    head = sql.SESSION_HEAD_AND_DOCUMENTS.sql
    assert issued.count(head) == 2  # the first try, then the one in a transaction
    begins = [query for query in issued if query.startswith("BEGIN") and "READ ONLY" in query]
    assert len(begins) == 2  # the first try's second chunk, then the second try's head
