"""The analytics calendar: which UTC months a refresh publishes, and from which day.

A month is published once, by the first ``ctxstore analytics refresh`` :data:`SETTLE_DAYS`
days after it ends (revision 1004), so that consultations begun on its last days settle
first and a published month never changes.
"""

from __future__ import annotations

from datetime import date, timedelta

#: Days after a month ends before it is published: consultations begun on its last days
#: settle first, and a published month never changes.
SETTLE_DAYS = 7


def month_start(day: date) -> date:
    return day.replace(day=1)


def next_month(month: date) -> date:
    return (month.replace(day=28) + timedelta(days=4)).replace(day=1)


def first_unpublished_month(today: date) -> date:
    """The first month a refresh on ``today`` leaves for later: it, and every month after
    it, ended fewer than SETTLE_DAYS days ago (or has not ended)."""
    return month_start(today - timedelta(days=SETTLE_DAYS))


def publication_day(month: date) -> date:
    """The first day a refresh publishes ``month``."""
    return next_month(month) + timedelta(days=SETTLE_DAYS)
