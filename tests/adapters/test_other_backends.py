"""The adapters on the other ctxstore backends: the same records, the same answers."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
pytest.importorskip("agents", reason="the agents extra is not installed")

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from ctxstore import MemoryStorage, RedisStorage
from ctxstore.adapters.agents import CtxstoreSession
from ctxstore.adapters.langchain import CtxstoreChatMessageHistory
from ctxstore.storage.store import VersionedStorage

MESSAGES = [
    HumanMessage("Knie — 膝盖", id="h1"),
    AIMessage("", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "c1"}], id="a1"),
    ToolMessage("done", tool_call_id="c1"),
    AIMessage(
        "Rest it.", usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
    ),
]


@pytest.fixture(params=["memory", "redis"])
def storage(request: pytest.FixtureRequest) -> VersionedStorage:
    if request.param == "redis":
        redis: RedisStorage = request.getfixturevalue("redis_storage")
        return redis
    return MemoryStorage()


async def test_langchain_history(storage: VersionedStorage) -> None:
    history = CtxstoreChatMessageHistory("s1", storage)
    await history.aadd_messages(MESSAGES)

    assert await history.aget_messages() == MESSAGES
    assert await CtxstoreChatMessageHistory("s1", storage, window=2).aget_messages() == MESSAGES[2:]
    await history.aclear()
    assert await history.aget_messages() == []


async def test_agents_session(storage: VersionedStorage) -> None:
    session = CtxstoreSession("s2", storage)
    items = [
        {"role": "user", "content": "Knie — 膝盖"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "done"},
    ]
    await session.add_items(items)  # type: ignore[arg-type]

    assert await session.get_items() == items
    assert await session.get_items(limit=1) == items[2:]
    assert await session.pop_item() == items[2]
    assert await session.get_items() == items[:2]
    await session.clear_session()
    assert await session.get_items() == []
