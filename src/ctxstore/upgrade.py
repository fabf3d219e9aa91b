"""Persisting upgraded formats: write-back on load and ``ctxstore upgrade-data``.

Loads always upgrade old rows in memory (formats/).  This module writes the upgraded form
back, safely while the service runs: each session (or state row) is read, upgraded in
Python, then written in one short transaction that only applies if the row is still at
the version that was read (optimistic concurrency).  Upgrading changes a row's format,
not its meaning, so versions are not bumped and no writer sees a conflict because of it.
A session whose version moved meanwhile is simply read again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.errors import CtxStoreError
from ctxstore.formats.documents import load_state
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER, row_to_message
from ctxstore.models import MESSAGE_FORMAT, STATE_FORMAT, Message
from ctxstore.progress import Progress
from ctxstore.storage.pg_documents import state_arguments
from ctxstore.storage.pg_rows import message_row

Driver = Any

_COLUMNS = ", ".join(f"m.{name}" for name in MESSAGE_COLUMN_ORDER)

LEGACY_MESSAGES_OF_SESSION = f"""
SELECT s.version, {_COLUMNS}
  FROM sessions AS s JOIN messages AS m ON m.session_id = s.session_id
 WHERE s.session_id = $1 AND m.format_version <> $2
 ORDER BY m.seq
"""

# The optimistic check and the row lock: only if nobody wrote since the read.  The hash
# becomes unknown (digests change with the format); the next save recomputes it.
CLAIM_SESSION = """
UPDATE sessions SET content_hash = NULL
 WHERE session_id = $1 AND version = $2
RETURNING 1
"""

REWRITE_MESSAGE = """
UPDATE messages
   SET role = $3, content = $4, turn_id = $5, ts = $6, ts_offset = $7, name = $8,
       metadata = $9::jsonb, digest = $10, format_version = $11
 WHERE session_id = $1 AND seq = $2 AND format_version = $12
"""

SESSIONS_WITH_LEGACY_MESSAGES = """
SELECT DISTINCT session_id FROM messages WHERE format_version <> $1 ORDER BY session_id
"""

COUNT_LEGACY_MESSAGES = "SELECT count(*) FROM messages WHERE format_version <> $1"

LEGACY_STATES = """
SELECT session_id, version, document, format_version FROM {table}
 WHERE format_version <> $1 AND (session_id, version) > ($2, $3)
 ORDER BY session_id, version LIMIT $4
"""

REWRITE_STATE = """
UPDATE {table}
   SET stage = $3, chief_complaint = $4, body_parts = $5, symptoms = $6, red_flags = $7,
       pain_level = $8, duration = $9, document = $10::jsonb, format_version = $11
 WHERE session_id = $1 AND version = $2 AND format_version = $12
"""

COUNT_LEGACY_STATES = "SELECT count(*) FROM {table} WHERE format_version <> $1"


@dataclass
class UpgradeReport:
    """What ``upgrade-data`` did."""

    messages_upgraded: int = 0
    sessions_upgraded: int = 0
    states_upgraded: int = 0
    history_upgraded: int = 0
    retried: int = 0
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rows_upgraded(self) -> int:
        return self.messages_upgraded + self.states_upgraded + self.history_upgraded

    def summary(self) -> str:
        lines = [
            f"upgraded {self.rows_upgraded:,} rows in {self.seconds:.1f} s: "
            f"{self.messages_upgraded:,} messages in {self.sessions_upgraded:,} sessions, "
            f"{self.states_upgraded:,} consultation states, "
            f"{self.history_upgraded:,} state-history rows",
            f"retried after concurrent writes: {self.retried:,}; failed: {len(self.failed):,}",
        ]
        lines += [f"  failed: {reason}" for reason in self.failed[:20]]
        if len(self.failed) > 20:
            lines.append(f"  ... and {len(self.failed) - 20} more")
        return "\n".join(lines)


def _message_arguments(session_id: str, seq: int, message: Message, old: int) -> list[Any]:
    """REWRITE_MESSAGE's parameters: the message as PostgresStorage writes it."""
    row = message_row(session_id, seq, message)
    metadata = row["metadata"]
    return [
        session_id,
        seq,
        row["role"],
        row["content"],
        row["turn_id"],
        row["ts"],
        row["ts_offset"],
        row["name"],
        json.dumps(metadata, ensure_ascii=False) if metadata else None,
        row["digest"],
        row["format_version"],
        old,
    ]


async def write_back_messages(
    driver: Driver, session_id: str, version: int, upgraded: Sequence[tuple[int, int, Message]]
) -> bool:
    """Persist upgraded (seq, old format, message) rows if the session is still at version.

    Returns False when another writer got there first (nothing written).
    """
    async with driver.transaction():
        if await driver.fetchval(CLAIM_SESSION, session_id, version) is None:
            return False
        await driver.executemany(
            REWRITE_MESSAGE,
            [_message_arguments(session_id, seq, msg, old) for seq, old, msg in upgraded],
        )
    return True


async def upgrade_session_messages(driver: Driver, session_id: str) -> tuple[int, int]:
    """Upgrade one session's legacy message rows; returns (rows upgraded, retries)."""
    retries = 0
    for _attempt in range(5):
        rows = await driver.fetch(LEGACY_MESSAGES_OF_SESSION, session_id, MESSAGE_FORMAT)
        if not rows:
            return 0, retries
        version = rows[0][0]
        upgraded = [
            (row[1], row[-1], row_to_message(row[1:], session_id=session_id, position=row[1]))
            for row in rows
        ]
        if await write_back_messages(driver, session_id, version, upgraded):
            return len(upgraded), retries
        retries += 1
    return 0, retries


async def _upgrade_states(driver: Driver, table: str, report: UpgradeReport, batch: int) -> int:
    done = 0
    after: tuple[str, int] = ("", 0)
    while True:
        rows = await driver.fetch(LEGACY_STATES.format(table=table), STATE_FORMAT, *after, batch)
        if not rows:
            return done
        for session_id, version, document, old in rows:
            after = (session_id, version)
            try:
                state = load_state(document, old, session_id=session_id)
            except CtxStoreError as error:
                report.failed.append(f"{table} {session_id!r} v{version}: {error}")
                continue
            status = await driver.execute(
                REWRITE_STATE.format(table=table),
                session_id,
                version,
                *state_arguments(state),
                old,
            )
            if status.endswith(" 1"):
                done += 1
            else:
                report.retried += 1  # moved on meanwhile: the new row is already current


async def upgrade_data(
    driver: Driver, *, batch_size: int = 500, show: bool = True
) -> UpgradeReport:
    """Upgrade every stored row to the current formats, in short transactions."""
    report = UpgradeReport()
    started = time.monotonic()
    with translated("upgrade-data"):
        pending = int(await driver.fetchval(COUNT_LEGACY_MESSAGES, MESSAGE_FORMAT))
        for table in ("consultation_states", "consultation_state_history"):
            pending += int(
                await driver.fetchval(COUNT_LEGACY_STATES.format(table=table), STATE_FORMAT)
            )
        progress = Progress("upgrading rows", pending) if show else None
        sessions = [
            row[0] for row in await driver.fetch(SESSIONS_WITH_LEGACY_MESSAGES, MESSAGE_FORMAT)
        ]
        for session_id in sessions:
            try:
                count, retries = await upgrade_session_messages(driver, session_id)
            except CtxStoreError as error:
                report.failed.append(f"session {session_id!r}: {error}")
                continue
            report.retried += retries
            if count:
                report.messages_upgraded += count
                report.sessions_upgraded += 1
                if progress:
                    progress.advance(count)
        report.states_upgraded = await _upgrade_states(
            driver, "consultation_states", report, batch_size
        )
        report.history_upgraded = await _upgrade_states(
            driver, "consultation_state_history", report, batch_size
        )
        if progress:
            progress.advance(report.states_upgraded + report.history_upgraded)
            progress.finish()
    report.seconds = time.monotonic() - started
    return report
