"""A user's sessions over HTTP (`GET /v1/users/{user_id}/sessions`, issue 51): pages and
their cursor, the filters, the refusals as problems, the read scope, another user's
sessions never listed, and a storage that can't list (501).  The app runs in this
process on a real PostgreSQL, as in test_resources."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import URL

from ctxstore.storage.postgres import PostgresStorage
from ctxstore.storage.store import Store
from tests.http.live import Tokens
from tests.http.test_problems import app_on, problem

pytestmark = pytest.mark.postgres

TURN = [{"role": "user", "content": "我膝盖有下坠感"}, {"role": "assistant", "content": "好的"}]
ITEM_FIELDS = {
    "session_id",
    "created_at",
    "updated_at",
    "message_count",
    "stage",
    "summary_version",
    "summary_text",
}


@pytest.fixture
def user() -> str:
    """A user of this test's own (the module shares one database)."""
    return f"u-{uuid.uuid4().hex[:12]}"


def sessions_of(user_id: str) -> str:
    return f"/v1/users/{quote(user_id, safe='')}/sessions"


async def create(client: httpx.AsyncClient, user_id: str, count: int) -> list[str]:
    """``count`` sessions of ``user_id``, one after the other; their ids, oldest first."""
    made = []
    for number in range(count):
        session_id = f"{user_id}-s{number:02d}"
        written = await client.put(
            f"/v1/sessions/{quote(session_id, safe='')}/messages",
            json={"messages": TURN, "user_id": user_id},
        )
        assert written.status_code == 201, written.text
        made.append(session_id)
    return made


async def walk(client: httpx.AsyncClient, user_id: str, **query: Any) -> list[list[str]]:
    """Every page of the user's listing, as session ids."""
    pages: list[list[str]] = []
    cursor = None
    while True:
        params = {**query, **({"cursor": cursor} if cursor else {})}
        answer = await client.get(sessions_of(user_id), params=params)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert set(body) == {"items", "next_cursor"}
        pages.append([item["session_id"] for item in body["items"]])
        cursor = body["next_cursor"]
        if cursor is None:
            return pages
        assert len(pages) < 50, "the cursor never ends"


async def test_pages_newest_first_and_the_cursor_walks_them_all(
    client: httpx.AsyncClient, user: str
) -> None:
    made = await create(client, user, 7)
    first = await client.get(sessions_of(user), params={"limit": 3})
    assert first.status_code == 200
    assert first.headers["content-type"] == "application/json"
    assert "ETag" not in first.headers  # not a versioned resource
    body = first.json()
    assert [item["session_id"] for item in body["items"]] == made[::-1][:3]
    item = body["items"][0]
    assert set(item) == ITEM_FIELDS  # every field present, null or not
    assert (item["message_count"], item["stage"], item["summary_version"]) == (2, None, 0)
    assert item["summary_text"] is None
    for moment in (item["created_at"], item["updated_at"]):
        assert datetime.fromisoformat(moment).utcoffset() is not None
    assert isinstance(body["next_cursor"], str)
    pages = await walk(client, user, limit=3)
    assert pages == [made[::-1][:3], made[::-1][3:6], made[::-1][6:]]
    # The default page holds them all; the last page says so with a null cursor.
    whole = (await client.get(sessions_of(user))).json()
    assert [i["session_id"] for i in whole["items"]] == made[::-1]
    assert whole["next_cursor"] is None
    # A user without sessions: an empty page, not a 404.
    nobody = await client.get(sessions_of(user + "-none"))
    assert (nobody.status_code, nobody.json()) == (200, {"items": [], "next_cursor": None})
    head = await client.head(sessions_of(user))
    assert (head.status_code, head.content) == (200, b"")


async def test_the_filters_stage_updated_since_and_summaries(
    client: httpx.AsyncClient, user: str
) -> None:
    made = await create(client, user, 4)
    for session_id in made[:2]:
        state = await client.put(f"/v1/sessions/{session_id}/state", json={"stage": "triage"})
        assert state.status_code == 201, state.text
    summary = await client.put(
        f"/v1/sessions/{made[0]}/summary", json={"text": "膝盖下坠感，两周", "covers_until": 1}
    )
    assert summary.status_code == 201, summary.text

    assert await walk(client, user, stage="triage", limit=1) == [[made[1]], [made[0]]]
    assert await walk(client, user, stage="advice") == [[]]

    listed = (await client.get(sessions_of(user))).json()["items"]
    by_id = {item["session_id"]: item for item in listed}
    assert by_id[made[0]]["stage"] == "triage"
    assert by_id[made[0]]["summary_version"] == 1
    assert by_id[made[0]]["summary_text"] is None  # not asked for
    for asked in ("true", "1"):
        opened = await client.get(sessions_of(user), params={"with_summaries": asked})
        texts = {i["session_id"]: i["summary_text"] for i in opened.json()["items"]}
        assert texts == {made[0]: "膝盖下坠感，两周", made[1]: None, made[2]: None, made[3]: None}

    # updated_since: by the last message write (a state or summary doesn't move it).
    since = datetime.fromisoformat(by_id[made[2]]["updated_at"])
    appended = await client.post(f"/v1/sessions/{made[0]}/messages", json={"messages": TURN})
    assert appended.status_code == 200
    for text in (
        since.astimezone(UTC).isoformat().replace("+00:00", "Z"),
        since.astimezone(timezone(timedelta(hours=8))).isoformat(),  # + sent as %2B
    ):
        pages = await walk(client, user, updated_since=text)
        assert pages == [[made[3], made[2], made[0]]]
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert await walk(client, user, updated_since=future) == [[]]


async def test_refusals_are_problems(client: httpx.AsyncClient, user: str) -> None:
    await create(client, user, 3)
    path = sessions_of(user)
    for params in (
        {"limit": "0"},
        {"limit": "1001"},
        {"limit": "ten"},
        {"with_summaries": "maybe"},
        {"updated_since": "yesterday"},
        {"updated_since": "2026-11-29T08:15:02"},  # no offset
        {"cursor": ""},
        {"cursor": "x" * 3000},
        {"stage": ""},
    ):
        refused = await client.get(path, params=params)
        errors = problem(refused, 422, "invalid-input")["errors"]
        (name,) = params
        assert isinstance(errors, list)
        assert [error["location"] for error in errors] == [f"query.{name}"], params
    # A cursor that is no listing's, or another listing's: the library's own words.
    cursor = (await client.get(path, params={"limit": 1})).json()["next_cursor"]
    for params, says in (
        ({"cursor": "not-a-cursor"}, "list again without a cursor"),
        ({"cursor": "!!"}, "list again without a cursor"),
        ({"cursor": cursor, "stage": "triage"}, "another user's listing or other filters"),
    ):
        refused = await client.get(path, params=params)
        assert says in str(problem(refused, 422, "invalid-input")["detail"])
    # A cursor made for this user carries no right to another one's sessions.
    other = await client.get(sessions_of(user + "-other"), params={"cursor": cursor})
    assert "another user's listing" in str(problem(other, 422, "invalid-input")["detail"])


async def test_another_users_sessions_are_never_listed(
    client: httpx.AsyncClient, user: str
) -> None:
    mine = await create(client, user, 3)
    theirs = await create(client, user + "x", 3)  # an id that extends mine
    anonymous = await client.put(f"/v1/sessions/{user}-anon/messages", json={"messages": TURN})
    assert anonymous.status_code == 201
    assert await walk(client, user, limit=2) == [mine[::-1][:2], mine[::-1][2:]]
    assert await walk(client, user + "x") == [theirs[::-1]]
    # An id with a slash and a newline, percent-encoded in the path, is one user.
    odd = f"{user}/a\nb"
    made = await create(client, odd, 1)
    assert await walk(client, odd) == [made]
    assert await walk(client, user) == [mine[::-1]]


async def test_the_read_scope_lists_and_no_other_does(
    module_database_url: URL, tokens: Tokens, client: httpx.AsyncClient, user: str
) -> None:
    made = await create(client, user, 1)
    path = sessions_of(user)
    async with app_on(module_database_url, tokens, tokens.read) as reader:
        listed = await reader.get(path, params={"with_summaries": "true"})
        assert [i["session_id"] for i in listed.json()["items"]] == made
        for token in (tokens.write, tokens.admin):
            refused = await reader.get(path, headers=tokens.header(token))
            problem(refused, 403, "forbidden")
            assert 'scope="read"' in refused.headers["WWW-Authenticate"]
        del reader.headers["Authorization"]
        problem(await reader.get(path), 401, "unauthorized")


async def test_a_storage_that_cant_list_answers_501(
    client: httpx.AsyncClient, store: PostgresStorage, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal RedisStorage gives (Store's own, NotSupportedError), through the
    service: the service runs on PostgreSQL only, so the store is made to refuse."""
    monkeypatch.setattr(store, "_list_sessions", lambda query: Store._list_sessions(store, query))
    refused = await client.get(sessions_of(user))
    body = problem(refused, 501, "not-supported")
    assert body["detail"] == "this server's storage can't do this operation"
    assert "Redis" not in refused.text and "Postgres" not in refused.text
    metrics = (await client.get("/metrics")).text
    assert 'ctxstore_http_storage_errors_total{type="not-supported"} 1.0' in metrics
