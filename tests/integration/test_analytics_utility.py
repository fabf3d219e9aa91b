"""Issue 50's utility targets, against a real database: what the monthly reports show at a
clinic's volume is exactly what the k rule allows, no less, and says what it withholds.

The truth is the seeder's own: sample_consultation(index, seed, now) is deterministic, so
each consultation's month (its first message) and final state are known without reading
the database; the 300 case checks the stored states against it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

import pytest

from ctxstore import Message, PostgresStorage
from ctxstore.commands.aggregates import refresh_aggregates
from ctxstore.commands.analytics import (
    FREQUENCY_KINDS,
    FREQUENCY_REPORTS,
    min_group_size,
    run_report,
)
from ctxstore.commands.months import publication_day
from ctxstore.commands.report_text import Report
from ctxstore.commands.sample import (
    RED_FLAGS_EN,
    RED_FLAGS_ZH,
    SampleConsultation,
    sample_consultation,
    seed_sample,
)

SEED = 7
#: The seeder writes over the 56 days (and up to a day more) before NOW: October and
#: November 2026, and perhaps a consultation or two on September 30.
NOW = datetime(2026, 11, 26, 12, tzinfo=UTC)
#: The first refresh that publishes November.
TODAY = date(2026, 12, 8)
#: More rows than any month has values: every shown value is listed.
EVERY_ROW = 10_000

#: report -> the kind of free text it counts (its value column); the state's field.
KINDS = {
    "complaints": ("chief_complaint", "chief_complaint"),
    "body-parts": ("body_part", "body_parts"),
    "symptoms": ("symptom", "symptoms"),
    "red-flag-types": ("red_flag", "red_flags"),
    "symptom-durations": ("symptom_duration", "duration"),
}


def values(state: dict[str, Any], field_name: str) -> set[str]:
    found = state.get(field_name)
    return {one for one in (found if isinstance(found, list) else [found]) if one}


@dataclass
class TrueMonth:
    """A month's consultations as the seeder wrote them: one final state each."""

    states: list[dict[str, Any]] = field(default_factory=list)

    def counts(self, field_name: str) -> Counter[str]:
        return Counter(value for state in self.states for value in values(state, field_name))

    def red_flagged(self) -> int:
        return sum(1 for state in self.states if state["red_flags"])


def true_months(samples: list[SampleConsultation]) -> dict[str, TrueMonth]:
    months: dict[str, TrueMonth] = defaultdict(TrueMonth)
    for sample in samples:
        first = sample.messages[0].timestamp
        months[f"{first.astimezone(UTC):%Y-%m}"].states.append(sample.states[-1])
    return dict(months)


def passes(n: int, total: int, k: int) -> bool:
    return n >= k and total - n >= k


@dataclass(frozen=True)
class Expected:
    """What one month of one frequency report must show and withhold."""

    shown: dict[str, int]
    withheld_values: int | None
    withheld_consultations: int | None


def expected(month: TrueMonth, field_name: str, k: int) -> Expected:
    """Every value k or more of the month's consultations have and k or more don't, with
    its count (the issue's target: at these volumes the complementary suppression has
    nothing to take); what the rest are, and who holds them, unless that is a small group
    or would tell a withheld red-flag count."""
    counts = month.counts(field_name)
    total = len(month.states)
    shown = {value: n for value, n in counts.items() if passes(n, total, k)}
    withheld = len(counts) - len(shown)
    holding = sum(1 for state in month.states if values(state, field_name) - set(shown))
    flags_withheld = field_name == "red_flags" and not passes(month.red_flagged(), total, k)
    return Expected(
        shown,
        None if flags_withheld or 0 < withheld < k else withheld,
        None if flags_withheld or 0 < holding < k else holding,
    )


def shown_by_month(report: Report, column: str) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for row in report.as_dicts():
        assert row[column] not in found[row["month"]], row  # each value once a month
        found[row["month"]][row[column]] = row["consultations"]
    return dict(found)


async def seeded(storage: PostgresStorage, sessions: int) -> dict[str, TrueMonth]:
    """``sessions`` sample consultations written and refreshed on TODAY; their truth."""
    report = await seed_sample(storage, sessions, seed=SEED, now=NOW, show=False)
    assert report.sessions == sessions
    refreshed = await refresh_aggregates(storage, today=TODAY, show=False)
    assert (refreshed.failed, refreshed.consultations) == ([], sessions)
    return true_months([sample_consultation(i, SEED, NOW) for i in range(sessions)])


async def assert_frequencies_exact(storage: PostgresStorage, truth: dict[str, TrueMonth]) -> None:
    """Every frequency report shows, per month, exactly the values that pass k, each with
    its true count, and withholds exactly the rest."""
    k = await min_group_size(storage.engine)
    assert set(FREQUENCY_REPORTS) == set(KINDS)
    assert {name: column for name, (column, _) in KINDS.items()} == FREQUENCY_KINDS
    for name, (column, field_name) in KINDS.items():
        report = await run_report(storage.engine, name, limit=EVERY_ROW, today=TODAY)
        assert report.periods is not None
        periods = {row["month"]: row for row in report.periods.as_dicts()}
        assert set(periods) == set(truth), name  # every month with consultations, published
        shown = shown_by_month(report, column)
        for month, true in truth.items():
            want = expected(true, field_name, k)
            assert shown.get(month, {}) == want.shown, (name, month)
            assert periods[month]["consultations"] == len(true.states), (name, month)
            assert (
                periods[month]["shown_values"],
                periods[month]["withheld_values"],
                periods[month]["withheld_consultations"],
            ) == (len(want.shown), want.withheld_values, want.withheld_consultations), (
                name,
                month,
            )
        for row in report.as_dicts():
            total = periods[row["month"]]["consultations"]
            assert float(row["share"]) == pytest.approx(row["consultations"] / total, abs=5e-5)


async def red_flag_months(storage: PostgresStorage) -> dict[str, dict[str, Any]]:
    report = await run_report(storage.engine, "red-flags", today=TODAY)
    return {row["month"]: row for row in report.as_dicts()}


async def test_300_consultations_show_every_value_k_share_exactly(
    pg_storage: PostgresStorage,
) -> None:
    truth = await seeded(pg_storage, 300)
    # what the seeder wrote is what the truth says
    for index in range(300):
        sample = sample_consultation(index, SEED, NOW)
        stored = await pg_storage.load_state(sample.session_id)
        assert stored is not None
        fields = {field_name for _, field_name in KINDS.values()}
        assert stored.value.model_dump(include=fields) == {
            field_name: sample.states[-1][field_name] for field_name in fields
        }
    assert {"2026-10", "2026-11"} <= set(truth)
    await assert_frequencies_exact(pg_storage, truth)
    # complaints, body parts and symptoms show in both full months at this volume
    for name in ("complaints", "body-parts", "symptoms"):
        report = await run_report(pg_storage.engine, name, limit=EVERY_ROW, today=TODAY)
        assert {row["month"] for row in report.as_dicts()} >= {"2026-10", "2026-11"}, name
    # the red-flag share of every full month shows, exactly
    k = await min_group_size(pg_storage.engine)
    months = await red_flag_months(pg_storage)
    assert set(months) == set(truth)
    for month, true in truth.items():
        flagged = true.red_flagged()
        want = flagged if passes(flagged, len(true.states), k) else None
        assert (months[month]["consultations"], months[month]["with_red_flags"]) == (
            len(true.states),
            want,
        ), month
    for month in ("2026-10", "2026-11"):
        assert months[month]["with_red_flags"] is not None, month


@pytest.mark.slow
async def test_3000_consultations_show_every_red_flag_type_with_its_exact_count(
    pg_storage: PostgresStorage,
) -> None:
    truth = await seeded(pg_storage, 3000)
    await assert_frequencies_exact(pg_storage, truth)
    written = {flag for true in truth.values() for flag in true.counts("red_flags")}
    assert written <= set(RED_FLAGS_ZH + RED_FLAGS_EN)
    assert len(written) == len(RED_FLAGS_ZH + RED_FLAGS_EN)  # the seeder wrote every type
    report = await run_report(pg_storage.engine, "red-flag-types", limit=EVERY_ROW, today=TODAY)
    shown = shown_by_month(report, "red_flag")
    assert {flag for found in shown.values() for flag in found} == written
    for month, found in shown.items():
        true = truth[month].counts("red_flags")
        assert found == {flag: true[flag] for flag in found}, month  # error 0
    months = await red_flag_months(pg_storage)
    for month in ("2026-10", "2026-11"):
        assert months[month]["with_red_flags"] == truth[month].red_flagged(), month


# -- honest output --------------------------------------------------------------------------


async def test_the_guides_200_consultations_show_complaints(pg_storage: PostgresStorage) -> None:
    await seeded(pg_storage, 200)
    report = await run_report(pg_storage.engine, "complaints", today=TODAY)
    table = report.render()
    assert report.rows, table
    assert table.splitlines()[0].split() == ["month", "chief_complaint", "consultations", "share"]
    assert "no consultations" not in table


async def consultations_on(storage: PostgresStorage, day: datetime, complaints: list[str]) -> None:
    for index, complaint in enumerate(complaints):
        session_id = f"honest-{day:%Y%m%d}-{index}"
        message = Message(role="user", content="hi", turn_id="t1", timestamp=day)
        await storage.save(session_id, [message], user_id=f"u-{index}")
        await storage.save_state(session_id, {"stage": "assessing", "chief_complaint": complaint})


async def test_a_month_whose_every_value_is_withheld_says_so(pg_storage: PostgresStorage) -> None:
    october = datetime(2026, 10, 14, 9, tzinfo=UTC)
    await consultations_on(pg_storage, october, [f"complaint {n}" for n in range(10)])
    await refresh_aggregates(pg_storage, today=TODAY, show=False)
    report = await run_report(
        pg_storage.engine, "complaints", since=date(2026, 10, 1), until=date(2026, 11, 1)
    )
    assert report.rows == []
    assert report.periods is not None
    assert report.periods.as_dicts() == [
        {
            "month": "2026-10",
            "consultations": 10,
            "shown_values": 0,
            "withheld_values": 10,
            "withheld_consultations": 10,
        }
    ]
    table = report.render()
    assert "(every value of these months is withheld: see their counts below)" in table
    assert "no consultations" not in table
    assert "2026-10" in table  # the month and its counts, below the rows


async def test_a_window_with_no_published_month_says_so(pg_storage: PostgresStorage) -> None:
    # consultations in December: the refresh on TODAY leaves December for January 8
    await consultations_on(pg_storage, datetime(2026, 12, 2, 9, tzinfo=UTC), ["x"] * 10)
    refreshed = await refresh_aggregates(pg_storage, today=TODAY, show=False)
    assert refreshed.months_published == 0
    for name in ("complaints", "red-flags"):
        report = await run_report(
            pg_storage.engine, name, since=date(2026, 12, 1), today=date(2026, 12, 9)
        )
        assert report.rows == []
        assert "(no month published in this window yet)" in report.render(), name
        assert "no consultations" not in report.render()


async def test_the_notes_say_when_the_current_month_appears(pg_storage: PostgresStorage) -> None:
    k = await min_group_size(pg_storage.engine)
    for today, month, appears in (
        (date(2026, 12, 8), "2026-12", "2027-01-08"),
        (date(2026, 11, 30), "2026-11", "2026-12-08"),
    ):
        assert publication_day(date.fromisoformat(f"{month}-01")).isoformat() == appears
        for name in ("red-flags", "symptoms"):
            report = await run_report(pg_storage.engine, name, today=today)
            rule, when = report.notes
            assert f"at least {k} of its month's consultations have it" in rule
            assert f"consultations begun in {month} appear from {appears}" in when, name
            assert "\n".join(report.notes) in report.render()
