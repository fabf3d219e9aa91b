"""CtxstoreSession against the OpenAI Agents SDK's Session protocol, on PostgreSQL."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("agents", reason="the agents extra is not installed")

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem
from agents.memory import Session, SessionSettings
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from ctxstore import MemoryStorage, Message, PostgresStorage
from ctxstore.adapters.agents import KEY, CtxstoreSession
from ctxstore.errors import (
    CorruptDataError,
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
)

ITEMS: list[TResponseInputItem] = [
    {"role": "developer", "content": "Answer briefly."},
    {"role": "user", "content": "Mein Knie tut weh — 膝盖疼 🦵"},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "see picture"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
        ],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "The user hurts."}],
        "encrypted_content": "gAAAAB" + "x" * 200,
    },
    {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "lookup",
        "arguments": '{"part": "knee", "depth": 2}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_1", "output": "3 results: sprain, …"},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [
            {
                "type": "output_text",
                "text": "It may be a sprain.",
                "annotations": [],
                "logprobs": [{"token": "It", "logprob": -0.25, "bytes": [73, 116]}],
            }
        ],
    },
    {"type": "item_reference", "id": "msg_0"},
]


def _texts(*contents: str) -> list[TResponseInputItem]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": c}
        for i, c in enumerate(contents)
    ]


# -- the protocol ---------------------------------------------------------------------------


async def test_it_is_a_session_and_items_round_trip_exactly(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg)
    assert isinstance(session, Session)
    given = copy.deepcopy(ITEMS)

    await session.add_items(given)

    assert given == ITEMS  # the caller's items untouched
    assert await CtxstoreSession(sid, pg).get_items() == ITEMS
    stored = await pg.load(sid)
    assert [m.role for m in stored] == [
        "system",
        "user",
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
        "assistant",
    ]
    assert stored[1].content == "Mein Knie tut weh — 膝盖疼 🦵"
    assert stored[3].content == "The user hurts."  # a list's text, for context windows
    assert stored[5].content == "3 results: sprain, …"
    assert "output" not in stored[5].metadata[KEY]["document"]  # the text is kept once


async def test_direct_operations(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg)
    await session.add_items(_texts("Hello", "Hi there!"))

    assert await session.get_items() == _texts("Hello", "Hi there!")
    assert await session.pop_item() == {"role": "assistant", "content": "Hi there!"}
    assert await session.get_items() == _texts("Hello")

    await session.clear_session()
    assert await session.get_items() == []
    assert not await pg.exists(sid)


async def test_get_items_limits(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg)
    items = _texts("1", "2", "3", "4")
    await session.add_items(items)

    assert await session.get_items(limit=2) == items[2:]
    assert await session.get_items(limit=1) == items[3:]
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=4) == items
    assert await session.get_items(limit=10) == items
    assert await session.get_items() == items
    with pytest.raises(InvalidInputError, match="limit"):
        await session.get_items(limit=-1)


async def test_session_settings_limit_is_the_default(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg, session_settings=SessionSettings(limit=2))
    items = _texts("1", "2", "3")
    await session.add_items(items)

    assert await session.get_items() == items[1:]
    assert await session.get_items(limit=3) == items  # an explicit limit wins


async def test_an_empty_session(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg)

    assert await session.get_items() == []
    assert await session.get_items(limit=3) == []
    assert await session.pop_item() is None
    await session.add_items([])
    await session.clear_session()

    assert not await pg.exists(sid)


async def test_pop_until_empty_then_add_again(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg)
    await session.add_items(ITEMS[:3])

    popped = [await session.pop_item() for _ in range(4)]

    assert popped == [ITEMS[2], ITEMS[1], ITEMS[0], None]
    await session.add_items(ITEMS[3:5])
    assert await session.get_items() == ITEMS[3:5]


async def test_sessions_in_one_database_stay_apart(pg: PostgresStorage, sid: str) -> None:
    upper, lower = CtxstoreSession(sid + "A", pg), CtxstoreSession(sid + "a", pg)
    await upper.add_items(_texts("upper"))
    await lower.add_items(_texts("lower"))

    await upper.pop_item()

    assert await upper.get_items() == []
    assert await lower.get_items() == _texts("lower")


async def test_an_item_too_big_for_metadata_is_kept_whole(pg: PostgresStorage, sid: str) -> None:
    screenshot: TResponseInputItem = {
        "type": "computer_call_output",
        "call_id": "cc_1",
        "output": {
            "type": "computer_screenshot",
            "image_url": "data:image/png;base64," + "A" * 90_000,
        },
    }
    session = CtxstoreSession(sid, pg)

    await session.add_items([screenshot])

    assert await session.get_items() == [screenshot]
    assert (await pg.load(sid))[0].metadata == {KEY: {"whole": True}}


async def test_messages_written_by_ctxstore_itself_read_as_items(
    pg: PostgresStorage, sid: str
) -> None:
    await pg.append(
        sid,
        [
            Message(role="user", content="hello"),
            Message(role="tool", content="42", metadata={"call_id": "c7"}),
        ],
    )

    assert await CtxstoreSession(sid, pg).get_items() == [
        {"role": "user", "content": "hello"},
        {"type": "function_call_output", "call_id": "c7", "output": "42"},
    ]


@pytest.mark.parametrize("content", ["{", "[1, 2]"])
async def test_a_corrupt_stored_record_is_a_ctxstore_error(
    pg: PostgresStorage, sid: str, content: str
) -> None:
    await pg.append(sid, [Message(role="user", content=content, metadata={KEY: {"whole": True}})])

    with pytest.raises(CorruptDataError, match="cannot be restored"):
        await CtxstoreSession(sid, pg).get_items()


@pytest.mark.parametrize(
    ("items", "error", "match"),
    [
        ({"role": "user", "content": "hi"}, InvalidMessageError, "list of items"),
        ("hi", InvalidMessageError, "list of items"),
        (["hi"], InvalidMessageError, "must be a dict"),
        ([{"role": "user", "content": "nul \x00"}], InvalidMessageError, "NUL"),
        (
            [{"type": "function_call_output", "call_id": "c", "output": {1, 2}}],
            InvalidMessageError,
            "set",
        ),
    ],
)
async def test_bad_input_is_refused_with_ctxstore_errors_and_nothing_written(
    pg: PostgresStorage, sid: str, items: Any, error: type[Exception], match: str
) -> None:
    session = CtxstoreSession(sid, pg)
    with pytest.raises(error, match=match):
        await session.add_items([*_texts("before"), *items] if isinstance(items, list) else items)
    assert not await pg.exists(sid)


def test_a_bad_session_id_is_refused() -> None:
    with pytest.raises(InvalidSessionIdError):
        CtxstoreSession("x" * 300, MemoryStorage())


async def test_a_cancelled_write_still_lands_whole(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg)
    task = asyncio.create_task(session.add_items(_texts("q", "a")))
    await asyncio.sleep(0)  # the write has started

    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert await session.get_items() == _texts("q", "a")


# -- concurrency ------------------------------------------------------------------------------


@pytest.fixture
async def second_pool(module_database_url: Any) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(module_database_url) as storage:
        yield storage


async def test_concurrent_poppers_get_each_item_once(
    pg: PostgresStorage, second_pool: PostgresStorage, sid: str
) -> None:
    items = [{"role": "user", "content": f"item {i}"} for i in range(30)]
    await CtxstoreSession(sid, pg).add_items(items)  # type: ignore[arg-type]

    async def popper(storage: PostgresStorage) -> list[Any]:
        session, got = CtxstoreSession(sid, storage), []
        while (item := await session.pop_item()) is not None:
            got.append(item)
        return got

    results = await asyncio.gather(*(popper(pg if i % 2 else second_pool) for i in range(6)))

    popped = [item for result in results for item in result]
    assert sorted(popped, key=lambda item: int(item["content"].split()[1])) == items
    for result in results:  # each popper saw the session shrink from the end
        positions = [int(item["content"].split()[1]) for item in result]
        assert positions == sorted(positions, reverse=True)
    assert await CtxstoreSession(sid, pg).get_items() == []


async def test_pops_and_appends_at_once_lose_and_duplicate_nothing(
    pg: PostgresStorage, second_pool: PostgresStorage, sid: str
) -> None:
    added: list[str] = []
    popped: list[str] = []

    async def appender(storage: PostgresStorage, name: str) -> None:
        session = CtxstoreSession(sid, storage)
        for n in range(10):
            added.append(f"{name}-{n}")
            await session.add_items([{"role": "user", "content": f"{name}-{n}"}])

    async def popper(storage: PostgresStorage) -> None:
        session = CtxstoreSession(sid, storage)
        for _ in range(10):
            item = await session.pop_item()
            if item is not None:
                popped.append(item["content"])  # type: ignore[typeddict-item]

    await asyncio.gather(
        appender(pg, "a"), appender(second_pool, "b"), popper(pg), popper(second_pool)
    )

    remaining = [item["content"] for item in await CtxstoreSession(sid, pg).get_items()]  # type: ignore[typeddict-item]
    assert len(popped) == len(set(popped))
    assert sorted(popped + remaining) == sorted(added)


async def test_concurrent_first_writes_all_land(pg: PostgresStorage, sid: str) -> None:
    session = CtxstoreSession(sid, pg)
    contents = [f"msg-{i}" for i in range(25)]

    await asyncio.gather(*(session.add_items([{"role": "user", "content": c}]) for c in contents))

    stored = [item["content"] for item in await session.get_items()]  # type: ignore[typeddict-item]
    assert sorted(stored) == sorted(contents)


# -- inside the SDK ---------------------------------------------------------------------------


def _text(text: str, item_id: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


async def test_session_settings_given_as_a_mapping_are_the_sdks(
    pg: PostgresStorage, sid: str
) -> None:
    """Issue 30: a dict was kept as it was, so Runner crashed calling .resolve on it, and
    unknown keys were accepted silently."""
    session = CtxstoreSession(sid, pg, session_settings={"limit": 2})
    assert session.session_settings == SessionSettings(limit=2)
    items = _texts("1", "2", "3")
    await session.add_items(items)
    assert await session.get_items() == items[1:]
    for bad in ({"limt": 2}, {"limit": "many"}, ["limit", 2]):
        with pytest.raises(InvalidInputError, match="session_settings"):
            CtxstoreSession(sid, pg, session_settings=bad)  # type: ignore[arg-type]


async def test_runner_takes_session_settings_from_the_run_config(
    pg: PostgresStorage, sid: str
) -> None:
    set_tracing_disabled(True)
    model = FakeModel([[_text("first", "m1")], [_text("second", "m2")]])
    agent = Agent(name="brief", model=model)
    session = CtxstoreSession(sid, pg, session_settings={"limit": 10})
    config = RunConfig(session_settings=SessionSettings(limit=1))

    await Runner.run(agent, "one", session=session, run_config=config)
    await Runner.run(agent, "two", session=session, run_config=config)

    # the model saw the newest stored item only (RunConfig's limit 1, not the session's
    # 10), then the new input
    sent = model.inputs[-1]
    assert [(item.get("role"), item.get("id")) for item in sent] == [
        ("assistant", "m1"),
        ("user", None),
    ]
    assert sent[-1] == {"role": "user", "content": "two"}


class FakeModel(Model):
    """Answers each call with the next scripted output; records what it was sent."""

    def __init__(self, outputs: list[list[Any]]) -> None:
        self.outputs = outputs
        self.inputs: list[list[Any]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.inputs.append(copy.deepcopy(input if isinstance(input, list) else [input]))
        return ModelResponse(output=self.outputs.pop(0), usage=Usage(), response_id=None)

    async def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("not streamed in these tests")
        yield


@function_tool
def lookup(part: str) -> str:
    """Find conditions of a body part."""
    return f"{part}: sprain"


async def test_runner_run_keeps_the_conversation(pg: PostgresStorage, sid: str) -> None:
    set_tracing_disabled(True)
    model = FakeModel(
        [
            [
                ResponseFunctionToolCall(
                    type="function_call",
                    call_id="call_9",
                    name="lookup",
                    arguments='{"part": "knee"}',
                    id="fc_9",
                )
            ],
            [_text("Probably a sprain.", "msg_a")],
            [_text("Rest and ice.", "msg_b")],
        ]
    )
    agent = Agent(name="physio", instructions="Be brief.", model=model, tools=[lookup])
    session = CtxstoreSession(sid, pg)

    first = await Runner.run(agent, "My knee hurts.", session=session)
    second = await Runner.run(agent, "What should I do?", session=session)

    assert (first.final_output, second.final_output) == ("Probably a sprain.", "Rest and ice.")
    last_input = model.inputs[-1]
    assert last_input[0] == {"role": "user", "content": "My knee hurts."}
    assert last_input[-1] == {"role": "user", "content": "What should I do?"}
    items = await CtxstoreSession(sid, pg).get_items()
    kinds = [item.get("type", "message") for item in items]
    assert kinds == [
        "message",
        "function_call",
        "function_call_output",
        "message",
        "message",
        "message",
    ]
    assert items[2]["output"] == "knee: sprain"  # type: ignore[typeddict-item]
    assert items[:-1] == last_input  # what the model was sent is what was stored


async def test_runner_run_on_two_sessions(pg: PostgresStorage, sid: str) -> None:
    set_tracing_disabled(True)
    model = FakeModel(
        [[_text("cats", "m1")], [_text("dogs", "m2")], [_text("You like cats.", "m3")]]
    )
    agent = Agent(name="memory", model=model)
    cats, dogs = CtxstoreSession(sid + "-1", pg), CtxstoreSession(sid + "-2", pg)

    await Runner.run(agent, "I like cats.", session=cats)
    await Runner.run(agent, "I like dogs.", session=dogs)
    result = await Runner.run(agent, "What do I like?", session=cats)

    assert result.final_output == "You like cats."
    sent = str(model.inputs[-1])
    assert "cats" in sent and "dogs" not in sent


async def test_user_id_lets_erase_user_remove_the_session(pg: PostgresStorage, sid: str) -> None:
    await CtxstoreSession(sid, pg, user_id=f"user-{sid}").add_items(_texts("q", "a"))
    await CtxstoreSession(sid + "-other", pg).add_items(_texts("other"))

    receipt = await pg.erase_user(f"user-{sid}")

    assert (receipt.sessions, receipt.messages) == (1, 2)
    assert await CtxstoreSession(sid, pg).get_items() == []
    assert await CtxstoreSession(sid + "-other", pg).get_items() == _texts("other")
