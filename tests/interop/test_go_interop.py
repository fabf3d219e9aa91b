"""The Go service, played by a real Go program (tests/interop/go, standard library only).

It writes sessions with ``json.Marshal`` of eight message structs (the original service's,
untagged, snake_case and camelCase tags, pointers, string metadata, a role type with
capitalised values, fields ctxstore doesn't have) and Context Contracts from Go structs.
Those go through Redis, RedisStorage, ``import-redis`` into PostgreSQL and
``parse_contract``; what ctxstore writes back for each struct, and the contracts it
builds, go back to the Go program, which reads them with the same structs.

The program is built with the ``go`` toolchain into a temporary folder; without ``go``
the tests skip, saying so (.ci/run installs Debian's golang-go).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sqlalchemy import URL

from ctxstore import ContextBuilder, Message, PostgresStorage, RedisStorage, parse_contract
from ctxstore.commands.redis_import import import_redis
from ctxstore.contract import contract_json_schema
from ctxstore.errors import CorruptDataError
from ctxstore.formats.layouts import GO_SERVICE, GoLayout
from ctxstore.timestamps import go_timestamp
from tests.conftest import drop_keys, new_redis_prefix
from tests.interop.toolchain import go_env

GO_SOURCE = Path(__file__).parent / "go"

#: The RedisStorage layout naming each Go struct of the program (sessions.go).
LAYOUTS: dict[str, GoLayout] = {
    "service": GO_SERVICE,
    "untagged": GoLayout.of("untagged"),
    "untagged_string_metadata": GoLayout.of(
        "untagged", name=False, metadata="string", fields=("TokenCount",)
    ),
    "snake_case": GoLayout.of("snake_case", metadata="string"),
    "camelCase": GoLayout.of("camelCase"),
    "pointers": GoLayout.of("snake_case", metadata="string"),
    "titled_roles": GoLayout.of(
        "untagged",
        turn_id=False,
        timestamp=False,
        metadata=None,
        fields=("ToolCallID",),
        role_case="title",
    ),
    "camelCase_string_metadata": GoLayout.of(
        "camelCase", name=False, metadata="string", fields=("tokenCount",)
    ),
}


@pytest.fixture(scope="module")
def interop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go program, built with ``go build`` into a temporary folder."""
    go = shutil.which("go")
    if go is None:
        pytest.skip(
            "no `go` toolchain on PATH, so the Go interop program can't be built "
            "(Debian: apt-get install golang-go; .ci/run installs it)"
        )
    folder = tmp_path_factory.mktemp("go-interop")
    env = go_env(folder)
    binary = folder / "interop"
    started = time.monotonic()
    built = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=GO_SOURCE,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, f"go build failed:\n{built.stderr}"
    print(f"built the Go interop program in {time.monotonic() - started:.1f} s")
    return binary


def run_go(binary: Path, command: str, payload: Any = None) -> Any:
    result = subprocess.run(
        [str(binary), command],
        input=None if payload is None else json.dumps(payload, ensure_ascii=False),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def go_sessions(interop: Path) -> list[dict[str, Any]]:
    sessions: list[dict[str, Any]] = run_go(interop, "sessions")
    return sessions


def accepted(sessions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [session for session in sessions if not session.get("reject")]


@pytest.fixture
async def pg(database_url: URL) -> AsyncIterator[PostgresStorage]:
    async with PostgresStorage.from_url(database_url) as storage:
        yield storage


@pytest.fixture
def time_zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """The process's TZ for one test (nothing ctxstore does may depend on it)."""
    zone = getattr(request, "param", "UTC")
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield zone
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()


async def put_sessions(client: Any, prefix: str, sessions: list[dict[str, Any]]) -> None:
    async with client.pipeline(transaction=False) as pipe:
        for session in sessions:
            pipe.set(f"{prefix}:{session['key']}", session["value"].encode("utf-8"))
        await pipe.execute()


def assert_as_go_wrote(messages: list[Message], expect: list[dict[str, Any]], key: str) -> None:
    assert len(messages) == len(expect), key
    for position, (message, view) in enumerate(zip(messages, expect, strict=True)):
        where = f"{key} message {position}"
        assert message.role == view["role"], where
        assert message.content == view["content"], where
        assert message.turn_id == view["turn_id"], where
        assert message.name == view["name"], where
        assert message.metadata == view["metadata"], where
        if view["timestamp"] is None:
            assert message.timestamp is None, where
        else:
            stamp = message.timestamp
            assert stamp is not None, where
            written = datetime.fromisoformat(view["timestamp"])
            assert (stamp, stamp.utcoffset()) == (written, written.utcoffset()), where
            assert go_timestamp(stamp) == view["timestamp"], where  # the very text Go wrote


# -- Go -> ctxstore ---------------------------------------------------------------------------


async def test_the_program_covers_the_agreed_ground(go_sessions: list[dict[str, Any]]) -> None:
    variants = {session["variant"] for session in go_sessions}
    assert len(accepted(go_sessions)) >= 50 and len(variants) >= 7
    values = "".join(session["value"] for session in go_sessions)
    for written in (
        "\\u003cb\\u003e",  # Go's HTML escapes
        "\\u2028",
        "0001-01-01T00:00:00Z",
        "0001-01-01T08:00:00+08:00",
        "9999-12-31T23:59:59.999999Z",
        "-12:00",
        "+14:00",
        "+08:05",  # Shanghai in 1900 (+08:05:43): Go writes the minutes only
        "我膝盖有下坠感",
        "😀",
    ):
        assert written in values, written
    assert any(len(session["value"].encode()) > 300_000 for session in go_sessions)  # 3 x 100 KB
    assert any(session["value"] == "null" for session in go_sessions)


async def test_redis_storage_loads_every_struct_as_go_wrote_it(
    go_sessions: list[dict[str, Any]], redis_client: Any, redis_url: str, redis_prefix: str
) -> None:
    await put_sessions(redis_client, redis_prefix, go_sessions)
    async with RedisStorage.from_url(redis_url, prefix=redis_prefix) as storage:
        for session in go_sessions:
            if session.get("reject"):
                with pytest.raises(CorruptDataError, match=session["reject"]) as caught:
                    await storage.load(session["key"])
                assert caught.value.position == 0 and caught.value.session_id == session["key"]
                continue
            messages = await storage.load(session["key"])
            assert_as_go_wrote(messages, session["expect"], session["key"])
            assert await storage.exists(session["key"])
        # Save(ctx, id, nil) left null: appending to it works like appending to []
        nil_session = next(s["key"] for s in go_sessions if s["nil"])
        await storage.append(nil_session, [Message(role="user", content="after nil")])
        assert [m.content for m in await storage.load(nil_session)] == ["after nil"]


@pytest.mark.parametrize("time_zone", ["UTC", "Asia/Shanghai", "America/New_York"], indirect=True)
async def test_import_redis_brings_them_over_exactly_once(
    go_sessions: list[dict[str, Any]],
    redis_client: Any,
    redis_url: str,
    redis_prefix: str,
    pg: PostgresStorage,
    time_zone: str,
) -> None:
    await put_sessions(redis_client, redis_prefix, go_sessions)
    good = accepted(go_sessions)
    report = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)
    assert report.imported == len(good), report.summary()
    assert len(report.failed) == len(go_sessions) - len(good), report.summary()
    for session in (s for s in go_sessions if s.get("reject")):  # each failure says why
        assert any(
            session["key"] in line and session["reject"] in line for line in report.failed
        ), report.summary()
    versions = {session["key"]: await pg.version(session["key"]) for session in good}
    async with RedisStorage.from_url(redis_url, prefix=redis_prefix) as redis_storage:
        for session in good:
            stored = await pg.load(session["key"])
            assert_as_go_wrote(stored, session["expect"], session["key"])
            assert stored == await redis_storage.load(session["key"])

    again = await import_redis(redis_client, pg, prefix=redis_prefix, show=False)
    assert (again.imported, again.appended, again.unchanged) == (0, 0, len(good)), again.summary()
    assert {session["key"]: await pg.version(session["key"]) for session in good} == versions


# -- ctxstore -> Go ---------------------------------------------------------------------------


async def test_go_reads_what_ctxstore_writes_for_its_struct(
    interop: Path,
    go_sessions: list[dict[str, Any]],
    redis_client: Any,
    redis_url: str,
    redis_prefix: str,
    pg: PostgresStorage,
) -> None:
    good = accepted(go_sessions)
    await put_sessions(redis_client, redis_prefix, good)
    await import_redis(redis_client, pg, prefix=redis_prefix, show=False)
    back = new_redis_prefix()
    written = []
    try:
        for variant, layout in LAYOUTS.items():
            async with RedisStorage.from_url(redis_url, prefix=back, layout=layout) as storage:
                for session in (s for s in good if s["variant"] == variant):
                    messages = await pg.load(session["key"])
                    await storage.save(session["key"], messages)
                    assert await storage.load(session["key"]) == messages  # ctxstore's own
                    raw = await redis_client.get(f"{back}:{session['key']}")
                    written.append(
                        {"key": session["key"], "variant": variant, "value": raw.decode()}
                    )
    finally:
        await drop_keys(redis_url, back)
    assert len(written) == len(good)
    results = run_go(interop, "check-sessions", written)
    problems = {result["key"]: result["problem"] for result in results if result["problem"]}
    assert problems == {}


async def test_go_contracts_parse_and_the_schema_agrees(interop: Path) -> None:
    validator = jsonschema.Draft202012Validator(contract_json_schema())
    contracts = {item["name"]: item["json"] for item in run_go(interop, "contracts")}
    for name, text in contracts.items():
        assert validator.is_valid(json.loads(text)), name
        parsed = parse_contract(text)
        assert parsed.meta.context_version.startswith("1."), name
    first = parse_contract(contracts["first-turn"])
    state = first.context.consultation_state
    assert first.context.recent_messages == []
    assert (state.body_parts, state.red_flags, state.pending_answer_for) == ([], [], [])
    assert first.context.user_profile is None and first.context.retrieved_knowledge == []
    full = parse_contract(contracts["full"])
    assert full.context.consultation_state.pain_level == "moderate"
    assert full.context.user_profile is not None
    assert full.context.user_profile.known_limitations == []
    stamps = [message.timestamp for message in full.context.recent_messages]
    assert stamps[1:3] == ["0001-01-01T00:00:00Z", "0001-01-01T08:00:00+08:00"]
    assert parse_contract(contracts["numeric-pain"]).context.consultation_state.pain_level == "7"


async def test_contracts_ctxstore_builds_decode_strictly_in_go(
    interop: Path,
    go_sessions: list[dict[str, Any]],
    redis_client: Any,
    redis_prefix: str,
    pg: PostgresStorage,
) -> None:
    chosen = [
        s for s in accepted(go_sessions) if s["key"].endswith(("-chinese", "-edges", "-roles"))
    ]
    await put_sessions(redis_client, redis_prefix, chosen)
    await import_redis(redis_client, pg, prefix=redis_prefix, show=False)
    states: list[dict[str, Any]] = [
        {"stage": "greeting"},
        {"stage": "assessing", "pain_level": 4, "red_flags": None, "future_field": {"x": 1}},
        {"stage": "assessing", "pain_level": "moderate", "swelling": True, "body_parts": ["膝"]},
    ]
    built = []
    builder = ContextBuilder(pg)
    for index, session in enumerate(chosen):
        await pg.save_state(session["key"], states[index % len(states)])
        contract = await builder.build(
            session["key"],
            "turn_next",
            "下一步？",
            retrieved_knowledge=[
                {"title": "膝", "content": "前交叉韧带", "source": "kb", "relevance_score": 0.5}
            ],
            token_budget=4000,
        )
        built.append({"name": session["key"], "json": contract.to_json()})
    results = run_go(interop, "check-contracts", built)
    assert [r["problem"] for r in results] == [""] * len(built)
    for item, result in zip(built, results, strict=True):
        # the same document, every time the same text: the contract writes times as Go does
        assert json.loads(result["json"]) == json.loads(item["json"]), item["name"]
