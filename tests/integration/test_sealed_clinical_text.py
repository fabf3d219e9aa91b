"""Issue 24, item 1: a sealed state keeps its clinical free text only in ciphertext, and
the analytics counts free text from the cells the owner's refresh stores (revision 0018).

Attacked as the issue did: a stolen backup (every row as text, as the superuser reads
it) and a database writer putting text back; and the refresh as an operator runs it: with
and without the keys, interrupted, after changes.
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
from ctxstore.commands.aggregates import refresh_aggregates, shown_cells
from ctxstore.commands.analytics import run_report, set_min_group_size
from ctxstore.commands.rotate_keys import rotate_keys
from ctxstore.encryption import Encryption, Keyring
from ctxstore.models import ConsultationState

D1 = date(2026, 11, 9)
D2 = D1 + timedelta(days=1)
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


async def complaints(storage: PostgresStorage, **window: Any) -> dict[str, int]:
    found = await run_report(storage.engine, "complaints", **window)
    return {row["chief_complaint"]: row["consultations"] for row in found.as_dicts()}


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
    # the per-consultation view still has its counts
    view = await raw(sealed, "SELECT has_red_flags, red_flag_count FROM analytics_consultations")
    assert tuple(view[0]) == (True, 2)


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


def test_a_cell_shows_when_k_have_the_value_and_k_do_not() -> None:
    def state(complaint: str) -> dict[str, Any]:
        return ConsultationState.model_validate(
            {"stage": "assessing", "chief_complaint": complaint, "symptoms": [complaint]}
        ).document() | {"red_flags": [None, 3], "duration": 7}  # not text: never a value

    day = [state("a")] * 5 + [state("b")] * 4 + [state("c")]
    assert shown_cells(day, 10, 5) == [("chief_complaint", "a", 5), ("symptom", "a", 5)]
    assert shown_cells(day, 10, 4) == [
        ("chief_complaint", "a", 5),
        ("chief_complaint", "b", 4),
        ("symptom", "a", 5),
        ("symptom", "b", 4),
    ]
    assert shown_cells(day, 9, 5) == []  # "all but four" has a value: hidden too


async def test_the_refresh_opens_sealed_states_and_stores_only_shown_cells(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    for index in range(10):
        await consultation(sealed, D1, index, clinical(COMPLAINT if index < 5 else f"rare {index}"))
    assert await complaints(sealed) == {}  # nothing before a refresh
    report = await refresh_aggregates(sealed, encryption, show=False)
    assert (report.days_refreshed, report.consultations, report.failed) == (1, 10, [])
    assert await complaints(sealed) == {COMPLAINT: 5}
    cells = await raw(sealed, "SELECT kind, value, consultations FROM analytics_value_cells")
    # every stored value is one k consultations have and k don't: nothing rare is stored
    assert all("rare" not in row["value"] and row["consultations"] == 5 for row in cells)
    assert {row["kind"] for row in cells} == {"chief_complaint"}  # all 10 share the rest


async def test_the_refresh_leaves_a_day_it_cannot_open_and_resumes_with_the_keys(
    sealed: PostgresStorage, encryption: Encryption, database_url: URL
) -> None:
    for day in (D1, D2):
        for index in range(10):
            await consultation(sealed, day, index, clinical(COMPLAINT if index < 5 else None))
    # a plaintext day, then D2 sealed: D1 is done, D2 fails without the keys
    async with PostgresStorage.from_url(database_url) as keyless:
        await raw(keyless, "DELETE FROM sessions WHERE first_activity_at < $1", moment(D2, -60))
        for index in range(10):
            await consultation(keyless, D1, index, clinical(COMPLAINT if index < 5 else None))
        report = await refresh_aggregates(keyless, None, show=False)
        assert report.days_refreshed == 1 and len(report.failed) == 1
        assert report.failed[0].startswith(f"day {D2.isoformat()}: ")
        assert "encryption" in report.failed[0]
        assert await complaints(keyless) == {COMPLAINT: 5}  # D1 only
    resumed = await refresh_aggregates(sealed, encryption, show=False)
    assert (resumed.days_refreshed, resumed.days_unchanged, resumed.failed) == (1, 1, [])
    assert await complaints(sealed) == {COMPLAINT: 10}


async def test_the_refresh_redoes_exactly_the_days_that_changed(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    sessions = {
        day: [
            await consultation(sealed, day, i, clinical(COMPLAINT if i < 5 else None))
            for i in range(11)
        ]
        for day in (D1, D2)
    }
    first = await refresh_aggregates(sealed, encryption, show=False)
    assert first.days_refreshed == 2
    assert await complaints(sealed, since=D2) == {COMPLAINT: 5}
    # a state changes on D2: D2 alone is redone
    await sealed.save_state(sessions[D2][7], clinical())
    changed = await refresh_aggregates(sealed, encryption, show=False)
    assert (changed.days_refreshed, changed.days_unchanged) == (1, 1)
    assert await complaints(sealed, since=D2) == {COMPLAINT: 6}
    # a consultation deleted on D2 (an erasure, an expiry): D2 again
    await sealed.delete(sessions[D2][7])
    assert (await refresh_aggregates(sealed, encryption, show=False)).days_refreshed == 1
    assert await complaints(sealed, since=D2) == {COMPLAINT: 5}
    # every consultation of D1 gone: its cells go too
    for session_id in sessions[D1]:
        await sealed.delete(session_id)
    emptied = await refresh_aggregates(sealed, encryption, show=False)
    assert (emptied.days_emptied, emptied.days_refreshed) == (1, 0)
    assert await raw(sealed, "SELECT * FROM analytics_value_cells WHERE day = $1", D1) == []
    # a new k: every day is redone under it
    await set_min_group_size(sealed.engine, 4)
    assert (await refresh_aggregates(sealed, encryption, show=False)).days_refreshed == 1


async def test_raising_k_hides_cells_before_the_next_refresh(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    for index in range(10):
        await consultation(sealed, D1, index, clinical(COMPLAINT if index < 5 else None))
    await refresh_aggregates(sealed, encryption, show=False)
    assert await complaints(sealed) == {COMPLAINT: 5}
    await set_min_group_size(sealed.engine, 6)
    assert await complaints(sealed) == {}


async def test_the_current_day_is_never_refreshed(
    sealed: PostgresStorage, encryption: Encryption
) -> None:
    today = datetime.now(UTC).date()
    for index in range(10):
        await consultation(sealed, today, index - 540, clinical(COMPLAINT if index < 5 else None))
    report = await refresh_aggregates(sealed, encryption, show=False)
    assert (report.days_refreshed, report.days_unchanged) == (0, 0)
    tomorrow = await refresh_aggregates(
        sealed, encryption, today=today + timedelta(days=1), show=False
    )
    assert tomorrow.days_refreshed == 1
    assert await complaints(sealed) == {COMPLAINT: 5}
