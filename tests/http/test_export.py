"""A user's bundle over HTTP (`GET /v1/users/{user_id}/export`, issue 51): the admin scope
only, streamed as application/x-ndjson, the very bytes the library's export_user gives;
a storage that can't export (501) and an invalid user id (422) as problems.  The app runs
in this process on a real PostgreSQL, as in test_listing."""

from __future__ import annotations

import json
import uuid
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import URL

from ctxstore import MemoryStorage, Message
from ctxstore.storage.postgres import PostgresStorage
from ctxstore.storage.store import Store
from tests.http.live import Tokens
from tests.http.test_problems import app_on, problem

pytestmark = pytest.mark.postgres

NDJSON = "application/x-ndjson"


@pytest.fixture
def user() -> str:
    """A user of this test's own (the module shares one database)."""
    return f"u-{uuid.uuid4().hex[:12]}"


def export_of(user_id: str) -> str:
    return f"/v1/users/{quote(user_id, safe='')}/export"


async def library_export(store: PostgresStorage, user_id: str) -> bytes:
    return b"".join([chunk async for chunk in store.export_user(user_id)])


async def fill(store: PostgresStorage, user_id: str) -> None:
    """A profile, a session with a summary and a state, and an empty session."""
    await store.save_profile(user_id, {"age": 41, "known_limitations": ["左膝旧伤"]})
    knee = f"{user_id}-knee"
    await store.save(
        knee,
        [
            Message(role="user", content="我膝盖有下坠感"),
            Message(role="assistant", content="多久了？"),
        ],
        user_id=user_id,
    )
    await store.save_summary(knee, "膝盖下坠感", covers_until=1)
    await store.save_state(knee, {"stage": "triage", "pain_level": 3})
    await store.save(f"{user_id}-empty", [], user_id=user_id)


async def test_the_admin_scope_gets_the_librarys_bundle_streamed(
    module_database_url: URL, tokens: Tokens, store: PostgresStorage, user: str
) -> None:
    await fill(store, user)
    async with app_on(module_database_url, tokens, tokens.admin) as admin:
        exported = await admin.get(export_of(user))
    assert exported.status_code == 200, exported.text
    assert exported.headers["content-type"] == NDJSON
    assert "content-length" not in exported.headers  # streamed, not built whole
    assert exported.content == await library_export(store, user)
    lines = exported.content.splitlines()
    assert json.loads(lines[0])["user_id"] == user
    counts = json.loads(lines[-1])["counts"]
    assert (counts["profile"], counts["session"], counts["message"]) == (1, 2, 2)
    # What the route streams is a bundle an import takes.
    receipt = await MemoryStorage().import_user([exported.content])
    assert (receipt.user_id, receipt.sessions, receipt.summaries) == (user, 2, 1)


async def test_no_other_scope_exports(
    module_database_url: URL, tokens: Tokens, store: PostgresStorage, user: str
) -> None:
    await fill(store, user)
    async with app_on(module_database_url, tokens, tokens.admin) as client:
        for token in (tokens.read, tokens.write):
            refused = await client.get(export_of(user), headers=tokens.header(token))
            problem(refused, 403, "forbidden")
            assert 'scope="admin"' in refused.headers["WWW-Authenticate"]
            assert user not in refused.text
        del client.headers["Authorization"]
        problem(await client.get(export_of(user)), 401, "unauthorized")


async def test_an_invalid_user_id_is_a_problem(client: httpx.AsyncClient) -> None:
    too_long = await client.get(export_of("u" * 256))
    errors = problem(too_long, 422, "invalid-input")["errors"]
    assert isinstance(errors, list)
    assert [error["location"] for error in errors] == ["path.user_id"]
    # Refused by the library's own check, before the first byte of a bundle.
    control = await client.get(export_of("a\x00b"))
    assert "user id" in str(problem(control, 422, "invalid-input")["detail"])


async def test_a_storage_that_cant_export_answers_501(
    client: httpx.AsyncClient, store: PostgresStorage, user: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refusal RedisStorage gives (an export is built on the listing, which Store
    refuses by default), through the service: the service runs on PostgreSQL only, so the
    store is made to refuse."""
    await fill(store, user)
    monkeypatch.setattr(store, "_list_sessions", lambda query: Store._list_sessions(store, query))
    refused = await client.get(export_of(user))
    body = problem(refused, 501, "not-supported")
    assert body["detail"] == "this server's storage can't do this operation"
    assert "Redis" not in refused.text and "Postgres" not in refused.text
