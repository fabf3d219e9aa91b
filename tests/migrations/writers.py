"""Eight writers appending turns through ctxstore while a migration step runs.

``writes_during(url, step)`` starts the writers, each with a ``PostgresStorage`` of its own
(a process's pool, as eight service processes would have), the odd ones sealing their
rows (encryption at rest), each appending two-message turns to sessions of its own and
starting a new session every ``TURNS_PER_SESSION`` turns.  Once every writer has made
``before`` writes past its ``WARMUP`` the step runs (in the calling thread); once every
writer has made ``after`` more, they stop and read back every session they wrote.  The
report holds each write's start and latency and what failed, and compares what was
acknowledged with what reads back: ``report.assert_no_failed_or_lost()`` fails on a
failed write, an acknowledged message that doesn't read back, a stored one that was
never acknowledged, or a session that can't be read.

The writers run in a thread of the calling process by default; ``in_process=False``
runs them in a process of their own, so the step's own Python work doesn't hold them up
(the stall benchmark does this).  Waiting for the writers is bounded (``WAIT_LIMIT``), so
a step that stops them for good fails the caller instead of hanging it.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, Protocol

from sqlalchemy import URL

from ctxstore import CtxStoreError, Message, PostgresStorage
from ctxstore.db.engine import EngineSettings, normalize_url
from ctxstore.encryption import Encryption, Keyring

WRITERS = 8
TURNS_PER_SESSION = 25
#: Each writer's first writes open its pool's connections (and a sealing writer's data
#: keys): made before the step, they are left out of the latencies.
WARMUP = 5
#: Seconds the harness waits for the writers to make their writes before giving up.
WAIT_LIMIT = 120.0


@dataclass(frozen=True)
class Write:
    started: float  # time.monotonic() when the call began
    seconds: float
    ok: bool


@dataclass
class WriterLog:
    """One writer's writes, failures, and its sessions as acknowledged and as read back."""

    number: int
    sealed: bool
    writes: list[Write] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    acknowledged: dict[str, list[str]] = field(default_factory=dict)
    stored: dict[str, list[str]] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)

    def lost(self) -> list[str]:
        """Acknowledged messages that don't read back."""
        return _missing(self.acknowledged, self.stored)

    def unacknowledged(self) -> list[str]:
        """Stored messages no acknowledged write sent (a failed write that committed)."""
        return _missing(self.stored, self.acknowledged)


def _missing(expected: dict[str, list[str]], found: dict[str, list[str]]) -> list[str]:
    """The contents of ``expected``'s sessions that ``found``'s same sessions lack."""
    missing: list[str] = []
    for session, contents in expected.items():
        there = set(found.get(session, ()))
        missing.extend(content for content in contents if content not in there)
    return missing


@dataclass
class WritesReport:
    writers: list[WriterLog]
    step_started: float
    step_ended: float

    @property
    def step_seconds(self) -> float:
        return self.step_ended - self.step_started

    def writes(self) -> list[Write]:
        """Every write but each writer's first WARMUP."""
        return [write for log in self.writers for write in log.writes[WARMUP:]]

    def during_step(self, write: Write) -> bool:
        """Whether the write was under way at some moment of the step."""
        return write.started < self.step_ended and write.started + write.seconds > self.step_started

    def failed_before_step(self) -> int:
        """Writes that failed before the step began (the schema refused them already)."""
        return sum(
            1
            for log in self.writers
            for w in log.writes
            if not w.ok and w.started + w.seconds <= self.step_started
        )

    @property
    def failed(self) -> list[str]:
        return [failure for log in self.writers for failure in log.failures]

    @property
    def lost(self) -> list[str]:
        return [content for log in self.writers for content in log.lost()]

    @property
    def unacknowledged(self) -> list[str]:
        return [content for log in self.writers for content in log.unacknowledged()]

    @property
    def unreadable(self) -> dict[str, str]:
        return {session: why for log in self.writers for session, why in log.unreadable.items()}

    def acknowledged_messages(self) -> int:
        return sum(len(c) for log in self.writers for c in log.acknowledged.values())

    def stored_messages(self) -> int:
        return sum(len(c) for log in self.writers for c in log.stored.values())

    def latencies_ms(self, *, during: bool) -> list[float]:
        """Latencies of the writes made during the step, or of all the others."""
        return [w.seconds * 1000 for w in self.writes() if self.during_step(w) == during]

    def stall_ms(self) -> dict[str, float]:
        """The longest write during the step, the p99 outside it, and their difference."""
        inside, outside = self.latencies_ms(during=True), self.latencies_ms(during=False)
        raw_max = max(inside, default=0.0)
        p99 = percentile(outside, 99)
        return {"max_during": raw_max, "p99_outside": p99, "stall": max(raw_max - p99, 0.0)}

    def assert_no_failed_or_lost(self) -> None:
        problems = {
            "failed writes": self.failed,
            "acknowledged messages lost": self.lost,
            "stored messages never acknowledged": self.unacknowledged,
            "sessions that can't be read": [f"{s}: {why}" for s, why in self.unreadable.items()],
        }
        found = {what: items for what, items in problems.items() if items}
        counts = (self.acknowledged_messages(), self.stored_messages())
        assert not found and counts[0] == counts[1], (
            f"acknowledged {counts[0]} messages, {counts[1]} read back; "
            + "; ".join(f"{len(items)} {what}: {items[:3]}" for what, items in found.items())
        )


def percentile(values: Sequence[float], point: int) -> float:
    if len(values) < 2:
        return max(values, default=0.0)
    return statistics.quantiles(values, n=100, method="inclusive")[point - 1]


# -- the writers ------------------------------------------------------------------------


class Control(Protocol):
    """What the harness and the writers share: a stop flag and each writer's count of
    writes made (a thread's list and Event, or a process's Array and Event)."""

    stop: Any
    made: Any


@dataclass
class _ThreadControl:
    stop: threading.Event = field(default_factory=threading.Event)
    made: list[int] = field(default_factory=lambda: [0] * WRITERS)


def _turn(writer: int, turn: int) -> list[Message]:
    """A turn with contents unique to the writer and the turn (the read-back matches them)."""
    return [
        Message(
            role="user",
            content=f"第{turn}轮（写入者{writer}）：膝盖疼了{turn % 9 + 1}天，上下楼梯更明显。",
            turn_id=f"turn-{turn}",
        ),
        Message(
            role="assistant",
            content=f"第{turn}轮答复（写入者{writer}）：先冰敷休息，若肿胀加重请尽快就医。",
            turn_id=f"turn-{turn}",
        ),
    ]


async def _write_until_stopped(
    storage: PostgresStorage, log: WriterLog, prefix: str, control: Control
) -> None:
    turn = 0
    while not control.stop.is_set():
        session = f"{prefix}-w{log.number}-s{turn // TURNS_PER_SESSION}"
        messages = _turn(log.number, turn)
        started = time.monotonic()
        try:
            await storage.append(session, messages, user_id=f"{prefix}-u{log.number}")
        except CtxStoreError as error:
            log.writes.append(Write(started, time.monotonic() - started, ok=False))
            log.failures.append(f"{session} turn {turn}: {error!r}")
            log.acknowledged.setdefault(session, [])
        else:
            log.writes.append(Write(started, time.monotonic() - started, ok=True))
            log.acknowledged.setdefault(session, []).extend(m.content for m in messages)
        control.made[log.number] += 1
        turn += 1


async def _read_back(storage: PostgresStorage, log: WriterLog) -> None:
    for session in log.acknowledged:
        try:
            log.stored[session] = [message.content for message in await storage.load(session)]
        except CtxStoreError as error:
            log.unreadable[session] = repr(error)


async def _writer(
    url: URL,
    number: int,
    settings: EngineSettings | None,
    key: bytes,
    prefix: str,
    control: Control,
) -> WriterLog:
    sealed = number % 2 == 1
    encryption = Encryption(Keyring({"k": key})) if sealed else None
    storage = PostgresStorage.from_url(url, settings=settings, encryption=encryption)
    log = WriterLog(number, sealed)
    try:
        await _write_until_stopped(storage, log, prefix, control)
        await _read_back(storage, log)
    finally:
        await storage.close()
    return log


async def _all_writers(
    url: URL, settings: EngineSettings | None, prefix: str, control: Control
) -> list[WriterLog]:
    key = os.urandom(32)
    return list(
        await asyncio.gather(
            *(_writer(url, n, settings, key, prefix, control) for n in range(WRITERS))
        )
    )


def _in_a_process(
    url: str, settings: EngineSettings | None, prefix: str, control: Control, out: Connection
) -> None:
    """The child process's body: the writers' logs, or their error, sent back."""
    try:
        out.send(asyncio.run(_all_writers(normalize_url(url), settings, prefix, control)))
    except BaseException as error:
        out.send(RuntimeError(f"the writers' process failed: {error!r}"))
        raise


# -- hosting them ------------------------------------------------------------------------


class _Host:
    """Runs the writers (in a thread or a process), waits for their writes, stops them."""

    control: Control

    def alive(self) -> bool:
        raise NotImplementedError

    def logs(self) -> list[WriterLog]:
        raise NotImplementedError

    def wait_for(self, writes: int, since: Sequence[int]) -> None:
        """Until every writer has made ``writes`` writes past ``since``."""
        deadline = time.monotonic() + WAIT_LIMIT
        while any(made - before < writes for made, before in zip(self.made(), since, strict=True)):
            if not self.alive():
                self.logs()  # raises the writers' error
                raise RuntimeError("the writers stopped before they were told to")
            if time.monotonic() > deadline:
                raise TimeoutError(f"writers made {self.made()} writes, waiting for {writes} each")
            time.sleep(0.01)

    def made(self) -> list[int]:
        return list(self.control.made)


class _ThreadHost(_Host):
    def __init__(self, url: URL, settings: EngineSettings | None, prefix: str) -> None:
        self.control = _ThreadControl()
        self._result: list[WriterLog] | BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(url, settings, prefix), name="writers", daemon=True
        )
        self._thread.start()

    def _run(self, url: URL, settings: EngineSettings | None, prefix: str) -> None:
        try:
            self._result = asyncio.run(_all_writers(url, settings, prefix, self.control))
        except BaseException as error:
            self._result = error

    def alive(self) -> bool:
        return self._thread.is_alive()

    def logs(self) -> list[WriterLog]:
        self.control.stop.set()
        self._thread.join(WAIT_LIMIT)
        if isinstance(self._result, BaseException):
            raise RuntimeError("the writers failed") from self._result
        if self._result is None:
            raise TimeoutError("the writers did not stop")
        return self._result


class _ProcessHost(_Host):
    def __init__(self, url: URL, settings: EngineSettings | None, prefix: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.control = _ProcessControl(context.Event(), context.Array("q", WRITERS))
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_in_a_process,
            args=(url.render_as_string(hide_password=False), settings, prefix, self.control, send),
            name="writers",
        )
        self._process.start()
        send.close()

    def alive(self) -> bool:
        return self._process.is_alive()

    def logs(self) -> list[WriterLog]:
        self.control.stop.set()
        if not self._receive.poll(WAIT_LIMIT):
            self._process.kill()
            raise TimeoutError("the writers' process did not stop")
        try:
            result = self._receive.recv()
        except EOFError:
            result = RuntimeError("the writers' process ended without a report")
        self._process.join()
        if isinstance(result, BaseException):
            raise result
        return list(result)


@dataclass
class _ProcessControl:
    stop: Any
    made: Any


def writes_during(
    url: URL,
    step: Callable[[], object],
    *,
    before: int = 10,
    after: int = 10,
    settings: EngineSettings | None = None,
    in_process: bool = True,
    prefix: str = "writer",
) -> WritesReport:
    """Run ``step`` while eight writers append; their report (see the module's doc).

    ``settings``: the writers' engine settings (timeouts); ``prefix``: their session ids'
    (a step may look them up).  An exception of ``step`` is raised once the writers stop.
    """
    host: _Host = (_ThreadHost if in_process else _ProcessHost)(url, settings, prefix)
    try:
        host.wait_for(WARMUP + before, since=[0] * WRITERS)
        started = time.monotonic()
        try:
            step()
        finally:
            ended = time.monotonic()
        host.wait_for(after, since=host.made())
    finally:
        logs = host.logs()
    return WritesReport(logs, started, ended)
