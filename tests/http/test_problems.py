"""Errors as RFC 9457 problem details, one stable type per ctxstore error; auth and scopes;
size limits; readiness; metrics.  The app runs in this process on a real PostgreSQL (or
on one that is not there)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from sqlalchemy import URL

from ctxstore.db.migrations import head_revision
from ctxstore.http.app import create_app
from ctxstore.storage.postgres import PostgresStorage
from tests.http.conftest import settings_for
from tests.http.live import Tokens

pytestmark = pytest.mark.postgres

PROBLEM = "application/problem+json"
BASE = "https://ctxstore.dev/problems/"
TURN = [{"role": "user", "content": "我膝盖有下坠感"}]


def problem(response: httpx.Response, status: int, slug: str) -> dict[str, object]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, object] = response.json()
    assert body["type"] == BASE + slug
    assert body["status"] == status
    assert isinstance(body["title"], str)
    assert isinstance(body["detail"], str)
    return body


@asynccontextmanager
async def app_on(
    url: URL, tokens: Tokens, token: str | None = None, **options: object
) -> AsyncIterator[httpx.AsyncClient]:
    # Not entered (``async with`` checks the schema and refuses one it can't run on):
    # these tests ask the app about databases without a schema too.
    store = PostgresStorage.from_url(url, operation_timeout=3)
    try:
        app = create_app(settings_for(url, tokens, access_log=False, **options), store=store)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://ctxstore.test",
            headers=tokens.header(token),
        ) as client:
            yield client
    finally:
        await store.close()


async def test_malformed_and_invalid_requests(client: httpx.AsyncClient, sid: str) -> None:
    path = f"/v1/sessions/{sid}/messages"
    broken = await client.post(path, content=b'{"messages": [', headers=_json())
    problem(broken, 400, "malformed-request")
    plain = await client.post(path, content=b"{}", headers={"Content-Type": "text/plain"})
    problem(plain, 415, "unsupported-media-type")
    schema = await client.post(path, json={"messages": [{"role": "robot", "content": 7}]})
    errors = problem(schema, 422, "invalid-input")["errors"]
    assert {"body.messages.0.role", "body.messages.0.content"} <= {
        item["location"]
        for item in errors  # type: ignore[attr-defined]
    }
    # Strict: a number is not text, "yes" is not a boolean, a number is not a timestamp.
    for bad in (
        {"messages": [{"role": "user", "content": "x", "timestamp": 1764547200}]},
        {"messages": [{"role": "user", "content": "x", "timestamp": "2026-11-29T08:15:02"}]},
        {"messages": [{"role": "user", "content": "x", "timestamp": "yesterday"}]},
        {"messages": [], "user_id": 42},
        {"messages": [], "unknown": 1},
    ):
        problem(await client.post(path, json=bad), 422, "invalid-input")
    state = await client.put(f"/v1/sessions/{sid}/state", json={"stage": "x", "swelling": "yes"})
    problem(state, 422, "invalid-input")
    nul = await client.post(path, json={"messages": [{"role": "user", "content": "a\x00b"}]})
    assert "U+0000" in str(problem(nul, 422, "invalid-message")["detail"])
    header = await client.post(path, json={"messages": TURN}, headers={"If-Match": "7"})
    problem(header, 400, "malformed-request")
    query = await client.get(path, params={"token_budget": "lots"})
    problem(query, 422, "invalid-input")
    too_long = await client.get(f"/v1/sessions/{'x' * 256}/messages")
    problem(too_long, 422, "invalid-input")


async def test_values_postgresql_could_not_give_back_are_refused(
    client: httpx.AsyncClient, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    # an offset PostgreSQL's timestamptz can't hold is kept all the same (the time goes
    # as UTC text, the offset beside it) and read back exactly as written
    offset = {"role": "user", "content": "x", "timestamp": "2026-11-29T08:15:02-16:30"}
    assert (await client.post(path, json={"messages": [offset]})).status_code == 201
    stored = (await client.get(path)).json()["messages"]
    assert stored[-1]["timestamp"] == "2026-11-29T08:15:02-16:30"
    huge = {"role": "user", "content": "x", "metadata": {"n": [1.5e80]}}
    body = problem(await client.post(path, json={"messages": [huge]}), 422, "invalid-message")
    assert "2^63" in json.dumps(body)
    profile = await client.put(f"/v1/users/u-{sid}/profile", json={"score": -1.5e80})
    problem(profile, 422, "invalid-input")
    assert (await client.get(f"/v1/users/u-{sid}/profile")).status_code == 404  # not written


async def test_size_limits_are_413(
    module_database_url: URL, tokens: Tokens, client: httpx.AsyncClient, sid: str
) -> None:
    big = {"role": "user", "content": "x" * (256 * 1024 + 1)}
    answer = await client.post(f"/v1/sessions/{sid}/messages", json={"messages": [big]})
    problem(answer, 413, "message-too-large")
    async with app_on(module_database_url, tokens, max_body_bytes=1000) as small:
        declared = await small.post(
            f"/v1/sessions/{sid}/messages",
            json={"messages": [{"role": "user", "content": "y" * 2000}]},
        )
        problem(declared, 413, "body-too-large")

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it comes
            yield b'{"messages": [{"role": "user", "content": "'
            for _ in range(10):
                yield b"z" * 200
            yield b'"}]}'

        streamed = await small.post(
            f"/v1/sessions/{sid}/messages", content=chunks(), headers=_json()
        )
        problem(streamed, 413, "body-too-large")
    assert (await client.get(f"/v1/sessions/{sid}/messages")).status_code == 404


async def test_unknown_routes_and_methods(client: httpx.AsyncClient, sid: str) -> None:
    problem(await client.get("/v2/anything"), 404, "not-found")
    wrong = await client.patch(f"/v1/sessions/{sid}/messages")
    problem(wrong, 405, "method-not-allowed")
    assert wrong.headers["Allow"] == "DELETE, GET, HEAD, POST, PUT"
    assert (await client.patch(f"/v1/users/{sid}/profile")).headers["Allow"] == "GET, HEAD, PUT"


async def test_every_route_needs_a_token_with_its_scope(
    module_database_url: URL, tokens: Tokens, client: httpx.AsyncClient, sid: str
) -> None:
    document = (await client.get("/openapi.json")).json()
    operations = [
        (method.upper(), path.replace("{session_id}", sid).replace("{user_id}", sid), item)
        for path, methods in document["paths"].items()
        for method, item in methods.items()
    ]
    assert len(operations) == 19
    scope_token = {"read": tokens.read, "write": tokens.write, "admin": tokens.admin}
    async with app_on(module_database_url, tokens) as anonymous:
        anonymous.headers.pop("Authorization")
        for method, path, item in operations:
            if item["x-required-scope"] == "public":
                # The probes: anyone, with any valid token or none; a wrong token is 401.
                assert item["security"] == [{}, {"bearer": []}]
                for token in (None, tokens.read, tokens.write):
                    headers = tokens.header(token) if token else {}
                    answer = await anonymous.request(method, path, headers=headers)
                    assert answer.status_code == 200, answer.text
                    assert set(answer.json()) == {"status"}
                forged = await anonymous.request(
                    method, path, headers={"Authorization": "Bearer ctx_not-a-token"}
                )
                problem(forged, 401, "unauthorized")
                continue
            assert item["security"] == [{"bearer": []}]
            bare = await anonymous.request(method, path)
            problem(bare, 401, "unauthorized")
            assert bare.headers["WWW-Authenticate"] == 'Bearer realm="ctxstore"'
            forged = await anonymous.request(
                method, path, headers={"Authorization": "Bearer ctx_not-a-token"}
            )
            problem(forged, 401, "unauthorized")
            assert forged.headers["WWW-Authenticate"] == (
                'Bearer realm="ctxstore", error="invalid_token"'
            )
            scope = item["x-required-scope"]
            for other, token in scope_token.items():
                if other == scope:
                    continue
                refused = await anonymous.request(
                    method, path, headers=tokens.header(token), json={}
                )
                problem(refused, 403, "forbidden")
                assert f'scope="{scope}"' in refused.headers["WWW-Authenticate"]
        allowed = await anonymous.get("/metrics", headers=tokens.header(tokens.admin))
        assert allowed.status_code == 200
        spec = await anonymous.get("/openapi.json")
        problem(spec, 401, "unauthorized")


async def test_metrics_count_requests_conflicts_and_storage_errors(
    client: httpx.AsyncClient, sid: str, tokens: Tokens
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    await client.post(path, json={"messages": TURN})
    await client.post(path, json={"messages": TURN}, headers={"If-Match": '"9"'})
    await client.get(path)
    text = (await client.get("/metrics")).text
    route = 'route="/v1/sessions/{session_id}/messages"'
    assert f'ctxstore_http_requests_total{{method="POST",{route},status="412"}} 1.0' in text
    assert f'ctxstore_http_requests_total{{method="GET",{route},status="200"}} 1.0' in text
    assert f'ctxstore_http_request_duration_seconds_bucket{{le="0.005",method="GET",{route}' in text
    assert f'ctxstore_http_conflicts_total{{{route},type="precondition-failed"}} 1.0' in text
    assert sid not in text  # route templates, never ids


async def test_an_unreachable_database_is_503_with_retry_after_and_no_driver_text(
    tokens: Tokens, sid: str
) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    secret = "Zq5Kx5-pw"
    url = URL.create("postgresql+asyncpg", "ctxuser", secret, "127.0.0.1", port, "ctxstore_absent")
    async with app_on(url, tokens, retry_after=7) as client:
        for answer in (
            await client.get(f"/v1/sessions/{sid}/messages"),
            await client.post(f"/v1/sessions/{sid}/messages", json={"messages": TURN}),
            await client.get("/readyz"),
        ):
            body = problem(answer, 503, "storage-unavailable")
            assert answer.headers["Retry-After"] == "7"
            for leak in (secret, "ctxuser", str(port), "Connect", "refused", "asyncpg", "OSError"):
                assert leak not in answer.text
            assert "retry" in str(body["detail"])
        metrics = (await client.get("/metrics")).text
    assert 'ctxstore_http_storage_errors_total{type="storage-unavailable"} 3.0' in metrics
    assert secret not in metrics


async def test_readiness_needs_the_schema_at_head(
    module_database_url: URL, empty_database_url: URL, tokens: Tokens
) -> None:
    async with app_on(module_database_url, tokens) as ready:
        answer = await ready.get("/readyz")
        assert answer.json() == {"status": "ready", "revision": head_revision()}
        assert (await ready.get("/healthz")).json() == {"status": "ok"}
    async with app_on(empty_database_url, tokens) as empty:
        answer = await empty.get("/readyz")
        problem(answer, 503, "schema-missing")
        assert "ctxstore db upgrade" in answer.json()["detail"]
        assert (await empty.get("/healthz")).status_code == 200  # alive all the same


def _json() -> dict[str, str]:
    return {"Content-Type": "application/json"}


async def test_an_id_that_is_not_utf8_is_refused_never_replaced(
    client: httpx.AsyncClient,
) -> None:
    """Issue 27: invalid UTF-8 in a percent-encoded id became U+FFFD, so ``%FFabc`` and
    ``%EF%BF%BDabc`` named one session."""
    written = await client.put(
        "/v1/sessions/%EF%BF%BDabc/messages",
        json={"messages": [{"role": "user", "content": "x"}]},
    )
    assert written.status_code in (200, 201), written.text
    for path in ("/v1/sessions/%FFabc/messages", "/v1/sessions/abc%C3/messages"):
        answer = await client.get(path)
        assert answer.status_code == 400, (path, answer.text)
        assert answer.json()["type"] == "https://ctxstore.dev/problems/malformed-request"
        assert "not UTF-8" in answer.json()["detail"]
    read = await client.get("/v1/sessions/%EF%BF%BDabc/messages")
    assert [m["content"] for m in read.json()["messages"]] == ["x"]
    chinese = await client.get("/v1/sessions/%E4%BD%A0%E5%A5%BD/messages")  # 你好: exact UTF-8
    assert chinese.status_code == 404


async def test_head_answers_every_get_route_without_a_body(
    client: httpx.AsyncClient, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    await client.post(path, json={"messages": TURN})
    got = await client.get(path)
    head = await client.head(path)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["ETag"] == got.headers["ETag"]
    assert head.headers["Content-Length"] == got.headers["Content-Length"]
    assert (await client.head(f"/v1/sessions/{sid}-none/messages")).status_code == 404
    assert (await client.head("/healthz")).status_code == 200


async def test_a_write_of_more_messages_than_a_request_may_carry_is_413(
    module_database_url: URL, tokens: Tokens, sid: str, store: PostgresStorage
) -> None:
    """One request's CPU is bounded: CTXSTORE_HTTP_MAX_MESSAGES, whatever the body size.
    A body past OFF_LOOP_BYTES is parsed in a thread: the same answers."""
    padding = "膝" * 30_000  # 90 KB a message: the bodies below are parsed off the loop
    async with app_on(module_database_url, tokens, max_messages=3) as client:
        path = f"/v1/sessions/{sid}/messages"
        three = [{"role": "user", "content": f"{padding}{i}"} for i in range(3)]
        assert (await client.post(path, json={"messages": three})).status_code == 201
        four = await client.put(path, json={"messages": [*three, *three[:1]]})
        body = problem(four, 413, "too-many-messages")
        assert "4 messages in one request; the limit is 3" in str(body["detail"])
        broken = await client.post(path, json={"messages": [{"role": "x", "content": padding}]})
        problem(broken, 422, "invalid-input")
    assert len(await store.load(sid)) == 3


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"messages": [], "messages": [{"role": "user", "content": "x"}]}', '"messages" twice'),
        (
            b'{"messages": [{"role": "user", "content": "a", "content": "b"}]}',
            '"content" twice',
        ),
        (
            b'{"messages": [{"role": "user", "content": "a", "metadata": {"k": 1, "k": 2}}]}',
            '"k" twice',
        ),
        (b'{"messages": [{"role": "user", "content": "x", "metadata": {"v": NaN}}]}', "JSON"),
        (b'{"messages": [{"role": "user", "content": "x", "metadata": {"v": -Infinity}}]}', "JSON"),
        ('{"messages": []}'.encode("utf-16"), "UTF-8"),
        (b'{"messages": [{"role": "user", "content": "\xff"}]}', "UTF-8"),
        (b'{"messages": [], "user_id": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "JSON"),
    ],
    ids=["top", "message", "metadata", "nan", "infinity", "utf-16", "latin-1", "deep"],
)
async def test_what_json_leaves_to_the_receiver_is_refused(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str, body: bytes, says: str
) -> None:
    """Issue 27: duplicate names were accepted, the last one winning; a parser in front
    of the service may have read the first."""
    path = f"/v1/sessions/{sid}/messages"
    refused = await client.post(path, content=body, headers=_json())
    assert says in str(problem(refused, 400, "malformed-request")["detail"])
    assert not await store.exists(sid)
    # the same document without the ambiguity is taken
    taken = await client.post(path, json={"messages": [{"role": "user", "content": "a"}]})
    assert taken.status_code == 201
