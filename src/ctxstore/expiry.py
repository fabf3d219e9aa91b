"""``ctxstore purge-expired``: delete sessions past their expires_at, in batches.

Expired sessions already behave as missing; this reclaims their space.  Each batch is
one short statement that skips sessions a writer holds (they go in the next run).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.progress import Progress
from ctxstore.storage.postgres import sql


@dataclass
class PurgeReport:
    sessions: int = 0
    messages: int = 0
    batches: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"purged {self.sessions:,} expired sessions ({self.messages:,} messages, "
            f"with their summaries and states) in {self.batches:,} batches, "
            f"{self.seconds:.1f} s"
        )


async def purge_expired(driver: Any, *, batch_size: int = 1000, show: bool = True) -> PurgeReport:
    report = PurgeReport()
    started = time.monotonic()
    with translated("purge-expired"):
        pending = int(await sql.COUNT_EXPIRED.fetchval(driver))
        progress = Progress("purging sessions", pending) if show else None
        while True:
            rows = await sql.PURGE_EXPIRED_BATCH.fetch(driver, batch_size=batch_size)
            if not rows:
                break
            report.batches += 1
            report.sessions += len(rows)
            report.messages += sum(row["message_count"] for row in rows)
            if progress:
                progress.advance(len(rows))
        if progress:
            progress.finish()
    report.seconds = time.monotonic() - started
    return report
