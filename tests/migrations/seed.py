"""A database full of consultations, fast: rows made by PostgreSQL itself.

``seed_messages`` writes sessions of 100-500 messages (Chinese consultations: the
patients' lines from ctxstore.commands.sample's complaints, the replies assembled from
advice phrases) with ``generate_series``, straight into sessions and messages, a chunk of
sessions per transaction: a million messages in well under a minute, where the public
API would take an hour.  The rows are what ctxstore itself writes: each digest is the
SHA-256 ctxstore computes over the message (``Message.core_digest``), times to the second
in UTC, a session's count and activity times match its messages, and the content hash is
left NULL, the state ctxstore documents after an append by a process that did not know
the previous hash (the next full save recomputes it).  Only columns every schema since
0021 has are written.

``seed_states`` then saves consultation states (and so their history) for some of those
sessions through the public API, since the state tables change shape with the schema.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import URL, text

from ctxstore import ConsultationState, PostgresStorage
from ctxstore.commands.sample import ZH
from ctxstore.db.engine import create_engine
from ctxstore.progress import Progress

SESSION_SIZES = (100, 500)
#: The first session starts then, each next one an hour later; a message every 30 s.
START = datetime(2026, 1, 5, 8, tzinfo=UTC)
#: Sessions written per transaction (about 30,000 messages).
CHUNK = 100

PATIENT_LINES = [line for complaint in ZH for line in (complaint.opening, *complaint.details)]
ADVICE = [
    "根据您描述的情况，",
    "先不要剧烈运动，注意休息，",
    "可以冰敷十五到二十分钟，每天三到四次，",
    "如果肿胀或疼痛持续加重，请尽快到医院骨科就诊，",
    "建议拍一个核磁共振，看看韧带和半月板有没有损伤，",
    "平时注意热身，运动后做一些拉伸，",
    "出现麻木、无力或者夜间疼醒，需要马上就医。",
    "一般两到三周会明显好转，请按时复诊。",
]

_SESSIONS = text(
    """
    INSERT INTO sessions (session_id, user_id, version, message_count, turn_count,
                          created_at, updated_at, first_activity_at, last_activity_at)
    SELECT s.id, 'seed-u' || (s.number % 1000), 1, s.size, (s.size + 1) / 2,
           s.start, s.start + (s.size - 1) * interval '30 seconds',
           s.start, s.start + (s.size - 1) * interval '30 seconds'
      FROM unnest(CAST(:ids AS text[]), CAST(:numbers AS int[]), CAST(:sizes AS int[]),
                  CAST(:starts AS timestamptz[])) AS s(id, number, size, start)
    """
)

# The digest is ctxstore's: SHA-256 of the compact JSON of [role, content, turn_id,
# time, name] (Message.core_digest), the time as Python's isoformat writes a UTC second.
_MESSAGES = text(
    """
    INSERT INTO messages (session_id, seq, role, content, turn_id, ts, ts_offset, digest,
                          format_version)
    SELECT m.session_id, m.seq, m.role, m.content, m.turn_id, m.ts, 0,
           sha256(convert_to('[' || to_json(m.role)::text || ',' || to_json(m.content)::text
                             || ',' || to_json(m.turn_id)::text || ','
                             || to_json(to_char(m.ts AT TIME ZONE 'UTC',
                                                'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'))::text
                             || ',null]', 'UTF8')),
           2
      FROM (
        SELECT s.id AS session_id, g.seq,
               CASE WHEN g.seq % 2 = 0 THEN 'user' ELSE 'assistant' END AS role,
               CASE WHEN g.seq % 2 = 0
                    THEN (CAST(:patient AS text[]))[1 + (s.number + g.seq / 2) % :patients]
                         || '（第' || g.seq / 2 + 1 || '轮）'
                    ELSE (CAST(:advice AS text[]))[1 + (s.number + g.seq) % :advices]
                         || (CAST(:advice AS text[]))[1 + (s.number * 3 + g.seq) % :advices]
                         || (CAST(:advice AS text[]))[1 + (s.number + g.seq * 5) % :advices]
                         || repeat((CAST(:advice AS text[]))[1 + g.seq % :advices],
                                   (s.number + g.seq) % 3)
               END AS content,
               'turn-' || g.seq / 2 AS turn_id,
               s.start + g.seq * interval '30 seconds' AS ts
          FROM unnest(CAST(:ids AS text[]), CAST(:numbers AS int[]), CAST(:sizes AS int[]),
                      CAST(:starts AS timestamptz[])) AS s(id, number, size, start)
          CROSS JOIN LATERAL generate_series(0, s.size - 1) AS g(seq)
      ) AS m
    """
)


@dataclass(frozen=True)
class Seeded:
    session_ids: list[str]
    messages: int


def session_sizes(total: int, seed: int = 47) -> list[int]:
    """Sizes of 100-500 messages adding up to ``total`` (the last one may be smaller)."""
    chooser = random.Random(seed)
    sizes: list[int] = []
    while total > 0:
        size = min(chooser.randint(*SESSION_SIZES), total)
        sizes.append(size)
        total -= size
    return sizes


def _chunk_values(first: int, sizes: list[int]) -> dict[str, Any]:
    numbers = list(range(first, first + len(sizes)))
    return {
        "ids": [f"seed-{number:07d}" for number in numbers],
        "numbers": numbers,
        "sizes": sizes,
        "starts": [START + timedelta(hours=number) for number in numbers],
        "patient": PATIENT_LINES,
        "patients": len(PATIENT_LINES),
        "advice": ADVICE,
        "advices": len(ADVICE),
    }


async def _seed(url: URL, total: int, label: str | None) -> Seeded:
    sizes = session_sizes(total)
    bar = Progress(label, total) if label else None
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as conn:
            for first in range(0, len(sizes), CHUNK):
                values = _chunk_values(first, sizes[first : first + CHUNK])
                await conn.execute(_SESSIONS, values)
                await conn.execute(_MESSAGES, values)
                await conn.commit()
                if bar is not None:
                    bar.advance(sum(values["sizes"]))
            await conn.execute(text("ANALYZE sessions"))
            await conn.execute(text("ANALYZE messages"))
            await conn.commit()
    finally:
        await engine.dispose()
    if bar is not None:
        bar.finish()
    return Seeded([f"seed-{number:07d}" for number in range(len(sizes))], total)


def seed_messages(url: URL, total: int, *, progress: str | None = None) -> Seeded:
    """``total`` messages in sessions of 100-500 (``progress``: a bar with that label)."""
    return asyncio.run(_seed(url, total, progress))


def _state(number: int, stage: str) -> ConsultationState:
    complaint = ZH[number % len(ZH)]
    return ConsultationState(
        stage=stage,
        chief_complaint=complaint.chief_complaint,
        body_parts=list(complaint.body_parts),
        symptoms=list(complaint.symptoms),
        aggravating_factors=list(complaint.aggravating),
        pain_level=str(3 + number % 6),
        red_flags=["夜间疼醒"] if number % 9 == 0 else [],
    )


async def _save_states(url: URL, session_ids: list[str]) -> None:
    # Not ``async with``: that refuses a schema behind the code, and a step is seeded at
    # the revision it starts from.
    storage = PostgresStorage.from_url(url)
    try:
        for number, session_id in enumerate(session_ids):
            await storage.save_state(session_id, _state(number, "collecting_details"))
            await storage.save_state(session_id, _state(number, "advising"))
    finally:
        await storage.close()


def seed_states(url: URL, session_ids: list[str]) -> None:
    """Two states (the second replacing the first, so one row of history) per session."""
    asyncio.run(_save_states(url, session_ids))
