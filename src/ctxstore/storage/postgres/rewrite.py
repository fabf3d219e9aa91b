"""Rewriting message rows in the current format: write-back on load and upgrade-data.

Each session is read, upgraded in Python, then written in one short transaction that only
applies if the session is still at the version that was read (optimistic concurrency).
Upgrading changes a row's format, not its meaning, so versions are not bumped and no
writer sees a conflict because of it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxstore.encryption import DataKey
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER, row_to_message
from ctxstore.models import MESSAGE_FORMAT, Message
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import DEFAULT_LIMITS
from ctxstore.tokens import TokenCounter


async def write_back_messages(
    driver: Driver,
    session_id: str,
    version: int,
    upgraded: Sequence[tuple[int, Message]],
    counter: TokenCounter,
    key: DataKey | None = None,
) -> bool:
    """Persist upgraded (position, message) rows if the session is still at ``version``
    (sealed with ``key`` when given).

    Returns False when another writer got there first (nothing written).
    """
    new = rows.batch([message for _, message in upgraded], counter, DEFAULT_LIMITS, key, session_id)
    new_rows = rows.new_message_rows(new, [position for position, _ in upgraded])
    names = ["new_seq", *(f"new_{column}" for column in sql.MESSAGE_WRITE_COLUMNS)]
    columns = {name: [row[field] for row in new_rows] for field, name in enumerate(names)}
    async with driver.transaction():
        if await sql.CLAIM_SESSION.fetchval(driver, sid=session_id, version=version) is None:
            return False
        await sql.REWRITE_MESSAGES.execute(driver, sid=session_id, **columns)
    return True


async def upgrade_session_messages(
    driver: Driver, session_id: str, counter: TokenCounter
) -> tuple[int, int]:
    """Upgrade one session's legacy message rows; returns (rows upgraded, retries)."""
    retries = 0
    for _attempt in range(5):
        found = await sql.LEGACY_MESSAGES_OF_SESSION.fetch(
            driver, sid=session_id, current=MESSAGE_FORMAT
        )
        if not found:
            return 0, retries
        upgraded = [
            (
                row["seq"],
                row_to_message(
                    tuple(row[name] for name in MESSAGE_COLUMN_ORDER),
                    session_id=session_id,
                    position=row["seq"],
                ),
            )
            for row in found
        ]
        version = found[0]["session_version"]
        if await write_back_messages(driver, session_id, version, upgraded, counter):
            return len(upgraded), retries
        retries += 1
    return 0, retries
