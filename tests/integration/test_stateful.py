"""Hypothesis stateful test: PostgresStorage behaves exactly like MemoryStorage (the model)
over random sequences of saves, versioned saves, appends, loads, deletes and exists."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from sqlalchemy import URL

from ctxstore import CtxStoreError, MemoryStorage, Message, PostgresStorage

SESSIONS = st.sampled_from(["a", "b", "c"])
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
message = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant"]),
    content=text,
    metadata=st.dictionaries(st.sampled_from(["k", "n"]), st.integers(0, 3), max_size=1),
)
lists = st.lists(message, max_size=6)


class StorageComparison(RuleBasedStateMachine):
    database_url: URL

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.prefix = uuid.uuid4().hex[:8]
        self.model = MemoryStorage()
        self.real = self.runner.run(self._open())
        self.last: dict[str, list[Message]] = {}

    async def _open(self) -> PostgresStorage:
        return PostgresStorage.from_url(self.database_url)

    def key(self, session: str) -> str:
        return f"{self.prefix}-{session}"

    def both(self, operation: Any) -> Any:
        """Run one operation on both; the results (or error types) must be the same."""

        async def outcome(storage: Any) -> Any:
            try:
                return ("ok", await operation(storage))
            except CtxStoreError as error:
                return ("error", type(error).__name__)

        expected = self.runner.run(outcome(self.model))
        actual = self.runner.run(outcome(self.real))
        assert actual == expected, (actual, expected)
        return expected

    @rule(session=SESSIONS, messages=lists)
    def save(self, session: str, messages: list[Message]) -> None:
        self.both(lambda s: s.save(self.key(session), messages))

    @rule(session=SESSIONS, messages=lists, data=st.data())
    def edit_what_was_loaded(self, session: str, messages: list[Message], data: Any) -> None:
        loaded = self.runner.run(self.real.load(self.key(session)))
        cut = data.draw(st.integers(0, len(loaded)))
        self.both(lambda s: s.save(self.key(session), [*loaded[:cut], *messages]))

    @rule(session=SESSIONS, messages=lists, stale=st.booleans())
    def versioned_save(self, session: str, messages: list[Message], stale: bool) -> None:
        version = self.runner.run(self.model.version(self.key(session)))
        expected = version - 1 if stale and version else version
        self.both(lambda s: s.save(self.key(session), messages, expected_version=expected))

    @rule(session=SESSIONS, messages=lists, versioned=st.booleans())
    def append(self, session: str, messages: list[Message], versioned: bool) -> None:
        version = self.runner.run(self.model.version(self.key(session))) if versioned else None
        self.both(lambda s: s.append(self.key(session), messages, expected_version=version))

    @rule(session=SESSIONS)
    def delete(self, session: str) -> None:
        self.both(lambda s: s.delete(self.key(session)))

    @rule(session=SESSIONS)
    def exists_and_version(self, session: str) -> None:
        self.both(lambda s: s.exists(self.key(session)))
        self.both(lambda s: s.version(self.key(session)))

    @invariant()
    def every_session_loads_the_same(self) -> None:
        for session in ("a", "b", "c"):
            self.both(lambda s, session=session: s.load(self.key(session)))

    def teardown(self) -> None:
        async def close() -> None:
            for session in ("a", "b", "c"):
                await self.real.delete(self.key(session))
            await self.real.close()

        self.runner.run(close())
        self.runner.close()


def test_postgres_matches_the_memory_model(database_url: URL) -> None:
    StorageComparison.database_url = database_url
    run_state_machine_as_test(
        StorageComparison,
        settings=settings(
            max_examples=40,
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_the_comparison_catches_a_difference(database_url: URL) -> None:
    """The machine is not vacuous: a backend that drops a message is caught."""

    class Lossy(MemoryStorage):
        async def save(self, session_id: str, messages: Any, **options: Any) -> int:
            return await super().save(
                session_id, list(messages)[:-1] if messages else messages, **options
            )

    class Broken(StorageComparison):
        def __init__(self) -> None:
            super().__init__()
            self.model = Lossy()

    Broken.database_url = database_url
    try:
        run_state_machine_as_test(
            Broken, settings=settings(max_examples=20, deadline=None, database=None)
        )
    except AssertionError:
        return
    raise AssertionError("the stateful comparison missed a lossy backend")
