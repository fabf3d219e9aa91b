"""Hypothesis stateful test: PostgresStorage and RedisStorage behave exactly like
MemoryStorage (the model) over random sequences of saves, versioned saves, appends, saves
of what was loaded, deletes, exists, summaries and consultation states."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test
from sqlalchemy import URL

from ctxstore import CtxStoreError, MemoryStorage, Message, PostgresStorage, RedisStorage
from tests.conftest import drop_keys, new_redis_prefix

SESSIONS = st.sampled_from(["a", "b", "c"])
text = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
message = st.builds(
    Message,
    role=st.sampled_from(["user", "assistant"]),
    content=text,
    metadata=st.dictionaries(st.sampled_from(["k", "n"]), st.integers(0, 3), max_size=1),
)
lists = st.lists(message, max_size=6)
STAGES = st.sampled_from(["greeting", "collecting_details", "assessing"])
SETTINGS = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def summary_fields(summary: Any) -> Any:
    """What two backends must agree on in a summary (not its creation time)."""
    if summary is None:
        return None
    return (summary.summary_version, summary.text, summary.covers_until, summary.token_count)


def state_fields(versioned: Any) -> Any:
    return None if versioned is None else (versioned.version, versioned.value)


class StorageComparison(RuleBasedStateMachine):
    """One real backend against the model; subclasses say how to open and clean it."""

    #: Opens the real backend under a namespace of this run's own (called inside the
    #: machine's event loop).
    open_real: ClassVar[Callable[[str], Any]]
    #: Deletes whatever the real backend kept under that namespace (e.g. Redis keys).
    cleanup: ClassVar[Callable[[str], Awaitable[None]] | None] = None

    def __init__(self) -> None:
        super().__init__()
        self.runner = asyncio.Runner()
        self.prefix = uuid.uuid4().hex[:8]
        self.namespace = new_redis_prefix()
        self.model: Any = MemoryStorage()
        self.real = self.runner.run(self._open())

    async def _open(self) -> Any:
        return type(self).open_real(self.namespace)

    def key(self, session: str) -> str:
        return f"{self.prefix}-{session}"

    def both(self, operation: Any, project: Callable[[Any], Any] = lambda value: value) -> Any:
        """Run one operation on both; the results (or error types) must be the same."""

        async def outcome(storage: Any) -> Any:
            try:
                return ("ok", project(await operation(storage)))
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

    @rule(session=SESSIONS, messages=lists)
    def extend_what_was_loaded(self, session: str, messages: list[Message]) -> None:
        """The everyday idiom: each side saves the list it loaded, extended."""

        async def extend(storage: Any) -> int:
            loaded = await storage.load(self.key(session))
            loaded.extend(messages)
            version: int = await storage.save(self.key(session), loaded)
            return version

        self.both(extend)

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

    @rule(session=SESSIONS, covers_until=st.integers(-1, 6), text=text, stale=st.booleans())
    def summarize(self, session: str, covers_until: int, text: str, stale: bool) -> None:
        latest = self.runner.run(self.model.load_summary(self.key(session)))
        version = latest.summary_version if latest else 0
        expected = version + 1 if stale else version
        self.both(
            lambda s: s.save_summary(
                self.key(session), text, covers_until=covers_until, expected_version=expected
            ),
            summary_fields,
        )

    @rule(session=SESSIONS, stage=STAGES, pain=st.none() | st.integers(0, 10))
    def set_state(self, session: str, stage: str, pain: int | None) -> None:
        self.both(lambda s: s.save_state(self.key(session), {"stage": stage, "pain_level": pain}))

    @invariant()
    def every_session_reads_the_same(self) -> None:
        for session in ("a", "b", "c"):
            key = self.key(session)
            self.both(lambda s, key=key: s.load(key))
            self.both(lambda s, key=key: s.load_summary(key), summary_fields)
            self.both(lambda s, key=key: s.load_state(key), state_fields)

    def teardown(self) -> None:
        async def close() -> None:
            for session in ("a", "b", "c"):
                await self.real.delete(self.key(session))
            await self.real.close()
            cleanup = type(self).cleanup
            if cleanup is not None:
                await cleanup(self.namespace)

        self.runner.run(close())
        self.runner.close()


def postgres_machine(database_url: URL) -> type[StorageComparison]:
    class PostgresComparison(StorageComparison):
        open_real = staticmethod(lambda _: PostgresStorage.from_url(database_url))

    return PostgresComparison


def redis_machine(redis_url: str) -> type[StorageComparison]:
    """Each run of the machine under a prefix of its own, whose keys it deletes."""

    class RedisComparison(StorageComparison):
        open_real = staticmethod(
            lambda prefix: RedisStorage.from_url(redis_url, prefix=prefix, ttl=None)
        )
        cleanup = staticmethod(lambda prefix: drop_keys(redis_url, prefix))

    return RedisComparison


@pytest.mark.slow
def test_postgres_matches_the_memory_model(database_url: URL) -> None:
    run_state_machine_as_test(postgres_machine(database_url), settings=SETTINGS)


@pytest.mark.slow
def test_redis_matches_the_memory_model(redis_url: str) -> None:
    run_state_machine_as_test(redis_machine(redis_url), settings=SETTINGS)


def test_the_comparison_catches_a_difference(database_url: URL) -> None:
    """The machine is not vacuous: a backend that drops a message is caught."""

    class Lossy(MemoryStorage):
        async def save(self, session_id: str, messages: Any, **options: Any) -> int:
            return await super().save(
                session_id, list(messages)[:-1] if messages else messages, **options
            )

    class Broken(postgres_machine(database_url)):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.model = Lossy()

    # Finding the loss is the point: shrinking the failing run would only cost time.
    found = settings(
        max_examples=20, deadline=None, database=None, phases=[Phase.explicit, Phase.generate]
    )
    try:
        run_state_machine_as_test(Broken, settings=found)
    except AssertionError:
        return
    raise AssertionError("the stateful comparison missed a lossy backend")
