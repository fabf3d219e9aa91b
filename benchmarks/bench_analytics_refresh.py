"""``ctxstore analytics refresh`` by calendar month against release 1.0's refresh by day,
and the monthly reports (issue 50).

Target: a refresh of 410,000 messages' worth of consultations no slower than 1.0's; a
report in 50 ms or less.  The refresh reads sessions and their current states only, so
the dataset has no messages: 31,500 sealed consultations (seed-sample writes about 13
messages each), written straight into the tables (COPY) as the store seals them: one data
key per user (4 consultations each), each current state sealed under its user's key and
bound to its version, consultations spread over the 365 days of 2025, complaints drawn
from a skewed list so that some values pass k and many don't.

In one run, on the same data, interleaved (1.0, monthly, then monthly, 1.0, ...; each
one's tables emptied at the start of a round, so each first refresh is a first refresh),
the CPU time of this process (opening the sealed states is a refresh's work) and the wall
time of:

- the first refresh (1.0: every day; monthly: every month);
- a refresh with nothing changed;
- a refresh after 1% of the consultations changed state (1.0: the days they are on;
  monthly: nothing, a published month never changes).

Then each monthly report through run_report, all months and one month: median ms.

CTXSTORE_BENCH_REFRESH_SESSIONS sets another size, CTXSTORE_BENCH_REFRESH_ROUNDS the rounds.
"""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from typing import Any

from sqlalchemy import URL

from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import PostgresStorage
from ctxstore.commands.aggregates import KEYS_KEPT, free_text_values, refresh_aggregates
from ctxstore.commands.analytics import MONTHLY_REPORTS, run_report
from ctxstore.commands.months import publication_day
from ctxstore.encryption import DataKey, Encryption, Keyring, new_data_key
from ctxstore.formats.documents import load_state
from ctxstore.models import STATE_FORMAT, ConsultationState
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.keys import DataKeys
from ctxstore.storage.postgres.statement import Driver, Statement

SESSIONS = int(os.environ.get("CTXSTORE_BENCH_REFRESH_SESSIONS", "31500"))
ROUNDS = int(os.environ.get("CTXSTORE_BENCH_REFRESH_ROUNDS", "5"))
REPORT_TRIALS = 30
PER_USER = 4
DAYS = 365
FIRST_DAY = datetime(2025, 1, 1, tzinfo=UTC)
#: Both refreshes cover every day seeded: the last month (December 2025) is due.
TODAY = publication_day(date(2025, 12, 1))
ONE_MONTH = (date(2025, 6, 1), date(2025, 7, 1))
COMPLAINTS = [f"complaint {n}" for n in range(2_000)]  # Zipf-like: a few common, many rare
PARTS = ["膝盖", "脚踝", "腰部", "肩膀", "手腕", "颈部"]
SYMPTOMS = ["疼痛", "肿胀", "下坠感", "麻木", "僵硬", "无力"]
PHASES = ("first refresh", "nothing changed", "1% changed")


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


# -- The baseline: release 1.0's refresh by day (`git show dd95b76:src/ctxstore/commands/
# aggregates.py`, its statements from queries/maintenance.sql), compacted: no progress
# bar, and a state it can't open fails the run.  Its tables (analytics_value_cells,
# analytics_refreshed_days) are still in the schema.

DAY_FINGERPRINTS = Statement(
    "day_fingerprints",
    """
    SELECT (s.first_activity_at AT TIME ZONE 'UTC')::date AS day, count(*) AS sessions,
           sum(hashtextextended(s.session_id || '@' || coalesce(c.version::text || '@'
               || extract(epoch FROM c.updated_at)::text, ''), 0)::numeric) AS fingerprint
      FROM sessions AS s
      LEFT JOIN consultation_states AS c ON c.session_id = s.session_id
     WHERE s.first_activity_at < :before
     GROUP BY 1""",
)
REFRESHED_DAYS = Statement(
    "refreshed_days",
    "SELECT day, sessions, fingerprint, min_group_size FROM analytics_refreshed_days",
)
DELETE_DAY_CELLS = Statement(
    "delete_day_cells", "DELETE FROM analytics_value_cells WHERE day = :day"
)
INSERT_DAY_CELLS = Statement(
    "insert_day_cells",
    """
    INSERT INTO analytics_value_cells (kind, day, value, consultations)
    SELECT cell.kind, :day, cell.value, cell.consultations
      FROM unnest(CAST(:kinds AS text[]), CAST(:values AS text[]), CAST(:counts AS integer[]))
           AS cell(kind, value, consultations)""",
)
RECORD_REFRESHED_DAY = Statement(
    "record_refreshed_day",
    """
    INSERT INTO analytics_refreshed_days (day, sessions, fingerprint, min_group_size)
    VALUES (:day, :sessions, :fingerprint, :k)
    ON CONFLICT (day) DO UPDATE
       SET sessions = excluded.sessions, fingerprint = excluded.fingerprint,
           min_group_size = excluded.min_group_size, refreshed_at = now()""",
)
FORGET_REFRESHED_DAY = Statement(
    "forget_refreshed_day", "DELETE FROM analytics_refreshed_days WHERE day = :day"
)


@dataclass
class DayRefresh:
    """What 1.0's refresh did."""

    days_refreshed: int = 0
    days_unchanged: int = 0
    days_emptied: int = 0
    consultations: int = 0
    cells: int = 0

    def summary(self) -> str:
        return (
            f"refreshed {self.days_refreshed:,} days ({self.consultations:,} consultations, "
            f"{self.cells:,} value cells shown); {self.days_unchanged:,} days unchanged, "
            f"{self.days_emptied:,} emptied"
        )


def shown_cells(
    states: list[Mapping[str, Any]], day_size: int, k: int
) -> list[tuple[str, str, int]]:
    """(kind, value, consultations) of one day: k or more have it and k or more don't."""
    counted: Counter[tuple[str, str]] = Counter()
    for state in states:
        for kind, values in free_text_values(state).items():
            counted.update((kind, value) for value in values)
    return sorted(
        (kind, value, n) for (kind, value), n in counted.items() if n >= k and day_size - n >= k
    )


async def refresh_by_day(
    storage: PostgresStorage, encryption: Encryption, *, today: date
) -> DayRefresh:
    """1.0's refresh: every day before ``today`` whose sessions, state versions or k
    changed since its last refresh, one transaction each."""
    report = DayRefresh()
    async with storage.maintenance("refreshing the analytics aggregates (1.0)") as driver:
        k = int(await sql.ANALYTICS_MIN_GROUP_SIZE.fetchval(driver))
        scanned = {
            row["day"]: (int(row["sessions"]), row["fingerprint"])
            for row in await DAY_FINGERPRINTS.fetch(driver, before=midnight(today))
        }
        recorded = {
            row["day"]: (int(row["sessions"]), row["fingerprint"], int(row["min_group_size"]))
            for row in await REFRESHED_DAYS.fetch(driver)
        }
        stale = sorted(
            day
            for day in scanned.keys() | {day for day in recorded if day < today}
            if day not in scanned or recorded.get(day) != (*scanned[day], k)
        )
        keys = DataKeys(encryption)
        report.days_unchanged = len(scanned) - sum(day in scanned for day in stale)
        for day in stale:
            if day not in scanned:
                async with driver.transaction():
                    await DELETE_DAY_CELLS.execute(driver, day=day)
                    await FORGET_REFRESHED_DAY.execute(driver, day=day)
                report.days_emptied += 1
                continue
            await refresh_day(driver, keys, day, (*scanned[day], k), report)
            if len(keys.loaded) > KEYS_KEPT:
                keys.clear()
    return report


async def refresh_day(
    driver: Driver, keys: DataKeys, day: date, basis: tuple[int, Any, int], report: DayRefresh
) -> None:
    found = await sql.DAY_STATES.fetch(
        driver, start=midnight(day), end=midnight(day + timedelta(days=1))
    )
    loaded = await keys.load(driver, {row["key_id"] for row in found if row["key_id"] is not None})
    states = [opened(row, loaded) for row in found if row["version"] is not None]
    sessions, fingerprint, k = basis
    cells = shown_cells(states, len(found), k)
    async with driver.transaction():
        await DELETE_DAY_CELLS.execute(driver, day=day)
        if cells:
            kinds, values, counts = (list(column) for column in zip(*cells, strict=True))
            await INSERT_DAY_CELLS.execute(
                driver, day=day, kinds=kinds, values=values, counts=counts
            )
        await RECORD_REFRESHED_DAY.execute(
            driver, day=day, sessions=sessions, fingerprint=fingerprint, k=k
        )
    report.days_refreshed += 1
    report.consultations += len(found)
    report.cells += len(cells)


def opened(row: Any, keys: rows.Keys | None) -> Mapping[str, Any]:
    document = rows.state_document(row, row["session_id"], keys)
    if row["format_version"] == STATE_FORMAT and isinstance(document, dict):
        return document
    return load_state(document, row["format_version"], session_id=row["session_id"]).document()


def midnight(day: date) -> datetime:
    return datetime.combine(day, clock(), tzinfo=UTC)


# -- The measurements ------------------------------------------------------------------


@dataclass(frozen=True)
class Refresh:
    """One of the refreshes compared: how to run it, and how to empty what it wrote."""

    name: str
    run: Callable[[], Awaitable[Any]]
    tables: str


@dataclass
class Timings:
    """(refresh, phase) -> CPU and wall seconds of each round; the first summaries."""

    cpu: dict[tuple[str, str], list[float]]
    wall: dict[tuple[str, str], list[float]]
    summaries: dict[str, str]


async def timed(refresh: Refresh, phase: str, timings: Timings) -> None:
    cpu, wall = time.process_time(), time.perf_counter()
    report = await refresh.run()
    timings.cpu.setdefault((refresh.name, phase), []).append(time.process_time() - cpu)
    timings.wall.setdefault((refresh.name, phase), []).append(time.perf_counter() - wall)
    if phase == PHASES[0]:
        assert report.consultations == SESSIONS, report.summary()  # the same work, all of it
        timings.summaries.setdefault(refresh.name, report.summary().splitlines()[0])


async def change_states(storage: PostgresStorage, rng: random.Random) -> None:
    """1% of the consultations move to a new state (a new version)."""
    for index in rng.sample(range(SESSIONS), SESSIONS // 100):
        await storage.save_state(f"sess-{index:07d}", document(rng))


async def measure_refreshes(
    storage: PostgresStorage, refreshes: list[Refresh], rounds: int
) -> Timings:
    timings = Timings({}, {}, {})
    rng = random.Random(7)
    for index in range(rounds):
        # Alternate which goes first: neither always reads the states cold.
        order = refreshes if index % 2 == 0 else refreshes[::-1]
        for refresh in order:
            async with storage.driver() as driver:
                await driver.execute(f"TRUNCATE {refresh.tables}")
            await timed(refresh, PHASES[0], timings)
            await timed(refresh, PHASES[1], timings)
        await change_states(storage, rng)
        for refresh in order:
            await timed(refresh, PHASES[2], timings)
        print(f"  round {index + 1} of {rounds} done")
    return timings


def refresh_table(timings: Timings, old: str, new: str) -> str:
    lines = []
    for phase in PHASES:
        cpu = [statistics.median(timings.cpu[name, phase]) for name in (old, new)]
        wall = [statistics.median(timings.wall[name, phase]) for name in (old, new)]
        lines.append(
            (
                phase,
                *(f"{seconds:.3f}" for seconds in cpu),
                f"{cpu[1] / cpu[0]:.2f}",
                *(f"{seconds:.3f}" for seconds in wall),
                f"{wall[1] / wall[0]:.2f}",
            )
        )
    header = ("phase", "1.0 CPU s", "monthly CPU s", "new/old", "1.0 wall s", "monthly wall s")
    return table(lines, (*header, "new/old"))


async def report_medians(storage: PostgresStorage) -> str:
    windows = {"all months": (None, None), f"{ONE_MONTH[0]:%Y-%m}": ONE_MONTH}
    found: dict[tuple[str, str], int] = {}

    def action(name: str, label: str) -> Callable[[], Awaitable[object]]:
        since, until = windows[label]

        async def run() -> None:
            report = await run_report(storage.engine, name, since=since, until=until, today=TODAY)
            found[name, label] = len(report.rows)

        return run

    actions = {
        f"{name}\t{label}": action(name, label) for name in MONTHLY_REPORTS for label in windows
    }
    medians = await interleaved_medians(actions, REPORT_TRIALS, warmup=3)
    lines = []
    for key, ms in medians.items():
        name, label = key.split("\t")
        lines.append((name, label, f"{found[name, label]:,}", f"{ms:.1f}"))
    return table(lines, ("report", "window", "rows", "median ms"))


async def main(url: URL) -> None:
    encryption = Encryption(Keyring({"bench": os.urandom(32)}))
    async with PostgresStorage.from_url(url, encryption=encryption) as storage:
        await seed(storage, encryption)
        old = Refresh(
            "1.0 (days)",
            lambda: refresh_by_day(storage, encryption, today=TODAY),
            "analytics_value_cells, analytics_refreshed_days",
        )
        new = Refresh(
            "monthly",
            lambda: refresh_aggregates(storage, encryption, today=TODAY, show=False),
            "analytics_months, analytics_month_kinds, analytics_month_cells",
        )
        timings = await measure_refreshes(storage, [old, new], ROUNDS)
        # The monthly tables as a first refresh left them (each round ends with them full).
        reports = await report_medians(storage)
    print(
        f"\n{SESSIONS:,} sealed consultations over {DAYS} days (2025), k = 5; refreshed "
        f"as on {TODAY.isoformat()}; median of {ROUNDS} rounds, interleaved; CPU: this process"
    )
    for name, summary in timings.summaries.items():
        print(f"  {name}: {summary}")
    print()
    print(refresh_table(timings, old.name, new.name))
    print(f"\nmonthly reports through run_report, median of {REPORT_TRIALS} (target: <= 50 ms)")
    print(reports)


if __name__ == "__main__":
    with bench_database() as database:
        asyncio.run(main(database))
