"""docs/legacy-formats.md, rule by rule: rows written at old formats, upgraded on load."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from sqlalchemy import text

from ctxstore import ConsultationState, Message, PostgresStorage
from ctxstore.commands.upgrade import upgrade_data
from ctxstore.errors import CorruptDataError, UnsupportedFormatError
from ctxstore.formats.messages import message_from_document
from ctxstore.models import STATE_FORMAT
from ctxstore.storage.postgres.rewrite import write_back_messages

OLD_STATE: dict[str, Any] = {
    "stage": "collecting_details",
    "chief_complaint": "膝盖下坠感",
    "body_parts": ["膝盖"],
    "symptoms": ["下坠感"],
    "duration": "一周",
    "pain_level": None,
    "missing_slots": ["pain_level"],
    "last_question": None,
    "pending_answer_for": [],
}


async def sql(storage: PostgresStorage, statement: str, **params: Any) -> None:
    async with storage.engine.begin() as conn:
        await conn.execute(text(statement), params)


async def insert_legacy_session(
    storage: PostgresStorage, session_id: str, rows: list[dict[str, Any]], version: int = 1
) -> None:
    """Rows as older code wrote them, straight into the tables."""
    await sql(
        storage,
        "INSERT INTO sessions (session_id, version, message_count, content_hash) "
        "VALUES (:s, :v, :n, '\\x00'::bytea)",
        s=session_id,
        v=version,
        n=len(rows),
    )
    for seq, row in enumerate(rows):
        await sql(
            storage,
            "INSERT INTO messages (session_id, seq, role, content, name, metadata, digest, "
            "format_version) VALUES (:s, :seq, :role, :content, :name, CAST(:meta AS jsonb), "
            "'\\x00'::bytea, :fmt)",
            s=session_id,
            seq=seq,
            role=row["role"],
            content=row["content"],
            name=row.get("name"),
            meta=json.dumps(row["metadata"]) if row.get("metadata") else None,
            fmt=row["format"],
        )


GO_ROWS = [
    {"format": 0, "role": "User", "content": "你好"},
    {"format": 0, "role": "ASSISTANT", "content": "你好！有什么可以帮助你的？", "name": "bot"},
    {"format": 0, "role": "user", "content": "膝盖", "metadata": {"TraceID": "abc"}},
    {"format": 1, "role": "assistant", "content": "是否伴随疼痛或肿胀？"},
]


async def test_go_and_first_python_rows_load_upgraded(pg_storage: PostgresStorage) -> None:
    await insert_legacy_session(pg_storage, "legacy", GO_ROWS)
    loaded = await pg_storage.load("legacy")
    assert [(m.role, m.content, m.name) for m in loaded] == [
        ("user", "你好", None),
        ("assistant", "你好！有什么可以帮助你的？", "bot"),
        ("user", "膝盖", None),
        ("assistant", "是否伴随疼痛或肿胀？", None),
    ]
    assert loaded[2].metadata == {"TraceID": "abc"}  # unknown Go fields are kept
    assert all(m.turn_id is None and m.timestamp is None for m in loaded)


@pytest.mark.parametrize(
    "document",
    [
        {"Role": "User", "Content": "你好"},
        {"role": "user", "content": "你好", "Trace": 1},
        {"ROLE": "USER", "CONTENT": "你好"},
        {"rOlE": "uSeR", "Content": "你好"},
    ],
)
def test_go_keys_and_roles_match_case_insensitively(document: dict[str, Any]) -> None:
    message = message_from_document(document, session_id="s", position=0)
    assert (message.role, message.content) == ("user", "你好")


def test_go_name_and_unknown_keys() -> None:
    message = message_from_document(
        {"Role": "Tool", "Content": "{}", "Name": "lookup", "ToolCallID": "c1", "Meta": {"a": 1}},
        session_id="s",
        position=0,
    )
    assert (message.role, message.name) == ("tool", "lookup")
    assert message.metadata == {"ToolCallID": "c1", "Meta": {"a": 1}}


def test_the_full_chain_reaches_the_current_format() -> None:
    current = message_from_document(
        {
            "role": "user",
            "content": "我膝盖有下坠感",
            "turn_id": "turn_0197",
            "timestamp": "2026-11-29T08:15:02.123+08:00",
            "name": None,
            "metadata": {},
        },
        session_id="s",
        position=0,
    )
    from_go = message_from_document(
        {"Role": "user", "Content": "我膝盖有下坠感"}, session_id="s", position=0
    )
    from_one = message_from_document(
        {"role": "user", "content": "我膝盖有下坠感", "name": None}, session_id="s", position=0
    )
    assert from_go == from_one == current.model_copy(update={"turn_id": None, "timestamp": None})


async def test_a_corrupt_legacy_row_names_session_and_position(pg_storage: PostgresStorage) -> None:
    await insert_legacy_session(
        pg_storage, "bad", [*GO_ROWS[:2], {"format": 0, "role": "Doctor", "content": "x"}]
    )
    await pg_storage.save("good", [Message(role="user", content="fine")])
    with pytest.raises(CorruptDataError) as caught:
        await pg_storage.load("bad")
    assert (caught.value.session_id, caught.value.position) == ("bad", 2)
    assert await pg_storage.load("good") == [Message(role="user", content="fine")]


async def test_unknown_fields_survive_a_load_save_round_trip(pg_storage: PostgresStorage) -> None:
    await insert_legacy_session(pg_storage, "keep", GO_ROWS)
    loaded = await pg_storage.load("keep")
    await pg_storage.save("keep", [*loaded, Message(role="user", content="new")])
    again = await pg_storage.load("keep")
    assert again[2].metadata == {"TraceID": "abc"}
    assert len(again) == 5


async def test_state_format_1_upgrades_and_keeps_everything_else(
    pg_storage: PostgresStorage,
) -> None:
    await pg_storage.save("c", [])
    await pg_storage.save_state("c", {**OLD_STATE, "future": "kept"})
    await sql(
        pg_storage,
        "UPDATE consultation_states SET format_version = 1, document = CAST(:d AS jsonb)",
        d=json.dumps({**OLD_STATE, "future": "kept"}),
    )
    await sql(
        pg_storage,
        "UPDATE consultation_state_history SET format_version = 1, document = CAST(:d AS jsonb)",
        d=json.dumps(OLD_STATE),
    )
    current = await pg_storage.load_state("c")
    assert current is not None
    assert current.value == ConsultationState(
        **OLD_STATE, aggravating_factors=[], swelling=None, trauma=None, red_flags=[], future="kept"
    )
    (change,) = await pg_storage.state_history("c")
    assert change.state.red_flags == [] and change.state.aggravating_factors == []
    await sql(pg_storage, f"UPDATE consultation_states SET format_version = {STATE_FORMAT + 1}")
    with pytest.raises(UnsupportedFormatError):
        await pg_storage.load_state("c")


async def test_write_back_on_load_persists_the_upgrade(database_url: Any) -> None:
    async with PostgresStorage.from_url(database_url, upgrade_on_load=True) as storage:
        await insert_legacy_session(storage, "wb", GO_ROWS, version=3)
        first = await storage.load("wb")
        async with storage.engine.connect() as conn:
            formats = (
                await conn.execute(text("SELECT array_agg(DISTINCT format_version) FROM messages"))
            ).scalar_one()
        assert formats == [2]
        assert await storage.version("wb") == 3  # a format change is not a new version
        assert await storage.load("wb") == first
        await storage.append("wb", [Message(role="user", content="after")])
        await storage.save("wb", [*first, Message(role="user", content="after")])
        assert [m.content for m in await storage.load("wb")][-1] == "after"


async def test_write_back_never_overwrites_a_newer_version(pg_storage: PostgresStorage) -> None:
    await insert_legacy_session(pg_storage, "race", GO_ROWS, version=1)
    loaded = await pg_storage.load("race")
    await pg_storage.save("race", [Message(role="user", content="newer")])  # version 2
    async with pg_storage.driver() as driver:
        wrote = await write_back_messages(
            driver, "race", 1, [(0, loaded[0])], pg_storage.token_counter
        )
    assert wrote is False
    assert await pg_storage.load("race") == [Message(role="user", content="newer")]


async def test_upgrade_data_over_10000_mixed_rows_then_nothing(pg_storage: PostgresStorage) -> None:
    sessions, per_session = 500, 20
    async with pg_storage.driver() as driver:
        await driver.executemany(
            "INSERT INTO sessions (session_id, version, message_count, content_hash) "
            "VALUES ($1, 1, $2, '\\x00'::bytea)",
            [(f"bulk-{i:04d}", per_session) for i in range(sessions)],
        )
        rows = []
        for i in range(sessions):
            for seq in range(per_session):
                fmt = (i + seq) % 3
                role = ("User", "user", "user")[fmt] if seq % 2 == 0 else "assistant"
                meta = json.dumps({"Legacy": seq}) if fmt == 0 else None
                rows.append((f"bulk-{i:04d}", seq, role, f"消息 {i}/{seq}", meta, fmt))
        await driver.executemany(
            "INSERT INTO messages (session_id, seq, role, content, metadata, digest, "
            "format_version) VALUES ($1, $2, $3, $4, $5::jsonb, '\\x00'::bytea, $6)",
            rows,
        )
        first = await upgrade_data(driver, show=False)
        assert first.messages_upgraded == sum(1 for row in rows if row[5] != 2)
        assert first.sessions_upgraded == sessions
        assert first.failed == []
        assert await driver.fetchval("SELECT count(*) FROM messages WHERE format_version <> 2") == 0
        second = await upgrade_data(driver, show=False)
    assert second.rows_upgraded == 0 and second.failed == []
    print(f"upgrade-data: {first.summary()}")
    sample = await pg_storage.load("bulk-0007")
    assert [m.content for m in sample] == [f"消息 7/{seq}" for seq in range(per_session)]
    assert all(m.role in {"user", "assistant"} for m in sample)
    assert sample[0].metadata in ({}, {"Legacy": 0})


def test_upgrade_data_command_shows_progress_and_a_summary(database_url: Any) -> None:
    async def seed() -> None:
        async with PostgresStorage.from_url(database_url) as storage:
            await insert_legacy_session(storage, "cli", GO_ROWS)

    asyncio.run(seed())
    env = {**os.environ, "CTXSTORE_DATABASE_URL": database_url.render_as_string(False)}
    command = [sys.executable, "-m", "ctxstore.cli", "upgrade-data"]
    first = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    assert "upgrading rows [" in first.stderr
    assert "upgraded 4 rows" in first.stdout
    second = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert "upgraded 0 rows" in second.stdout
