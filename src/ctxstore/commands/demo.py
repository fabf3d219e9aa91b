"""`ctxstore demo`: a whole knee consultation, end to end, on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sqlalchemy import URL

from ctxstore.context.builder import ContextBuilder
from ctxstore.context.compression import SummarizeOldest, extractive_summarizer
from ctxstore.context.manager import ContextManager
from ctxstore.contract import EXAMPLE
from ctxstore.db import migrations
from ctxstore.db.admin import create_database
from ctxstore.db.engine import redact
from ctxstore.embedded import EmbeddedPostgres
from ctxstore.encryption import Encryption, Keyring
from ctxstore.models import Message
from ctxstore.storage.postgres import PostgresStorage

DEMO_DATABASE = "ctxstore_demo"
DEMO_SESSION = "demo-knee-consultation"
DEMO_USER = "demo-user-42"
_CST = timezone(timedelta(hours=8))

TURNS = [
    ("我膝盖有下坠感", "这种下坠感持续多久了？走路或上下楼梯时会更明显吗？"),
    ("大概一周了，走路的时候比较明显。", "是否伴随疼痛或肿胀？"),
    ("有一点疼，大概三分，没有肿。", "之前有没有扭伤或者撞到过膝盖？"),
    ("上个月打篮球的时候扭过一下。", "扭伤后当时能继续运动吗？膝盖有没有卡住或者响声？"),
    ("当时还能走，但是偶尔会有咔哒声。", "了解。我先总结一下目前的情况，再给你一些建议。"),
]

STATES: list[dict[str, Any]] = [
    EXAMPLE["context"]["consultation_state"],
    {
        "stage": "collecting_details",
        "chief_complaint": "膝盖下坠感",
        "body_parts": ["膝盖"],
        "symptoms": ["下坠感", "轻度疼痛"],
        "duration": "一周",
        "aggravating_factors": ["走路"],
        "pain_level": 3,
        "swelling": False,
        "missing_slots": ["trauma"],
        "last_question": "之前有没有扭伤或者撞到过膝盖？",
        "pending_answer_for": ["trauma"],
    },
    {
        "stage": "assessing",
        "chief_complaint": "膝盖下坠感",
        "body_parts": ["膝盖"],
        "symptoms": ["下坠感", "轻度疼痛", "弹响"],
        "duration": "一周",
        "aggravating_factors": ["走路"],
        "pain_level": 3,
        "swelling": False,
        "trauma": True,
        "red_flags": [],
        "missing_slots": [],
        "last_question": "扭伤后当时能继续运动吗？",
    },
]

KNOWLEDGE = [
    {
        "title": "膝关节不稳的常见原因",
        "content": "膝盖打软或下坠感常见于前交叉韧带损伤、半月板损伤或股四头肌无力；"
        "伴随弹响和扭伤史时应考虑半月板损伤。",
        "source": "rehab-kb/knee/instability",
        "relevance_score": 0.92,
    },
    {
        "title": "何时需要就医",
        "content": "膝关节交锁、明显肿胀、无法负重时应尽快就医。",
        "source": "rehab-kb/red-flags",
        "relevance_score": 0.71,
    },
]


def knee_consultation() -> list[Message]:
    """The example consultation of docs/context-contract.md as messages.

    "My knee feels like it gives way."
    """
    start = datetime(2026, 11, 29, 8, 15, 2, 123000, tzinfo=_CST)
    messages = []
    for index, (question, answer) in enumerate(TURNS):
        for offset, (role, content) in enumerate((("user", question), ("assistant", answer))):
            messages.append(
                Message(
                    role=role,
                    content=content,
                    turn_id=f"turn_{index + 1:04d}",
                    timestamp=start + timedelta(seconds=60 * index + 8 * offset),
                )
            )
    return messages


def _local_keyring(data_dir: Path) -> Keyring:
    """The demo's master key, in a file beside the embedded server's data (created once).

    Production takes its keys from CTXSTORE_MASTER_KEYS or a KMS (docs/threat-model.md)."""
    path = data_dir.parent / "master.keys"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as keyfile:
            keyfile.write(Keyring.generate_entry("demo-1") + "\n")
        print(f"created a local master key in {path} (readable by you only)")
    return Keyring.from_file(path)


async def _play(url: URL | str, keyring: Keyring) -> None:
    encryption = Encryption(keyring)
    async with PostgresStorage.from_url(url, encryption=encryption) as storage:
        # Erasure destroys the user's data key too: a rerun starts clean even if the key
        # file was replaced since.
        await storage.erase_user(DEMO_USER)
        await storage.delete(DEMO_SESSION)
        await storage.save_profile(
            DEMO_USER, {"age": 34, "gender": "female", "exercise_habit": "每周打两次篮球"}
        )
        manager = ContextManager(
            storage,
            strategy=SummarizeOldest(extractive_summarizer(), keep_recent=4, trigger_tokens=250),
        )
        conversation = knee_consultation()
        state_version = 0
        print("\n-- the consultation, turn by turn (ContextManager.add_messages) --")
        for turn in range(len(TURNS)):
            pair = conversation[2 * turn : 2 * turn + 2]
            version = await manager.add_messages(DEMO_SESSION, pair, user_id=DEMO_USER)
            print(f"  turn {turn + 1}: session v{version}")
            for message in pair:
                print(f"      {message.role:>9}: {message.content}")
            if turn < len(STATES):
                state_version = await storage.save_state(
                    DEMO_SESSION, STATES[turn], expected_version=state_version
                )
                print(f"      state v{state_version}: stage={STATES[turn]['stage']}")
        window = await manager.get_context(DEMO_SESSION)
        print("\n-- get_context (SummarizeOldest, extractive summarizer: not an LLM) --")
        print(
            f"  summary v{window.summary_version}: {window.summary.text if window.summary else '-'}"
        )
        print(f"  recent messages served: {len(window.messages)} of {window.total_messages}")
        history = await storage.state_history(DEMO_SESSION)
        print("  stage history: " + " -> ".join(f"v{c.version} {c.state.stage}" for c in history))

        loaded = await storage.load(DEMO_SESSION)
        same = "identical to" if loaded == conversation else "DIFFERENT FROM"
        print(f"\nreloaded {len(loaded)} messages from PostgreSQL: {same} what was saved")
        if loaded != conversation:
            raise SystemExit(1)

        builder = ContextBuilder(storage)
        contract = await builder.build(
            DEMO_SESSION,
            "turn_0006",
            "那我现在应该怎么锻炼？",
            retrieved_knowledge=KNOWLEDGE,
            token_budget=1200,
        )
        serialized = contract.to_json()
        used = builder.counter.count(serialized)
        print("\n-- the Context Contract for the next LLM call --")
        print(json.dumps(json.loads(serialized), ensure_ascii=False, indent=2))
        meta = contract.meta
        print(
            f"\ntoken accounting ({builder.counter.encoding_name}): {used} of "
            f"{meta.token_budget} tokens used; {meta.included_message_count} recent messages, "
            f"summary v{meta.summary_version}, "
            f"{len(contract.context.retrieved_knowledge or [])} knowledge items"
        )


def run_dev_server(data_dir: Path, database: str) -> None:
    """``ctxstore dev``: start the embedded server in ``data_dir``, create and migrate
    ``database``, print its URL, and keep it up until SIGINT or SIGTERM."""
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, lambda _number, _frame: stop.set())
    embedded = EmbeddedPostgres(data_dir)
    print(f"starting the embedded PostgreSQL in {embedded.data_dir} ...", flush=True)
    try:
        target = asyncio.run(create_database(embedded.start(), database, exist_ok=True))
        migrations.upgrade(target)
        print(f"database {database!r} at revision {migrations.current(target)}; in another shell:")
        print(f"  export CTXSTORE_DATABASE_URL='{target.render_as_string(hide_password=False)}'")
        print("Ctrl-C stops the server; its data stays in the folder above.", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        embedded.stop()
    print("stopped")


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
        print("messages, summaries, states and profiles encrypted at rest (AES-256-GCM)")
        asyncio.run(_play(target, _local_keyring(data_dir)))
    finally:
        if embedded is not None:
            embedded.stop()
    if embedded is not None:
        print(
            f"\nthe demo's data stays in {embedded.data_dir}: `ctxstore dev` starts that server "
            "again for your own code (it prints the URL)"
        )
