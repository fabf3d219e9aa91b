"""Regressions of the adapter faults the frameworks' own suites found (issue 30,
scripts/framework-suites), on a real PostgreSQL."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from unittest.mock import AsyncMock, MagicMock

import pytest

pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
pytest.importorskip("agents", reason="the agents extra is not installed")

from agents import Agent, Runner
from agents.memory import OpenAIResponsesCompactionSession
from agents.testing import ScriptedModel
from blockbuster import blockbuster_ctx
from langchain_core.messages import AIMessage, HumanMessage
from openai.types.responses import ResponseOutputMessage, ResponseOutputText
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.adapters import call_blocking
from ctxstore.adapters.agents import CtxstoreSession
from ctxstore.adapters.langchain import CtxstoreChatMessageHistory
from ctxstore.adapters.loops import on_home_loop
from ctxstore.db.engine import _file_lookups
from ctxstore.errors import ConfigurationError, InvalidInputError, SessionSettingsError


async def test_a_synchronous_read_inside_async_code_works(
    module_database_url: URL, sid: str
) -> None:
    """LangChain reads ``messages`` synchronously from async code (RunnableWithMessageHistory
    does): on the storage's home loop's own thread, the storage moves to its portal."""
    storage = PostgresStorage.from_url(module_database_url)
    history = CtxstoreChatMessageHistory(sid, storage)
    try:
        await history.aadd_messages([HumanMessage("q")])  # this loop is the home
        assert history.messages == [HumanMessage("q")]
        history.add_messages([AIMessage("a")])
        assert await history.aget_messages() == [HumanMessage("q"), AIMessage("a")]
    finally:
        await asyncio.to_thread(call_blocking, storage, storage.close)


async def test_a_synchronous_call_while_a_call_is_in_flight_on_the_loop_is_refused(
    module_database_url: URL, sid: str
) -> None:
    storage = PostgresStorage.from_url(module_database_url)
    history = CtxstoreChatMessageHistory(sid, storage)
    entered, release = asyncio.Event(), asyncio.Event()

    async def held() -> None:
        entered.set()
        await release.wait()

    try:
        in_flight = asyncio.create_task(on_home_loop(storage, held))
        await entered.wait()
        with pytest.raises(ConfigurationError, match="await the asynchronous method"):
            history.add_messages([HumanMessage("never")])
        release.set()
        await in_flight
        assert await history.aget_messages() == []
    finally:
        await storage.close()


async def test_opening_connections_reads_no_file_on_the_event_loop(
    module_database_url: URL, sid: str
) -> None:
    """asyncpg reads ~/.pgpass and ~/.postgresql's files at every connect when the URL
    gives no password or sslmode: blockbuster (langchain-core's tests run under it) raises
    on any blocking call made on the loop's thread."""
    storage = PostgresStorage.from_url(module_database_url)
    try:
        with blockbuster_ctx():
            await storage.append(sid, [Message(role="user", content="hello")])
            assert [m.content for m in await storage.newest(sid, 5)] == ["hello"]
    finally:
        await storage.close()


def test_the_password_file_is_read_once_off_the_loop(
    tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    passfile = tmp_path / "pgpass"  # type: ignore[operator]
    passfile.write_text("db.example:5433:app:alice:s3cret\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.delenv("PGSSLMODE", raising=False)
    monkeypatch.delenv("PGPASSWORD", raising=False)
    arguments = {"host": "db.example", "port": 5433, "user": "alice", "database": "app"}

    found = _file_lookups(arguments)

    assert found["password"] == "s3cret"
    assert found["ssl"] is not None  # prefer: a context, plain when the server refuses
    assert _file_lookups({**arguments, "password": "given", "ssl": "disable"}) == {}
    assert _file_lookups({**arguments, "user": "bob"})["password"] == ""
    monkeypatch.setenv("PGPASSWORD", "from-the-environment")
    assert _file_lookups(arguments)["password"] == "from-the-environment"


def test_unknown_session_settings_are_the_sdks_type_error_and_a_ctxstore_error(
    sync_pg: PostgresStorage,
) -> None:
    with pytest.raises(TypeError, match="Unknown session settings: limitt") as raised:
        CtxstoreSession("settings", sync_pg, session_settings={"limitt": 1})
    assert isinstance(raised.value, SessionSettingsError)
    assert isinstance(raised.value, InvalidInputError)


def _reply(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


async def test_compaction_of_a_bounded_suffix(pg: PostgresStorage, sid: str) -> None:
    """The SDK's compaction wrapper compacts the model-visible suffix of a session longer
    than its window only over sessions with an atomic suffix replacement
    (``_get_compaction_snapshot``); CtxstoreSession has one, as the SDK's SQL sessions."""
    backend = CtxstoreSession(sid, pg, session_settings={"limit": 20})
    hidden = {"role": "user", "content": "older hidden history"}
    await backend.add_items(
        [hidden]
        + [{"role": "assistant" if i % 2 else "user", "content": f"visible {i}"} for i in range(20)]
    )
    client = MagicMock()
    client.responses.compact = AsyncMock(return_value=SimpleNamespace(output=[]))
    session = OpenAIResponsesCompactionSession(sid, backend, client=client)
    for turn in range(5):
        agent = Agent(name="worker", model=ScriptedModel(steps=[[_reply("done")]]))
        await Runner.run(agent, f"turn {turn}", session=session)

    client.responses.compact.assert_awaited_once()
    assert len(client.responses.compact.call_args.kwargs["input"]) == 22
    assert "older hidden history" not in str(client.responses.compact.call_args.kwargs)
    retained = await backend.get_items(limit=100)
    assert retained[0] == hidden
    assert len(retained) == 9


async def test_a_suffix_changed_since_the_snapshot_is_not_replaced(
    pg: PostgresStorage, sid: str
) -> None:
    session = CtxstoreSession(sid, pg)
    await session.add_items([{"role": "user", "content": f"m{i}"} for i in range(4)])
    snapshot = await session._get_compaction_snapshot(3)
    assert snapshot is not None
    assert not snapshot.complete
    assert [item["content"] for item in snapshot.items] == ["m1", "m2", "m3"]  # type: ignore[typeddict-item]

    await session.add_items([{"role": "user", "content": "newer"}])
    summary = {"type": "compaction", "id": "cmp", "encrypted_content": "s"}
    assert await snapshot.replace_suffix(1, [summary]) is False  # type: ignore[list-item]
    assert len(await session.get_items()) == 5

    fresh = await session._get_compaction_snapshot(10)
    assert fresh is not None and fresh.complete
    assert await fresh.replace_suffix(1, [summary]) is True  # type: ignore[list-item]
    assert await session.get_items() == [{"role": "user", "content": "m0"}, summary]
