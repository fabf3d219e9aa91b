"""Every PostgreSQL write path takes its locks in one order: the session row, then its
children (messages, summaries, consultation states and their history).

Mixed writers on a handful of shared sessions (saves with and without an expected
version, appends, deletes, states, summaries, profiles, loads) never deadlock and raise
only the documented errors; afterwards every session reads back consistent.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import URL, text

from ctxstore import NEW_SESSION, CtxStoreError, Message, PostgresStorage
from ctxstore.db.engine import EngineSettings
from ctxstore.errors import ConflictError, InvalidInputError, SessionNotFoundError
from ctxstore.storage.postgres import sql
from ctxstore.storage.postgres.statement import Statement
from tests.conformance.contract import KNEE_STATE

WORKERS, OPERATIONS = 8, 600
SESSIONS = tuple(f"shared-{n}" for n in range(4))
USERS = ("user-a", "user-b")
SEED = 20240612
STAGES = ("intake", "assessing", "advising", "closing")

# Which operations may raise which error, and when (docs/storage-contract.md, section 3-4):
# ConflictError only for a write that named a version (a summary also when a concurrent
# writer took the next summary version), SessionNotFoundError only for a state or summary
# of a missing session, InvalidInputError only for covers_until past the stored messages.
VERSIONED = "versioned"


@dataclass
class Tally:
    done: Counter[str] = field(default_factory=Counter)
    documented: Counter[str] = field(default_factory=Counter)
    undocumented: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)

    def unexpected(self, operation: str, error: BaseException) -> None:
        sqlstate = getattr(error, "sqlstate", None)
        self.undocumented.append(f"{operation}: {type(error).__name__} {sqlstate} {error}")
        self.kinds[f"{operation} {type(error).__name__} {sqlstate or ''}".rstrip()] += 1


def _messages(rng: random.Random, count: int, tag: str) -> list[Message]:
    return [
        Message(role="user" if n % 2 == 0 else "assistant", content=f"{tag} {n} {rng.random()}")
        for n in range(count)
    ]


def _state(rng: random.Random) -> dict[str, Any]:
    return {**KNEE_STATE, "stage": rng.choice(STAGES), "pain_level": rng.randint(0, 10)}


def _profile(rng: random.Random) -> dict[str, Any]:
    return {
        "age": rng.randint(18, 90),
        "gender": "female",
        "exercise_habit": "跑步",
        "known_limitations": [],
    }


def _documented(operation: str, error: CtxStoreError) -> bool:
    name, _, mode = operation.partition(":")
    if isinstance(error, ConflictError):
        return mode == VERSIONED or name == "save_summary"
    if isinstance(error, SessionNotFoundError):
        return name in {"save_state", "save_summary"}
    if isinstance(error, InvalidInputError):
        return name == "save_summary"
    return False


class _Worker:
    """One client: OPERATIONS random operations on the shared sessions, seeded."""

    def __init__(self, storage: PostgresStorage, index: int, tally: Tally) -> None:
        self.storage, self.index, self.tally = storage, index, tally
        self.rng = random.Random(SEED * 100 + index)
        #: The operation under way: its name, and whether it named a version.
        self.label = ""

    def writing(self, name: str, expected: int | None = None) -> None:
        self.label = name if expected is None else f"{name}:{VERSIONED}"

    def new(self, count: int, tag: str) -> list[Message]:
        return _messages(self.rng, count, f"w{self.index} {tag}")

    async def save_extended(self, sid: str) -> None:  # the fast path, when nobody else wrote
        stored = await self.storage.load(sid)
        self.writing("save")
        await self.storage.save(sid, [*stored, *self.new(self.rng.randint(1, 3), "more")])

    async def save_fresh(self, sid: str) -> None:  # an edit: the locked path rewrites
        self.writing("save")
        await self.storage.save(sid, self.new(self.rng.randint(0, 5), "fresh"))

    async def save_at_version(self, sid: str) -> None:
        version = await self.storage.version(sid)  # 0: NEW_SESSION
        stored = await self.storage.load(sid)
        messages = [*stored[: self.rng.randint(0, len(stored))], *self.new(1, "at")]
        self.writing("save", version)
        user = self.rng.choice(USERS)
        await self.storage.save(sid, messages, expected_version=version, user_id=user)

    async def append(self, sid: str) -> None:
        expected = await self.storage.version(sid) if self.rng.random() < 0.3 else None
        self.writing("append", expected)
        await self.storage.append(
            sid, self.new(self.rng.randint(1, 2), "appended"), expected_version=expected
        )

    async def delete(self, sid: str) -> None:
        self.writing("delete")
        await self.storage.delete(sid)

    async def save_state(self, sid: str) -> None:
        roll = self.rng.random()
        expected: int | None = None
        if roll < 0.2:
            expected = NEW_SESSION
        elif roll < 0.5:
            current = await self.storage.load_state(sid)
            expected = current.version if current is not None else 0
        self.writing("save_state", expected)
        await self.storage.save_state(sid, _state(self.rng), expected_version=expected)

    async def save_summary(self, sid: str) -> None:
        count = len(await self.storage.load(sid))
        covers_until = self.rng.randint(-1, count)  # count itself is one past the messages
        expected: int | None = None
        if self.rng.random() < 0.5:
            latest = await self.storage.load_summary(sid)
            expected = latest.summary_version if latest is not None else 0
        self.writing("save_summary", expected)
        await self.storage.save_summary(
            sid, f"by w{self.index}", covers_until=covers_until, expected_version=expected
        )

    async def save_profile(self, _sid: str) -> None:
        user = self.rng.choice(USERS)
        expected: int | None = None
        if self.rng.random() < 0.5:
            current = await self.storage.load_profile(user)
            expected = current.version if current is not None else 0
        self.writing("save_profile", expected)
        await self.storage.save_profile(user, _profile(self.rng), expected_version=expected)

    async def load(self, sid: str) -> None:
        self.writing("load")
        if self.rng.random() < 0.5:
            await self.storage.load(sid)
        else:
            await self.storage.snapshot(sid)

    async def run(self) -> None:
        weighted: list[tuple[Callable[[str], Awaitable[None]], int]] = [
            (self.save_extended, 8),
            (self.save_fresh, 6),
            (self.save_at_version, 6),
            (self.append, 14),
            (self.delete, 10),
            (self.save_state, 22),
            (self.save_summary, 12),
            (self.save_profile, 8),
            (self.load, 14),
        ]
        operations = [operation for operation, _ in weighted]
        chosen = self.rng.choices(operations, [w for _, w in weighted], k=OPERATIONS)
        for operation in chosen:
            self.writing(operation.__name__)  # a read before the write fails under this name
            try:
                await operation(self.rng.choice(SESSIONS))
                self.tally.done[self.label] += 1
            except CtxStoreError as error:
                if _documented(self.label, error):
                    self.tally.documented[f"{self.label} {type(error).__name__}"] += 1
                else:
                    self.tally.unexpected(self.label, error)
            except Exception as error:
                self.tally.unexpected(self.label, error)


async def _assert_consistent(storage: PostgresStorage) -> None:
    """Each session loads, and its row agrees with its children."""
    async with storage.engine.connect() as conn:
        for sid in SESSIONS:
            row = (
                await conn.execute(
                    text(
                        "SELECT s.message_count, s.version,"
                        " (SELECT count(*) FROM messages m WHERE m.session_id = s.session_id),"
                        " (SELECT max(seq) FROM messages m WHERE m.session_id = s.session_id)"
                        " FROM sessions s WHERE s.session_id = :sid"
                    ),
                    {"sid": sid},
                )
            ).one_or_none()
            messages = await storage.load(sid)  # raises on gaps or a count mismatch
            if row is None:
                assert messages == []
                assert await storage.load_state(sid) is None
                assert await storage.load_summary(sid) is None
                continue
            count, version, stored, top = row
            assert count == stored == len(messages), sid
            assert top == (count - 1 if count else None), sid
            assert await storage.version(sid) == version >= 1, sid
            state = await storage.load_state(sid)
            history = [change.version for change in await storage.state_history(sid)]
            assert history == list(range(1, (state.version if state else 0) + 1)), sid
            summaries = (
                await conn.execute(
                    text(
                        "SELECT array_agg(summary_version ORDER BY summary_version)"
                        " FROM summaries WHERE session_id = :sid"
                    ),
                    {"sid": sid},
                )
            ).scalar_one()
            summaries = summaries or []
            assert summaries == list(range(1, len(summaries) + 1)), sid
        orphans = (
            await conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM messages m WHERE NOT EXISTS"
                    "  (SELECT FROM sessions s WHERE s.session_id = m.session_id))"
                    " + (SELECT count(*) FROM consultation_state_history h WHERE NOT EXISTS"
                    "  (SELECT FROM sessions s WHERE s.session_id = h.session_id))"
                )
            )
        ).scalar_one()
        assert orphans == 0


@pytest.mark.parametrize("storages", [1, 2], ids=["one-store", "two-stores"])
async def test_mixed_writers_never_deadlock(database_url: URL, storages: int) -> None:
    """8 workers x 600 mixed operations on 4 shared sessions: no StorageError (a deadlock
    is one: SQLSTATE 40P01), only the documented errors, every session consistent.

    ``two-stores``: two PostgresStorage on their own engines, as two processes would be
    (neither knows what the other wrote, so saves take the locked path more often).
    """
    stores = [
        PostgresStorage.from_url(database_url, settings=EngineSettings(pool_size=WORKERS))
        for _ in range(storages)
    ]
    tally = Tally()
    started = time.monotonic()
    try:
        await asyncio.gather(
            *(_Worker(stores[index % storages], index, tally).run() for index in range(WORKERS))
        )
        elapsed = time.monotonic() - started
        deadlocks = sum("40P01" in line for line in tally.undocumented)
        print(
            f"\n{WORKERS} workers x {OPERATIONS} operations on {storages} store(s) in "
            f"{elapsed:.1f} s: {sum(tally.done.values())} succeeded, "
            f"{sum(tally.documented.values())} documented errors {dict(tally.documented)}, "
            f"{len(tally.undocumented)} undocumented ({deadlocks} deadlocks) {dict(tally.kinds)}"
        )
        assert not tally.undocumented, (
            f"{len(tally.undocumented)} undocumented errors ({deadlocks} deadlocks), e.g. "
            + "; ".join(tally.undocumented[:5])
        )
        assert sum(tally.done.values()) + sum(tally.documented.values()) == WORKERS * OPERATIONS
        await _assert_consistent(stores[0])
    finally:
        for store in stores:
            await store.close()


class _Interleaved:
    """A statement that, the first time it returns no row, lets another writer in before
    the save that ran it goes on: the interleaving a race produces now and then."""

    def __init__(self, statement: Statement, meanwhile: Callable[[str], Awaitable[object]]):
        self.statement = statement
        self.meanwhile = meanwhile
        self.fired = False

    async def fetchrow(self, driver: Any, **values: Any) -> Any:
        row = await self.statement.fetchrow(driver, **values)
        if row is None and not self.fired:
            self.fired = True
            await self.meanwhile(values["sid"])
        return row


async def test_save_after_a_concurrent_delete_recreates_the_session(
    database_url: URL, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without expected_version the last writer wins: a save that follows a delete (or
    races one) stores its list as a new session, never an error."""
    async with (
        PostgresStorage.from_url(database_url) as first,
        PostgresStorage.from_url(database_url) as second,
    ):
        history = _messages(random.Random(1), 3, "kept")
        await first.save("recreated", history)
        await second.delete("recreated")  # behind first's back: first still knows 3 messages
        extended = [*history, *_messages(random.Random(2), 1, "more")]
        assert await first.save("recreated", extended) == 1
        assert await second.load("recreated") == extended

        # The save's locked path finds no row to lock; another store creates the session
        # (so creating it finds it there), then deletes it (so locking it finds nothing
        # again): the save creates it once more.
        theirs, mine = (
            _messages(random.Random(3), 2, "theirs"),
            _messages(random.Random(4), 2, "mine"),
        )
        with monkeypatch.context() as patch:
            patch.setattr(
                sql,
                "LOCK_SESSION",
                _Interleaved(sql.LOCK_SESSION, lambda s: second.save(s, theirs)),
            )
            patch.setattr(sql, "CREATE_SESSION", _Interleaved(sql.CREATE_SESSION, second.delete))
            assert await first.save("interleaved", mine) == 1
        assert await second.load("interleaved") == mine

        # Racing: saves from two stores and deletes, many rounds; every call succeeds and
        # what is stored is one of the saved lists, or nothing.
        rng = random.Random(SEED)
        for round_ in range(50):
            lists = [_messages(rng, rng.randint(1, 3), f"r{round_} {n}") for n in range(4)]
            await asyncio.gather(
                first.save("raced", lists[0]),
                second.save("raced", lists[1]),
                first.delete("raced"),
                first.save("raced", lists[2]),
                second.save("raced", lists[3]),
                second.delete("raced"),
            )
            stored = await second.load("raced")
            assert stored == [] or stored in lists, round_
            assert await second.exists("raced") == bool(stored), round_  # saves are non-empty
