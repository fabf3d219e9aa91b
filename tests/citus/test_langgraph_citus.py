"""LangGraph checkpoints on Citus: the conformance suite in full on a distributed
database, and a graph's thread read and erased as its session (the tables' colocation
with ``sessions`` is checked in test_sharding_citus.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import URL

pytest.importorskip("langgraph.checkpoint.conformance", reason="needs the dev extra")

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.graph import START, MessagesState, StateGraph

from ctxstore.adapters.langgraph import CtxstoreSaver
from ctxstore.storage.postgres import PostgresStorage
from tests.citus.conftest import query


async def test_the_conformance_suite_passes_on_citus(database_url: URL) -> None:
    @checkpointer_test(name="CtxstoreSaver on Citus")
    async def saver() -> AsyncIterator[CtxstoreSaver]:
        async with PostgresStorage.from_url(database_url) as storage:
            yield CtxstoreSaver(storage)

    report = await validate(saver)
    report.print_report()
    assert report.passed_all_base() and report.passed_all()


async def test_a_graphs_thread_is_its_session_on_citus(database_url: URL) -> None:
    def reply(state: MessagesState) -> dict[str, list[AIMessage]]:
        return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", reply)
    builder.add_edge(START, "model")
    async with PostgresStorage.from_url(database_url) as storage:
        graph = builder.compile(checkpointer=CtxstoreSaver(storage))
        config = {"configurable": {"thread_id": "citus-graph", "user_id": "citus-graph-user"}}
        for text in ("膝盖疼", "一周了"):
            await graph.ainvoke({"messages": [HumanMessage(content=text)]}, config)
        assert [m.content for m in await storage.load("citus-graph")] == [
            "膝盖疼", "re: 膝盖疼", "一周了", "re: 一周了"
        ]  # fmt: skip
        await storage.erase_user("citus-graph-user", vacuum=False)
        assert await query(
            database_url, "SELECT count(*) FROM graph_checkpoints WHERE session_id = 'citus-graph'"
        ) == [(0,)]
