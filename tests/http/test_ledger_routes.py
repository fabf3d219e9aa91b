"""The ledger of Context Contracts over HTTP (issue 52): POST .../context with
``record: true`` (the write scope besides read), GET .../contracts and
.../contracts/{turn_id} (the very bytes the context call answered, its entry in the
headers), PUT .../contracts/{turn_id}/response (once).  The app runs in this process on a
real PostgreSQL, as in test_export."""

from __future__ import annotations

import re
from datetime import datetime
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import URL

from ctxstore.storage.postgres import PostgresStorage
from ctxstore.storage.store import Store
from tests.http.live import Tokens
from tests.http.test_problems import app_on, problem

pytestmark = pytest.mark.postgres

TURNS = [
    ("turn_0001", "我膝盖有下坠感，上下楼梯时更明显"),
    ("turn_0002", "大概三个星期了，早上起床时最僵硬"),
    ("turn_0003", "那我现在应该怎么锻炼？"),
]
KNOWLEDGE = {
    "title": "膝关节康复",
    "content": "股四头肌等长收缩：每次保持十秒",
    "source": "指南 §3",
    "relevance_score": 0.82,
}
ENTRY_FIELDS = {
    "entry_seq",
    "turn_id",
    "recorded_at",
    "model",
    "token_encoding",
    "token_count",
    "session_version",
    "summary_version",
    "state_version",
    "profile_version",
    "digest",
    "response_id",
}


def session_path(sid: str, resource: str) -> str:
    return f"/v1/sessions/{quote(sid, safe='')}/{resource}"


def contract_path(sid: str, turn_id: str, tail: str = "") -> str:
    return session_path(sid, f"contracts/{quote(turn_id, safe='')}{tail}")


async def consult(client: httpx.AsyncClient, sid: str, *, record: bool = True) -> list[bytes]:
    """Three turns: each the user's message, its recorded contract, the answer."""
    answers = []
    for turn_id, said in TURNS:
        written = await client.post(
            session_path(sid, "messages"),
            json={
                "messages": [{"role": "user", "content": said, "turn_id": turn_id}],
                "user_id": f"u-{sid}",
            },
        )
        assert written.status_code in (200, 201), written.text
        built = await client.post(
            session_path(sid, "context"),
            json={
                "turn_id": turn_id,
                "user_message": said,
                "token_budget": 4000,
                "retrieved_knowledge": [KNOWLEDGE],
                "model": "gpt-4o",
                "record": record,
            },
        )
        assert built.status_code == 200, built.text
        assert built.headers["content-type"] == "application/json"
        answers.append(built.content)
        answer = f"回答 {turn_id}：先休息，再评估"
        reply = {"role": "assistant", "content": answer, "turn_id": turn_id}
        appended = await client.post(session_path(sid, "messages"), json={"messages": [reply]})
        assert appended.status_code == 200, appended.text
    return answers


async def test_each_recorded_contract_reads_back_byte_for_byte(
    client: httpx.AsyncClient, sid: str
) -> None:
    answers = await consult(client, sid)
    digests = []
    for seq, ((turn_id, said), answer) in enumerate(zip(TURNS, answers, strict=True), 1):
        read = await client.get(contract_path(sid, turn_id))
        assert read.status_code == 200, read.text
        assert read.headers["content-type"] == "application/json"
        assert read.content == answer  # the very bytes the context call answered
        assert said in read.content.decode("utf-8")  # CJK, unescaped, as sent
        assert read.headers["Ctxstore-Entry-Seq"] == str(seq)
        assert re.fullmatch(r"[0-9a-f]{64}", read.headers["Ctxstore-Entry-Digest"])
        assert datetime.fromisoformat(read.headers["Ctxstore-Recorded-At"]).utcoffset() is not None
        assert int(read.headers["Ctxstore-Token-Count"]) > 0
        digests.append(read.headers["Ctxstore-Entry-Digest"])
        # The same entry by its number, under its own turn.
        by_number = await client.get(contract_path(sid, turn_id), params={"entry": seq})
        assert by_number.status_code == 200, by_number.text
        assert by_number.content == answer
        assert by_number.headers["Ctxstore-Entry-Seq"] == str(seq)
    assert len(set(digests)) == 3
    # HEAD answers the headers alone.
    head = await client.head(contract_path(sid, TURNS[0][0]))
    assert head.status_code == 200 and head.content == b""
    assert head.headers["Ctxstore-Entry-Digest"] == digests[0]


async def test_the_listing_names_each_entry(client: httpx.AsyncClient, sid: str) -> None:
    await consult(client, sid)
    listed = await client.get(session_path(sid, "contracts"))
    assert listed.status_code == 200, listed.text
    body = listed.json()
    assert body["session_id"] == sid
    entries = body["entries"]
    assert [entry["entry_seq"] for entry in entries] == [1, 2, 3]
    assert [entry["turn_id"] for entry in entries] == [turn_id for turn_id, _ in TURNS]
    for entry in entries:
        assert set(entry) == ENTRY_FIELDS
        assert entry["model"] == "gpt-4o"
        assert entry["token_encoding"] == "o200k_base"
        assert entry["response_id"] is None
        assert entry["profile_version"] is None and entry["state_version"] == 0
        read = await client.get(contract_path(sid, entry["turn_id"]))
        assert read.headers["Ctxstore-Entry-Digest"] == entry["digest"]
        assert read.headers["Ctxstore-Token-Count"] == str(entry["token_count"])
        recorded_at = datetime.fromisoformat(read.headers["Ctxstore-Recorded-At"])
        assert recorded_at == datetime.fromisoformat(entry["recorded_at"])
    # Each turn's contract was built after its message: versions 1, 3, 5.
    assert [entry["session_version"] for entry in entries] == [1, 3, 5]
    # A session with nothing recorded has an empty ledger, not a 404.
    empty = await client.get(session_path(f"{sid}-none", "contracts"))
    assert empty.status_code == 200 and empty.json() == {
        "session_id": f"{sid}-none",
        "entries": [],
    }


async def test_a_context_call_without_record_records_nothing(
    client: httpx.AsyncClient, sid: str
) -> None:
    await consult(client, sid, record=False)
    assert (await client.get(session_path(sid, "contracts"))).json()["entries"] == []
    problem(await client.get(contract_path(sid, TURNS[0][0])), 404, "not-found")


async def test_a_response_is_attached_once(client: httpx.AsyncClient, sid: str) -> None:
    await consult(client, sid)
    path = contract_path(sid, "turn_0002", "/response")
    attached = await client.put(path, json={"response_id": "chatcmpl-回答-2"})
    assert attached.status_code == 200, attached.text
    assert attached.json() == {"entry_seq": 2, "response_id": "chatcmpl-回答-2"}
    again = await client.put(path, json={"response_id": "chatcmpl-回答-2"})
    assert again.status_code == 200 and again.json() == attached.json()
    other = await client.put(path, json={"response_id": "chatcmpl-other"})
    problem(other, 409, "conflict")
    entries = (await client.get(session_path(sid, "contracts"))).json()["entries"]
    assert [entry["response_id"] for entry in entries] == [None, "chatcmpl-回答-2", None]
    # An invalid body is refused before the store is asked.
    problem(await client.put(path, json={"response_id": ""}), 422, "invalid-input")
    problem(await client.put(path, json={"response_id": 7}), 422, "invalid-input")
    problem(await client.put(path, json={}), 422, "invalid-input")


async def test_an_unknown_turn_or_entry_is_not_found(client: httpx.AsyncClient, sid: str) -> None:
    await consult(client, sid)
    problem(await client.get(contract_path(sid, "turn_9999")), 404, "not-found")
    unknown = await client.put(
        contract_path(sid, "turn_9999", "/response"), json={"response_id": "r"}
    )
    problem(unknown, 404, "not-found")
    # Entry 1 is turn_0001's: not a contract of turn_0002, nor is an entry never recorded.
    other_turn = await client.get(contract_path(sid, "turn_0002"), params={"entry": 1})
    problem(other_turn, 404, "not-found")
    beyond = await client.get(contract_path(sid, "turn_0001"), params={"entry": 4})
    problem(beyond, 404, "not-found")
    problem(await client.get(contract_path(f"{sid}-none", "turn_0001")), 404, "not-found")
    invalid = await client.get(contract_path(sid, "turn_0001"), params={"entry": 0})
    errors = problem(invalid, 422, "invalid-input")["errors"]
    assert [error["location"] for error in errors] == ["query.entry"]  # type: ignore[index]


async def test_any_turn_id_the_library_takes_is_addressable(
    client: httpx.AsyncClient, sid: str
) -> None:
    odd = "turn/with slash\nand ?#%"
    await client.post(
        session_path(sid, "messages"), json={"messages": [{"role": "user", "content": "膝盖"}]}
    )
    built = await client.post(
        session_path(sid, "context"),
        json={"turn_id": odd, "user_message": "膝盖", "record": True},
    )
    assert built.status_code == 200, built.text
    read = await client.get(contract_path(sid, odd))
    assert read.status_code == 200 and read.content == built.content
    attached = await client.put(contract_path(sid, odd, "/response"), json={"response_id": "r"})
    assert attached.json() == {"entry_seq": 1, "response_id": "r"}


async def test_each_contract_resource_names_its_own_methods(
    client: httpx.AsyncClient, sid: str
) -> None:
    for path, allowed in (
        (session_path(sid, "contracts"), "GET, HEAD"),
        (contract_path(sid, "t1"), "GET, HEAD"),
        (contract_path(sid, "t1", "/response"), "PUT"),
    ):
        wrong = await client.patch(path)
        problem(wrong, 405, "method-not-allowed")
        assert wrong.headers["Allow"] == allowed, path


async def test_recording_needs_the_write_scope(
    module_database_url: URL, tokens: Tokens, client: httpx.AsyncClient, sid: str
) -> None:
    answers = await consult(client, sid)
    request = {"turn_id": "turn_0004", "user_message": "还疼", "record": True}
    async with app_on(module_database_url, tokens, tokens.read) as reader:
        refused = await reader.post(session_path(sid, "context"), json=request)
        problem(refused, 403, "forbidden")
        assert 'scope="write"' in refused.headers["WWW-Authenticate"]
        # Without record, the read scope builds; and it reads the ledger back.
        built = await reader.post(session_path(sid, "context"), json={**request, "record": False})
        assert built.status_code == 200, built.text
        read = await reader.get(contract_path(sid, TURNS[0][0]))
        assert read.status_code == 200 and read.content == answers[0]
        assert (await reader.get(session_path(sid, "contracts"))).status_code == 200
        put = await reader.put(
            contract_path(sid, TURNS[0][0], "/response"), json={"response_id": "r"}
        )
        problem(put, 403, "forbidden")
        assert 'scope="write"' in put.headers["WWW-Authenticate"]
    async with app_on(module_database_url, tokens, tokens.write) as writer:
        # The context route is a read: a write-only token can't build, recorded or not.
        problem(await writer.post(session_path(sid, "context"), json=request), 403, "forbidden")
        problem(await writer.get(session_path(sid, "contracts")), 403, "forbidden")
    entries = (await client.get(session_path(sid, "contracts"))).json()["entries"]
    assert [entry["turn_id"] for entry in entries] == [turn_id for turn_id, _ in TURNS]
    refused_record = await client.post(
        session_path(sid, "context"), json={**request, "record": "true"}
    )
    problem(refused_record, 422, "invalid-input")  # strict: a string is no boolean


async def test_an_erased_ledger_keeps_its_entries_not_its_texts(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    await consult(client, sid)
    await store.erase_user(f"u-{sid}")
    gone = await client.get(contract_path(sid, TURNS[0][0]))
    body = problem(gone, 409, "data-key-destroyed")
    assert TURNS[0][1] not in gone.text
    assert "erased" in str(body["detail"])
    assert len((await client.get(session_path(sid, "contracts"))).json()["entries"]) == 3


async def test_a_storage_without_a_ledger_answers_501(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal every store but PostgreSQL gives, through the service: the service runs
    on PostgreSQL only, so the store is made to refuse as Store does by default."""
    await consult(client, sid)
    for name in ("_record_contract", "_read_contract", "_list_contracts", "_attach_response"):
        monkeypatch.setattr(store, name, getattr(Store, name).__get__(store))
    answers = [
        await client.post(
            session_path(sid, "context"),
            json={"turn_id": "t9", "user_message": "膝盖", "record": True},
        ),
        await client.get(session_path(sid, "contracts")),
        await client.get(contract_path(sid, TURNS[0][0])),
        await client.put(contract_path(sid, TURNS[0][0], "/response"), json={"response_id": "r"}),
    ]
    for answer in answers:
        body = problem(answer, 501, "not-supported")
        assert body["detail"] == "this server's storage can't do this operation"
        assert "Postgres" not in answer.text
    # Without record, the context call needs no ledger.
    built = await client.post(
        session_path(sid, "context"), json={"turn_id": "t9", "user_message": "膝盖"}
    )
    assert built.status_code == 200, built.text
