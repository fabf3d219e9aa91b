"""``ctxstore analytics refresh`` on 1,000,000 sealed consultations (issue 24, item 1).

The dataset is written straight into the tables (COPY), as the store seals it: one data
key per user (4 consultations each), each current state sealed under its user's key and
bound to its version, consultations spread over 365 days, complaints drawn from a skewed
list so that some values pass k and many don't.  Then, in one run:

- the first refresh (every day: every state opened in the process);
- a refresh with nothing changed (the day scan alone);
- a refresh after 1% of the consultations changed state (the days they are on);
- the complaints report before (``analytics_frequencies_v2``: SQL over the state rows,
  revision 0016) and after (``analytics_frequencies_v3``: the cells), all time.

CTXSTORE_BENCH_REFRESH_SESSIONS sets another size.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import URL, text

from benchmarks.common import bench_database
from ctxstore import PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.encryption import DataKey, Encryption, Keyring, new_data_key
from ctxstore.models import ConsultationState
from ctxstore.storage.postgres import rows, sql

SESSIONS = int(os.environ.get("CTXSTORE_BENCH_REFRESH_SESSIONS", "1000000"))
PER_USER = 4
DAYS = 365
FIRST_DAY = datetime(2025, 11, 1, tzinfo=UTC)
COMPLAINTS = [f"complaint {n}" for n in range(2_000)]  # Zipf-like: a few common, many rare
PARTS = ["膝盖", "脚踝", "腰部", "肩膀", "手腕", "颈部"]
SYMPTOMS = ["疼痛", "肿胀", "下坠感", "麻木", "僵硬", "无力"]


def document(rng: random.Random) -> ConsultationState:
    complaint = COMPLAINTS[min(int(rng.paretovariate(1.1)) - 1, len(COMPLAINTS) - 1)]
    return ConsultationState.model_validate(
        {
            "stage": rng.choice(["greeting", "collecting_details", "assessing", "advising"]),
            "chief_complaint": complaint,
            "body_parts": rng.sample(PARTS, rng.randint(0, 2)),
            "symptoms": rng.sample(SYMPTOMS, rng.randint(0, 3)),
            "red_flags": ["发热"] if rng.random() < 0.05 else [],
            "duration": rng.choice([None, "三天", "一周", "一个月"]),
        }
    )


async def seed(storage: PostgresStorage, encryption: Encryption) -> None:
    rng = random.Random(24)
    started = time.monotonic()
    users = (SESSIONS + PER_USER - 1) // PER_USER
    async with storage.driver() as driver:
        wrapped = []
        materials = []
        for user in range(users):
            material = new_data_key()
            master, sealed = await encryption.provider.wrap(material, f"u:user{user}")
            wrapped.append((f"u:user{user}", master, sealed))
            materials.append(material)
        await driver.copy_records_to_table(
            "data_keys", records=wrapped, columns=["owner", "master_key_id", "wrapped"]
        )
        ids = {
            row["owner"]: row["key_id"]
            for row in await driver.fetch("SELECT key_id, owner FROM data_keys")
        }
        sessions, states = [], []
        for index in range(SESSIONS):
            user = index % users
            session_id = f"sess-{index:07d}"
            start = FIRST_DAY + timedelta(days=index % DAYS, seconds=rng.randrange(86_000))
            sessions.append((session_id, f"user{user}", start, start + timedelta(minutes=9)))
            owner = f"u:user{user}"
            key = DataKey(ids[owner], owner, materials[user])
            values = rows.state_values(document(rng), key, session_id, 1)
            states.append((session_id, 1, *values.values()))
        await driver.copy_records_to_table(
            "sessions",
            records=sessions,
            columns=["session_id", "user_id", "first_activity_at", "last_activity_at"],
        )
        await driver.copy_records_to_table(
            "consultation_states",
            records=states,
            columns=["session_id", "version", *sql.STATE_COLUMNS],
        )
        await driver.execute("ANALYZE")
    print(f"seeded {SESSIONS:,} sealed consultations in {time.monotonic() - started:.0f} s")


async def report_seconds(storage: PostgresStorage, function: str) -> float:
    async with storage.engine.connect() as conn:
        started = time.monotonic()
        await conn.execute(text(f"SELECT * FROM {function}('chief_complaint', NULL, NULL)"))
        return time.monotonic() - started


async def main(url: URL) -> None:
    encryption = Encryption(Keyring({"bench": os.urandom(32)}))
    async with PostgresStorage.from_url(url, encryption=encryption) as storage:
        await seed(storage, encryption)
        timings: list[tuple[str, float, str]] = []
        first = await refresh_aggregates(storage, encryption)
        timings.append(("first refresh", first.seconds, first.summary()))
        unchanged = await refresh_aggregates(storage, encryption, show=False)
        timings.append(("nothing changed", unchanged.seconds, unchanged.summary()))
        rng = random.Random(7)
        for index in rng.sample(range(SESSIONS), SESSIONS // 100):
            await storage.save_state(f"sess-{index:07d}", document(rng))
        changed = await refresh_aggregates(storage, encryption, show=False)
        timings.append(("1% changed", changed.seconds, changed.summary()))
        before = min([await report_seconds(storage, "analytics_frequencies_v2") for _ in range(3)])
        after = min([await report_seconds(storage, "analytics_frequencies_v3") for _ in range(3)])
    print(f"\n{SESSIONS:,} sealed consultations over {DAYS} days, k = 5")
    for name, seconds, summary in timings:
        per = seconds / SESSIONS * 1e6
        print(f"  {name:<16} {seconds:8.1f} s  ({per:5.1f} us per consultation)")
        print(f"    {summary.splitlines()[0]}")
    print(
        f"  complaints report: {before * 1000:,.0f} ms before (state rows, 0016), "
        f"{after * 1000:,.1f} ms after (cells): {before / after:,.0f}x faster"
    )


if __name__ == "__main__":
    with bench_database() as database:
        asyncio.run(main(database))
