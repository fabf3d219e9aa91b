"""``ctxstore retention``: how long each kind of data is kept, set by the owner
(revision 1007) and applied by ``ctxstore purge-expired`` (commands/expiry.py says what each
kind's period removes).  A kind without a period is kept until its session expires or
its user is erased.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ctxstore.errors import InvalidInputError
from ctxstore.storage.postgres import PostgresStorage, sql

#: The kinds of data a period is set for, as revisions 1007 and 1009's CHECK names them.
DATA_CLASSES = ("messages", "summaries", "state_history", "profiles", "ledger")
#: Shorter would purge what a slow client is still writing.
SHORTEST = timedelta(days=1)


@dataclass(frozen=True)
class Period:
    data_class: str
    keep_for: timedelta
    set_by: str
    set_at: datetime

    def line(self) -> str:
        return (
            f"{self.data_class}: kept {self.keep_for.days} days "
            f"(set by {self.set_by} at {self.set_at:%Y-%m-%d %H:%M:%S UTC})"
        )


def _period(row: Any) -> Period:
    return Period(row["data_class"], row["keep_for"], row["set_by"], row["set_at"])


def check_data_class(data_class: object) -> str:
    if data_class not in DATA_CLASSES:
        raise InvalidInputError(
            f"a retention period is for {', '.join(DATA_CLASSES)}, not {data_class!r}"
        )
    return str(data_class)


async def set_period(
    storage: PostgresStorage, data_class: str, keep_for: timedelta, *, set_by: str
) -> Period:
    """Keep ``data_class`` for ``keep_for`` (a day at least) from the next purge on."""
    check_data_class(data_class)
    if not isinstance(keep_for, timedelta) or keep_for < SHORTEST:
        raise InvalidInputError(f"a retention period is a day or more, not {keep_for!r}")
    if not isinstance(set_by, str) or not set_by.strip():
        raise InvalidInputError("set_by must name who sets the period")
    async with storage.maintenance("retention set") as driver:
        row = await sql.SET_RETENTION_PERIOD.fetchrow(
            driver, data_class=data_class, keep_for=keep_for, set_by=set_by
        )
    return _period(row)


async def unset_period(storage: PostgresStorage, data_class: str) -> bool:
    """Keep ``data_class`` without a period again; whether it had one."""
    check_data_class(data_class)
    async with storage.maintenance("retention unset") as driver:
        return bool(await sql.UNSET_RETENTION_PERIOD.fetch(driver, data_class=data_class))


async def periods(storage: PostgresStorage) -> list[Period]:
    async with storage.maintenance("retention show") as driver:
        return [_period(row) for row in await sql.RETENTION_PERIODS.fetch(driver)]
