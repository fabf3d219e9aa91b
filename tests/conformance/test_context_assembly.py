"""Context assembly on every backend that keeps whole consultations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import (
    ContextBuilder,
    ContextManager,
    FallbackStorage,
    MemoryStorage,
    Message,
    SlidingWindow,
    SummarizeOldest,
    TokenBudget,
    TokenCounter,
)
from ctxstore.context.compression import cost_of, extractive_summarizer, message_cost
from ctxstore.contract import EXAMPLE, ContextContract, serialize_parts
from ctxstore.errors import ContractBudgetError, InvalidInputError
from ctxstore.storage.base import SessionHead, StoredMessage
from ctxstore.storage.store import VersionedStorage
from ctxstore.timestamps import go_timestamp
from ctxstore.tokens import _head_cost, contract_message, element_json, split_before_key
from tests.conformance.contract import DEFAULT_LIMITS, KNEE_STATE
from tests.conformance.test_fallback import unreachable_postgres

CST = timezone(timedelta(hours=8))
COUNTER = TokenCounter()


def conversation(count: int, start: int = 0) -> list[Message]:
    base = datetime(2026, 11, 29, 8, 0, tzinfo=CST)
    return [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=f"第{i}条：膝盖走路时有下坠感，上下楼梯更明显。" if i % 2 == 0 else f"回答{i}",
            turn_id=f"turn_{i // 2:04d}",
            timestamp=base + timedelta(seconds=30 * i),
        )
        for i in range(start, start + count)
    ]


def exact_tokens(contract: ContextContract) -> int:
    return COUNTER.count(contract.to_json())


async def test_sliding_window_serves_the_newest_messages(storage: VersionedStorage) -> None:
    await storage.save("s", conversation(30))
    await storage.save_summary("s", "早先的总结", covers_until=9)
    window = await ContextManager(storage).get_context("s", SlidingWindow(8))
    assert window.messages == conversation(30)[-8:]
    assert window.first_position == 22
    assert window.summary is not None and window.summary.text == "早先的总结"
    assert (window.total_messages, window.summary_version) == (30, 1)


async def test_token_budget_keeps_the_newest_that_fit(storage: VersionedStorage) -> None:
    history = conversation(40)
    await storage.save("s", history)
    costs = [COUNTER.element_cost(contract_message(m, "", m.timestamp)) for m in history]  # type: ignore[arg-type]
    budget = sum(costs[-7:]) + costs[-8] - 1  # seven fit, the eighth doesn't
    window = await ContextManager(storage).get_context("s", TokenBudget(budget))
    assert window.messages == history[-7:]
    assert window.token_count == sum(costs[-7:])
    assert (await ContextManager(storage).get_context("missing", TokenBudget(100))).messages == []


async def test_summarize_oldest_folds_history_into_versions(storage: VersionedStorage) -> None:
    calls: list[tuple[int, str | None]] = []
    summarize = extractive_summarizer()

    async def recording(messages: Sequence[Message], previous: str | None) -> str:
        calls.append((len(messages), previous))
        return await summarize(messages, previous)

    strategy = SummarizeOldest(recording, keep_recent=4, trigger_tokens=500)
    manager = ContextManager(storage, strategy=strategy)
    await storage.save("s", conversation(6))
    quiet = await manager.get_context("s")
    assert calls == [] and quiet.summary is None and len(quiet.messages) == 6
    await storage.save("s", conversation(20))
    first = await manager.get_context("s")
    assert calls == [(16, None)]
    assert first.summary is not None and first.summary.summary_version == 1
    assert first.summary.covers_until == 15
    assert first.messages == conversation(20)[16:]
    assert "第0条" in first.summary.text
    await storage.save("s", conversation(40))
    second = await manager.get_context("s")
    assert calls[-1] == (20, first.summary.text)
    assert second.summary is not None and second.summary.summary_version == 2
    assert second.messages == conversation(40)[36:]
    again = await manager.get_context("s")
    assert len(calls) == 2 and again.summary_version == 2  # under the trigger: no new summary


async def test_builder_assembles_every_part(storage: VersionedStorage) -> None:
    await storage.save_profile("u1", {"age": 34, "gender": "female", "known_limitations": []})
    await storage.save("s", conversation(12), user_id="u1")
    await storage.save_summary("s", "膝盖下坠感一周。", covers_until=3)
    await storage.save_state("s", KNEE_STATE)
    knowledge = [
        {"title": "低相关", "content": "……", "source": "kb/b", "relevance_score": 0.2},
        {
            "title": "膝关节不稳",
            "content": "常见于前交叉韧带损伤。",
            "source": "kb/a",
            "relevance_score": 0.9,
        },
    ]
    contract = await ContextBuilder(storage).build(
        "s", "turn_0006", "还会疼吗？", retrieved_knowledge=knowledge, token_budget=8000
    )
    text = await ContextBuilder(storage).build_json(
        "s", "turn_0006", "还会疼吗？", retrieved_knowledge=knowledge, token_budget=8000
    )
    assert text == contract.to_json()  # the same canonical text, without the models
    assert contract.user_message == "还会疼吗？"
    assert contract.context.consultation_state.model_dump() == KNEE_STATE
    assert contract.context.user_profile is not None and contract.context.user_profile.age == 34
    assert contract.context.conversation_summary == "膝盖下坠感一周。"
    assert [k.title for k in contract.context.retrieved_knowledge or []] == ["膝关节不稳", "低相关"]
    assert [m.content for m in contract.context.recent_messages] == [
        m.content
        for m in conversation(12)[4:]  # the summary covers 0-3
    ]
    assert contract.meta.included_message_count == 8
    assert contract.meta.summary_version == 1
    assert contract.meta.token_budget == 8000
    assert exact_tokens(contract) <= 8000


@pytest.mark.parametrize("timed", [True, False], ids=["timed", "untimed"])
async def test_builder_fills_the_budget_newest_first(
    storage: VersionedStorage, timed: bool
) -> None:
    # Untimed: a turn id and no time, stored counts short of the session's fill time.
    history = [m if timed else m.model_copy(update={"timestamp": None}) for m in conversation(200)]
    await storage.save("s", history)
    for budget in (400, 900, 2500):
        contract = await ContextBuilder(storage).build("s", "t", "继续", token_budget=budget)
        count = contract.meta.included_message_count
        assert exact_tokens(contract) <= budget
        assert [m.content for m in contract.context.recent_messages] == [
            m.content for m in history[200 - count :]
        ]
        one_more = contract.model_dump(mode="json")
        fill = one_more["context"]["recent_messages"][0]["timestamp"]  # untimed: the fill's
        extra = history[200 - count - 1]
        one_more["context"]["recent_messages"].insert(
            0, contract_message(extra, "", datetime.now(UTC), fill)
        )
        one_more["meta"]["included_message_count"] = count + 1
        assert exact_tokens(ContextContract.model_validate(one_more)) > budget


async def test_required_parts_over_budget_say_by_how_much(storage: VersionedStorage) -> None:
    await storage.save("s", conversation(2))
    with pytest.raises(ContractBudgetError) as caught:
        await ContextBuilder(storage).build("s", "t", "很长的问题" * 200, token_budget=50)
    assert caught.value.required > 50
    assert f"{caught.value.required - 50} over" in str(caught.value)


async def test_a_new_session_gets_the_initial_state(storage: VersionedStorage) -> None:
    contract = await ContextBuilder(storage).build("brand-new", "t1", "你好")
    assert contract.context.recent_messages == []
    assert contract.context.consultation_state.stage == "greeting"
    assert (contract.meta.included_message_count, contract.meta.summary_version) == (0, 0)


async def test_legacy_messages_get_deterministic_turn_ids_and_times(
    storage: VersionedStorage,
) -> None:
    await storage.save(
        "legacy",
        [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}],
    )
    builder = ContextBuilder(storage)
    first = await builder.build("legacy", "t", "继续")
    second = await builder.build("legacy", "t", "继续")
    messages = first.context.recent_messages
    assert [m.turn_id for m in messages] == ["legacy-000000", "legacy-000001"]
    assert messages[0].timestamp == messages[1].timestamp  # the session's creation time
    assert datetime.fromisoformat(messages[0].timestamp).utcoffset() is not None
    assert first == second
    assert exact_tokens(first) <= first.meta.token_budget


def test_the_canonical_layout_puts_each_array_element_on_its_own_line() -> None:
    lines = ContextContract.model_validate(EXAMPLE).to_json().split("\n")
    assert lines[0].endswith('"recent_messages":[')
    assert lines[1].startswith('{"role":"user"')
    assert lines[2].startswith(',{"role":"assistant"')
    assert lines[3].startswith("]") and lines[3].endswith('"retrieved_knowledge":[')
    assert lines[4].startswith('{"title":')
    assert lines[5].startswith("]}")


# -- token counts know their encoding ---------------------------------------------------------


@dataclass(frozen=True)
class CharCounter(TokenCounter):
    """Counts characters: "another encoding" that needs no download.

    o200k_base is the real other encoding (also tested here); this one makes the point
    for any counter: a contract's character count splits exactly like its token count
    (skeleton + each element, minus the first element's comma), so the builder's exact
    accounting holds for it too, and its counts differ from cl100k_base's for every
    message here.
    """

    encoding_name: str = "test-characters"

    def count(self, text: str) -> int:
        return len(text)

    @property
    def first_element_saving(self) -> int:
        return 1  # the comma the first element goes without


def other_counter(name: str) -> TokenCounter:
    if name == "characters":
        return CharCounter()
    return TokenCounter(name)  # o200k_base ships with ctxstore: it loads offline


OTHER_COUNTERS = pytest.mark.parametrize("counter_name", ["characters", "o200k_base"])


def test_a_stored_count_is_used_only_with_its_own_encoding() -> None:
    message = conversation(1)[0]
    real = COUNTER.message_cost(message)
    assert real is not None
    same = StoredMessage(0, message, 999, COUNTER.count_label)
    assert cost_of(same, COUNTER) == 999  # trusted: no recount
    assert cost_of(StoredMessage(0, message, 999, "o200k_base"), COUNTER) == real
    assert cost_of(StoredMessage(0, message, 999), COUNTER) == real  # encoding unknown
    assert cost_of(same, CharCounter()) == CharCounter().message_cost(message) != 999
    legacy = Message(role="user", content="你好")
    assert cost_of(StoredMessage(0, legacy, None, COUNTER.count_label), COUNTER) is None
    # A count in the same encoding made before times were written as Go writes them.
    assert cost_of(StoredMessage(0, message, 999, COUNTER.encoding_name), COUNTER) == real


async def test_context_counts_with_the_storages_counter_by_default(
    storage: VersionedStorage,
) -> None:
    own = storage.token_counter  # type: ignore[attr-defined]
    assert ContextBuilder(storage).counter is own
    assert ContextManager(storage).token_counter is own
    other = CharCounter()
    assert ContextBuilder(storage, token_counter=other).counter is other
    assert ContextManager(storage, token_counter=other).token_counter is other


async def test_a_model_counts_the_context_in_its_encoding(storage: VersionedStorage) -> None:
    assert ContextBuilder(storage, model="gpt-4o").counter == TokenCounter("o200k_base")
    assert ContextManager(storage, model="gpt-4.1").token_counter == TokenCounter("o200k_base")
    assert ContextBuilder(storage, model="gpt-4").counter == TokenCounter("cl100k_base")
    with pytest.raises(InvalidInputError, match="not both"):
        ContextBuilder(storage, model="gpt-4o", token_counter=CharCounter())
    with pytest.raises(InvalidInputError, match="unknown model"):
        ContextManager(storage, model="not-a-model")
    await storage.save("s", conversation(60))
    contract = await ContextBuilder(storage, model="gpt-4o").build(
        "s", "t", "继续", token_budget=1500
    )
    assert TokenCounter("o200k_base").count(contract.to_json()) <= 1500


@OTHER_COUNTERS
async def test_a_builder_in_another_encoding_fits_its_budget_exactly(
    storage: VersionedStorage, counter_name: str
) -> None:
    counter = other_counter(counter_name)
    assert storage.token_counter.encoding_name == COUNTER.encoding_name  # type: ignore[attr-defined]
    history = conversation(200)
    await storage.save("s", history)
    await storage.save_summary("s", "膝盖下坠感一周，走路时明显。", covers_until=9, token_count=3)
    stored = [COUNTER.message_cost(m) for m in history]
    recounted = [counter.message_cost(m) for m in history]
    assert stored != recounted  # trusting the stored counts would show
    builder = ContextBuilder(storage, token_counter=counter)
    for budget in (900, 2500, 6000):
        contract = await builder.build("s", "t", "继续", token_budget=budget)
        count = contract.meta.included_message_count
        assert 0 < count < 190
        assert counter.count(contract.to_json()) <= budget
        assert [m.content for m in contract.context.recent_messages] == [
            m.content for m in history[200 - count :]
        ]
        one_more = contract.model_dump(mode="json")
        extra = history[200 - count - 1]
        one_more["context"]["recent_messages"].insert(
            0, contract_message(extra, "", cast(datetime, extra.timestamp))
        )
        one_more["meta"]["included_message_count"] = count + 1
        assert counter.count(ContextContract.model_validate(one_more).to_json()) > budget


@OTHER_COUNTERS
async def test_a_window_in_another_encoding_counts_with_it(
    storage: VersionedStorage, counter_name: str
) -> None:
    counter = other_counter(counter_name)
    history = conversation(40)
    await storage.save("s", history)
    costs = [counter.message_cost(m) or 0 for m in history]
    budget = sum(costs[-7:]) + costs[-8] - 1  # seven fit, the eighth doesn't
    manager = ContextManager(storage, token_counter=counter)
    window = await manager.get_context("s", TokenBudget(budget))
    assert window.messages == history[-7:]
    assert window.token_count == sum(costs[-7:])


async def test_summarizing_decides_with_the_managers_counter(storage: VersionedStorage) -> None:
    history = conversation(20)
    await storage.save("s", history)
    own = sum(COUNTER.message_cost(m) or 0 for m in history)
    chars = sum(CharCounter().message_cost(m) or 0 for m in history)
    assert own < chars
    strategy = SummarizeOldest(extractive_summarizer(), keep_recent=4, trigger_tokens=own + 1)
    quiet = await ContextManager(storage, strategy=strategy).get_context("s")
    assert quiet.summary is None  # under the trigger in the storage's encoding
    counted = ContextManager(storage, strategy=strategy, token_counter=CharCounter())
    window = await counted.get_context("s")
    assert window.summary is not None and window.summary.covers_until == 15
    assert window.messages == history[16:]
    # The stored count is in the storage's encoding, like its message counts.
    assert window.summary.token_count == COUNTER.count(window.summary.text)


# -- the manager over any VersionedStorage ------------------------------------------------------


class PlainStorage:
    """A VersionedStorage with nothing beyond the protocol: no knowledge, no counter."""

    def __init__(self, inner: VersionedStorage) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("knowledge", "token_counter"):
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_the_manager_appends_without_reading_the_version(
    storage: VersionedStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    await storage.append("s", conversation(2))

    async def unread(session_id: str) -> int:
        raise AssertionError("an append needs no version")

    monkeypatch.setattr(storage, "version", unread)
    manager = ContextManager(storage)
    assert await manager.add_messages("s", conversation(2, start=2)) == 2
    assert await manager.add_message("s", conversation(1, start=4)[0]) == 3
    assert await storage.load("s") == conversation(5)


async def test_the_manager_works_over_a_storage_without_knowledge(
    storage: VersionedStorage,
) -> None:
    plain = cast(VersionedStorage, PlainStorage(storage))
    manager = ContextManager(plain)
    assert manager.token_counter.encoding_name == COUNTER.encoding_name
    assert await manager.add_messages("s", conversation(2)) == 1
    await storage.append("s", conversation(1, start=2))  # another writer
    assert await manager.add_message("s", conversation(1, start=3)[0]) == 3  # no conflict
    window = await manager.get_context("s", SlidingWindow(3))
    assert window.messages == conversation(4)[1:]
    contract = await ContextBuilder(plain).build("s", "t", "继续")
    assert contract.meta.included_message_count == 4


@pytest.mark.parametrize("degraded", [False, True], ids=["healthy", "degraded"])
async def test_the_manager_and_builder_work_over_a_fallback_storage(degraded: bool) -> None:
    primary = unreachable_postgres(None, DEFAULT_LIMITS) if degraded else MemoryStorage()
    async with FallbackStorage(primary, MemoryStorage(), probe_interval=3600) as fallback:
        manager = ContextManager(fallback)
        assert manager.token_counter is fallback.token_counter
        assert await manager.add_messages("s", conversation(4)) == 1
        assert await manager.add_message("s", conversation(1, start=4)[0]) == 2
        window = await manager.get_context("s", SlidingWindow(3))
        assert window.messages == conversation(5)[2:]
        contract = await ContextBuilder(fallback).build("s", "t", "继续")
        assert contract.meta.included_message_count == 5
        assert fallback.degraded is degraded


def test_a_filled_cost_kept_per_process_is_the_cost_of_that_very_fill() -> None:
    created = datetime(2026, 11, 29, 0, 0, tzinfo=UTC)
    untimed = [
        Message(role="user", content="膝盖疼", turn_id="t1"),
        Message(role="user", content="膝盖疼"),  # its turn id is filled by position
        Message(role="assistant", content="膝盖疼", turn_id="t1"),
    ]
    for head in (
        SessionHead(True, 1, 3, created, None),
        SessionHead(True, 1, 3, created + timedelta(microseconds=1), None),
        SessionHead(True, 1, 3, created.astimezone(CST), None),  # same instant, +08:00
    ):
        for counter in (COUNTER, CharCounter(), TokenCounter("o200k_base")):
            for position in (7, 123456):
                for message in untimed:
                    stored = StoredMessage(position, message, None)
                    turn_id = message.turn_id or f"legacy-{position:06d}"
                    element = contract_message(message, turn_id, head.created_at)  # type: ignore[arg-type]
                    expected = counter.element_cost(element)
                    assert message_cost(stored, head, counter) == expected  # counted
                    assert message_cost(stored, head, counter) == expected  # kept
                    written = StoredMessage(position, message, *counter.stored_cost(message))
                    assert message_cost(written, head, counter) == expected  # stored


UNTIMED_TEXT = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40
)


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@settings(max_examples=300, deadline=None)
@given(
    content=UNTIMED_TEXT,
    turn_id=UNTIMED_TEXT.filter(bool),
    role=st.sampled_from(["user", "assistant", "system"]),
    seconds=st.integers(min_value=0, max_value=4_000_000_000),
    micros=st.integers(min_value=0, max_value=999_999),
    offset_minutes=st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_an_untimed_count_and_its_fill_are_the_whole_cost(
    encoding: str,
    content: str,
    turn_id: str,
    role: str,
    seconds: int,
    micros: int,
    offset_minutes: int,
) -> None:
    counter = TokenCounter(encoding)
    message = Message(role=role, content=content, turn_id=turn_id)
    zone = timezone(timedelta(minutes=offset_minutes))
    created = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds, microseconds=micros)
    created = created.astimezone(zone)
    whole = counter.element_cost(contract_message(message, "", created))
    count, label = counter.stored_cost(message)
    assert label == counter.untimed_label != counter.count_label
    assert count == counter.untimed_cost(message)
    assert count + counter.fill_cost(go_timestamp(created)) == whole


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@settings(max_examples=300, deadline=None)
@given(
    content=UNTIMED_TEXT,
    turn_id=UNTIMED_TEXT.filter(bool),
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    timestamp=st.none()
    | st.datetimes(timezones=st.sampled_from([UTC, CST, timezone(timedelta(hours=-3))])),
)
def test_a_stored_count_is_the_whole_elements_count(
    encoding: str, content: str, turn_id: str, role: str, timestamp: datetime | None
) -> None:
    # stored_cost counts the element in parts (cut before its keys, some parts cached):
    # the parts add up to the count of the element's whole text, as the contract has it.
    counter = TokenCounter(encoding)
    message = Message(role=role, content=content, turn_id=turn_id, timestamp=timestamp)
    fill = datetime(2026, 11, 29, 8, 15, 2, 123456, tzinfo=CST)
    whole = counter.count("," + element_json(contract_message(message, "", fill)) + "\n")
    for _again in range(2):  # counted, then from the cache
        count, label = counter.stored_cost(message)
        if timestamp is None:
            assert label == counter.untimed_label
            assert count is not None
            assert count + counter.fill_cost(go_timestamp(fill)) == whole
        else:
            assert (count, label) == (whole, counter.count_label)
            assert counter.message_cost(message) == whole


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
@settings(max_examples=300, deadline=None)
@given(
    session_id=UNTIMED_TEXT.filter(bool),
    turn_id=UNTIMED_TEXT.filter(bool),
    user_message=UNTIMED_TEXT,
    complaint=UNTIMED_TEXT,
)
def test_a_skeleton_counts_as_its_request_and_the_rest(
    encoding: str, session_id: str, turn_id: str, user_message: str, complaint: str
) -> None:
    counter = TokenCounter(encoding)
    state = {**EXAMPLE["context"]["consultation_state"], "chief_complaint": complaint}
    skeleton = {
        **EXAMPLE,
        "session_id": session_id,
        "turn_id": turn_id,
        "user_message": user_message,
        "context": {**EXAMPLE["context"], "consultation_state": state},
    }
    text = serialize_parts(skeleton, [], None)
    request, rest = split_before_key(text, "context")
    assert request.startswith('{"session_id":') and rest.startswith('context":{')
    assert request + rest == text
    assert counter.count(request) + counter.count(rest) == counter.count(text)


def test_a_long_turn_id_is_counted_whole_and_not_kept() -> None:
    # Only the element's head, one per role, is cached: a hostile writer's megabyte turn
    # ids must not pile up in the process.
    counter = TokenCounter()
    time = datetime(2026, 1, 1, tzinfo=UTC)
    counter.untimed_cost(Message(role="user", content="膝盖疼", turn_id="t1"))
    cached = _head_cost.cache_info().currsize  # the role's head, once
    for turn_id in ("短" * 300, "t" * 100_000):
        message = Message(role="user", content="膝盖疼", turn_id=turn_id)
        whole = counter.count("," + element_json(contract_message(message, "", time)) + "\n")
        count, _label = counter.stored_cost(message)
        assert count is not None
        assert count + counter.fill_cost(go_timestamp(time)) == whole
        timed = message.model_copy(update={"timestamp": time})
        assert counter.message_cost(timed) == whole
    assert _head_cost.cache_info().currsize == cached  # no turn id kept


@dataclass(frozen=True)
class _UnhashableCounter(TokenCounter):
    """A counter with a list among its fields: it can't be a cache key."""

    encoding_name: str = "chars-unhashable"
    notes: list[str] = field(default_factory=list)

    def count(self, text: str) -> int:
        return len(text)


def test_a_counter_that_cant_be_hashed_still_counts_every_message() -> None:
    counter = _UnhashableCounter()
    time = datetime(2026, 1, 1, 8, tzinfo=CST)
    for stamp in (None, time):
        message = Message(role="tool", content="膝盖疼", turn_id="t1", timestamp=stamp)
        whole = len("," + element_json(contract_message(message, "", time)) + "\n")
        count, _label = counter.stored_cost(message)
        assert count is not None
        assert count + (counter.fill_cost(go_timestamp(time)) if stamp is None else 0) == whole


def test_a_cut_before_a_key_needs_a_word_and_the_key() -> None:
    assert split_before_key('{"a":1,"b":{}}', "b") == ('{"a":1,"', 'b":{}}')
    quoted = json.dumps({"a": ',"b":'})  # the key's text inside a string
    assert split_before_key(quoted, "b") == ("", quoted)
    with pytest.raises(ValueError, match="letter"):
        split_before_key("{}", "_b")


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_a_skeletons_tokens_change_with_its_message_count_by_the_counts_digits(
    encoding: str,
) -> None:
    counter = TokenCounter(encoding)
    meta = dict(EXAMPLE["meta"])
    for count in [*range(0, 1200, 7), 9999, 10000, 123456, 2**31 - 1]:
        document = {**EXAMPLE, "meta": {**meta, "included_message_count": count}}
        zero = {**EXAMPLE, "meta": {**meta, "included_message_count": 0}}
        whole = counter.count(json.dumps(document, ensure_ascii=False, separators=(",", ":")))
        base = counter.count(json.dumps(zero, ensure_ascii=False, separators=(",", ":")))
        assert whole == base - counter.count("0") + counter.count(str(count))
