"""``ctxstore import-redis``: copy the original Go service's sessions into PostgreSQL.

SCAN (never KEYS) walks ``{prefix}:*``; each value is parsed and upgraded from whatever
format it is in, compared with what PostgreSQL already holds, and saved only if it
differs, so a second run changes nothing.  A session that can't be read is reported and
skipped; it never stops the others.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from ctxstore.errors import CtxStoreError
from ctxstore.progress import Progress
from ctxstore.storage.base import VersionedStorage, check_session_id
from ctxstore.storage.redis import parse_session_value, translated_redis


@dataclass
class ImportReport:
    """What an import did, session by session."""

    imported: int = 0
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def seen(self) -> int:
        return self.imported + self.unchanged + len(self.skipped) + len(self.failed)

    def summary(self) -> str:
        rate = self.seen / self.seconds if self.seconds else 0.0
        lines = [
            f"{self.seen:,} sessions in {self.seconds:.1f} s ({rate:,.0f}/s): "
            f"{self.imported:,} imported, {self.unchanged:,} unchanged, "
            f"{len(self.skipped):,} skipped, {len(self.failed):,} failed"
        ]
        for kind, reasons in (("skipped", self.skipped), ("failed", self.failed)):
            lines += [f"  {kind}: {reason}" for reason in reasons[:20]]
            if len(reasons) > 20:
                lines.append(f"  ... and {len(reasons) - 20} more {kind}")
        return "\n".join(lines)


async def _scan_keys(client: Any, prefix: str) -> list[bytes]:
    keys: list[bytes] = []
    with translated_redis("scanning Redis"):
        async for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            keys.append(key)
    return keys


async def _import_one(
    client: Any, storage: VersionedStorage, prefix: str, key: bytes, report: ImportReport
) -> None:
    name = key.decode("utf-8", "surrogateescape")
    session_id = name[len(prefix) + 1 :]
    try:
        check_session_id(session_id)
    except CtxStoreError as error:
        report.skipped.append(f"{name!r}: {error}")
        return
    try:
        with translated_redis("reading Redis"):
            kind = (await client.type(key)).decode()
            if kind != "string":
                report.skipped.append(f"{name!r}: a Redis {kind}, not a session's JSON string")
                return
            raw = await client.get(key)
        if raw is None:  # expired between SCAN and GET
            report.skipped.append(f"{name!r}: expired before it was read")
            return
        messages = parse_session_value(raw, session_id)
        if await storage.exists(session_id) and await storage.load(session_id) == messages:
            report.unchanged += 1
            return
        await storage.save(session_id, messages)
        report.imported += 1
    except CtxStoreError as error:
        report.failed.append(f"{name!r}: {error}")


async def import_redis(
    client: Any,
    storage: VersionedStorage,
    *,
    prefix: str,
    concurrency: int = 8,
    show: bool = True,
) -> ImportReport:
    """Import every session under ``prefix`` from Redis ``client`` into ``storage``."""
    report = ImportReport()
    started = time.monotonic()
    keys = await _scan_keys(client, prefix)
    progress = Progress("importing sessions", len(keys)) if show else None
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for key in keys:
        queue.put_nowait(key)

    async def worker() -> None:
        while not queue.empty():
            key = queue.get_nowait()
            await _import_one(client, storage, prefix, key, report)
            if progress:
                progress.advance()

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    if progress:
        progress.finish()
    report.seconds = time.monotonic() - started
    return report
