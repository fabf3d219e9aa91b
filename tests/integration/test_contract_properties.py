"""Hypothesis: whatever the history, state, knowledge and budget, the contract fits the
budget exactly as tiktoken counts it, and nothing that would fit is left out."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxstore import ContextBuilder, MemoryStorage, Message, PostgresStorage, TokenCounter
from ctxstore.contract import ContextContract
from ctxstore.errors import ContractBudgetError
from ctxstore.storage.store import VersionedStorage
from ctxstore.tokens import contract_message

COUNTER = TokenCounter()

text = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=60
) | st.sampled_from(["我膝盖有下坠感", "knee gives way 😀", " \n\t ", "", '{"a":[1]}', "'s 're"])
messages = st.lists(
    st.builds(
        lambda role, content, turn, seconds, stamped: Message(
            role=role,
            content=content,
            turn_id=f"turn_{turn}" if stamped else None,
            timestamp=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
            if stamped
            else None,
        ),
        st.sampled_from(["user", "assistant", "system", "tool"]),
        text,
        st.integers(0, 9999),
        st.integers(0, 10**7),
        st.booleans(),
    ),
    max_size=40,
)
states = st.fixed_dictionaries(
    {
        "stage": st.sampled_from(["greeting", "collecting_details", "assessing"]),
        "chief_complaint": st.none() | text,
        "body_parts": st.lists(text, max_size=3),
        "red_flags": st.lists(text, max_size=2),
        "pain_level": st.none() | st.integers(0, 10),
    }
)
knowledge = st.lists(
    st.fixed_dictionaries(
        {
            "title": text,
            "content": text,
            "source": st.sampled_from(["kb/a", "kb/b"]),
            "relevance_score": st.floats(0, 1, allow_nan=False),
        }
    ),
    max_size=5,
)
budgets = st.integers(20, 3000)
summaries = st.none() | text


def tokens(document: dict[str, Any]) -> int:
    return COUNTER.count(ContextContract.model_validate(document).to_json())


def check_contract(
    contract: ContextContract,
    history: list[Message],
    summary: str | None,
    offered: list[dict[str, Any]],
    budget: int,
    created_at: datetime,
) -> None:
    document = contract.model_dump(mode="json")
    assert tokens(document) <= budget
    context = document["context"]
    count = contract.meta.included_message_count
    assert count == len(context["recent_messages"])
    summarized = 1 if contract.meta.summary_version else 0  # the summary covers message 0
    assert [m["content"] for m in context["recent_messages"]] == [
        m.content for m in history[len(history) - count :]
    ]
    if summary is not None:
        included = context.get("conversation_summary") is not None
        assert contract.meta.summary_version == (1 if included else 0)
        if not included:  # it would not have fitted even alone with the required parts
            bare = {**document, "context": {**context, "conversation_summary": summary}}
            bare["context"]["recent_messages"] = []
            bare["context"].pop("retrieved_knowledge", None)
            bare["meta"] = {**document["meta"], "included_message_count": 0, "summary_version": 1}
            assert tokens(bare) > budget
    else:
        assert contract.meta.summary_version == 0
    kept = context.get("retrieved_knowledge") or []
    for item in offered:
        if item not in kept:  # left out: it did not fit before any message was added
            grown = {
                **document,
                "context": {**context, "recent_messages": [], "retrieved_knowledge": [*kept, item]},
                "meta": {**document["meta"], "included_message_count": 0},
            }
            assert tokens(grown) > budget
    if count < len(history) - summarized:  # the next older message would not fit
        position = len(history) - count - 1
        older = history[position]
        element = contract_message(older, f"legacy-{position:06d}", created_at)
        grown = {
            **document,
            "context": {**context, "recent_messages": [element, *context["recent_messages"]]},
            "meta": {**document["meta"], "included_message_count": count + 1},
        }
        assert tokens(grown) > budget


async def build_and_check(
    storage: VersionedStorage,
    history: list[Message],
    state: dict[str, Any],
    summary: str | None,
    offered: list[dict[str, Any]],
    budget: int,
) -> None:
    session_id = f"p-{uuid.uuid4().hex}"
    await storage.save(session_id, history)
    await storage.save_state(session_id, state)
    if summary is not None and history:
        await storage.save_summary(session_id, summary, covers_until=0)
    elif summary is not None:
        summary = None
    async with storage.reader(session_id) as reader:
        created_at = (await reader.head()).created_at
    assert created_at is not None
    builder = ContextBuilder(storage)
    try:
        contract = await builder.build(
            session_id, "turn_x", "现在还疼吗？", retrieved_knowledge=offered, token_budget=budget
        )
    except ContractBudgetError as error:
        assert error.required > budget
        return
    check_contract(contract, history, summary, offered, budget, created_at)
    # The HTTP service's text, made without the models, is the contract's canonical one.
    text = await builder.build_json(
        session_id, "turn_x", "现在还疼吗？", retrieved_knowledge=offered, token_budget=budget
    )
    assert text == contract.to_json()


@settings(max_examples=150, deadline=None)
@given(history=messages, state=states, summary=summaries, offered=knowledge, budget=budgets)
async def test_contract_fits_exactly_on_memory(
    history: list[Message],
    state: dict[str, Any],
    summary: str | None,
    offered: list[dict[str, Any]],
    budget: int,
) -> None:
    await build_and_check(MemoryStorage(), history, state, summary, offered, budget)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=messages, state=states, summary=summaries, offered=knowledge, budget=budgets)
async def test_contract_fits_exactly_on_postgres(
    pg_storage: PostgresStorage,
    history: list[Message],
    state: dict[str, Any],
    summary: str | None,
    offered: list[dict[str, Any]],
    budget: int,
) -> None:
    await build_and_check(pg_storage, history, state, summary, offered, budget)
