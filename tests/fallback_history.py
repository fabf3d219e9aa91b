"""A history checker for FallbackStorage under primary outages and worker crashes.

A worker process (``python -m tests.fallback_history worker ...``) runs clients that each
write sessions of their own through a FallbackStorage (PostgreSQL behind a TcpProxy, Redis
as the secondary) and log every operation before (``invoke``) and after it (``ok`` or
``fail``), one JSON line each.  The controller (``run_history``) cuts the proxy off and
SIGKILLs and restarts the worker, then drains the journal and reads the primary.
``check_history`` asks, per session, whether what the primary holds equals a sequential
replay of the acknowledged operations plus some subset of the indeterminate ones (failed,
or cut short by a kill).  Anomalies are prefixed by what they are about: ``history``,
``quarantine`` (an accepted write the primary refused), ``liveness`` (a call in flight for
over 10 s while the journal's replay made no progress, with where it waited), ``drain``
and ``worker``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from tests.faults import RedisServer, TcpProxy, socket_target
from tests.history_check import (
    MESSAGE_KINDS,
    Log,
    LogFile,
    Model,
    Op,
    Verdict,
    apply,
    check_history,
    read_log,
)

REPO = Path(__file__).resolve().parents[1]
STATS = (
    "failovers",
    "recoveries",
    "journaled",
    "replayed",
    "quarantined",
    "moved_on",
    "lost",
    "refused",
    "discarded",
)

# -- the worker --------------------------------------------------------------------------


def plan(rng: random.Random, believed: Model, tag: str) -> tuple[str, Any]:
    """An operation on a session the client believes is ``believed``; contents are unique."""

    def fresh(count: int) -> list[list[Any]]:
        return [[rng.choice(("user", "assistant")), f"{tag}-m{i}", tag] for i in range(count)]

    size = len(believed.messages)
    if not believed.exists:
        kind = rng.choice(("append", "save"))
    else:
        weights = {
            "append": 30 if size < 24 else 2,
            "edit": 15 if size else 0,
            "redact": 12 if size >= 2 else 0,
            "save": 8,
            "delete": 6,
            "state": 20,
        }
        kind = rng.choices(list(weights), list(weights.values()))[0]
    current = [list(message) for message in believed.messages]
    if kind == "append":
        return kind, fresh(rng.randint(1, 2))
    if kind == "save":
        return kind, fresh(rng.randint(1, 3))
    if kind == "edit":
        index = rng.randrange(size)
        current[index] = [current[index][0], f"{tag}-edit", current[index][2]]
        return kind, current
    if kind == "redact":
        del current[rng.randrange(size)]
        return kind, current
    return kind, (tag if kind == "state" else None)


async def perform(store: Any, op: Op) -> None:
    from ctxstore import Message  # noqa: PLC0415

    if op.kind in MESSAGE_KINDS:
        messages = [Message(role=r, content=c, turn_id=t) for r, c, t in op.payload]
        call = store.append if op.kind == "append" else store.save
        await call(op.session, messages)
    elif op.kind == "delete":
        await store.delete(op.session)
    elif op.kind == "state":
        await store.save_state(op.session, {"stage": "intake", "last_question": op.payload})
    elif op.kind == "profile":
        await store.save_profile(op.session, {"exercise_habit": op.payload})


def await_chain(task: asyncio.Task[Any] | None) -> list[str]:
    """Where a task waits: file:line of each coroutine down its await chain."""
    chain, awaited = [], task.get_coro() if task is not None else None
    while awaited is not None:
        frame = getattr(awaited, "cr_frame", None) or getattr(awaited, "ag_frame", None)
        if frame is None:
            break
        chain.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
        awaited = getattr(awaited, "cr_await", None) or getattr(awaited, "ag_await", None)
        # An async context manager's __aenter__ awaits its generator's step, which shows no
        # frame: go on in the generator itself.
        manager = frame.f_locals.get("self") if frame.f_code.co_name == "__aenter__" else None
        if getattr(manager, "gen", None) is not None:
            awaited = manager.gen
    return chain


class FinishedCalls:
    """A store that counts the calls it finished, answered or failed.  Around the primary,
    it is the watchdog's sign that the fallback is at work on it: on a loaded machine a
    replay may be slow, yet each of its calls ends within the primary's timeouts."""

    def __init__(self, store: Any) -> None:
        self.store, self.finished = store, 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.store, name)
        if not inspect.iscoroutinefunction(value):
            return value

        @functools.wraps(value)
        async def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                return await value(*args, **kwargs)
            finally:
                self.finished += 1

        return counted


@dataclass
class Clients:
    """The clients of one worker incarnation, and a watchdog over their calls."""

    store: Any
    primary: FinishedCalls
    out: LogFile
    beliefs: dict[str, Model]
    incarnation: int
    args: argparse.Namespace
    inflight: dict[str, tuple[float, asyncio.Task[Any] | None]] = field(default_factory=dict)

    async def run(self, index: int) -> None:
        rng, inc = random.Random(f"{self.args.seed}-{self.incarnation}-{index}"), self.incarnation
        for number in range(1, sys.maxsize):
            await asyncio.sleep(rng.uniform(0, self.args.pause))
            if rng.random() < 0.03:
                session, kind, payload = f"u{index}", "profile", f"u{index}-i{inc}-n{number}"
            else:
                session = f"c{index}-s{rng.randrange(self.args.sessions_per_client)}"
                believed = self.beliefs.get(session, Model())
                kind, payload = plan(rng, believed, f"{session}-i{inc}-n{number}")
            op = Op(f"i{inc}-c{index}-n{number}", session, kind, payload, "open", None, index, inc)
            self.out.write(t="invoke", **vars(op))
            self.inflight[op.op] = (time.monotonic(), asyncio.current_task())
            try:
                async with asyncio.timeout(15):  # a hung call is a finding, not a hung run
                    await perform(self.store, op)
            except Exception as error:
                self.out.write(t="fail", op=op.op, error=type(error).__name__)
                continue
            finally:
                self.inflight.pop(op.op, None)
            self.out.write(t="ok", op=op.op)
            current = self.beliefs.get(session, Model())
            self.beliefs[session] = apply(current, replace(op, status="ok")) or current

    async def watch(self) -> None:
        """Twice a second: the fallback's figures, and the await chain of any call in flight
        for more than 10 s during which the fallback finished no call on the primary (once
        per call).  A write to a key with a backlog waits for the key's replay: while the
        replay goes on, however slowly the machine lets it, that wait is the design, not a
        hang; a replay waiting on nothing that ends is one."""
        reported: set[str] = set()
        finished, progressed = -1, time.monotonic()
        while True:
            await asyncio.sleep(0.5)
            now = time.monotonic()
            if self.primary.finished != finished:
                finished, progressed = self.primary.finished, now
            for name, (started, task) in list(self.inflight.items()):
                stalled = now - max(started, progressed)
                if stalled > 10 and name not in reported:
                    reported.add(name)
                    self.out.write(t="hung", op=name, chain=await_chain(task))
            figures = {name: getattr(self.store.stats, name, 0) for name in STATS}
            try:
                figures["journal"] = await self.store.journal.size()
            except Exception as error:  # Redis trouble is not this loop's to report
                figures["journal"] = type(error).__name__
            degraded = self.store.degraded
            self.out.write(t="stats", inc=self.incarnation, degraded=degraded, **figures)


async def run_worker(args: argparse.Namespace) -> None:
    from ctxstore import EngineSettings, PostgresStorage, RedisStorage  # noqa: PLC0415
    from ctxstore.storage.fallback import FallbackStorage  # noqa: PLC0415

    path = Path(args.log)
    log = read_log(path)
    incarnation, beliefs = log.incarnations + 1, log.believed()
    out = LogFile(path)
    out.write(t="start", inc=incarnation, pid=os.getpid())
    settings = EngineSettings(connect_timeout=1.0, pool_timeout=2.0)
    primary = FinishedCalls(
        PostgresStorage.from_url(args.database_url, operation_timeout=3.0, settings=settings)
    )
    secondary = RedisStorage.from_url(args.redis_url, prefix=args.prefix)
    fallback = FallbackStorage(
        primary,
        secondary,
        journal_name=args.journal,
        probe_interval=0.2,
        journal_loss=args.journal_loss,
    )
    async with fallback as store:
        clients = Clients(store, primary, out, beliefs, incarnation, args)
        await asyncio.gather(clients.watch(), *(clients.run(i) for i in range(args.clients)))


# -- the controller ----------------------------------------------------------------------


@dataclass
class HistoryResult:
    duration: float
    clients: int
    sessions: int
    ops: Counter[str]  # by status: ok, fail, open (invoked, never completed: killed)
    errors: Counter[str]  # the failed ops' error types
    faults: Counter[str]  # outages, kills, restarts
    worker_stats: dict[str, int]  # FallbackStats summed over incarnations, as last reported
    degraded_share: float  # of the worker's twice-a-second samples
    calm: float  # the most seconds of calm asked for after the faults (0: none)
    healthy_after: float | None  # seconds of that calm until the worker was healthy
    final: dict[str, int]  # what the last reconcile replayed and quarantined
    verdict: Verdict
    log_dir: str | None  # kept when there are anomalies (or when asked)

    def calm_figure(self) -> str:
        if not self.calm:
            return "no calm asked"
        if self.healthy_after is None:
            return f"not within {self.calm:.0f} s"
        return f"{self.healthy_after:.1f} s"

    @property
    def anomalies(self) -> list[str]:
        return self.verdict.anomalies

    def figures(self) -> list[tuple[str, str]]:
        def listed(counts: dict[str, int]) -> str:
            return ", ".join(f"{name} {count}" for name, count in sorted(counts.items())) or "-"

        ops, v = self.ops, self.verdict
        return [
            ("duration", f"{self.duration:.1f} s, {self.clients} clients, {self.sessions} keys"),
            ("ops invoked / acked", f"{ops.total()} / {ops['ok']}"),
            ("acked ops/s", f"{ops['ok'] / self.duration:.0f}"),
            ("indeterminate", f"{ops['fail']} failed, {ops['open']} cut short by a kill"),
            ("errors", listed(self.errors)),
            ("outages, kills, restarts", listed(self.faults)),
            ("worker fallback stats", listed(self.worker_stats)),
            ("worker degraded", f"{self.degraded_share:.0%} of the time"),
            ("healthy after calm", self.calm_figure()),
            ("final reconcile", listed(self.final)),
            ("resurrected/missing/dup", f"{v.resurrected} / {v.missing} / {v.duplicates}"),
            ("anomalies", str(len(v.anomalies))),
        ]


def schedule(
    rng: random.Random, duration: float, outages: int, kills: int, redis_kills: int = 0
) -> list[tuple[float, str]]:
    """Outages of 0.5-2 s with gaps of at least 0.5 s, and kills spread over the run, every
    other one inside an outage; Redis kills (``redis``) inside outages, where the journal
    holds what the clients were told."""
    count = max(outages, int(duration / 2.5))
    slot = (duration - 1.0) / count
    events, cuts = [], []
    for index in range(count):
        length = rng.uniform(0.5, max(0.5, min(2.0, slot - 0.5)))
        start = 1.0 + index * slot + rng.uniform(0, max(0.0, slot - length - 0.5))
        cuts.append((start, length))
        events += [
            (start, rng.choice(("refuse", "refuse", "blackhole"))),
            (start + length, "forward"),
        ]
    for index in range(max(kills, round(duration / 7))):
        at = duration * (index + 0.5) / max(kills, round(duration / 7))
        if index % 2 == 0:
            start, length = min(cuts, key=lambda cut: abs(cut[0] - at))
            at = start + length * rng.uniform(0.2, 0.8)
        events.append((at, "kill"))
    for _ in range(redis_kills):
        start, length = rng.choice(cuts)
        events.append((start + length * rng.uniform(0.3, 0.9), "redis"))
    return sorted(events)


class Worker:
    """The worker process of the moment; ``start`` again after a kill is a new incarnation."""

    def __init__(self, argv: list[str], stderr: Path) -> None:
        self.command = [sys.executable, "-m", "tests.fallback_history", "worker", *argv]
        self.stderr = stderr
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.stderr.open("ab") as errors:
            self.process = await asyncio.create_subprocess_exec(
                *self.command, cwd=REPO, stdout=asyncio.subprocess.DEVNULL, stderr=errors
            )

    def died(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    async def kill(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
        if self.process is not None:
            await self.process.wait()


async def inflict(
    worker: Worker,
    proxy: TcpProxy,
    events: list[tuple[float, str]],
    rng: random.Random,
    out: LogFile,
    tick: Callable[[float], None] | None,
    redis: RedisServer | None = None,
) -> tuple[Counter[str], list[str]]:
    """Play the schedule: cut and restore the primary, kill and restart the worker."""
    faults: Counter[str] = Counter()
    problems: list[str] = []
    started = time.monotonic()
    for at, action in events:
        while (now := time.monotonic() - started) < at:
            if tick is not None:
                tick(now)
            if (code := worker.died()) is not None:  # died by itself: a finding
                problems.append(f"worker: exited by itself (code {code}) at {now:.1f} s")
                await worker.start()
                faults["restarts"] += 1
            await asyncio.sleep(min(0.1, at - now))
        out.write(t="fault", action=action)
        if action in ("refuse", "blackhole"):
            getattr(proxy, action)()
            faults["outages"] += 1
        elif action == "forward":
            proxy.forward()
        elif action == "kill":
            await worker.kill()
            faults["kills"] += 1
            await asyncio.sleep(rng.uniform(0.05, 0.5))
            await worker.start()
            faults["restarts"] += 1
        elif action == "redis" and redis is not None:
            redis.kill()  # SIGKILL of redis-server, then it starts again on its files
            faults["redis kills"] += 1
            await asyncio.sleep(rng.uniform(0.05, 0.3))
            await asyncio.to_thread(redis.start)
    return faults, problems


async def drain_and_read(
    url: URL,
    redis_url: str,
    prefix: str,
    journal: str,
    keys: set[str],
    patience: float,
    journal_loss: str = "accept",
) -> tuple[dict[str, int], list[str], dict[str, Model]]:
    """A fresh FallbackStorage replays what is left of the journal; then the primary, read.

    Returns the replay's figures, its problems (quarantined entries included: the whole
    run's quarantine is kept in Redis) and what the primary holds for each key."""
    from ctxstore import PostgresStorage, RedisStorage  # noqa: PLC0415
    from ctxstore.errors import StorageUnavailableError  # noqa: PLC0415
    from ctxstore.storage.fallback import FallbackStorage  # noqa: PLC0415

    problems: list[str] = []
    primary = PostgresStorage.from_url(url, operation_timeout=10.0)
    secondary = RedisStorage.from_url(redis_url, prefix=prefix)
    async with FallbackStorage(
        primary,
        secondary,
        journal_name=journal,
        probe_interval=0.1,
        journal_loss="accept" if journal_loss == "accept" else "refuse",
    ) as fb:
        left, started = await fb.journal.size(), time.monotonic()
        deadline = started + patience
        while True:
            try:
                await fb.reconcile()
            except StorageUnavailableError as error:  # the primary is forwarded: a finding
                problems.append(f"drain: reconcile raised {type(error).__name__}: {error}")
            size = await fb.journal.size()
            if size == 0 and not fb.degraded:
                break
            if time.monotonic() > deadline:
                problems.append(f"drain: journal not drained in {patience:.0f} s: {size} left")
                break
            await asyncio.sleep(0.2)
        quarantined = await fb.quarantined()
        problems += [
            f"quarantine: {q.kind} {q.key} ({q.entry_id}): {q.reason}" for q in quarantined
        ]
        figures = {
            "journal left": left,
            "replayed/s": round(fb.stats.replayed / max(time.monotonic() - started, 1e-3)),
            "replayed": fb.stats.replayed,
            "quarantined in the run": len(quarantined),
        }
    finals: dict[str, Model] = {}
    async with PostgresStorage.from_url(url) as storage:
        for key in sorted(keys):
            if key.startswith("u"):
                profile = await storage.load_profile(key)
                finals[key] = Model(True, (), profile.value.exercise_habit) if profile else Model()
                continue
            state = await storage.load_state(key)
            finals[key] = Model(
                await storage.exists(key),
                tuple((m.role, m.content, m.turn_id) for m in await storage.load(key)),
                state.value.last_question if state else None,
            )
    return figures, problems, finals


async def until_healthy(log_path: Path, patience: float) -> float | None:
    """The primary stays up while the clients go on: seconds until the worker reports
    itself healthy (its twice-a-second sample), or None if it isn't within ``patience``."""
    started = time.monotonic()
    samples = len(read_log(log_path).samples)
    while time.monotonic() - started < patience:
        await asyncio.sleep(0.5)
        fresh = read_log(log_path).samples[samples:]
        if fresh and not fresh[-1]["degraded"]:
            return time.monotonic() - started
    return None


#: Seconds the clients may take, after the faults, to reach ``min_acked``: far more than a
#: healthy worker needs at any load (it acknowledges several calls a second).
ACKED_PATIENCE = 180.0


async def until_acked(log_path: Path, count: int) -> None:
    """Return once the log holds ``count`` acknowledged calls (or ACKED_PATIENCE passed)."""
    started = time.monotonic()
    while time.monotonic() - started < ACKED_PATIENCE:
        if sum(op.status == "ok" for op in read_log(log_path).ops) >= count:
            return
        await asyncio.sleep(0.5)


def hung_call(log: Log, record: dict[str, Any]) -> str:
    op = next(op for op in log.ops if op.op == record["op"])
    ended = f"ended {op.status}" + (f" ({op.error})" if op.error else "")
    return (
        f"liveness: {op.op} ({op.kind} {op.session}) took over 10 s while the fallback "
        "finished no call on the primary, "
        f"{ended}; it waited at " + " <- ".join(reversed(record["chain"][-8:]))
    )


async def run_history(
    database_url: URL,
    redis_url: str,
    *,
    duration: float = 30.0,
    clients: int = 8,
    sessions_per_client: int = 3,
    pause: float = 0.02,
    seed: int | None = None,
    min_outages: int = 10,
    min_kills: int = 3,
    tick: Callable[[float], None] | None = None,
    keep_logs: bool = False,
    redis: RedisServer | None = None,
    redis_kills: int = 0,
    journal_loss: str = "accept",
    calm: float = 0.0,
    min_acked: int = 0,
) -> HistoryResult:
    """Run the workload against the migrated database at ``database_url``, then check it.

    ``redis``: a redis-server of the run's own (at ``redis_url``), SIGKILLed ``redis_kills``
    times inside outages; ``journal_loss`` as FallbackStorage takes it.  ``calm``: after
    the faults, the primary stays up and the clients go on for up to this many seconds,
    until the worker reports itself healthy (``HistoryResult.healthy_after``).
    ``min_acked``: then, with the primary still up, the clients go on until that many calls
    were acknowledged in all (a loaded machine acknowledges fewer in the faults' time),
    ACKED_PATIENCE seconds at most."""
    from tests.conftest import drop_keys  # noqa: PLC0415

    seed = random.randrange(2**31) if seed is None else seed
    rng, tag = random.Random(seed), uuid.uuid4().hex[:10]
    prefix, journal = f"ctxstore-history-{tag}:session", f"history-{tag}"
    log_dir = Path(tempfile.mkdtemp(prefix="ctxstore-history-"))
    log_path, stderr = log_dir / "history.jsonl", log_dir / "worker-stderr.txt"
    proxy = TcpProxy(**socket_target(database_url))
    through = database_url.set(drivername="postgresql+asyncpg", host="127.0.0.1")
    through = through.set(port=await proxy.start(), query={})
    options = {
        "database-url": through.render_as_string(hide_password=False),
        "redis-url": redis_url,
        "prefix": prefix,
        "journal": journal,
        "log": log_path,
        "clients": clients,
        "seed": seed,
        "sessions-per-client": sessions_per_client,
        "pause": pause,
        "journal-loss": journal_loss,
    }
    worker = Worker([part for k, v in options.items() for part in (f"--{k}", str(v))], stderr)
    keep = False
    try:
        await worker.start()
        started = time.monotonic()
        events = [
            *schedule(rng, duration, min_outages, min_kills, redis_kills),
            (duration, "end"),
        ]
        faults, problems = await inflict(worker, proxy, events, rng, LogFile(log_path), tick, redis)
        proxy.forward()
        healthy_after = await until_healthy(log_path, calm) if calm else None
        await until_acked(log_path, min_acked)
        elapsed = time.monotonic() - started
        if tick is not None:
            tick(elapsed)
        await worker.kill()
        log = read_log(log_path)
        final, drained, finals = await drain_and_read(
            database_url,
            redis_url,
            prefix,
            journal,
            set(log.histories),
            patience=60.0,
            journal_loss=journal_loss,
        )
        verdict = check_history(log.histories, finals)
        if problems and (text := stderr.read_text(errors="replace").strip()):
            problems.append(f"worker: stderr ends {text[-2000:]}")
        problems += [hung_call(log, record) for record in log.hung]
        verdict.anomalies[:0] = problems + drained
        keep = keep_logs or bool(verdict.anomalies)
        return HistoryResult(
            duration=elapsed,
            clients=clients,
            sessions=len(log.histories),
            ops=Counter(op.status for op in log.ops),
            errors=Counter(op.error for op in log.ops if op.error),
            faults=faults,
            worker_stats={n: sum(int(s.get(n) or 0) for s in log.stats.values()) for n in STATS},
            degraded_share=sum(s["degraded"] for s in log.samples) / max(1, len(log.samples)),
            calm=calm,
            healthy_after=healthy_after,
            final=final,
            verdict=verdict,
            log_dir=str(log_dir) if keep else None,
        )
    finally:
        await worker.kill()
        await proxy.stop()
        await drop_keys(redis_url, prefix)  # the journal's keys start with the prefix too
        if not keep:
            shutil.rmtree(log_dir, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.fallback_history")
    parser.add_argument("role", choices=["worker"])
    for name in ("--database-url", "--redis-url", "--prefix", "--journal", "--log"):
        parser.add_argument(name, required=True)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sessions-per-client", type=int, default=3)
    parser.add_argument("--pause", type=float, default=0.02, help="most seconds between ops")
    parser.add_argument("--journal-loss", choices=("refuse", "accept"), default="accept")
    asyncio.run(run_worker(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
