"""`ctxstore demo`: save and reload a short knee consultation, end to end."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import URL

from ctxstore.db import migrations
from ctxstore.db.admin import create_database
from ctxstore.db.engine import redact
from ctxstore.embedded import EmbeddedPostgres
from ctxstore.models import Message
from ctxstore.storage.postgres import PostgresStorage

DEMO_DATABASE = "ctxstore_demo"
DEMO_SESSION = "demo-knee-consultation"
_CST = timezone(timedelta(hours=8))


def knee_consultation() -> list[Message]:
    """The DESIGN.md example: "my knee feels like it gives way"."""
    start = datetime(2026, 11, 29, 8, 15, 2, 123000, tzinfo=_CST)
    turns = [
        ("user", "我膝盖有下坠感"),
        ("assistant", "这种下坠感持续多久了？走路或上下楼梯时会更明显吗？"),
        ("user", "大概一周了，走路的时候比较明显。"),
        ("assistant", "是否伴随疼痛或肿胀？"),
    ]
    return [
        Message(
            role=role,
            content=content,
            turn_id=f"turn_{index // 2 + 1:04d}",
            timestamp=start + timedelta(seconds=40 * index),
        )
        for index, (role, content) in enumerate(turns)
    ]


async def _play(url: URL | str) -> None:
    async with PostgresStorage.from_url(url) as storage:
        conversation = knee_consultation()
        await storage.delete(DEMO_SESSION)
        await storage.save(DEMO_SESSION, conversation[:2])
        # Full-overwrite API; PostgreSQL only receives the two new messages.
        await storage.save(DEMO_SESSION, conversation)
        loaded = await storage.load(DEMO_SESSION)
        print(f"session {DEMO_SESSION}: {len(loaded)} messages reloaded from PostgreSQL")
        for message in loaded:
            stamp = message.timestamp.isoformat() if message.timestamp else "-"
            print(f"  [{message.turn_id}] {stamp} {message.role:>9}: {message.content}")
        same = "identical to" if loaded == conversation else "DIFFERENT FROM"
        print(f"reloaded messages are {same} what was saved")
        if loaded != conversation:
            raise SystemExit(1)


def run_demo(database_url: str | None, data_dir: Path) -> None:
    """Run against ``database_url``, or the embedded server in ``data_dir`` when None."""
    embedded: EmbeddedPostgres | None = None
    target: URL | str
    if database_url is None:
        embedded = EmbeddedPostgres(data_dir)
        print(f"starting the embedded PostgreSQL in {embedded.data_dir} ...")
        server_url = embedded.start()
        target = asyncio.run(create_database(server_url, DEMO_DATABASE, exist_ok=True))
    else:
        target = database_url
    try:
        print(f"database: {redact(target)}")
        migrations.upgrade(target)
        print(f"schema at revision {migrations.current(target)}")
        asyncio.run(_play(target))
    finally:
        if embedded is not None:
            embedded.stop()
