"""Issue 24, item 1: a sealed state keeps its clinical free text only in ciphertext, and
the analytics counts free text from the months the owner's refresh publishes (revisions
0018 and 1004).

Attacked as the issue did: a stolen backup (every row as text, as the superuser reads
it) and a database writer putting text back; and the refresh as an operator runs it: with
and without the keys, interrupted, after changes, on the days around a month's
publication.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import run_report, set_min_group_size
from ctxstore.commands.months import first_unpublished_month, publication_day
from ctxstore.commands.rotate_keys import rotate_keys
from ctxstore.encryption import Encryption, Keyring

OCTOBER = date(2026, 10, 1)
NOVEMBER = date(2026, 11, 1)
D1 = date(2026, 11, 9)
D2 = D1 + timedelta(days=1)
D0 = date(2026, 10, 20)  # a day in October
#: The first refresh that publishes November (and October).
TODAY = date(2026, 12, 8)
COMPLAINT = "膝盖下坠感 zq"  # the marker a leak would show


def moment(day: date, minutes: int = 0) -> datetime:
    return datetime(day.year, day.month, day.day, 9, tzinfo=UTC) + timedelta(minutes=minutes)


def clinical(complaint: str | None = COMPLAINT, flags: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "stage": "assessing",
        "chief_complaint": complaint,
        "body_parts": ["膝盖 zq"],
        "symptoms": ["下坠感 zq", "疼痛 zq"],
        "red_flags": list(flags),
        "duration": "三天 zq",
        "pain_level": 4,
    }


@pytest.fixture
def encryption() -> Encryption:
    return Encryption(Keyring({"k1": os.urandom(32)}))


@pytest.fixture
async def sealed(database_url: URL, encryption: Encryption) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url, encryption=encryption) as storage:
        yield storage


async def raw(storage: PostgresStorage, query: str, *args: Any) -> list[Any]:
    """As the test's superuser: what a stolen backup or a DBA reads."""
    async with storage.driver() as driver:
        return list(await driver.fetch(query, *args))


async def consultation(
    storage: PostgresStorage, day: date, index: int, state: dict[str, Any] | None
) -> str:
    session_id = f"c-{uuid.uuid4().hex}"
    message = Message(role="user", content="hello", timestamp=moment(day, index))
    await storage.save(session_id, [message], user_id=f"u-{uuid.uuid4().hex}")
    if state is not None:
        await storage.save_state(session_id, state)
    return session_id


async def complaints(storage: PostgresStorage, **window: Any) -> dict[tuple[str, str], int]:
    """(month, complaint) -> consultations, as the complaints report shows them."""
    found = await run_report(storage.engine, "complaints", today=TODAY, **window)
    return {
        (row["month"], row["chief_complaint"]): row["consultations"] for row in found.as_dicts()
    }


async def refresh(
    storage: PostgresStorage, encryption: Encryption | None, today: date = TODAY
) -> Any:
    return await refresh_aggregates(storage, encryption, today=today, show=False)


async def month(storage: PostgresStorage, day: date, complaint: int, other: int) -> list[str]:
    """``complaint`` consultations with COMPLAINT on ``day``, then ``other`` without one."""
    return [
        await consultation(storage, day, i, clinical(COMPLAINT if i < complaint else None))
        for i in range(complaint + other)
    ]


# -- what a sealed state leaves in plaintext ---------------------------------------------------


async def test_a_sealed_state_keeps_no_free_text_outside_its_ciphertext(
    sealed: PostgresStorage,
) -> None:
    session_id = await consultation(sealed, D1, 0, clinical(flags=("无法负重 zq",)))
    await sealed.save_state(session_id, clinical(flags=("无法负重 zq", "发热 zq")))
    for table in ("consultation_states", "consultation_state_history"):
        found = await raw(sealed, f"SELECT t::text AS row FROM {table} AS t")
        assert len(found) == (1 if table == "consultation_states" else 2)
        assert all("zq" not in row["row"] for row in found), found
    counts = await raw(
        sealed,
        "SELECT red_flag_count, symptom_count, body_part_count, has_chief_complaint, "
        "has_symptom_duration FROM consultation_states",
    )
    assert tuple(counts[0]) == (2, 2, 1, True, True)
    loaded = await sealed.load_state(session_id)
    assert loaded is not None and loaded.value.chief_complaint == COMPLAINT
    assert loaded.value.red_flags == ["无法负重 zq", "发热 zq"]
    # the planner's statistics of the tables hold none of it either
    async with sealed.driver() as driver:
        await driver.execute("ANALYZE consultation_states, consultation_state_history")
    stats = await raw(
        sealed,
        "SELECT coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') "
        "FROM pg_stats WHERE tablename IN ('consultation_states', 'consultation_state_history')",
    )
    assert stats and all("zq" not in row[0] for row in stats)
    # the per-consultation view still has its counts, but none of red flags (revision
    # 1004: a GROUP BY would count any day's)
    view = await raw(
        sealed,
        "SELECT symptom_count, body_part_count, has_chief_complaint, has_symptom_duration "
        "FROM analytics_consultations",
    )
    assert tuple(view[0]) == (2, 1, True, True)
    columns = await raw(
        sealed,
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_name = 'analytics_consultations'",
    )
    assert not {"has_red_flags", "red_flag_count"} & {row[0] for row in columns}


async def test_a_database_writer_cannot_put_free_text_beside_a_sealed_state(
    sealed: PostgresStorage,
) -> None:
    session_id = await consultation(sealed, D1, 0, clinical())
    for table in ("consultation_states", "consultation_state_history"):
        for column, value in (("chief_complaint", "'HIV'"), ("red_flags", "ARRAY['HIV']")):
            with pytest.raises(asyncpg.CheckViolationError, match="no_free_text"):
                await raw(
                    sealed,
                    f"UPDATE {table} SET {column} = {value} WHERE session_id = $1",
                    session_id,
                )


async def test_sealing_plaintext_states_drops_their_free_text(
    database_url: URL, encryption: Encryption
) -> None:
    async with PostgresStorage.from_url(database_url) as plain:
        await consultation(plain, D1, 0, clinical())
        before = await raw(plain, "SELECT t::text FROM consultation_state_history AS t")
        assert "zq" in before[0][0]
        encryption.accept_plaintext = True
        async with plain.driver() as driver:
            await rotate_keys(driver, encryption, reencrypt=True, show=False)
        for table in ("consultation_states", "consultation_state_history"):
            after = await raw(plain, f"SELECT t::text, key_id FROM {table} AS t")
            assert after[0][1] is not None and "zq" not in after[0][0]


# -- the refresh -----------------------------------------------------------------------------


async def test_the_refresh_opens_sealed_states_and_stores_only_shown_figures(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    for index in range(10):
        await consultation(sealed, D1, index, clinical(COMPLAINT if index < 5 else f"rare {index}"))
    assert await complaints(sealed) == {}  # nothing before a refresh
    report = await refresh(sealed, encryption)
    assert (report.months_published, report.consultations, report.failed) == (1, 10, [])
    assert await complaints(sealed) == {("2026-11", COMPLAINT): 5}
    cells = await raw(sealed, "SELECT kind, value, consultations FROM analytics_month_cells")
    # every stored value is one k consultations have and k don't: nothing rare is stored
    assert [tuple(row) for row in cells] == [("chief_complaint", COMPLAINT, 5)]
    # all 10 share the rest (the body part, the symptoms, the duration): withheld too
    kinds = await raw(
        sealed,
        "SELECT kind, shown_values, withheld_values, withheld_consultations "
        "FROM analytics_month_kinds ORDER BY kind",
    )
    assert [tuple(row) for row in kinds] == [
        ("body_part", 0, None, 10),  # one value: fewer than k values, so blank
        ("chief_complaint", 1, 5, 5),  # rare 5 to rare 9
        ("red_flag", 0, None, None),  # no red flag: a count under k, withheld
        ("symptom", 0, None, 10),
        ("symptom_duration", 0, None, 10),
    ]
    (published,) = await raw(
        sealed, "SELECT month, consultations, with_red_flags, min_group_size FROM analytics_months"
    )
    assert tuple(published) == (NOVEMBER, 10, None, 5)  # no red flag: 0, fewer than k
    for table in ("analytics_months", "analytics_month_kinds", "analytics_month_cells"):
        found = await raw(sealed, f"SELECT t::text FROM {table} AS t")
        assert all("rare" not in row[0] for row in found), table


async def test_the_refresh_leaves_a_month_it_cannot_open_and_resumes_with_the_keys(
    sealed: PostgresStorage, encryption: Encryption, database_url: URL
) -> None:
    await month(sealed, D1, 5, 5)  # November: sealed
    async with PostgresStorage.from_url(database_url) as keyless:
        await month(keyless, D0, 5, 5)  # October: plaintext
        report = await refresh(keyless, None)
        assert (report.months_published, len(report.failed)) == (1, 1)
        assert report.failed[0].startswith(f"month 2026-11, day {D1.isoformat()}: ")
        assert "encryption" in report.failed[0]
        assert "failed: 1" in report.summary()
        assert await complaints(keyless) == {("2026-10", COMPLAINT): 5}  # October only
        assert await raw(keyless, "SELECT * FROM analytics_months WHERE month = $1", NOVEMBER) == []
    resumed = await refresh(sealed, encryption)
    assert (resumed.months_published, resumed.months_unchanged, resumed.failed) == (1, 1, [])
    assert await complaints(sealed) == {("2026-10", COMPLAINT): 5, ("2026-11", COMPLAINT): 5}


async def test_a_published_month_never_changes_not_even_for_a_new_k(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    october = await month(sealed, D0, 5, 6)
    november = await month(sealed, D1, 5, 6)
    first = await refresh(sealed, encryption)
    assert (first.months_published, first.consultations) == (2, 22)
    shown = {("2026-10", COMPLAINT): 5, ("2026-11", COMPLAINT): 5}
    assert await complaints(sealed) == shown
    # a state changes, a consultation goes, one more turns up first active in November,
    # October's are all erased: the published months stay as they were published
    await sealed.save_state(november[7], clinical())
    await sealed.delete(november[9])
    await consultation(sealed, D1, 99, clinical())
    for session_id in october:
        await sealed.delete(session_id)
    again = await refresh(sealed, encryption)
    assert (again.months_published, again.months_unchanged, again.months_left) == (0, 2, [])
    assert await complaints(sealed) == shown
    assert await complaints(sealed, since=NOVEMBER) == {("2026-11", COMPLAINT): 5}
    # a new k republishes a month only from the consultations it was published from:
    # both changed, so both stay hidden (else November at k = 4 would show 7, and the
    # difference would be the changed, late and deleted consultations)
    await set_min_group_size(sealed.engine, 4)
    assert await complaints(sealed) == {}
    redone = await refresh(sealed, encryption)
    assert redone.months_published == 0
    assert redone.months_left == [
        "2026-10: published at k=5; none of its consultations is left",
        "2026-11: published at k=5; its consultations changed since",
    ]
    assert "2 months left at another k" in redone.summary()
    assert await complaints(sealed) == {}
    # k set back: the months show again, as they were published
    await set_min_group_size(sealed.engine, 5)
    assert await complaints(sealed) == shown


async def test_raising_k_hides_a_month_until_the_next_refresh_publishes_it_again(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    await month(sealed, D1, 6, 6)
    await refresh(sealed, encryption)
    assert await complaints(sealed) == {("2026-11", COMPLAINT): 6}
    await set_min_group_size(sealed.engine, 6)
    assert await complaints(sealed) == {}
    found = await run_report(sealed.engine, "red-flags", today=TODAY)
    assert found.rows == []  # the month's consultations and red flags too
    republished = await refresh(sealed, encryption)
    assert (republished.months_published, republished.months_unchanged) == (1, 0)
    assert await complaints(sealed) == {("2026-11", COMPLAINT): 6}  # 6 have it, 6 don't


async def test_a_month_is_published_on_the_eighth_day_after_it_ends_and_not_before(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    await month(sealed, D1, 5, 5)
    for today in (D1, date(2026, 11, 30), date(2026, 12, 1), date(2026, 12, 7)):
        early = await refresh(sealed, encryption, today)
        assert (early.months_published, early.months_unchanged) == (0, 0), today
        assert early.next_month == NOVEMBER
        assert "next: 2026-11 appears with the first refresh on or after 2026-12-08" in (
            early.summary()
        )
    assert await complaints(sealed) == {}
    due = await refresh(sealed, encryption, date(2026, 12, 8))
    assert due.months_published == 1
    assert due.next_month == date(2026, 12, 1)
    assert "next: 2026-12 appears with the first refresh on or after 2027-01-08" in due.summary()
    assert await complaints(sealed) == {("2026-11", COMPLAINT): 5}


async def test_the_current_month_is_never_published(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    today = datetime.now(UTC).date()
    this_month = today.replace(day=1)
    # ten consultations today (since midnight): the refresh of the real clock leaves them
    for index in range(10):
        await consultation(sealed, today, index - 540, clinical(COMPLAINT if index < 5 else None))
    report = await refresh_aggregates(sealed, encryption, show=False)
    assert (report.months_published, report.months_unchanged) == (0, 0)
    assert report.next_month == first_unpublished_month(today) <= this_month
    published = await refresh(sealed, encryption, publication_day(this_month))
    assert published.months_published == 1
    found = await run_report(sealed.engine, "complaints", today=publication_day(this_month))
    assert [(row["month"], row["consultations"]) for row in found.as_dicts()] == [
        (f"{this_month:%Y-%m}", 5)
    ]
