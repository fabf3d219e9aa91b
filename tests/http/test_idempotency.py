"""``Idempotency-Key`` on POST messages: a retry after a lost response stores the turn
once, whatever came between, and however many retries race."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from ctxstore.storage.postgres import PostgresStorage
from tests.http.live import Tokens
from tests.http.test_resources import turn

pytestmark = pytest.mark.postgres


def _key() -> dict[str, str]:
    return {"Idempotency-Key": str(uuid.uuid4())}


async def _contents(store: PostgresStorage, sid: str) -> list[str]:
    return [message.content for message in await store.load(sid)]


async def test_a_retry_with_the_key_stores_the_turn_once(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    key = _key()
    first = await client.post(path, json={"messages": turn(1)}, headers=key)
    assert first.status_code == 201, first.text
    assert "Idempotency-Replayed" not in first.headers
    # Another writer's turn comes between the lost response and the retry.
    assert (await client.post(path, json={"messages": turn(2)})).status_code == 200
    retry = await client.post(path, json={"messages": turn(1)}, headers=key)
    assert retry.status_code == 200, retry.text
    assert retry.headers["Idempotency-Replayed"] == "true"
    assert retry.json() == {"version": 2} and retry.headers["ETag"] == '"2"'
    assert await _contents(store, sid) == [m["content"] for m in turn(1) + turn(2)]
    # A new key is a new turn.
    again = await client.post(path, json={"messages": turn(1)}, headers=_key())
    assert again.status_code == 200 and again.json() == {"version": 3}


async def test_the_key_with_another_body_is_422_and_writes_nothing(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    key = _key()
    assert (await client.post(path, json={"messages": turn(1)}, headers=key)).status_code == 201
    reused = await client.post(path, json={"messages": turn(9)}, headers=key)
    assert reused.status_code == 422
    assert reused.json()["type"] == "https://ctxstore.dev/problems/idempotency-key-reused"
    assert await _contents(store, sid) == [m["content"] for m in turn(1)]


async def test_keys_belong_to_their_token_and_session(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str, tokens: Tokens
) -> None:
    key = _key()
    body = {"messages": turn(1)}
    assert (
        await client.post(f"/v1/sessions/{sid}/messages", json=body, headers=key)
    ).status_code == 201
    other_session = await client.post(f"/v1/sessions/{sid}-b/messages", json=body, headers=key)
    assert other_session.status_code == 201
    by_writer = await client.post(
        f"/v1/sessions/{sid}/messages", json=body, headers={**key, **tokens.header(tokens.write)}
    )
    assert by_writer.status_code == 200 and "Idempotency-Replayed" not in by_writer.headers
    assert len(await store.load(sid)) == 4


async def test_racing_retries_with_one_key_store_the_turn_once(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    key = _key()

    async def other_writer(number: int) -> httpx.Response:
        return await client.post(path, json={"messages": turn(100 + number)})

    async def retry() -> httpx.Response:
        return await client.post(path, json={"messages": turn(1)}, headers=key)

    answers = await asyncio.gather(
        *(retry() for _ in range(12)), *(other_writer(n) for n in range(4))
    )
    assert all(answer.status_code in (200, 201) for answer in answers), [a.text for a in answers]
    retries = answers[:12]
    assert sum("Idempotency-Replayed" not in answer.headers for answer in retries) == 1
    contents = await _contents(store, sid)
    assert contents.count(turn(1)[0]["content"]) == 1
    assert len(contents) == 2 + 4 * 2


async def test_a_conditional_append_retried_with_its_key_is_not_a_conflict(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    """If-Match "1" applied, its answer lost: the retry finds the key, not a 412."""
    path = f"/v1/sessions/{sid}/messages"
    assert (await client.post(path, json={"messages": turn(1)})).status_code == 201
    key = {**_key(), "If-Match": '"1"'}
    assert (await client.post(path, json={"messages": turn(2)}, headers=key)).status_code == 200
    retry = await client.post(path, json={"messages": turn(2)}, headers=key)
    assert retry.status_code == 200 and retry.headers["Idempotency-Replayed"] == "true"
    stale = await client.post(
        path, json={"messages": turn(3)}, headers={**_key(), "If-Match": '"1"'}
    )
    assert stale.status_code == 412 and stale.json()["current_version"] == 2
    assert len(await store.load(sid)) == 4


async def test_racing_conditional_retries_with_one_key_store_the_turn_once(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    """The conditional append is tried before the key is looked up: of racing retries
    one writes, and every other finds the key (replayed, never a 412); the same key with
    another body is still refused."""
    path = f"/v1/sessions/{sid}/messages"
    assert (await client.post(path, json={"messages": turn(1)})).status_code == 201
    key = {**_key(), "If-Match": '"1"'}
    answers = await asyncio.gather(
        *(client.post(path, json={"messages": turn(2)}, headers=key) for _ in range(8))
    )
    assert [answer.status_code for answer in answers] == [200] * 8, [a.text for a in answers]
    assert sum("Idempotency-Replayed" not in answer.headers for answer in answers) == 1
    reused = await client.post(path, json={"messages": turn(9)}, headers=key)
    assert reused.status_code == 422
    assert await _contents(store, sid) == [m["content"] for m in turn(1) + turn(2)]


async def test_a_blank_key_is_refused(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    blank = await client.post(path, json={"messages": turn(1)}, headers={"Idempotency-Key": " "})
    assert blank.status_code == 400
    assert await store.version(sid) == 0
