"""The ledger of Context Contracts (revision 1008): what recording costs in storage and
time, and how fast ``ctxstore ledger verify --all`` checks a million entries.

Three figures:

1. ``storage per recorded turn``: one realistic 100-turn consultation (``--turns``),
   recorded plain and sealed (``Encryption``, each in a scratch database of its own).
   Each turn builds the contract of the user's new message at an 8,000-token budget
   (``ContextBuilder.build_json(..., record=True)``), then appends that message and the
   assistant's reply (Chinese, 60-200 characters each, varied); a new summary every 20
   turns (covering all but the last 30 turns, so the window is the budget's: it slides
   every turn once the messages exceed the budget), a state change every 3 turns, a
   user profile, and at turn 50 a ``save`` of the whole list with one old message's
   content edited.  Reported: the contract's average size (UTF-8 bytes of the text
   returned), and the growth of ``pg_total_relation_size`` (heap, indexes, TOAST) of
   contract_chains, contract_pieces, contract_entries and contract_responses over the
   turns, from the same tables empty, both after ``VACUUM (ANALYZE)``; beside it the same
   without the free space and visibility maps (main forks: a fixed cost, not a turn's),
   and the sum of ``pg_column_size`` of their rows.  Target: <= 4 KB a turn.
2. ``cost of recording``: ``build_json`` of that (stored) consultation with
   ``record=False`` and ``record=True``, interleaved (``--rounds`` each, a new user message
   every round, the same for both), on a pool of one connection: medians of this
   process's CPU (``time.process_time_ns``), the backend's (the first field of
   ``/proc/<backend pid>/schedstat``: a server on this machine; else not shown) and wall
   time.  Target: record / no record <= 1.3x (CPU, client + backend).
3. ``verify --all``: a ledger of ``--sessions`` x ``--entries-per-session`` entries
   (default 10,000 x 100 = 1,000,000) written with COPY: each session's contracts built
   with ``serialize_document`` from a sliding window of ~40 messages of its own Chinese
   consultation (a summary, a state and a profile that change now and then), cut with
   ``ledger.cut`` into pieces shared by the session's entries as the library shares them,
   each entry's body and digest computed as the library computes them.  Then
   ``verify_ledger`` (what ``ctxstore ledger verify`` runs) over all of it, timed: entries
   a second (wall) and this process's CPU; it must find the ledger intact.  Target:
   >= 50,000 entries/s.  ``--profile N`` profiles (cProfile) a verify of the first N
   entries' sessions after it.

Run: CTXSTORE_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
     python -m benchmarks.bench_ledger [--turns 100] [--rounds 200] [--sessions 10000]
     [--entries-per-session 100] [--parts 1,2,3] [--profile 0]
     (without the variable: the embedded server)
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import cProfile
import io
import json
import os
import pstats
import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from benchmarks.bench_load_cpu import _ANSWERED, _ASKED
from benchmarks.common import bench_server, raw_connection, scratch_database, table
from ctxstore import ContextBuilder, EngineSettings, Message, PostgresStorage
from ctxstore.commands.ledger import verify_ledger
from ctxstore.commands.sample import ANSWERS_ZH, ZH
from ctxstore.contract import CONTEXT_VERSION, serialize_document, state_document
from ctxstore.encryption import Encryption, Keyring
from ctxstore.models import ConsultationState
from ctxstore.progress import Progress
from ctxstore.storage.ledger import (
    ZERO_DIGEST,
    Cut,
    Provenance,
    body_digest,
    cut,
    link_digest,
    plain_digest,
)
from ctxstore.timestamps import go_timestamp

BUDGET = 8_000
SUMMARY_EVERY = 20
#: A summary covers all but the last this many turns: the rest is the window's to fill.
SUMMARY_LAG = 30
STATE_EVERY = 3
DELTA_TURN = 50
STORAGE_TARGET = 4 * 1024
COST_TARGET = 1.3
VERIFY_TARGET = 50_000
LEDGER_TABLES = ("contract_chains", "contract_pieces", "contract_entries", "contract_responses")
USER = "bench-ledger-user"
SESSION = "bench-ledger-consultation"
STAGES = ("greeting", "collecting_details", "assessing", "advising", "completed")
START = datetime(2026, 11, 29, 0, 15, 2, 123_000, tzinfo=UTC)

# -- a consultation in Chinese -------------------------------------------------------------


def _clauses() -> list[str]:
    """Clauses of the repo's Chinese consultations, to compose messages from."""
    texts = [*_ASKED, *_ANSWERED, *ANSWERS_ZH]
    for complaint in ZH:
        texts += [complaint.opening, *complaint.details]
    clauses = []
    for text in texts:
        for part in text.replace("？", "。").replace("，", "。").split("。"):
            if part.strip():
                clauses.append(part.strip())
    return clauses


CLAUSES = _clauses()


def cjk_text(rng: random.Random, low: int = 60, high: int = 200) -> str:
    """Chinese text of ``low`` to ``high`` characters, clauses drawn at random."""
    length = rng.randint(low, high)
    text = ""
    while len(text) < length:
        text += rng.choice(CLAUSES) + rng.choice("，，，。？")
    return text[: length - 1] + "。"


def state_at(turn: int, rng: random.Random, last_question: str) -> dict[str, Any]:
    """The consultation's state at ``turn``: the stage moves on, details fill in."""
    stage = STAGES[min(turn // 20, len(STAGES) - 1)]
    complaint = ZH[0]
    return {
        "stage": stage,
        "chief_complaint": complaint.chief_complaint if turn >= 3 else None,
        "body_parts": list(complaint.body_parts) + (["大腿"] if turn > 40 else []),
        "symptoms": list(complaint.symptoms)[: 1 + turn // 30],
        "duration": f"{1 + turn // 10}周",
        "aggravating_factors": list(complaint.aggravating)[: 1 + turn // 40],
        "pain_level": str(rng.randint(2, 8)) if turn >= 6 else None,
        "swelling": turn % 2 == 0 if turn >= 9 else None,
        "red_flags": ["夜间痛醒"] if turn > 70 else [],
        "missing_slots": [] if turn > 30 else ["pain_level", "trauma"],
        "last_question": last_question[:60],
    }


@dataclass
class Turns:
    """What the consultation's turns gave."""

    sizes: list[int] = field(default_factory=list)
    included: list[int] = field(default_factory=list)
    #: Position of the window's first message, each turn.
    firsts: list[int] = field(default_factory=list)
    seconds: float = 0.0


async def consultation(storage: PostgresStorage, turns: int, session: str, seed: int) -> Turns:
    """``turns`` turns of a consultation, each contract recorded (module docstring)."""
    rng = random.Random(seed)
    builder = ContextBuilder(storage, record=True, model="gpt-4o")
    await storage.save_profile(
        USER, {"age": 41, "gender": "female", "exercise_habit": "篮球", "known_limitations": []}
    )
    await storage.save(session, [], user_id=USER)
    await storage.save_state(session, {"stage": "greeting"})
    messages: list[Message] = []
    done = Turns()
    stamp = START
    bar = Progress(f"consultation {session}", turns)
    started = time.perf_counter()
    for turn in range(1, turns + 1):
        turn_id = f"turn_{turn:04d}"
        asked = cjk_text(rng)
        if turn == DELTA_TURN:
            old = messages[10]
            messages[10] = Message(
                role=old.role,
                content=old.content + "（更正：是左膝，不是右膝。）",
                turn_id=old.turn_id,
                timestamp=old.timestamp,
            )
            await storage.save(session, messages, user_id=USER)
        if turn % SUMMARY_EVERY == 1 and turn > SUMMARY_EVERY:
            covered = max(len(messages) - 2 * SUMMARY_LAG - 1, -1)
            await storage.save_summary(session, cjk_text(rng, 250, 400), covers_until=covered)
        if turn % STATE_EVERY == 0:
            last = messages[-1].content if messages else ""
            await storage.save_state(session, state_at(turn, rng, last))
        text = await builder.build_json(session, turn_id, asked, token_budget=BUDGET)
        document = json.loads(text)
        included = document["meta"]["included_message_count"]
        done.sizes.append(len(text.encode("utf-8")))
        done.included.append(included)
        done.firsts.append(len(messages) - included)
        reply = cjk_text(rng)
        pair = []
        for role, content in (("user", asked), ("assistant", reply)):
            stamp += timedelta(seconds=rng.randint(8, 150), microseconds=rng.randint(0, 999_999))
            pair.append(Message(role=role, content=content, turn_id=turn_id, timestamp=stamp))
        await storage.append(session, pair, user_id=USER)
        messages += pair
        bar.advance()
    bar.finish()
    done.seconds = time.perf_counter() - started
    return done


# -- 1. storage per recorded turn ----------------------------------------------------------


#: The main forks (no free space or visibility map) of the ledger's tables, their indexes,
#: their TOAST tables and those tables' indexes.
MAIN_FORKS = """
SELECT coalesce(sum(pg_relation_size(oid, 'main')), 0) FROM pg_class WHERE oid IN (
    SELECT oid FROM pg_class WHERE relname = ANY($1::text[])
    UNION SELECT reltoastrelid FROM pg_class WHERE relname = ANY($1::text[])
    UNION SELECT i.indexrelid FROM pg_index AS i JOIN pg_class AS c
        ON i.indrelid IN (c.oid, c.reltoastrelid) WHERE c.relname = ANY($1::text[]))
"""


@dataclass(frozen=True)
class Size:
    """The ledger's tables: pg_total_relation_size, their main forks alone, and the sum
    of pg_column_size of their rows."""

    total: int
    main: int
    rows: int

    def __sub__(self, other: Size) -> Size:
        return Size(self.total - other.total, self.main - other.main, self.rows - other.rows)


async def ledger_size(url: URL) -> Size:
    """The ledger's size after VACUUM (ANALYZE) of its tables."""
    conn = await raw_connection(url)
    try:
        for name in LEDGER_TABLES:
            await conn.execute(f"VACUUM (ANALYZE) {name}")
        total = sum(
            [
                await conn.fetchval(f"SELECT pg_total_relation_size('{name}')")
                for name in LEDGER_TABLES
            ]
        )
        rows = sum(
            [
                await conn.fetchval(f"SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {name} t")
                for name in LEDGER_TABLES
            ]
        )
        main = await conn.fetchval(MAIN_FORKS, list(LEDGER_TABLES))
    finally:
        await conn.close()
    return Size(int(total), int(main), int(rows))


@dataclass(frozen=True)
class Stored:
    label: str
    turns: Turns
    size: Size
    entries: int
    pieces: int


async def storage_case(url: URL, label: str, turns: int, encryption: Encryption | None) -> Stored:
    options: dict[str, Any] = {"encryption": encryption} if encryption else {}
    async with PostgresStorage.from_url(url, **options) as storage:
        empty = await ledger_size(url)
        done = await consultation(storage, turns, SESSION, seed=52)
        grown = await ledger_size(url) - empty
        async with storage.maintenance("bench: counts") as driver:
            entries = int(await driver.fetchval("SELECT count(*) FROM contract_entries"))
            pieces = int(await driver.fetchval("SELECT count(*) FROM contract_pieces"))
        verified = await verify_ledger(storage)
        if not verified.intact:
            raise RuntimeError(f"{label}: {verified.summary()}")
    return Stored(label, done, grown, entries, pieces)


def storage_report(cases: list[Stored]) -> str:
    rows = []
    for case in cases:
        done, turns = case.turns, len(case.turns.sizes)
        rows.append(
            (
                case.label,
                f"{statistics.mean(done.sizes):,.0f}",
                f"{case.entries:,} / {case.pieces:,}",
                f"{case.size.total / turns:,.0f}",
                f"{case.size.main / turns:,.0f}",
                f"{case.size.rows / turns:,.0f}",
                f"{case.size.total / turns / statistics.mean(done.sizes):.1%}",
            )
        )
    header = (
        "",
        "contract bytes (avg)",
        "entries / pieces",
        "bytes/turn (relations)",
        "(main forks)",
        "(rows)",
        "of a contract",
    )
    return table(rows, header)


def spans(numbers: list[int]) -> str:
    """``[2, 3, 4, 9]`` as ``2-4, 9``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and runs[-1][-1] == number - 1:
            runs[-1][-1] = number
        else:
            runs.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs) or "none"


def window_report(done: Turns) -> str:
    pairs = list(zip(done.firsts, done.firsts[1:], strict=False))
    moved = sum(1 for a, b in pairs if b != a)
    slid = sum(1 for a, b in pairs if b > a)
    return (
        f"window: {min(done.included)}-{max(done.included)} messages "
        f"(median {statistics.median(done.included):.0f}); its first message moved on "
        f"{moved} of {len(done.firsts) - 1} turns, forward on {slid} (not on turns "
        f"{spans([t + 2 for t, (a, b) in enumerate(pairs) if b == a])}); "
        f"{len(done.sizes)} turns in {done.seconds:.1f} s"
    )


# -- 2. cost of recording ------------------------------------------------------------------


def cpu_ns(pid: int) -> int | None:
    """Nanoseconds the process has spent on CPU (None: not a process of this machine)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except OSError:
        return None


async def recording_cost(url: URL, rounds: int, warmup: int) -> str:
    storage = PostgresStorage.from_url(url, settings=EngineSettings(pool_size=1))
    try:
        async with storage.driver() as driver:
            pid = int(await driver.fetchval("SELECT pg_backend_pid()"))
        builder = ContextBuilder(storage, model="gpt-4o")
        rng = random.Random(1008)
        turn_id = "turn_0101"

        def contender(record: bool) -> Callable[[str], Any]:
            async def build(asked: str) -> None:
                assert await builder.build_json(
                    SESSION, turn_id, asked, token_budget=BUDGET, record=record
                )

            return build

        contenders = {"record=False": contender(False), "record=True": contender(True)}
        for _ in range(warmup):
            asked = cjk_text(rng)
            for action in contenders.values():
                await action(asked)
        samples: dict[str, list[tuple[int, int | None, int]]] = {name: [] for name in contenders}
        names = list(contenders)
        bar = Progress("record vs no record", rounds)
        for _ in range(rounds):
            asked = cjk_text(rng)
            names.reverse()  # A/B, then B/A: neither always first
            for name in names:
                client, backend, wall = time.process_time_ns(), cpu_ns(pid), time.perf_counter_ns()
                await contenders[name](asked)
                after = cpu_ns(pid)
                samples[name].append(
                    (
                        time.process_time_ns() - client,
                        None if backend is None or after is None else after - backend,
                        time.perf_counter_ns() - wall,
                    )
                )
            bar.advance()
        bar.finish()
    finally:
        await storage.close()
    has_backend = all(b is not None for values in samples.values() for _, b, _ in values)

    def medians(name: str) -> tuple[float, float | None, float | None, float]:
        values = samples[name]
        client = statistics.median(c for c, _, _ in values) / 1e6
        if not has_backend:
            return client, None, None, statistics.median(w for _, _, w in values) / 1e6
        backend = statistics.median(b or 0 for _, b, _ in values) / 1e6
        both = statistics.median(c + (b or 0) for c, b, _ in values) / 1e6
        return client, backend, both, statistics.median(w for _, _, w in values) / 1e6

    figures = {name: medians(name) for name in contenders}
    base, recorded = figures["record=False"], figures["record=True"]

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    rows = [(name, *(cell(v) for v in values)) for name, values in figures.items()]
    rows.append(
        (
            "ratio",
            *(
                "-" if a is None or b is None else f"{b / a:.2f}x"
                for a, b in zip(base, recorded, strict=True)
            ),
        )
    )
    lines = [
        f"build_json at {BUDGET:,} tokens of the stored consultation, median of "
        f"{rounds} rounds interleaved, ms",
        table(rows, ("", "client CPU", "backend CPU", "CPU sum", "wall")),
    ]
    cpu = 2 if has_backend else 0
    ratio = recorded[cpu] / base[cpu]  # type: ignore[operator]
    what = "CPU sum" if has_backend else "client CPU"
    verdict = "met" if ratio <= COST_TARGET else "MISSED"
    lines.append(f"target record <= {COST_TARGET}x no record ({what}): {ratio:.2f}x {verdict}")
    return "\n".join(lines)


# -- 3. verify --all on a synthetic ledger -------------------------------------------------

WINDOW = 40
MESSAGES_PER_ENTRY = 2


class LineCuts:
    """``cut`` of a contract, line by line, each distinct line cut once: every newline is
    a cut point and no other cut spans one, so the same frame and pieces as ``cut`` of
    the whole text (checked every CHECK_EVERY entries), at a fraction of the cost (a
    session's contracts repeat most of their lines)."""

    def __init__(self) -> None:
        self.lines: dict[str, Cut] = {}

    def __call__(self, text: str) -> Cut:
        frame: list[tuple[bool, bytes]] = []
        pieces: dict[bytes, str] = {}
        lines = text.split("\n")
        for number, bare in enumerate(lines):
            line = bare + "\n" if number < len(lines) - 1 else bare
            found = self.lines.get(line)
            if found is None:
                found = self.lines[line] = cut(line, plain_digest)
            frame += found.frame
            for digest, piece in found.pieces.items():
                pieces.setdefault(digest, piece)
        return Cut(frame, pieces)


CHECK_EVERY = 97


@dataclass
class SyntheticSession:
    """One session's chain, pieces and entries, as COPY rows."""

    chain: tuple[Any, ...]
    pieces: list[tuple[Any, ...]]
    entries: list[tuple[Any, ...]]


def synthetic_session(number: int, entries: int, recorded_from: datetime) -> SyntheticSession:
    """The ledger of one session's ``entries`` contracts (module docstring)."""
    rng = random.Random(number)
    session_id = f"bench-ledger-{number:07d}"
    user_id = f"bench-user-{number % 9973:05d}"
    profile = {"age": 16 + number % 55, "gender": "female", "exercise_habit": "跑步",
               "known_limitations": []}  # fmt: skip
    count = (entries + WINDOW // MESSAGES_PER_ENTRY) * MESSAGES_PER_ENTRY
    stamp = START + timedelta(days=number % 56)
    messages = []
    for i in range(count):
        stamp += timedelta(seconds=rng.randint(8, 150), microseconds=rng.randint(0, 999_999))
        messages.append(
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": cjk_text(rng),
                "turn_id": f"turn_{i // 2 + 1:04d}",
                "timestamp": go_timestamp(stamp),
            }
        )
    pieces: dict[bytes, int] = {}
    piece_rows: list[tuple[Any, ...]] = []
    entry_rows: list[tuple[Any, ...]] = []
    prev = ZERO_DIGEST
    state = ConsultationState(stage="greeting")
    state_version, summary, summary_version = 1, None, 0
    recorded_at = recorded_from
    cut_lines = LineCuts()
    for seq in range(1, entries + 1):
        last = WINDOW + (seq - 1) * MESSAGES_PER_ENTRY
        first = last - WINDOW + rng.randint(-4, 4)  # the budget's window: ~40 messages
        window = messages[max(first, 0) : last]
        if seq % STATE_EVERY == 0:
            state = ConsultationState.model_validate(state_at(seq, rng, window[-1]["content"]))
            state_version += 1
        if seq % SUMMARY_EVERY == 1 and seq > 1:
            summary, summary_version = cjk_text(rng, 250, 400), summary_version + 1
        context: dict[str, Any] = {"recent_messages": window}
        if summary is not None:
            context["conversation_summary"] = summary
        context["consultation_state"] = state_document(state)
        context["user_profile"] = profile
        turn_id = f"turn_{last // 2 + 1:04d}"
        document = {
            "session_id": session_id,
            "turn_id": turn_id,
            "user_message": messages[last]["content"],
            "context": context,
            "meta": {
                "context_version": CONTEXT_VERSION,
                "token_budget": BUDGET,
                "included_message_count": len(window),
                "summary_version": summary_version,
            },
        }
        text = serialize_document(document)
        pieces_of = cut_lines(text)
        if (number * entries + seq) % CHECK_EVERY == 0 and pieces_of != cut(text, plain_digest):
            raise AssertionError(f"cut line by line is not cut: session {number}, entry {seq}")
        for digest, content in pieces_of.pieces.items():
            if digest not in pieces:
                pieces[digest] = len(pieces) + 1
                piece_rows.append((session_id, pieces[digest], digest, content, None, None))
        frame = [-pieces[d] if comma else pieces[d] for comma, d in pieces_of.frame]
        provenance = Provenance(
            session_id,
            turn_id,
            "gpt-4o",
            "o200k_base",
            len(text) // 2,
            last + 1,
            summary_version,
            state_version,
            1,
        )
        body = body_digest(provenance, pieces_of.frame)
        recorded_at += timedelta(seconds=rng.randint(20, 300), microseconds=rng.randint(1, 999_999))
        digest = link_digest(prev, seq, recorded_at, body)
        entry_rows.append(
            (
                session_id,
                seq,
                turn_id,
                recorded_at,
                provenance.model,
                provenance.token_encoding,
                provenance.token_count,
                provenance.session_version,
                provenance.summary_version,
                provenance.state_version,
                provenance.profile_version,
                frame,
                body,
                prev,
                digest,
            )
        )
        prev = digest
    chain = (session_id, user_id, entries, len(pieces), prev, None)
    return SyntheticSession(chain, piece_rows, entry_rows)


CHAIN_COLUMNS = ("session_id", "user_id", "entries", "pieces", "last_digest", "erased_at")
PIECE_COLUMNS = ("session_id", "piece_no", "digest", "content", "key_id", "sealed")
ENTRY_COLUMNS = (
    "session_id",
    "entry_seq",
    "turn_id",
    "recorded_at",
    "model",
    "token_encoding",
    "token_count",
    "session_version",
    "summary_version",
    "state_version",
    "profile_version",
    "frame",
    "body",
    "prev",
    "digest",
)


def synthetic_batch(low: int, high: int, per_session: int) -> list[SyntheticSession]:
    """Sessions ``low`` to ``high - 1`` (in a worker process)."""
    recorded_from = datetime(2026, 12, 1, tzinfo=UTC)
    return [synthetic_session(n, per_session, recorded_from) for n in range(low, high)]


async def synthesise(url: URL, sessions: int, per_session: int, batch: int = 50) -> float:
    """The synthetic ledger written with COPY, made ``batch`` sessions at a time by a
    process a core; its seconds."""
    conn = await raw_connection(url)
    started = time.perf_counter()
    bar = Progress(f"synthesising {sessions * per_session:,} entries", sessions * per_session)
    loop = asyncio.get_running_loop()
    workers = os.cpu_count() or 1
    try:
        with concurrent.futures.ProcessPoolExecutor(workers) as pool:
            lows = iter(range(0, sessions, batch))
            pending: list[asyncio.Future[list[SyntheticSession]]] = []
            while True:
                while len(pending) < 2 * workers and (low := next(lows, None)) is not None:
                    high = min(low + batch, sessions)
                    pending.append(
                        loop.run_in_executor(pool, synthetic_batch, low, high, per_session)
                    )
                if not pending:
                    break
                made = await pending.pop(0)
                await conn.copy_records_to_table(
                    "contract_chains", records=[s.chain for s in made], columns=CHAIN_COLUMNS
                )
                await conn.copy_records_to_table(
                    "contract_pieces",
                    records=[row for s in made for row in s.pieces],
                    columns=PIECE_COLUMNS,
                )
                await conn.copy_records_to_table(
                    "contract_entries",
                    records=[row for s in made for row in s.entries],
                    columns=ENTRY_COLUMNS,
                )
                bar.advance(sum(len(s.entries) for s in made))
        bar.finish()
        for name in LEDGER_TABLES:
            await conn.execute(f"VACUUM (ANALYZE) {name}")
        sizes = await conn.fetch(
            "SELECT relname, pg_total_relation_size(oid) AS bytes FROM pg_class"
            " WHERE relname = ANY($1::text[]) ORDER BY 1",
            list(LEDGER_TABLES),
        )
        counts = {
            name: await conn.fetchval(f"SELECT count(*) FROM {name}")
            for name in ("contract_pieces", "contract_entries")
        }
    finally:
        await conn.close()
    print(
        "ledger: "
        + ", ".join(f"{row['relname']} {row['bytes'] / 2**20:,.0f} MiB" for row in sizes)
        + f"; {counts['contract_entries']:,} entries, {counts['contract_pieces']:,} pieces"
    )
    return time.perf_counter() - started


async def verify_rate(url: URL, profile_entries: int) -> str:
    async with PostgresStorage.from_url(url) as storage:
        cpu, wall = time.process_time(), time.perf_counter()
        result = await verify_ledger(storage, show_progress=True)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        profile = ""
        if profile_entries:
            profile = await profiled(storage, profile_entries)
    rows = [
        (
            f"{result.entries:,}",
            f"{result.chains:,}",
            f"{result.plain_pieces:,}",
            f"{wall:.1f}",
            f"{cpu:.1f}",
            f"{result.entries / wall:,.0f}",
        )
    ]
    rate = result.entries / wall
    verdict = "met" if rate >= VERIFY_TARGET else "MISSED"
    lines = [
        "verify_ledger (ctxstore ledger verify --all)",
        table(rows, ("entries", "chains", "pieces", "wall s", "CPU s (process)", "entries/s")),
        f"result: {'intact' if result.intact else 'NOT INTACT'}"
        f" ({len(result.findings):,} findings); root {result.root[:16]}...",
        f"target >= {VERIFY_TARGET:,} entries/s: {rate:,.0f} {verdict}",
    ]
    if not result.intact:
        lines += [finding.line() for finding in result.findings[:5]]
    return "\n".join(lines) + profile


async def profiled(storage: PostgresStorage, entries: int) -> str:
    """cProfile of verify_ledger until ``entries`` entries are checked (a batch more)."""

    class Enough(Exception):
        pass

    seen = [0]

    def progress(checked: int) -> None:
        seen[0] += checked
        if seen[0] >= entries:
            raise Enough

    profiler = cProfile.Profile()
    wall = time.perf_counter()
    profiler.enable()
    with contextlib.suppress(Enough):
        await verify_ledger(storage, progress=progress)
    profiler.disable()
    wall = time.perf_counter() - wall
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(15)
    stats.sort_stats("cumulative").print_stats(25)
    return (
        f"\n\ncProfile of verify_ledger over {seen[0]:,} entries ({wall:.1f} s wall under "
        f"the profiler, {seen[0] / wall:,.0f} entries/s)\n{out.getvalue()}"
    )


# -- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=100, help="turns of the consultation")
    parser.add_argument("--rounds", type=int, default=200, help="timed builds of each kind")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=10_000, help="synthetic chains")
    parser.add_argument("--entries-per-session", type=int, default=100)
    parser.add_argument("--parts", default="1,2,3", help="the figures to make: 1, 2, 3")
    parser.add_argument(
        "--profile", type=int, default=0, help="entries to verify under cProfile (0: none)"
    )
    args = parser.parse_args()
    parts = {int(part) for part in args.parts.split(",")}
    encryption = Encryption(Keyring({"bench": os.urandom(32)}))
    reports = []
    with bench_server() as server:
        if parts & {1, 2}:
            cases = []
            for label, sealing in (("plain", None), ("sealed", encryption)):
                with scratch_database(server) as url:
                    case = asyncio.run(storage_case(url, label, args.turns, sealing))
                    cases.append(case)
                    if label == "plain" and 2 in parts:
                        cost = asyncio.run(recording_cost(url, args.rounds, args.warmup))
            if 1 in parts:
                # The main forks: what a turn adds.  The free space and visibility maps
                # are a few pages a relation, whatever it holds: on one consultation's
                # tables they are a fifth of the whole, on a million entries nothing.
                verdicts = ", ".join(
                    f"{case.label} {case.size.main / args.turns:,.0f} "
                    f"{'met' if case.size.main / args.turns <= STORAGE_TARGET else 'MISSED'}"
                    for case in cases
                )
                reports.append(
                    f"1. storage per recorded turn: {args.turns} turns at {BUDGET:,} tokens "
                    f"(ledger tables, growth after VACUUM (ANALYZE))\n"
                    f"{storage_report(cases)}\n{window_report(cases[0].turns)}\n"
                    f"target <= {STORAGE_TARGET:,} bytes/turn (main forks): {verdicts}"
                )
            if 2 in parts:
                reports.append(f"2. cost of recording\n{cost}")
        if 3 in parts:
            with scratch_database(server) as url:
                seconds = asyncio.run(synthesise(url, args.sessions, args.entries_per_session))
                print(f"synthesised in {seconds:.0f} s")
                reports.append(f"3. verify --all\n{asyncio.run(verify_rate(url, args.profile))}")
    print()
    print("\n\n".join(reports))


if __name__ == "__main__":
    main()
