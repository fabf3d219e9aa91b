"""The v1 resources through the app (ASGI, in this process) on a real PostgreSQL: versions
as ETags, conditional writes and reads, and each resource's round trip."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from ctxstore.context.builder import ContextBuilder
from ctxstore.contract import parse_contract
from ctxstore.storage.postgres import PostgresStorage
from ctxstore.tokens import TokenCounter

pytestmark = pytest.mark.postgres

TURN = [
    {
        "role": "user",
        "content": "我膝盖有下坠感",
        "turn_id": "turn_0001",
        "timestamp": "2026-11-29T08:15:02.123+08:00",
    },
    {
        "role": "assistant",
        "content": "是否伴随疼痛或肿胀？",
        "turn_id": "turn_0001",
        "timestamp": "2026-11-29T08:15:04.481+08:00",
        "metadata": {"model": "m-1", "latency_ms": 812},
    },
]


def turn(number: int) -> list[dict[str, object]]:
    return [
        {**message, "turn_id": f"turn_{number:04d}", "content": f"{message['content']} {number}"}
        for message in TURN
    ]


def messages_of(sid: str) -> str:
    return f"/v1/sessions/{sid}/messages"


async def test_messages_carry_their_version_as_a_strong_etag(
    client: httpx.AsyncClient, sid: str
) -> None:
    created = await client.put(
        messages_of(sid), json={"messages": TURN, "user_id": "u-1"}, headers={"If-None-Match": "*"}
    )
    assert (created.status_code, created.headers["ETag"], created.json()) == (
        201,
        '"1"',
        {"version": 1},
    )
    read = await client.get(messages_of(sid))
    assert read.status_code == 200
    assert read.headers["ETag"] == '"1"'
    body = read.json()
    assert (body["version"], body["total_messages"], body["first_position"]) == (1, 2, 0)
    # What was sent comes back, the UTC offset as written.
    assert [m["content"] for m in body["messages"]] == [m["content"] for m in TURN]
    assert body["messages"][0]["timestamp"].endswith("+08:00")
    assert body["messages"][1]["metadata"] == {"model": "m-1", "latency_ms": 812}

    appended = await client.post(
        messages_of(sid), json={"messages": turn(2)}, headers={"If-Match": '"1"'}
    )
    assert (appended.status_code, appended.headers["ETag"]) == (200, '"2"')
    unchanged = await client.get(messages_of(sid), headers={"If-None-Match": '"2"'})
    assert (unchanged.status_code, unchanged.headers["ETag"], unchanged.content) == (
        304,
        '"2"',
        b"",
    )
    changed = await client.get(messages_of(sid), headers={"If-None-Match": 'W/"1", "7"'})
    assert changed.status_code == 200
    assert changed.json()["total_messages"] == 4


async def test_a_stale_if_match_is_412_with_the_current_version(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    await client.post(messages_of(sid), json={"messages": TURN})
    await client.post(messages_of(sid), json={"messages": turn(2)})
    for method in ("POST", "PUT"):
        stale = await client.request(
            method, messages_of(sid), json={"messages": turn(3)}, headers={"If-Match": '"1"'}
        )
        assert stale.status_code == 412
        assert stale.headers["content-type"] == "application/problem+json"
        assert stale.headers["ETag"] == '"2"'
        problem = stale.json()
        assert problem["type"] == "https://ctxstore.dev/problems/conflict"
        assert problem["current_version"] == 2
    assert len(await store.load(sid)) == 4  # nothing written
    # If-Match on a session that does not exist: 412, its version is 0.
    missing = await client.post(
        messages_of(sid + "-none"), json={"messages": TURN}, headers={"If-Match": '"3"'}
    )
    assert (missing.status_code, missing.json()["current_version"]) == (412, 0)
    assert "ETag" not in missing.headers


async def test_if_none_match_star_creates_only(client: httpx.AsyncClient, sid: str) -> None:
    first = await client.post(
        messages_of(sid), json={"messages": TURN}, headers={"If-None-Match": "*"}
    )
    again = await client.put(
        messages_of(sid), json={"messages": []}, headers={"If-None-Match": "*"}
    )
    assert first.status_code == 201
    assert (again.status_code, again.json()["current_version"]) == (412, 1)
    # RFC 9110 evaluates both; they never hold together: 412, and nothing written.
    for tag in ('"1"', '"2"'):
        both = await client.put(
            messages_of(sid), json={"messages": []}, headers={"If-None-Match": "*", "If-Match": tag}
        )
        assert (both.status_code, both.json()["current_version"]) == (412, 1)
        assert "never hold together" in both.json()["detail"]
    absent = await client.put(
        messages_of(sid + "-x"),
        json={"messages": []},
        headers={"If-None-Match": "*", "If-Match": '"1"'},
    )
    assert (absent.status_code, absent.json()["current_version"]) == (412, 0)
    assert len((await client.get(messages_of(sid))).json()["messages"]) == 2


async def test_a_window_holds_the_newest_messages_within_the_budget(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    for number in range(1, 11):
        await client.post(messages_of(sid), json={"messages": turn(number)})
    window = await client.get(messages_of(sid), params={"token_budget": 120})
    body = window.json()
    assert window.headers["ETag"] == '"10"'
    assert 0 < len(body["messages"]) < 20
    assert body["first_position"] == 20 - len(body["messages"])
    assert 0 < body["token_count"] <= 120
    newest = (await store.load(sid))[-len(body["messages"]) :]
    assert [m["content"] for m in body["messages"]] == [m.content for m in newest]


async def test_delete_is_idempotent_and_then_the_session_is_gone(
    client: httpx.AsyncClient, sid: str
) -> None:
    await client.post(messages_of(sid), json={"messages": TURN})
    first = await client.delete(messages_of(sid))
    second = await client.delete(messages_of(sid))
    assert (first.status_code, second.status_code, first.content) == (204, 204, b"")
    conditional = await client.delete(messages_of(sid), headers={"If-Match": '"1"'})
    assert conditional.status_code == 400
    gone = await client.get(messages_of(sid))
    assert gone.status_code == 404
    assert gone.json()["type"] == "https://ctxstore.dev/problems/session-not-found"


async def test_state_summary_and_profile_are_versioned_documents(
    client: httpx.AsyncClient, sid: str
) -> None:
    user = f"user-{sid}"
    base = f"/v1/sessions/{sid}"
    for path in (f"{base}/state", f"{base}/summary", f"/v1/users/{user}/profile"):
        assert (await client.get(path)).status_code == 404
    no_session = await client.put(f"{base}/state", json={"stage": "greeting"})
    assert no_session.json()["type"] == "https://ctxstore.dev/problems/session-not-found"

    await client.post(messages_of(sid), json={"messages": TURN, "user_id": user})
    state = {"stage": "collecting_details", "duration": "一周", "site_specific": {"side": "left"}}
    created = await client.put(f"{base}/state", json=state, headers={"If-None-Match": "*"})
    assert (created.status_code, created.headers["ETag"]) == (201, '"1"')
    moved = await client.put(
        f"{base}/state", json={**state, "swelling": True}, headers={"If-Match": '"1"'}
    )
    assert (moved.status_code, moved.headers["ETag"]) == (200, '"2"')
    stale = await client.put(f"{base}/state", json=state, headers={"If-Match": '"1"'})
    assert (stale.status_code, stale.json()["current_version"]) == (412, 2)
    read = await client.get(f"{base}/state")
    assert read.headers["ETag"] == '"2"'
    assert (read.json()["swelling"], read.json()["duration"]) == (True, "一周")
    assert read.json()["site_specific"] == {"side": "left"}  # unknown fields are kept
    cached = await client.get(f"{base}/state", headers={"If-None-Match": '"2"'})
    assert cached.status_code == 304

    summary = await client.put(
        f"{base}/summary", json={"text": "膝盖下坠感一周", "covers_until": 0, "token_count": 9}
    )
    assert (summary.status_code, summary.headers["ETag"]) == (201, '"1"')
    assert summary.json()["summary_version"] == 1
    past = await client.put(f"{base}/summary", json={"text": "x", "covers_until": 5})
    assert (past.status_code, past.json()["type"]) == (
        422,
        "https://ctxstore.dev/problems/invalid-input",
    )
    stale_summary = await client.put(
        f"{base}/summary", json={"text": "y", "covers_until": 1}, headers={"If-None-Match": "*"}
    )
    assert stale_summary.status_code == 412
    assert (await client.get(f"{base}/summary")).json()["text"] == "膝盖下坠感一周"

    profile = await client.put(f"/v1/users/{user}/profile", json={"age": 34, "sport": "跑步"})
    assert (profile.status_code, profile.headers["ETag"]) == (201, '"1"')
    read_profile = await client.get(f"/v1/users/{user}/profile")
    assert read_profile.json()["age"] == 34
    assert read_profile.json()["sport"] == "跑步"


async def test_the_context_is_the_builders_contract(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    user = f"user-{sid}"
    await client.put(f"/v1/users/{user}/profile", json={"age": 34, "gender": "female"})
    for number in (1, 2, 3):
        await client.post(messages_of(sid), json={"messages": turn(number), "user_id": user})
    await client.put(f"/v1/sessions/{sid}/state", json={"stage": "assessing", "trauma": True})
    request = {
        "turn_id": "turn_0004",
        "user_message": "那我现在应该怎么锻炼？",
        "token_budget": 600,
        "retrieved_knowledge": [
            {
                "title": "膝关节",
                "content": "股四头肌训练",
                "source": "kb/knee",
                "relevance_score": 0.9,
            },
            # A whole number: the library's item holds it as a float, as validating would.
            {
                "title": "何时就医",
                "content": "无法负重",
                "source": "kb/flags",
                "relevance_score": 1,
            },
        ],
    }
    answer = await client.post(f"/v1/sessions/{sid}/context", json=request)
    assert answer.status_code == 200
    contract = parse_contract(answer.content)
    assert contract.context.user_profile is not None
    assert contract.context.consultation_state.stage == "assessing"
    assert contract.meta.included_message_count == len(contract.context.recent_messages) > 0
    expected = await ContextBuilder(store).build(
        sid,
        "turn_0004",
        "那我现在应该怎么锻炼？",
        retrieved_knowledge=request["retrieved_knowledge"],  # type: ignore[arg-type]
        token_budget=600,
    )
    assert answer.text == expected.to_json()  # the library's canonical serialization

    too_small = await client.post(
        f"/v1/sessions/{sid}/context", json={**request, "token_budget": 10}
    )
    assert too_small.status_code == 422
    assert too_small.json()["type"] == "https://ctxstore.dev/problems/contract-budget"


async def test_any_session_id_the_library_takes_is_addressable(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    odd = f"{sid}/with slash\nand newline?#%/messages"
    path = f"/v1/sessions/{quote(odd, safe='')}/messages"
    written = await client.post(path, json={"messages": TURN})
    assert written.status_code == 201
    assert len(await store.load(odd)) == 2
    read = await client.get(path)
    assert read.json()["session_id"] == odd


async def test_go_times_come_back_to_the_nanosecond_and_reach_the_contract(
    client: httpx.AsyncClient, sid: str
) -> None:
    """Issue 26: what json.Marshal(time.Now()) writes has nine fractional digits."""
    stamps = ["2026-01-02T03:04:05.123456789+08:00", "9999-12-31T23:59:59.999999999Z"]
    messages = [
        {"role": "user", "content": f"m{index}", "turn_id": "t1", "timestamp": stamp}
        for index, stamp in enumerate(stamps)
    ]
    written = await client.put(messages_of(sid), json={"messages": messages})
    assert written.status_code == 201, written.text
    read = (await client.get(messages_of(sid))).json()
    assert [m["timestamp"] for m in read["messages"]] == stamps  # the very text Go wrote
    answer = await client.post(
        f"/v1/sessions/{sid}/context",
        json={"turn_id": "t2", "user_message": "next", "token_budget": 2000},
    )
    assert answer.status_code == 200, answer.text
    recent = parse_contract(answer.content).context.recent_messages
    assert [m.timestamp for m in recent[:2]] == stamps  # the contract carries it too


async def test_a_repeated_put_of_the_same_messages_keeps_the_etag(
    client: httpx.AsyncClient, sid: str
) -> None:
    first = await client.put(messages_of(sid), json={"messages": TURN})
    again = await client.put(messages_of(sid), json={"messages": TURN}, headers={"If-Match": '"1"'})
    assert (first.status_code, first.headers["ETag"]) == (201, '"1"')
    assert (again.status_code, again.headers["ETag"], again.json()) == (200, '"1"', {"version": 1})
    changed = await client.put(messages_of(sid), json={"messages": TURN[:1]})
    assert changed.headers["ETag"] == '"2"'


async def test_a_false_if_match_on_a_read_is_412_a_true_one_200(
    client: httpx.AsyncClient, sid: str
) -> None:
    """RFC 9110 section 13.1.1: If-Match on any method; lists, *, weak tags never match."""
    path = messages_of(sid)
    await client.post(path, json={"messages": TURN})
    for header, status in (
        ('"1"', 200),
        ('"7", "1"', 200),
        (' , "1" ,', 200),  # empty list elements and whitespace are ignored
        ("*", 200),
        ('"2"', 412),
        ('W/"1"', 412),  # a weak tag never matches strongly
    ):
        answer = await client.get(path, headers={"If-Match": header})
        assert answer.status_code == status, (header, answer.text)
        if status == 412:
            assert answer.json()["current_version"] == 1
    assert (await client.get(path, headers={"If-Match": "1"})).status_code == 400
    assert (
        await client.get(messages_of(f"{sid}-none"), headers={"If-Match": "*"})
    ).status_code == 404


async def test_list_headers_take_rfc_9110_lists_and_nothing_else(
    client: httpx.AsyncClient, sid: str
) -> None:
    """The published pattern (TAG_LIST_PATTERN) is what the server takes: whitespace around
    tags and empty elements are fine; anything else is refused before the store is read."""
    await client.put(messages_of(sid), json={"messages": TURN})
    for value in ('"1"', ' ,, W/"1" ,', '"7", "1"', "*", '\t"1"\t'):
        answer = await client.get(messages_of(sid), headers={"If-None-Match": value})
        assert answer.status_code == 304, value
    for value in ('"1"', ' "7" ,, "1", ', "*"):
        answer = await client.get(messages_of(sid), headers={"If-Match": value})
        assert answer.status_code == 200, value
    for value in ('W/"1"', '"2"'):
        answer = await client.get(messages_of(sid), headers={"If-Match": value})
        assert answer.status_code == 412, value
    for header in ("If-None-Match", "If-Match"):
        for value in ("1", '"1" "2"', '"1", *', "", ",", 'W/ "1"', '"\x7f"'):
            answer = await client.get(messages_of(sid), headers={header: value})
            assert answer.status_code == 400, (header, value, answer.status_code)
            assert answer.headers["content-type"] == "application/problem+json"


async def test_a_context_counted_for_a_model_fits_that_models_budget(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    """Issue 29: ``model`` picks the encoding the budget is counted in (gpt-4o: o200k_base)."""
    for number in range(40):
        await client.post(messages_of(sid), json={"messages": turn(number)})
    request = {"turn_id": "t", "user_message": "那我现在应该怎么锻炼？", "token_budget": 700}
    default = await client.post(f"/v1/sessions/{sid}/context", json=request)
    for_4o = await client.post(f"/v1/sessions/{sid}/context", json={**request, "model": "gpt-4o"})
    assert (default.status_code, for_4o.status_code) == (200, 200)
    o200k = TokenCounter("o200k_base")
    assert o200k.count(for_4o.text) <= 700
    expected = await ContextBuilder(store, model="gpt-4o").build(
        sid, "t", "那我现在应该怎么锻炼？", token_budget=700
    )
    assert for_4o.text == expected.to_json()
    counts = [parse_contract(a.content).meta.included_message_count for a in (default, for_4o)]
    assert counts[0] != counts[1]  # the same budget holds a different window per encoding
    unknown = await client.post(
        f"/v1/sessions/{sid}/context", json={**request, "model": "claude-opus"}
    )
    assert unknown.status_code == 422 and "unknown model" in unknown.json()["detail"]
