"""CtxstoreChatMessageHistory against LangChain's BaseChatMessageHistory, on PostgreSQL."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from ctxstore import MemoryStorage, Message, PostgresStorage
from ctxstore.adapters import call_blocking
from ctxstore.adapters.langchain import KEY, CtxstoreChatMessageHistory
from ctxstore.errors import (
    CorruptDataError,
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    MessageTooLargeError,
)

EVERY_KIND: list[BaseMessage] = [
    SystemMessage("You are a physiotherapy assistant.", id="sys-1"),
    HumanMessage("Mein Knie tut weh — 膝盖疼 🦵", id="h-1", name="patient"),
    AIMessage(
        "",
        id="ai-1",
        name="assistant",
        tool_calls=[{"name": "lookup", "args": {"part": "knee", "depth": [1, 2.5]}, "id": "c1"}],
        invalid_tool_calls=[
            {"name": "bad", "args": "{not json", "id": "c2", "error": "parse", "type": "x"}
        ],
        usage_metadata={
            "input_tokens": 12,
            "output_tokens": 3,
            "total_tokens": 15,
            "input_token_details": {"cache_read": 4},
        },
        additional_kwargs={"refusal": None, "nested": {"a": [True, None, -1]}},
        response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
    ),
    ToolMessage(
        "knee: 3 results", tool_call_id="c1", name="lookup", artifact={"rows": 3}, status="success"
    ),
    ToolMessage([{"type": "text", "text": "part one"}], tool_call_id="c9", status="error"),
    HumanMessage(
        [
            {"type": "text", "text": "what is on this picture?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]
    ),
    ChatMessage("a critic speaks", role="critic"),
    ChatMessage("an assistant speaks", role="assistant"),
    FunctionMessage("42", name="answer"),
    AIMessageChunk("partial", id="chunk-1"),
    RemoveMessage(id="h-1"),
    AIMessage("It may be a sprain.", id="ai-2", response_metadata={"logprobs": None}),
]


# The interface the issue names; LangChain 1.x points new code to LangGraph instead.
_DEPRECATED_IN_LANGCHAIN_1 = pytest.mark.filterwarnings(
    "ignore:RunnableWithMessageHistory is deprecated"
)


def _turn(question: str, answer: str) -> list[BaseMessage]:
    return [HumanMessage(question), AIMessage(answer)]


# -- the interface, asynchronously --------------------------------------------------------


async def test_every_message_kind_round_trips_exactly(pg: PostgresStorage, sid: str) -> None:
    history = CtxstoreChatMessageHistory(sid, pg)
    assert isinstance(history, BaseChatMessageHistory)
    await history.aadd_messages(EVERY_KIND)

    loaded = await CtxstoreChatMessageHistory(sid, pg).aget_messages()

    assert loaded == EVERY_KIND
    assert [type(message) for message in loaded] == [type(message) for message in EVERY_KIND]
    ai = loaded[2]
    assert isinstance(ai, AIMessage)
    assert ai.tool_calls == [
        {
            "name": "lookup",
            "args": {"part": "knee", "depth": [1, 2.5]},
            "id": "c1",
            "type": "tool_call",
        }
    ]
    assert ai.usage_metadata is not None and ai.usage_metadata["total_tokens"] == 15
    assert (ai.id, ai.name, ai.additional_kwargs["nested"]) == (
        "ai-1",
        "assistant",
        {"a": [True, None, -1]},
    )
    tool = loaded[3]
    assert isinstance(tool, ToolMessage)
    assert (tool.tool_call_id, tool.artifact, tool.status) == ("c1", {"rows": 3}, "success")


async def test_context_windows_see_roles_and_text(pg: PostgresStorage, sid: str) -> None:
    """What ctxstore itself reads (roles, content) is the conversation's text."""
    await CtxstoreChatMessageHistory(sid, pg).aadd_messages(EVERY_KIND[:6])

    stored = await pg.load(sid)

    assert [m.role for m in stored] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert stored[1].content == "Mein Knie tut weh — 膝盖疼 🦵"
    assert stored[4].content == "part one"  # list content: its text, the blocks kept whole
    assert stored[5].content == "what is on this picture?"
    assert "content" not in stored[1].metadata[KEY]["document"]  # string content kept once


async def test_a_message_too_big_for_metadata_is_kept_whole(pg: PostgresStorage, sid: str) -> None:
    picture = "data:image/png;base64," + "A" * 100_000  # past the 64 KB metadata limit
    message = HumanMessage([{"type": "image_url", "image_url": {"url": picture}}], id="big")
    history = CtxstoreChatMessageHistory(sid, pg)

    await history.aadd_messages([message, AIMessage("a knee")])

    assert await history.aget_messages() == [message, AIMessage("a knee")]
    stored = await pg.load(sid)
    assert stored[0].metadata == {KEY: {"whole": True}} and picture in stored[0].content


async def test_an_empty_session(pg: PostgresStorage, sid: str) -> None:
    history = CtxstoreChatMessageHistory(sid, pg)

    assert await history.aget_messages() == []
    await history.aadd_messages([])
    await history.aclear()  # clearing nothing is fine

    assert await history.aget_messages() == []
    assert not await pg.exists(sid)  # an empty add creates no session


async def test_clear_removes_every_message_and_the_session_goes_on(
    pg: PostgresStorage, sid: str
) -> None:
    history = CtxstoreChatMessageHistory(sid, pg)
    await history.aadd_messages(_turn("q1", "a1"))

    await history.aclear()
    assert await history.aget_messages() == []
    assert not await pg.exists(sid)

    await history.aadd_messages(_turn("q2", "a2"))
    assert await history.aget_messages() == _turn("q2", "a2")


async def test_sessions_in_one_database_stay_apart(pg: PostgresStorage, sid: str) -> None:
    first, second = CtxstoreChatMessageHistory(sid, pg), CtxstoreChatMessageHistory(sid + "B", pg)
    lower = CtxstoreChatMessageHistory(sid + "b", pg)
    await first.aadd_messages(_turn("cats?", "cats"))
    await second.aadd_messages(_turn("dogs?", "dogs"))
    await lower.aadd_messages(_turn("birds?", "birds"))

    await second.aclear()

    assert await first.aget_messages() == _turn("cats?", "cats")
    assert await second.aget_messages() == []
    assert await lower.aget_messages() == _turn("birds?", "birds")


@pytest.mark.parametrize(("window", "expected"), [(0, 0), (3, 3), (6, 6), (50, 6)])
async def test_window_returns_the_newest_messages_in_order(
    pg: PostgresStorage, sid: str, window: int, expected: int
) -> None:
    turns = [m for i in range(3) for m in _turn(f"q{i}", f"a{i}")]
    await CtxstoreChatMessageHistory(sid, pg).aadd_messages(turns)

    windowed = CtxstoreChatMessageHistory(sid, pg, window=window)

    assert await windowed.aget_messages() == turns[len(turns) - expected :]


async def test_messages_written_by_ctxstore_itself_read_by_role(
    pg: PostgresStorage, sid: str
) -> None:
    await pg.append(
        sid,
        [
            Message(role="system", content="be brief"),
            Message(role="user", content="hello", name="p1"),
            Message(role="assistant", content="hi"),
            Message(role="tool", content="{}", metadata={"tool_call_id": "t1"}),
        ],
    )

    loaded = await CtxstoreChatMessageHistory(sid, pg).aget_messages()

    assert loaded == [
        SystemMessage("be brief"),
        HumanMessage("hello", name="p1"),
        AIMessage("hi"),
        ToolMessage("{}", tool_call_id="t1"),
    ]


async def test_a_corrupt_stored_record_is_a_ctxstore_error(pg: PostgresStorage, sid: str) -> None:
    await pg.append(
        sid, [Message(role="user", content="x", metadata={KEY: {"document": {"type": "nope"}}})]
    )

    with pytest.raises(CorruptDataError, match="cannot be restored") as raised:
        await CtxstoreChatMessageHistory(sid, pg).aget_messages()
    assert raised.value.session_id == sid


@pytest.mark.parametrize(
    ("messages", "error", "match"),
    [
        ("hello", InvalidMessageError, "sequence of LangChain messages"),
        (HumanMessage("hi"), InvalidMessageError, "sequence of LangChain messages"),
        ([{"role": "user", "content": "hi"}], InvalidMessageError, "got dict"),
        ([HumanMessage("nul \x00 inside")], InvalidMessageError, "NUL"),
        ([AIMessage("x", additional_kwargs={"when": {1, 2}})], InvalidMessageError, "set"),
        ([AIMessage("x", additional_kwargs={"n": float("nan")})], InvalidMessageError, "NaN"),
        ([HumanMessage("x" * 300_000)], MessageTooLargeError, "bytes"),
    ],
)
async def test_bad_input_is_refused_with_ctxstore_errors_and_nothing_written(
    pg: PostgresStorage, sid: str, messages: Any, error: type[Exception], match: str
) -> None:
    history = CtxstoreChatMessageHistory(sid, pg)
    with pytest.raises(error, match=match):
        await history.aadd_messages(
            [HumanMessage("before"), *messages] if isinstance(messages, list) else messages
        )
    assert not await pg.exists(sid)


def test_bad_arguments_are_refused() -> None:
    storage = MemoryStorage()
    with pytest.raises(InvalidSessionIdError):
        CtxstoreChatMessageHistory("", storage)
    with pytest.raises(InvalidInputError, match="window"):
        CtxstoreChatMessageHistory("s", storage, window=-1)
    with pytest.raises(InvalidInputError, match="window"):
        CtxstoreChatMessageHistory("s", storage, window=True)


# -- the same interface from synchronous code ---------------------------------------------


def test_the_synchronous_methods(sync_pg: PostgresStorage, sid: str) -> None:
    history = CtxstoreChatMessageHistory(sid, sync_pg)
    assert history.messages == []

    history.add_user_message("Knie — 膝盖")
    history.add_ai_message(AIMessage("How long?", id="ai-7"))
    assert str(history) == "Human: Knie — 膝盖\nAI: How long?"
    history.add_messages(EVERY_KIND)
    assert history.messages == [
        HumanMessage("Knie — 膝盖"),
        AIMessage("How long?", id="ai-7"),
        *EVERY_KIND,
    ]

    history.messages = _turn("replaced", "yes")  # one atomic overwrite
    assert history.messages == _turn("replaced", "yes")

    history.clear()
    assert history.messages == []


async def test_a_synchronous_call_on_the_storages_own_loop_works(
    pg: PostgresStorage, sid: str
) -> None:
    history = CtxstoreChatMessageHistory(sid, pg)
    await history.aadd_messages(_turn("q", "a"))  # this loop now serves the storage

    # the storage moves to its portal thread, which the call waits on
    history.add_messages(_turn("q2", "a2"))
    await asyncio.to_thread(history.add_messages, _turn("q3", "a3"))
    expected = _turn("q", "a") + _turn("q2", "a2") + _turn("q3", "a3")
    assert await history.aget_messages() == expected
    await asyncio.to_thread(call_blocking, pg, pg.close)


# -- inside LangChain ---------------------------------------------------------------------


def _chain(model_inputs: list[list[BaseMessage]], answers: list[str]) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages(
        [("system", "You are brief."), MessagesPlaceholder("history"), ("human", "{question}")]
    )

    def record(value: Any) -> Any:
        model_inputs.append(value.to_messages())
        return value

    chain = prompt | RunnableLambda(record) | FakeListChatModel(responses=answers)
    return chain


def _with_history(chain: Any, storage: PostgresStorage) -> RunnableWithMessageHistory:
    return RunnableWithMessageHistory(
        chain,
        lambda session_id: CtxstoreChatMessageHistory(session_id, storage),
        input_messages_key="question",
        history_messages_key="history",
    )


@_DEPRECATED_IN_LANGCHAIN_1
async def test_runnable_with_message_history_async(pg: PostgresStorage, sid: str) -> None:
    seen: list[list[BaseMessage]] = []
    runnable = _with_history(_chain(seen, ["It is a knee.", "Rest it."]), pg)
    config: Any = {"configurable": {"session_id": sid}}

    first = await runnable.ainvoke({"question": "What hurts?"}, config=config)
    second = await runnable.ainvoke({"question": "What now?"}, config=config)

    assert (first.content, second.content) == ("It is a knee.", "Rest it.")
    assert seen[1][1:3] == [HumanMessage("What hurts?"), AIMessage("It is a knee.", id=first.id)]
    stored = await CtxstoreChatMessageHistory(sid, pg).aget_messages()
    assert [m.content for m in stored] == ["What hurts?", "It is a knee.", "What now?", "Rest it."]
    assert stored[1] == first


@_DEPRECATED_IN_LANGCHAIN_1
def test_runnable_with_message_history_sync(sync_pg: PostgresStorage, sid: str) -> None:
    seen: list[list[BaseMessage]] = []
    runnable = _with_history(_chain(seen, ["One.", "Two."]), sync_pg)
    config: Any = {"configurable": {"session_id": sid}}

    runnable.invoke({"question": "first?"}, config=config)
    runnable.invoke({"question": "second?"}, config=config)

    assert [m.content for m in seen[1]] == ["You are brief.", "first?", "One.", "second?"]
    assert [m.content for m in CtxstoreChatMessageHistory(sid, sync_pg).messages] == [
        "first?",
        "One.",
        "second?",
        "Two.",
    ]


# -- concurrent workers ---------------------------------------------------------------------


async def test_concurrent_appends_lose_no_message(
    pg: PostgresStorage, module_database_url: Any, sid: str
) -> None:
    """Tasks on two pools and threads through a third append turns at once: every turn
    is stored, whole and in order."""
    async with PostgresStorage.from_url(module_database_url) as other:
        sync_storage = PostgresStorage.from_url(module_database_url)

        async def worker(storage: PostgresStorage, name: str) -> None:
            history = CtxstoreChatMessageHistory(sid, storage)
            for n in range(8):
                await history.aadd_messages(_turn(f"{name}-{n}?", f"{name}-{n}!"))

        def thread_worker(name: str) -> None:
            history = CtxstoreChatMessageHistory(sid, sync_storage)
            for n in range(8):
                history.add_messages(_turn(f"{name}-{n}?", f"{name}-{n}!"))

        threads = [threading.Thread(target=thread_worker, args=(f"t{i}",)) for i in range(2)]
        for thread in threads:
            thread.start()
        await asyncio.gather(
            *(worker(pg if i % 2 else other, f"w{i}") for i in range(6)),
        )
        for thread in threads:
            await asyncio.to_thread(thread.join)
        from ctxstore.adapters import call_blocking  # noqa: PLC0415

        call_blocking(sync_storage, sync_storage.close)

    stored = await CtxstoreChatMessageHistory(sid, pg).aget_messages()
    names = [f"w{i}" for i in range(6)] + ["t0", "t1"]
    assert len(stored) == len(names) * 8 * 2
    questions = [m.content for m in stored[0::2]]
    assert [m.content for m in stored[1::2]] == [q.replace("?", "!") for q in questions]
    assert sorted(questions) == sorted(f"{name}-{n}?" for name in names for n in range(8))
    for name in names:  # each worker's turns in the order it sent them
        own = [q for q in questions if q.startswith(f"{name}-")]
        assert own == [f"{name}-{n}?" for n in range(8)]


async def test_user_id_lets_erase_user_remove_the_session(pg: PostgresStorage, sid: str) -> None:
    await CtxstoreChatMessageHistory(sid, pg, user_id=f"user-{sid}").aadd_messages(_turn("q", "a"))

    receipt = await pg.erase_user(f"user-{sid}")

    assert (receipt.sessions, receipt.messages) == (1, 2)
    assert await CtxstoreChatMessageHistory(sid, pg).aget_messages() == []
