"""ContextBuilder: assembles the Context Contract within a token budget.

Fill order (docs/context-contract.md): the required parts (user message, consultation
state, user profile), then the summary, then retrieved knowledge by relevance, then
recent messages newest first until the budget is used.  Token accounting is exact: see
ctxstore/tokens.py for why the contract's count is its skeleton's count plus each array
element's own count.

The builder counts with the storage's counter unless given another.  Message counts
stored with that counter's encoding are used as they are; any other message is counted
now (``cost_of``).  The summary's stored count is never used: the summary is part of the
skeleton, which is counted whole with the builder's counter (its text, JSON-escaped, in
place), so its cost is exact whichever encoding stored it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError

from ctxstore.context.compression import chosen_counter, message_cost, walk_newest
from ctxstore.contract import (
    CONTEXT_VERSION,
    ContextContract,
    ContractMessage,
    KnowledgeItem,
    serialize_document,
    serialize_parts,
    state_document,
)
from ctxstore.errors import ContractBudgetError, InvalidInputError
from ctxstore.models import ROLES, ConsultationState
from ctxstore.storage.base import (
    SessionHead,
    SnapshotMoved,
    StoredMessage,
    WindowHint,
    check_session_id,
)
from ctxstore.storage.ledger import ContractRecord, LedgerEntry, Provenance
from ctxstore.storage.store import VersionedStorage
from ctxstore.textcheck import text_problem
from ctxstore.timestamps import go_timestamp
from ctxstore.tokens import TokenCounter, legacy_fill, split_before_key

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

#: The state of a consultation that has none stored yet.
INITIAL_STATE = ConsultationState(stage="greeting")


@dataclass
class _Plan:
    """What the contract will hold, and its exact token count."""

    skeleton: dict[str, Any]
    summary_version: int
    #: The skeleton's tokens with no message counted: the skeleton is the plan's for the
    #: whole build, only the count in meta changes.
    zero_tokens: int
    knowledge: list[dict[str, Any]]
    knowledge_tokens: int
    messages: list[StoredMessage]
    message_tokens: list[int]
    created_at: datetime = _EPOCH
    #: What the contract is built from, for the ledger (storage/ledger.py).
    head: SessionHead | None = None
    state_version: int = 0
    profile_version: int | None = None


class ContextBuilder:
    """Builds Context Contracts from a VersionedStorage.

    ``token_counter`` (the encoding ``meta.token_budget`` is measured in) defaults to the
    encoding of ``model`` when given (``model="gpt-4o"``: o200k_base), else the storage's own.
    ``record``: every contract built is added to the session's ledger (each call may say
    otherwise), with ``model`` and the encoding (storage/ledger.py; PostgreSQL only).
    """

    def __init__(
        self,
        storage: VersionedStorage,
        *,
        token_counter: TokenCounter | None = None,
        model: str | None = None,
        initial_state: ConsultationState = INITIAL_STATE,
        record: bool = False,
    ) -> None:
        self.storage = storage
        self.counter = chosen_counter(storage, token_counter, model)
        self.initial_state = initial_state
        self.model = model
        self.record = record

    async def build(
        self,
        session_id: str,
        turn_id: str,
        user_message: str,
        retrieved_knowledge: Sequence[KnowledgeItem | Mapping[str, Any]] = (),
        token_budget: int = 8000,
        *,
        record: bool | None = None,
        model: str | None = None,
    ) -> ContextContract:
        """The contract; ``record`` (default: the builder's): its text, ``to_json()``,
        added to the ledger first, with ``model``, the model the call is for (default:
        the builder's)."""
        plan = await self._plan(
            session_id, turn_id, user_message, retrieved_knowledge, token_budget
        )
        if self.record if record is None else record:
            await self._record(plan, serialize_document(_document(plan)), model)
        return ContextContract.model_validate(_document(plan, _trusted_message))

    async def build_json(
        self,
        session_id: str,
        turn_id: str,
        user_message: str,
        retrieved_knowledge: Sequence[KnowledgeItem | Mapping[str, Any]] = (),
        token_budget: int = 8000,
        *,
        record: bool | None = None,
        model: str | None = None,
    ) -> str:
        """``build(...).to_json()``, the contract's canonical text, without building its
        models (what the HTTP service sends: the plan is made of validated parts);
        ``record`` and ``model`` as for ``build``."""
        plan = await self._plan(
            session_id, turn_id, user_message, retrieved_knowledge, token_budget
        )
        text = serialize_document(_document(plan))
        if self.record if record is None else record:
            await self._record(plan, text, model)
        return text

    async def _record(self, plan: _Plan, text: str, model: str | None) -> LedgerEntry:
        """The contract's text added to its session's ledger, with what it was built from."""
        skeleton, head = plan.skeleton, plan.head
        assert head is not None
        provenance = Provenance(
            session_id=skeleton["session_id"],
            turn_id=skeleton["turn_id"],
            model=model if model is not None else self.model,
            token_encoding=getattr(self.counter, "encoding_name", type(self.counter).__name__),
            token_count=self._total(plan),
            session_version=head.version,
            summary_version=plan.summary_version,
            state_version=plan.state_version,
            profile_version=plan.profile_version,
        )
        return await self.storage.record_contract(ContractRecord(text, provenance, head.user_id))

    async def _plan(
        self,
        session_id: str,
        turn_id: str,
        user_message: str,
        retrieved_knowledge: Sequence[KnowledgeItem | Mapping[str, Any]],
        token_budget: int,
    ) -> _Plan:
        check_session_id(session_id)
        for label, value in (("turn_id", turn_id), ("user_message", user_message)):
            if not isinstance(value, str) or text_problem(value):
                raise InvalidInputError(f"{label} must be storable text")
        if type(token_budget) is not int or token_budget <= 0:
            raise InvalidInputError(f"token_budget must be a positive int, not {token_budget!r}")
        knowledge = sorted(
            (_knowledge(item) for item in retrieved_knowledge),
            key=lambda item: -item.relevance_score,
        )
        # The head and the window's first chunk in one read; if the session moves before a
        # second read, once more in one transaction from the start.
        request = (session_id, turn_id, user_message, knowledge, token_budget)
        try:
            return await self._read_plan(*request, prefetch=True)
        except SnapshotMoved:
            return await self._read_plan(*request, prefetch=False)

    async def _read_plan(
        self,
        session_id: str,
        turn_id: str,
        user_message: str,
        knowledge: list[KnowledgeItem],
        token_budget: int,
        *,
        prefetch: bool,
    ) -> _Plan:
        window = WindowHint(_chunk(token_budget), token_budget) if prefetch else None
        async with self.storage.reader(session_id) as reader:
            head = await reader.head(window)
            summary = await reader.latest_summary()
            state = await reader.state()
            profile = await reader.profile(head.user_id) if head.user_id else None
            skeleton = {
                "session_id": session_id,
                "turn_id": turn_id,
                "user_message": user_message,
                "context": {
                    "recent_messages": [],
                    "consultation_state": state_document(
                        state.value if state else self.initial_state
                    ),
                    **({"user_profile": profile.value.document()} if profile else {}),
                },
                "meta": {
                    "context_version": CONTEXT_VERSION,
                    "token_budget": token_budget,
                    "included_message_count": 0,
                    "summary_version": 0,
                },
            }
            required = self._skeleton_tokens(skeleton, with_knowledge=False)
            if required > token_budget:
                raise ContractBudgetError(required, token_budget)
            summary_version, covered = 0, -1
            if summary is not None:
                with_summary = _with_summary(skeleton, summary.text, summary.summary_version)
                tokens = self._skeleton_tokens(with_summary, with_knowledge=False)
                if tokens <= token_budget:
                    skeleton, summary_version = with_summary, summary.summary_version
                    covered = summary.covers_until  # those messages are in the summary
                    required = tokens
            plan = _Plan(skeleton, summary_version, required, [], 0, [], [], head=head)
            plan.state_version = state.version if state else 0
            plan.profile_version = profile.version if profile else None
            self._plan_knowledge(plan, knowledge, token_budget)
            await self._plan_messages(plan, reader, head, token_budget, covered)
        return plan

    # -- planning ------------------------------------------------------------------------

    def _skeleton_tokens(self, skeleton: dict[str, Any], *, with_knowledge: bool) -> int:
        text = serialize_parts(skeleton, [], [] if with_knowledge else None)
        if type(self.counter) is TokenCounter:
            # The request's own ids and message, then what stays from build to build
            # (state, profile, summary, meta): counted apart, the second mostly cached.
            request, rest = split_before_key(text, "context")
            return _counted(self.counter, request) + _counted(self.counter, rest)
        try:
            return _counted(self.counter, text)
        except TypeError:  # a counter that can't be hashed: counted every time
            return self.counter.count(text)

    def _plan_knowledge(self, plan: _Plan, knowledge: list[KnowledgeItem], budget: int) -> None:
        """Knowledge by relevance: each item that still fits goes in."""
        if not knowledge:
            return
        base = self._skeleton_tokens(plan.skeleton, with_knowledge=True)
        saving = self.counter.first_element_saving
        for item in knowledge:
            element = item.model_dump(mode="json")
            cost = self.counter.element_cost(element)
            extra = cost - (saving if not plan.knowledge else 0)
            if base + plan.knowledge_tokens + extra <= budget:
                plan.knowledge.append(element)
                plan.knowledge_tokens += extra
        if plan.knowledge:
            plan.knowledge_tokens += base - plan.zero_tokens

    def _total(self, plan: _Plan) -> int:
        """The exact token count of the contract the plan describes."""
        messages = sum(plan.message_tokens)
        if plan.messages:
            messages -= self.counter.first_element_saving
        return self._meta_skeleton_tokens(plan) + plan.knowledge_tokens + messages

    def _meta_skeleton_tokens(self, plan: _Plan) -> int:
        """The skeleton's tokens with ``meta.included_message_count`` the plan's count.

        With tiktoken's encodings, the count's digits are pre-tokens of their own (every
        encoding's pattern splits a run of digits from the ``":`` before it and the ``,"``
        after it), so another count changes the skeleton's tokens by its digits' tokens
        alone: the skeleton is counted once a build, not once for every count tried.
        """
        count = len(plan.messages)
        if not count:
            return plan.zero_tokens
        if type(self.counter) is TokenCounter:
            zero = plan.zero_tokens
            return zero - _counted(self.counter, "0") + _counted(self.counter, str(count))
        skeleton = _with_meta(plan.skeleton, count, plan.summary_version)
        return self._skeleton_tokens(skeleton, with_knowledge=False)

    async def _plan_messages(
        self, plan: _Plan, reader: Any, head: SessionHead, budget: int, covered: int
    ) -> None:
        """Recent messages newest first, contiguous, until the next one doesn't fit.

        Messages the included summary covers (positions up to ``covered``) stay out.
        """
        used = self._total(plan)
        saving = self.counter.first_element_saving
        pending: StoredMessage | None = None
        walk = walk_newest(
            reader, head, floor=covered, chunk=_chunk(budget), token_budget=budget - used
        )
        async for stored in walk:
            cost = message_cost(stored, head, self.counter)
            extra = cost - (saving if not plan.messages else 0)
            if used + extra > budget:
                pending = stored
                break
            plan.messages.insert(0, stored)
            plan.message_tokens.insert(0, cost)
            used += extra
        # The count of included messages is in meta: settle it exactly.
        while plan.messages and self._total(plan) > budget:
            pending = plan.messages.pop(0)
            plan.message_tokens.pop(0)
        if pending is not None:
            cost = message_cost(pending, head, self.counter)
            plan.messages.insert(0, pending)
            plan.message_tokens.insert(0, cost)
            if self._total(plan) > budget:
                plan.messages.pop(0)
                plan.message_tokens.pop(0)
        plan.created_at = head.created_at or _EPOCH


def _chunk(budget: int) -> int:
    """The first chunk of newest messages a build reads: most messages cost 40 tokens or
    more, and the read stops at the budget where the counts are stored."""
    return budget // 40 + 16


def _document(
    plan: _Plan, element: Callable[[dict[str, Any]], Any] | None = None
) -> dict[str, Any]:
    """The contract the plan describes, as JSON data in the contract's field order
    (``element``: what each recent message's contract form becomes, e.g. its model)."""
    recent = _recent_messages(plan.messages, plan.created_at)
    if element is not None:
        recent = [element(item) for item in recent]
    document = _with_meta(plan.skeleton, len(plan.messages), plan.summary_version)
    context = dict(document["context"])
    context["recent_messages"] = recent
    if plan.knowledge:
        context["retrieved_knowledge"] = plan.knowledge
    return {**document, "context": context}


def _recent_messages(messages: list[StoredMessage], created_at: datetime) -> list[dict[str, Any]]:
    """``contract_message`` of each message with its ``legacy_fill``, without the per-message
    calls: a build writes one for every message it includes.  A message's time is written
    once for a run of messages at the very same time (same fields, zone object, fold and
    nanoseconds: the same text)."""
    recent: list[dict[str, Any]] = []
    fill_text: str | None = None  # the same for every message without a time
    last: datetime | None = None
    last_text = ""
    for stored in messages:
        fields = stored.message.__dict__
        stamp = fields["timestamp"]
        if stamp is None:
            if fill_text is None:
                fill_text = go_timestamp(created_at)
            text = fill_text
        elif (
            last is not None
            and stamp.tzinfo is last.tzinfo
            and stamp == last
            and stamp.fold == last.fold
            and getattr(stamp, "nanosecond", 0) == getattr(last, "nanosecond", 0)
        ):
            text = last_text
        else:
            text = last_text = go_timestamp(stamp)
            last = stamp
        recent.append(
            {
                "role": fields["role"],
                "content": fields["content"],
                "turn_id": fields["turn_id"] or legacy_fill(stored.position, created_at)[0],
                "timestamp": text,
            }
        )
    return recent


# Setters of the slots pydantic keeps on every model, bound once (as formats/messages.py's).
_new_model = object.__new__
_SET_DICT = BaseModel.__dict__["__dict__"].__set__
_SET_FIELDS_SET = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_SET_EXTRA = BaseModel.__dict__["__pydantic_extra__"].__set__
_SET_PRIVATE = BaseModel.__dict__["__pydantic_private__"].__set__
assert list(ContractMessage.model_fields) == ["role", "content", "turn_id", "timestamp"]


def _trusted_message(item: dict[str, Any]) -> Any:
    """A recent message's contract form as the ContractMessage validating it would make,
    without validating again what is known to hold: the role and texts of a stored
    message, its time as go_timestamp wrote it (anything else: the dict, validated)."""
    if (
        item["role"] not in ROLES
        or type(item["content"]) is not str
        or type(item["turn_id"]) is not str
        or type(item["timestamp"]) is not str
    ):
        return item
    message = _new_model(ContractMessage)
    _SET_DICT(message, item)
    _SET_FIELDS_SET(message, {"role", "content", "turn_id", "timestamp"})
    _SET_EXTRA(message, None)
    _SET_PRIVATE(message, None)
    return message


@lru_cache(maxsize=64)
def _counted(counter: TokenCounter, text: str) -> int:
    # A build counts the same skeleton text several times (the budget check, the
    # knowledge's base, the plan's total before any message): once is enough.
    return counter.count(text)


def _knowledge(item: KnowledgeItem | Mapping[str, Any]) -> KnowledgeItem:
    if isinstance(item, KnowledgeItem):
        parsed = item
    else:
        try:
            parsed = KnowledgeItem.model_validate(item)
        except ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in found['loc']) or 'item'}: {found['msg']}"
                for found in error.errors()
            )
            raise InvalidInputError(f"retrieved knowledge: {problems}") from None
    for value in (parsed.title, parsed.content, parsed.source):
        if text_problem(value):
            raise InvalidInputError(f"retrieved knowledge {text_problem(value)}")
    return parsed


def _with_summary(skeleton: dict[str, Any], text: str, version: int) -> dict[str, Any]:
    context = skeleton["context"]
    ordered = {"recent_messages": context["recent_messages"], "conversation_summary": text}
    ordered.update({k: v for k, v in context.items() if k != "recent_messages"})
    return {
        **skeleton,
        "context": ordered,
        "meta": {**skeleton["meta"], "summary_version": version},
    }


def _with_meta(skeleton: dict[str, Any], count: int, summary_version: int) -> dict[str, Any]:
    meta = {**skeleton["meta"], "included_message_count": count, "summary_version": summary_version}
    return {**skeleton, "meta": meta}
