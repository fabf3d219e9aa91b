"""A history of writers and readers beside `rotate-keys --reencrypt`, SIGKILLed and rerun.

Eight writers each own four sealed sessions and a profile (so what each acknowledged
write leaves is known exactly) and append turns, save whole lists they loaded earlier
(often before a rotation started), write states, summaries and profiles; two readers
load any session; an eraser keeps creating a user's session and profile and erasing it.  Meanwhile
the master key moves from k1 to k2 and ``ctxstore rotate-keys --reencrypt`` runs as a
subprocess: SIGKILLed partway, run to the end, twice.  Afterwards a last quiet run retires
what is left, and every session must open with k2 alone, hold every acknowledged write,
and refer only to data keys made since the rotation began.

``python -m tests.rotation_history --runs 10`` prints one line a run (the figures of
issue 46), on CTXSTORE_TEST_DATABASE_URL's server or the embedded one;
tests/integration/test_rotation_races.py runs one.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import random
import signal
import sys
import time
from dataclasses import dataclass, field

from sqlalchemy import URL

from ctxstore import CtxStoreError, Message, PostgresStorage
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import ConflictError
from ctxstore.models import ConsultationState, UserProfile

WRITERS = 8
SESSIONS_PER_WRITER = 4
READERS = 2


@dataclass
class Owned:
    """What a writer's acknowledged writes left in one of its sessions."""

    session_id: str
    user_id: str | None
    messages: list[Message]
    version: int
    stage: str | None = None
    summary: str | None = None
    held: list[Message] | None = None  # a list loaded earlier, saved later
    held_version: int = 0


@dataclass
class HistoryResult:
    acknowledged: int = 0
    failed: list[str] = field(default_factory=list)  # writes that raised (indeterminate)
    conflicts: int = 0  # typed refusals: allowed, nothing written
    reads: int = 0
    read_errors: list[str] = field(default_factory=list)
    erasures: int = 0
    erasure_leftovers: list[str] = field(default_factory=list)  # users with something left
    rotations_killed: int = 0
    rotations_finished: int = 0
    lost: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    stale_keys: int = 0  # rows still under a data key made before the rotation
    keys_under_old_master: int = 0

    def line(self) -> str:
        return (
            f"{self.acknowledged:,} acknowledged writes, {len(self.failed)} failed, "
            f"{self.conflicts} conflicts, {self.reads:,} reads ({len(self.read_errors)} "
            f"errors), {self.erasures} erasures ({len(self.erasure_leftovers)} incomplete), "
            f"rotations: {self.rotations_killed} killed, {self.rotations_finished} "
            f"finished; lost {len(self.lost)}, unreadable {len(self.unreadable)}, rows under "
            f"old keys {self.stale_keys}, keys under the old master key "
            f"{self.keys_under_old_master}"
        )


def turn(rng: random.Random, tag: str) -> list[Message]:
    stamp = f"2026-12-05T08:{rng.randrange(60):02d}:07.{rng.randrange(10**9):09d}+08:00"
    return [
        Message(role="user", content=f"膝盖下坠感 {tag}", turn_id=tag, timestamp=stamp),
        Message(role="assistant", content=f"持续多久了？{tag}", turn_id=tag),
    ]


def master_keys(keys: dict[str, bytes]) -> str:
    return ",".join(f"{key_id}:{base64.b64encode(key).decode()}" for key_id, key in keys.items())


class Writer:
    def __init__(self, storage: PostgresStorage, owned: list[Owned], seed: int) -> None:
        self.storage, self.owned, self.rng = storage, owned, random.Random(seed)
        self.count = 0
        self.user = next(o.user_id for o in owned if o.user_id is not None)
        self.age: int | None = None  # of the user's profile, as acknowledged

    async def step(self, result: HistoryResult) -> None:
        session = self.rng.choice(self.owned)
        self.count += 1
        tag = f"{session.session_id}-{self.count}"
        roll = self.rng.random()
        try:
            if roll < 0.45:
                added = turn(self.rng, tag)
                session.version = await self.storage.append(
                    session.session_id, added, user_id=session.user_id
                )
                session.messages = [*session.messages, *added]
            elif roll < 0.75:
                await self._save_held(session, tag)
            elif roll < 0.82:
                age = self.rng.randrange(18, 90)
                await self.storage.save_profile(self.user, UserProfile(age=age))
                self.age = age
            elif roll < 0.92:
                stage = self.rng.choice(["triage", "history", "advice"])
                await self.storage.save_state(session.session_id, ConsultationState(stage=stage))
                session.stage = stage
            else:
                text = f"总结 {tag}"
                await self.storage.save_summary(session.session_id, text, covers_until=1)
                session.summary = text
            result.acknowledged += 1
        except ConflictError:
            result.conflicts += 1
            await self._resync(session)
        except CtxStoreError as error:
            result.failed.append(f"{tag}: {error!r}")
            await self._resync(session)

    async def _save_held(self, session: Owned, tag: str) -> None:
        """Save a list loaded earlier; half the time, load one to save later instead."""
        if session.held is None or session.held_version != session.version:
            session.held = await self.storage.load(session.session_id)
            session.held_version = await self.storage.version(session.session_id)
            return
        whole = [*session.held, *turn(self.rng, tag)]
        session.version = await self.storage.save(
            session.session_id, whole, expected_version=session.held_version,
            user_id=session.user_id,
        )  # fmt: skip
        session.messages, session.held = whole, None

    async def _resync(self, session: Owned) -> None:
        """After a write that may or may not have landed: what is stored now."""
        session.messages = await self.storage.load(session.session_id)
        session.version = await self.storage.version(session.session_id)
        state = await self.storage.load_state(session.session_id)
        summary = await self.storage.load_summary(session.session_id)
        session.stage = state.value.stage if state is not None else None
        session.summary = summary.text if summary is not None else None
        session.held = None
        profile = await self.storage.load_profile(self.user)
        self.age = profile.value.age if profile is not None else None


async def read_forever(
    storage: PostgresStorage, ids: list[str], seed: int, result: HistoryResult
) -> None:
    rng = random.Random(seed)
    while True:
        session_id = rng.choice(ids)
        try:
            await storage.load(session_id)
            await storage.snapshot(session_id)
            result.reads += 1
        except CtxStoreError as error:
            result.read_errors.append(f"{session_id}: {error!r}")
        await asyncio.sleep(0)


async def erase_until(stop: asyncio.Event, storage: PostgresStorage, result: HistoryResult) -> None:
    """A user's session and profile made and erased, again and again: nothing may stay."""
    while not stop.is_set():
        user = f"leaving{result.erasures}"
        await storage.save(user, turn(random.Random(user), user), user_id=user)
        await storage.save_profile(user, UserProfile(age=50))
        await storage.erase_user(user, vacuum=False)
        async with storage.driver() as driver:
            left = await driver.fetchval(
                "SELECT (SELECT count(*) FROM sessions WHERE user_id = $1)"
                " + (SELECT count(*) FROM user_profiles WHERE user_id = $1)"
                " + (SELECT count(*) FROM data_keys WHERE owner = 'u:' || $1)",
                user,
            )
        if left:
            result.erasure_leftovers.append(user)
        result.erasures += 1


async def write_until(stop: asyncio.Event, writer: Writer, result: HistoryResult) -> None:
    while not stop.is_set():  # a write is never cut short: each ends acknowledged or not
        await writer.step(result)


class Rotation:
    def __init__(self, url: URL, keys: dict[str, bytes]) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSTORE_")}
        self.env |= {
            "CTXSTORE_DATABASE_URL": url.render_as_string(False),
            "CTXSTORE_MASTER_KEYS": master_keys(keys),
        }

    async def start(self) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "ctxstore.cli", "rotate-keys", "--reencrypt",
            "--batch-size", "3", env=self.env,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

    async def killed_after(self, seconds: float) -> bool:
        """Run, SIGKILLed after ``seconds`` (False: it had finished by then)."""
        process = await self.start()
        try:
            await asyncio.wait_for(process.wait(), seconds)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):  # it may end as the time is up
                process.send_signal(signal.SIGKILL)
            if await process.wait() == -signal.SIGKILL:
                return True
        await self._check(process)
        return False

    async def to_the_end(self) -> str:
        process = await self.start()
        return await self._check(process)

    @staticmethod
    async def _check(process: asyncio.subprocess.Process) -> str:
        out, err = await process.communicate()
        if process.returncode != 0:
            raise AssertionError(f"rotate-keys failed ({process.returncode}): {err.decode()}")
        return out.decode()


async def seed(url: URL, keys: dict[str, bytes], rng: random.Random) -> list[list[Owned]]:
    """Sealed sessions under the first master key, before any rotation."""
    owned: list[list[Owned]] = []
    async with PostgresStorage.from_url(url, encryption=Encryption(Keyring(keys))) as storage:
        for w in range(WRITERS):
            mine = []
            for s in range(SESSIONS_PER_WRITER):
                session_id, user_id = f"w{w}-s{s}", (f"user{w}" if s % 2 == 0 else None)
                messages = [m for i in range(10) for m in turn(rng, f"seed{w}{s}{i}")]
                version = await storage.save(session_id, messages, user_id=user_id)
                await storage.save_state(session_id, ConsultationState(stage="triage"))
                await storage.save_summary(session_id, "初诊", covers_until=1)
                mine.append(Owned(session_id, user_id, messages, version, "triage", "初诊"))
            owned.append(mine)
    return owned


async def run_history(url: URL, *, seed_value: int = 0, rotations: int = 2) -> HistoryResult:
    rng = random.Random(seed_value)
    old, new = {"k1": os.urandom(32)}, {"k2": os.urandom(32)}
    owned = await seed(url, old, rng)
    both = Encryption(Keyring({**new, **old}))
    result = HistoryResult()
    async with PostgresStorage.from_url(url, encryption=both) as probe, probe.driver() as driver:
        keys_before = [row[0] for row in await driver.fetch("SELECT key_id FROM data_keys")]
    stores = [PostgresStorage.from_url(url, encryption=both) for _ in range(WRITERS + READERS + 1)]
    ids, stop = [o.session_id for mine in owned for o in mine], asyncio.Event()
    made = [Writer(stores[w], owned[w], seed_value + w) for w in range(WRITERS)]
    writers = [asyncio.create_task(write_until(stop, writer, result)) for writer in made]
    writers.append(asyncio.create_task(erase_until(stop, stores[-1], result)))
    readers = [
        asyncio.create_task(read_forever(stores[WRITERS + r], ids, seed_value + r, result))
        for r in range(READERS)
    ]
    rotation = Rotation(url, {**new, **old})
    try:
        await asyncio.sleep(0.3)
        for _ in range(rotations):
            if await rotation.killed_after(rng.uniform(0.2, 1.0)):
                result.rotations_killed += 1
            await rotation.to_the_end()
            result.rotations_finished += 1
        await asyncio.sleep(0.3)
    finally:
        stop.set()
        for task in readers:
            task.cancel()
        await asyncio.gather(*writers, *readers, return_exceptions=True)
        for store in stores:
            await store.close()
    await rotation.to_the_end()  # the writers' retired keys, now that they are gone
    await verify(url, new, owned, made, keys_before, result)
    return result


async def verify(
    url: URL, new: dict[str, bytes], owned: list[list[Owned]], writers: list[Writer],
    keys_before: list[int], result: HistoryResult,
) -> None:  # fmt: skip
    """Every session opens with the new master key alone and holds what was acknowledged."""
    alone = Encryption(Keyring(new))
    async with PostgresStorage.from_url(url, encryption=alone) as cold:
        for session in (o for mine in owned for o in mine):
            sid = session.session_id
            try:
                stored = await cold.load(sid)
                state = await cold.load_state(sid)
                summary = await cold.load_summary(sid)
            except CtxStoreError as error:
                result.unreadable.append(f"{sid}: {error!r}")
                continue
            if stored != session.messages:
                result.lost.append(f"{sid}: {len(stored)} messages, {len(session.messages)} acked")
            if (state.value.stage if state else None) != session.stage:
                result.lost.append(f"{sid}: state {state!r}, acked {session.stage!r}")
            if (summary.text if summary else None) != session.summary:
                result.lost.append(f"{sid}: summary {summary!r}, acked {session.summary!r}")
        for writer in writers:
            try:
                profile = await cold.load_profile(writer.user)
            except CtxStoreError as error:
                result.unreadable.append(f"profile of {writer.user}: {error!r}")
                continue
            if (profile.value.age if profile else None) != writer.age:
                result.lost.append(f"profile of {writer.user}: {profile!r}, acked {writer.age}")
        async with cold.driver() as driver:
            for table in ("messages", "summaries", "consultation_states", "user_profiles"):
                result.stale_keys += await driver.fetchval(
                    f"SELECT count(*) FROM {table} WHERE key_id = ANY($1::bigint[])", keys_before
                )
            result.keys_under_old_master = await driver.fetchval(
                "SELECT count(*) FROM data_keys WHERE master_key_id <> $1", next(iter(new))
            )


def main(argv: list[str] | None = None) -> None:
    from tests.pg_harness import build_template, start_server  # noqa: PLC0415

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    server = start_server()  # CTXSTORE_TEST_DATABASE_URL's, else the embedded one
    failures = 0
    try:
        template = build_template(server)
        for run in range(args.runs):
            started, name = time.monotonic(), server.new_name("rotation")
            try:
                result = asyncio.run(run_history(server.create(name, template), seed_value=run))
            finally:
                server.drop(name)
            problems = [
                *result.lost, *result.unreadable, *result.read_errors, *result.failed,
                *(f"erasure left data of {user}" for user in result.erasure_leftovers),
            ]  # fmt: skip
            failures += bool(problems or result.stale_keys or result.keys_under_old_master)
            seconds = time.monotonic() - started
            print(f"run {run + 1}: {result.line()} ({seconds:.0f} s)", flush=True)
            for problem in problems:
                print(f"  {problem}")
    finally:
        server.close()
    print(f"{args.runs - failures} of {args.runs} runs with nothing lost or unreadable")


if __name__ == "__main__":
    main()
