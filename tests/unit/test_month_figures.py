"""Issue 50: what a published month shows and withholds, and when it is published.

ctxstore.commands.aggregates publishes per UTC calendar month, once, on the first refresh
SETTLE_DAYS days after the month ends; a figure of n of the month's consultations shows
only when n >= k and consultations - n >= k (small-cell and complement suppression).
"""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ctxstore.commands.aggregates import KINDS, KindFigures, free_text_values, month_figures
from ctxstore.commands.months import (
    SETTLE_DAYS,
    first_unpublished_month,
    next_month,
    publication_day,
)
from ctxstore.models import ConsultationState


def held(**found: set[str]) -> dict[str, set[str]]:
    """One consultation's values: every kind, empty unless given."""
    return {kind: found.get(kind, set()) for kind in KINDS}


def kind_of(figures: Any, kind: str) -> KindFigures:
    (one,) = [each for each in figures.kinds if each.kind == kind]
    return one


# -- when a month is published --------------------------------------------------------------


def test_next_month_crosses_the_year_and_short_months() -> None:
    assert next_month(date(2026, 12, 1)) == date(2027, 1, 1)
    assert next_month(date(2026, 11, 1)) == date(2026, 12, 1)
    assert next_month(date(2024, 2, 1)) == date(2024, 3, 1)  # a leap February
    assert next_month(date(2026, 1, 31)) == date(2026, 2, 1)


def test_a_month_is_published_seven_days_after_it_ends() -> None:
    assert SETTLE_DAYS == 7
    assert publication_day(date(2026, 11, 1)) == date(2026, 12, 8)
    assert publication_day(date(2026, 12, 1)) == date(2027, 1, 8)
    assert publication_day(date(2027, 2, 1)) == date(2027, 3, 8)


def test_a_refresh_on_the_seventh_leaves_the_month_before_and_on_the_eighth_publishes_it() -> None:
    # first_unpublished_month: the first month a refresh that day leaves for later
    assert first_unpublished_month(date(2026, 12, 7)) == date(2026, 11, 1)
    assert first_unpublished_month(date(2026, 12, 8)) == date(2026, 12, 1)
    # December -> January
    assert first_unpublished_month(date(2027, 1, 7)) == date(2026, 12, 1)
    assert first_unpublished_month(date(2027, 1, 8)) == date(2027, 1, 1)
    # the current month is never published, whatever the day
    for day in range(1, 32):
        assert first_unpublished_month(date(2026, 12, day)) <= date(2026, 12, 1)


@given(
    st.dates(min_value=date(2000, 1, 1), max_value=date(2200, 12, 1)),
    st.dates(min_value=date(2000, 1, 1), max_value=date(2200, 12, 31)),
)
def test_a_month_is_due_exactly_from_its_publication_day(some_day: date, today: date) -> None:
    month = some_day.replace(day=1)
    assert (month < first_unpublished_month(today)) == (today >= publication_day(month))
    assert first_unpublished_month(today).day == 1
    # a month due is over, and was over SETTLE_DAYS days before today
    if month < first_unpublished_month(today):
        assert next_month(month) <= today - timedelta(days=SETTLE_DAYS)


# -- what one consultation counts -----------------------------------------------------------


def test_each_kind_counts_the_distinct_text_values_of_a_state() -> None:
    document = ConsultationState.model_validate(
        {
            "stage": "assessing",
            "chief_complaint": "膝盖下坠感",
            "body_parts": ["膝盖", "膝盖"],
            "symptoms": ["下坠感", "打软腿"],
            "duration": "一周",
            "red_flags": ["无法负重"],
        }
    ).document()
    assert free_text_values(document) == {
        "chief_complaint": {"膝盖下坠感"},
        "body_part": {"膝盖"},
        "symptom": {"下坠感", "打软腿"},
        "red_flag": {"无法负重"},
        "symptom_duration": {"一周"},
    }


def test_anything_but_text_is_not_a_value() -> None:
    found = free_text_values(
        {"chief_complaint": "", "red_flags": [None, 3, ""], "duration": 7, "symptoms": None}
    )
    assert found == {kind: set() for kind in KINDS}


# -- the k rule -----------------------------------------------------------------------------


def test_a_figure_of_k_shows_and_of_k_minus_one_does_not() -> None:
    five = [held(chief_complaint={"a"})] * 5
    figures = month_figures(five + [held()] * 5, 10, 5)
    assert figures.cells == [("chief_complaint", "a", 5)]
    assert kind_of(figures, "chief_complaint") == KindFigures("chief_complaint", 1, 0, 0)
    four = [held(chief_complaint={"a"})] * 4
    assert month_figures(four + [held()] * 6, 10, 5).cells == []


def test_a_figure_all_but_fewer_than_k_have_is_withheld_too() -> None:
    month = [held(chief_complaint={"a"})] * 5 + [held()] * 4
    # 9 consultations: 5 have a, 4 (= k - 1) don't, so a's count would tell the 4 apart
    assert month_figures(month, 9, 5).cells == []
    # consultations with no state count among those that don't have it
    assert month_figures(month, 10, 5).cells == [("chief_complaint", "a", 5)]


def test_a_value_shown_would_leave_fewer_than_k_holding_the_rest_so_it_is_withheld() -> None:
    # a (5) and b (4) both pass k = 4; c is one consultation's.  Shown, a and b would
    # leave c's consultation alone: consultations with a complaint (countable per
    # consultation) minus 5 minus 4.  The smallest shown value goes too: 5 then hold one.
    month = [held(chief_complaint={"a"})] * 5 + [held(chief_complaint={"b"})] * 4
    month += [held(chief_complaint={"c"})]
    figures = month_figures(month, 10, 4)
    assert figures.cells == [("chief_complaint", "a", 5)]
    # 2 values withheld: fewer than k, so blank (one alone would be pinned by the 5)
    assert kind_of(figures, "chief_complaint") == KindFigures("chief_complaint", 1, None, 5)
    # with nothing else to withhold, the one value k share is withheld too
    alone = [held(chief_complaint={"a"})] * 5 + [held(chief_complaint={"c"})] + [held()] * 4
    figures = month_figures(alone, 10, 5)
    assert figures.cells == []
    assert kind_of(figures, "chief_complaint") == KindFigures("chief_complaint", 0, None, 6)


def test_what_each_kind_withholds() -> None:
    month = (
        [held(symptom={"pain"})] * 6
        + [held(symptom={"pain", f"rare {n}"}) for n in (1, 4, 5)]
        + [held(symptom={"rare 2"}), held(symptom={"rare 3"}), held(symptom={"rare 3"})]
        + [held()] * 4
    )
    figures = month_figures(month, 16, 3)
    assert figures.cells == [("symptom", "pain", 9)]
    # 5 values withheld (k or more: the number shows), held by 3 + 1 + 2 = 6 consultations
    assert kind_of(figures, "symptom") == KindFigures("symptom", 1, 5, 6)
    assert kind_of(figures, "body_part") == KindFigures("body_part", 0, 0, 0)


def test_every_group_the_shown_values_leave_is_k_or_more() -> None:
    month = (
        [held(symptom={"pain"})] * 6
        + [held(symptom={"pain", f"rare {n}"}) for n in (1, 4, 5)]
        + [held(symptom={"rare 2"}), held(symptom={"rare 3"}), held(symptom={"rare 3"})]
        + [held()] * 4
    )
    # k = 5: pain passes (9 have it, 7 don't), but shown it would leave 3 holding only
    # withheld symptoms and 3 holding pain and a withheld one (the 12 with a symptom, the
    # 6 holding a withheld one and pain's 9 tell both): withheld too
    figures = month_figures(month, 16, 5)
    assert figures.cells == []
    assert kind_of(figures, "symptom") == KindFigures("symptom", 0, 6, 12)


def test_one_withheld_value_held_by_k_or_more_shows_its_consultations_not_its_number() -> None:
    # z: all 6 have it (none without: fewer than k = 3): withheld; a: 3 have it, 3 don't
    month = [held(symptom={"a", "z"})] * 3 + [held(symptom={"z"})] * 3
    figures = month_figures(month, 6, 3)
    assert figures.cells == [("symptom", "a", 3)]
    assert kind_of(figures, "symptom") == KindFigures("symptom", 1, None, 6)


def test_a_consultation_holding_several_withheld_values_counts_once() -> None:
    month = [held(body_part={"x", "y", "z"})] * 4 + [held()] * 6
    # 3 values, 4 consultations hold them: fewer than k, and nothing shown
    assert kind_of(month_figures(month, 10, 5), "body_part") == KindFigures(
        "body_part", 0, None, None
    )
    # 5 values withheld, held 2 + 2 + 2 + 1 + 1 times, by 4 consultations
    pairs = [held(body_part=set(pair)) for pair in ("pq", "pr", "qr", "st")]
    month = pairs + [held(body_part={"a"})] * 3 + [held()] * 3
    assert kind_of(month_figures(month, 10, 3), "body_part") == KindFigures("body_part", 1, 5, 4)
    month = [held(body_part={"x", "y", "z"})] * 5 + [held()] * 6
    # each of x, y, z is held by 5 and not by 6: all shown, nothing withheld
    assert kind_of(month_figures(month, 11, 5), "body_part") == KindFigures("body_part", 3, 0, 0)


def test_the_red_flag_count_follows_the_same_rule() -> None:
    flagged = held(red_flag={"fever"})
    assert month_figures([flagged] * 5 + [held()] * 5, 10, 5).with_red_flags == 5
    assert month_figures([flagged] * 4 + [held()] * 6, 10, 5).with_red_flags is None
    assert month_figures([flagged] * 5 + [held()] * 4, 9, 5).with_red_flags is None
    # no state is no red flag: 5 with, 5 without (two of them with no state)
    assert month_figures([flagged] * 5 + [held()] * 3, 10, 5).with_red_flags == 5
    assert month_figures([held()] * 20, 20, 5).with_red_flags is None  # 0: fewer than k


def test_shown_red_flag_types_adding_up_to_a_withheld_count_leave_it_untold() -> None:
    # 16 of 20 have a red flag (all but 4: withheld); fever and numbness, 8 each, show, and
    # "nothing withheld" would make them add up to 16
    month = [held(red_flag={"fever"})] * 8 + [held(red_flag={"numbness"})] * 8 + [held()] * 4
    figures = month_figures(month, 20, 5)
    assert figures.with_red_flags is None
    assert figures.cells == [("red_flag", "fever", 8), ("red_flag", "numbness", 8)]
    assert kind_of(figures, "red_flag") == KindFigures("red_flag", 2, None, None)


def test_a_withheld_red_flag_count_is_not_told_by_the_consultations_withheld() -> None:
    # 5 of 9 have fever: the count (all but 4) is withheld, and so is fever; 5 hold a
    # withheld red flag, which would be the count itself
    month = [held(red_flag={"fever"})] * 5 + [held()] * 4
    figures = month_figures(month, 9, 5)
    assert (figures.with_red_flags, figures.cells) == (None, [])
    assert kind_of(figures, "red_flag") == KindFigures("red_flag", 0, None, None)
    # the same consultations' symptoms are another kind: their rule only
    assert kind_of(month_figures([held(symptom={"s"})] * 5 + [held()] * 4, 9, 5), "symptom") == (
        KindFigures("symptom", 0, None, 5)
    )


def values_of(kind: str) -> st.SearchStrategy[set[str]]:
    return st.sets(st.sampled_from([f"{kind} {n}" for n in range(5)]), max_size=3)


CONSULTATION = st.fixed_dictionaries({kind: values_of(kind) for kind in KINDS})


def small_groups(month: list[dict[str, set[str]]], kind: str, shown: set[str], k: int) -> bool:
    """Whether a group of 1 to k-1 is left among those holding a value of ``kind``:
    holding a withheld one, only withheld ones, only shown ones, or both."""
    having = [one[kind] for one in month if one[kind]]
    withheld = [found for found in having if found - shown]
    only_withheld = [found for found in withheld if not found & shown]
    sizes = (
        len(withheld),
        len(only_withheld),
        len(having) - len(withheld),
        len(withheld) - len(only_withheld),
    )
    return any(0 < n < k for n in sizes)


def holding(month: list[dict[str, set[str]]], kind: str, shown: set[str]) -> int:
    """The consultations holding a value of ``kind`` that is not shown."""
    return sum(1 for one in month if one[kind] - shown)


@given(st.lists(CONSULTATION, max_size=40), st.integers(0, 6), st.integers(2, 8))
def test_every_shown_figure_passes_k_and_leaves_no_small_group(
    month: list[dict[str, set[str]]], without_state: int, k: int
) -> None:
    consultations = len(month) + without_state
    figures = month_figures(month, consultations, k)
    true = Counter((kind, value) for one in month for kind in KINDS for value in one[kind])
    assert all(true[kind, value] == n for kind, value, n in figures.cells)  # exact counts
    assert all(n >= k and consultations - n >= k for _, _, n in figures.cells)
    for kind in KINDS:
        one = kind_of(figures, kind)
        distinct = {value for of, value in true if of == kind}
        shown = {value for of, value, _ in figures.cells if of == kind}
        withheld = len(distinct) - len(shown)
        assert one.shown_values == len(shown)
        tells_flags = kind == "red_flag" and figures.with_red_flags is None
        small = 0 < withheld < k
        assert one.withheld_values == (None if tells_flags or small else withheld)
        rest = holding(month, kind, shown)
        # what the shown values leave is no group of 1 to k-1 (nothing shown: nothing left)
        assert not shown or rest == 0 or rest >= k
        assert one.withheld_consultations in (None, rest)
        if one.withheld_consultations is None:
            assert 0 < rest < k or tells_flags
        # withheld beyond the k rule: only the smallest, and only as many as it takes
        passing = {v for v in distinct if true[kind, v] >= k and consultations - true[kind, v] >= k}
        assert shown <= passing
        assert not small_groups(month, kind, shown, k) or not shown
        if passing - shown:
            last = max(passing - shown, key=lambda v: (true[kind, v], v))
            assert small_groups(month, kind, shown | {last}, k)
            assert all(
                (true[kind, v], v) < (true[kind, s], s) for v in passing - shown for s in shown
            )
    flagged = sum(1 for one in month if one["red_flag"])
    shown_flags = flagged >= k and consultations - flagged >= k
    assert figures.with_red_flags == (flagged if shown_flags else None)
