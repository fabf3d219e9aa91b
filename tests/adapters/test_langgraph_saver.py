"""CtxstoreSaver under compiled LangGraph graphs, on the real PostgreSQL: the thread is a
session whose messages are the graph's, written as deltas; time travel, forks, edits,
deletion, erasure and encryption."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest
from sqlalchemy import URL

pytest.importorskip("langgraph", reason="needs the langgraph extra")

from langchain_core.language_models.fake_chat_models import (
    FakeMessagesListChatModel,
)
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from ctxstore.adapters.langgraph import CtxstoreSaver
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import ConfigurationError, CorruptDataError, InvalidInputError
from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.postgres import PostgresStorage

SECRET = "HIV阳性，不想让家人知道"


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    notes: str


def echo(state: State) -> dict[str, Any]:
    """A model that answers each question by quoting it (deterministic)."""
    model = FakeMessagesListChatModel(
        responses=[AIMessage(content=f"re: {state['messages'][-1].content}")]
    )
    return {
        "messages": [model.invoke(state["messages"])],
        "notes": f"turns so far: {len(state['messages'])}",
    }


def compiled(saver: CtxstoreSaver) -> Any:
    builder = StateGraph(State)
    builder.add_node("model", echo)
    builder.add_edge(START, "model")
    return builder.compile(checkpointer=saver)


def thread(sid: str, **more: Any) -> dict[str, Any]:
    return {"configurable": {"thread_id": sid, **more}}


async def raw(storage: PostgresStorage, query: str, *args: Any) -> list[Any]:
    async with storage.driver() as driver:
        return list(await driver.fetch(query, *args))


@pytest.fixture
def writes_counted(pg: PostgresStorage, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """How many messages each append and each full save of ``pg`` wrote."""
    counted: dict[str, list[int]] = {"append": [], "save": []}
    for name in counted:
        original = getattr(pg, name)

        async def spy(
            sid: str,
            messages: Any,
            *args: Any,
            _name: str = name,
            _original: Any = original,
            **kwargs: Any,
        ) -> Any:
            counted[_name].append(len(messages))
            return await _original(sid, messages, *args, **kwargs)

        monkeypatch.setattr(pg, name, spy)
    return counted


async def test_a_conversation_is_the_sessions_messages_written_as_deltas(
    pg: PostgresStorage, sid: str, writes_counted: dict[str, list[int]]
) -> None:
    graph = compiled(CtxstoreSaver(pg))
    for turn in range(3):
        await graph.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]}, thread(sid))

    stored = await pg.load(sid)
    assert [(m.role, m.content) for m in stored] == [
        (role, text)
        for turn in range(3)
        for role, text in (("user", f"q{turn}"), ("assistant", f"re: q{turn}"))
    ]
    # Each checkpoint appended only what was new; the session was never rewritten.
    assert writes_counted["save"] == [0]  # the empty session made for the input checkpoint
    assert sum(writes_counted["append"]) == 6 and max(writes_counted["append"]) <= 2
    # No checkpoint keeps the messages as a blob.
    assert await raw(
        pg,
        "SELECT count(*) FROM graph_channel_values WHERE session_id = $1 AND channel = 'messages'",
        sid,
    ) == [(0,)]
    state = await graph.aget_state(thread(sid))
    assert [m.content for m in state.values["messages"]] == [m.content for m in stored]
    assert state.values["notes"] == "turns so far: 5"


async def test_a_new_saver_reads_the_state_another_wrote(
    module_database_url: URL, pg: PostgresStorage, sid: str
) -> None:
    await compiled(CtxstoreSaver(pg)).ainvoke(
        {"messages": [HumanMessage(content="hello")]}, thread(sid)
    )
    async with PostgresStorage.from_url(module_database_url) as other:
        graph = compiled(CtxstoreSaver(other))
        await graph.ainvoke({"messages": [HumanMessage(content="again")]}, thread(sid))
        state = await graph.aget_state(thread(sid))
    assert [m.content for m in state.values["messages"]] == [
        "hello",
        "re: hello",
        "again",
        "re: again",
    ]
    assert [m.content for m in await pg.load(sid)] == ["hello", "re: hello", "again", "re: again"]


def test_synchronous_graphs_work(sync_pg: PostgresStorage, sid: str) -> None:
    graph = compiled(CtxstoreSaver(sync_pg))
    graph.invoke({"messages": [HumanMessage(content="one")]}, thread(sid))
    graph.invoke({"messages": [HumanMessage(content="two")]}, thread(sid))
    assert [m.content for m in graph.get_state(thread(sid)).values["messages"]] == [
        "one",
        "re: one",
        "two",
        "re: two",
    ]
    assert len(list(graph.get_state_history(thread(sid)))) == 6


async def test_time_travel_forks_and_the_old_branch_still_reads_its_messages(
    pg: PostgresStorage, sid: str
) -> None:
    graph = compiled(CtxstoreSaver(pg))
    for turn in range(3):
        await graph.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]}, thread(sid))
    history = [s async for s in graph.aget_state_history(thread(sid))]
    after_first = next(s for s in history if len(s.values.get("messages", [])) == 2 and not s.next)
    old_head = history[0].config

    await graph.ainvoke({"messages": [HumanMessage(content="fork")]}, after_first.config)

    assert [m.content for m in await pg.load(sid)] == ["q0", "re: q0", "fork", "re: fork"]
    old = await graph.aget_state(old_head)
    assert [m.content for m in old.values["messages"]] == [
        "q0",
        "re: q0",
        "q1",
        "re: q1",
        "q2",
        "re: q2",
    ]
    # Every checkpoint of either branch reads exactly what it held.
    for snapshot in history:
        again = await graph.aget_state(snapshot.config)
        assert again.values == snapshot.values
    # The new branch goes on as deltas.
    await graph.ainvoke({"messages": [HumanMessage(content="next")]}, thread(sid))
    assert [m.content for m in await pg.load(sid)][-2:] == ["next", "re: next"]


async def test_removing_a_message_rewrites_the_session_and_keeps_history(
    pg: PostgresStorage, sid: str
) -> None:
    graph = compiled(CtxstoreSaver(pg))
    await graph.ainvoke({"messages": [HumanMessage(content="keep")]}, thread(sid))
    await graph.ainvoke({"messages": [HumanMessage(content="drop me")]}, thread(sid))
    before = await graph.aget_state(thread(sid))
    dropped = before.values["messages"][2]
    await graph.aupdate_state(thread(sid), {"messages": [RemoveMessage(id=dropped.id)]})

    assert [m.content for m in await pg.load(sid)] == ["keep", "re: keep", "re: drop me"]
    assert (await graph.aget_state(before.config)).values == before.values


async def test_a_message_appended_outside_the_graph_gives_way_to_the_graph(
    pg: PostgresStorage, sid: str
) -> None:
    """The graph's state is the thread's truth: what another writer appended is replaced
    at the next checkpoint, and the checkpoints before still read their own."""
    graph = compiled(CtxstoreSaver(pg))
    await graph.ainvoke({"messages": [HumanMessage(content="a")]}, thread(sid))
    await pg.append(sid, [{"role": "user", "content": "from elsewhere"}])
    await graph.ainvoke({"messages": [HumanMessage(content="b")]}, thread(sid))
    assert [m.content for m in await pg.load(sid)] == ["a", "re: a", "b", "re: b"]


async def test_deleting_the_thread_or_erasing_the_user_leaves_no_checkpoint(
    pg: PostgresStorage, sid: str
) -> None:
    saver = CtxstoreSaver(pg)
    graph = compiled(saver)
    user = f"user-{uuid.uuid4().hex[:8]}"
    other = f"{sid}-other"
    await graph.ainvoke({"messages": [HumanMessage(content="x")]}, thread(sid, user_id=user))
    await graph.ainvoke({"messages": [HumanMessage(content="y")]}, thread(other))

    receipt = await pg.erase_user(user, vacuum=False)
    assert receipt.sessions == 1
    for table in ("graph_checkpoints", "graph_channel_values", "graph_writes"):
        assert await raw(pg, f"SELECT count(*) FROM {table} WHERE session_id = $1", sid) == [(0,)]
    assert await saver.aget_tuple(thread(sid)) is None

    await saver.adelete_thread(other)
    assert not await pg.exists(other)
    assert await raw(pg, "SELECT count(*) FROM graph_checkpoints WHERE session_id = $1", other) == [
        (0,)
    ]


async def test_sealed_storage_keeps_channel_values_and_writes_as_ciphertext(
    module_database_url: URL, sid: str
) -> None:
    encryption = Encryption(Keyring({"k1": os.urandom(32)}))
    async with PostgresStorage.from_url(module_database_url, encryption=encryption) as storage:
        graph = compiled(CtxstoreSaver(storage))
        await graph.ainvoke(
            {"messages": [HumanMessage(content=SECRET)], "notes": SECRET}, thread(sid)
        )
        await graph.aupdate_state(thread(sid), {"notes": f"{SECRET} again"})
        state = await graph.aget_state(thread(sid))
        assert state.values["notes"] == f"{SECRET} again"
        assert state.values["messages"][0].content == SECRET
        dump = ""
        for table in ("graph_checkpoints", "graph_channel_values", "graph_writes", "messages"):
            query = f"SELECT t::text FROM {table} AS t WHERE session_id = $1"
            dump += "\n".join(row[0] for row in await raw(storage, query, sid))
        assert SECRET not in dump and SECRET.encode().hex() not in dump
        # A sealed value moved to another version's row fails its check.
        await raw(
            storage,
            "UPDATE graph_channel_values AS v SET value = (SELECT value FROM graph_channel_values"
            " WHERE session_id = $1 AND channel = 'notes' ORDER BY version LIMIT 1)"
            " WHERE v.session_id = $1 AND v.channel = 'notes' AND v.version = (SELECT"
            " max(version) FROM graph_channel_values WHERE session_id = $1 AND channel = 'notes')",
            sid,
        )
        saver = CtxstoreSaver(storage)
        with pytest.raises(CorruptDataError):
            await saver.aget_tuple(thread(sid))
    async with PostgresStorage.from_url(module_database_url) as without_keys:
        with pytest.raises(ConfigurationError, match="sealed"):
            await CtxstoreSaver(without_keys).aget_tuple(thread(sid))


async def test_bad_configs_and_storages_are_clear_errors(pg: PostgresStorage) -> None:
    saver = CtxstoreSaver(pg)
    with pytest.raises(InvalidInputError, match="thread_id"):
        await saver.aget_tuple({"configurable": {}})
    with pytest.raises(InvalidInputError):
        await saver.aget_tuple(thread("x" * 10_000))
    with pytest.raises(InvalidInputError, match="PostgresStorage"):
        CtxstoreSaver(MemoryStorage())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="strategy"):
        await saver.aprune(["t"], strategy="everything")


async def iterate(source: AsyncIterator[Any]) -> list[Any]:
    return [item async for item in source]


async def test_a_langchain_agent_with_a_tool_keeps_its_conversation_in_the_session(
    pg: PostgresStorage, sid: str, writes_counted: dict[str, list[int]]
) -> None:
    """LangChain 1.x's ``create_agent`` (a model calling a tool, then answering) over two
    turns: every message, tool calls included, is the session's, appended as deltas."""
    agents = pytest.importorskip("langchain.agents", reason="needs langchain (the dev extra)")
    from langchain_core.language_models.fake_chat_models import (  # noqa: PLC0415
        GenericFakeChatModel,
    )
    from langchain_core.messages import ToolMessage  # noqa: PLC0415
    from langchain_core.tools import tool  # noqa: PLC0415

    @tool
    def knee_advice(question: str) -> str:
        """Advice for a knee question."""
        return f"rest and ice ({question})"

    class ToolCallingFake(GenericFakeChatModel):
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    def answers(turn: int) -> list[AIMessage]:
        call = {"name": "knee_advice", "args": {"question": f"q{turn}"}, "id": f"call-{turn}"}
        return [AIMessage(content="", tool_calls=[call]), AIMessage(content=f"answer {turn}")]

    model = ToolCallingFake(messages=iter([*answers(0), *answers(1)]))
    agent = agents.create_agent(model, tools=[knee_advice], checkpointer=CtxstoreSaver(pg))
    for turn in range(2):
        await agent.ainvoke({"messages": [HumanMessage(content=f"q{turn}")]}, thread(sid))

    stored = await pg.load(sid)
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"] * 2
    state = await agent.aget_state(thread(sid))
    restored = state.values["messages"]
    assert restored[1].tool_calls[0]["id"] == "call-0"
    assert isinstance(restored[2], ToolMessage) and restored[2].content == "rest and ice (q0)"
    assert writes_counted["save"] == [0] and sum(writes_counted["append"]) == 8


async def test_the_context_contract_is_built_from_a_graphs_thread(
    pg: PostgresStorage, sid: str
) -> None:
    """The thread is a session like any other: the Context Contract of the next turn
    holds what the graph said, counted and in order."""
    from ctxstore import ContextBuilder  # noqa: PLC0415

    graph = compiled(CtxstoreSaver(pg))
    for turn in range(2):
        await graph.ainvoke({"messages": [HumanMessage(content=f"膝盖 {turn}")]}, thread(sid))
    contract = await ContextBuilder(pg).build(sid, "t-next", "还疼吗", token_budget=8000)
    assert contract.meta.included_message_count == 4
    assert "re: 膝盖 1" in contract.to_json()
