"""A DELETE of a session under a legal hold (`ctxstore hold`, revision 1006) over HTTP:
409 `legal-hold` naming the hold, the session intact; once lifted, the DELETE goes."""

from __future__ import annotations

import httpx
import pytest

from ctxstore.commands.holds import lift_hold, place_hold
from ctxstore.storage.postgres import PostgresStorage
from tests.http.test_problems import problem

pytestmark = pytest.mark.postgres


async def test_deleting_a_held_session_is_refused_until_the_hold_is_lifted(
    client: httpx.AsyncClient, store: PostgresStorage, sid: str
) -> None:
    path = f"/v1/sessions/{sid}/messages"
    written = await client.post(path, json={"messages": [{"role": "user", "content": "头疼"}]})
    assert written.status_code == 201, written.text
    hold = await place_hold(store, "session", sid, reason="subpoena 9", placed_by="legal")

    refused = await client.delete(path)
    body = problem(refused, 409, "legal-hold")
    assert str(hold.hold_id) in body["detail"] and "subpoena 9" in body["detail"]
    assert [m["content"] for m in (await client.get(path)).json()["messages"]] == ["头疼"]

    await lift_hold(store, str(hold.hold_id), lifted_by="legal")
    assert (await client.delete(path)).status_code == 204
    assert (await client.get(path)).status_code == 404
