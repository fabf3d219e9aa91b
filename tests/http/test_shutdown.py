"""SIGTERM under load: the server stops accepting, finishes what is in flight, and every
write it acknowledged (2xx) is in the database, exactly once."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter

import httpx
import pytest
from sqlalchemy import URL

from ctxstore.storage.postgres import PostgresStorage
from tests.http.live import LiveServer, Tokens

pytestmark = pytest.mark.postgres

CLIENTS = 16
SESSIONS = 4
#: Each client's bound: the load stops by itself even if the server never did.
MAX_REQUESTS = 3000


async def test_sigterm_under_load_loses_nothing_acknowledged(
    database_url: URL, tokens: Tokens
) -> None:
    live = LiveServer.on(database_url, tokens, workers=2).start()
    acknowledged: list[tuple[str, str, float]] = []
    sent: set[str] = set()
    refused: list[str] = []

    async def client(number: int) -> None:
        session = f"load-{number % SESSIONS}"
        async with httpx.AsyncClient(
            base_url=live.base_url, headers=tokens.header(), timeout=30
        ) as http:
            for index in range(MAX_REQUESTS):
                content = f"client {number} message {index}"
                sent.add(content)
                try:
                    answer = await http.post(
                        f"/v1/sessions/{session}/messages",
                        json={"messages": [{"role": "user", "content": content}]},
                    )
                except httpx.TransportError as error:  # the server closed: not acknowledged
                    refused.append(type(error).__name__)
                    return
                if answer.status_code not in (200, 201):
                    refused.append(str(answer.status_code))
                    return
                acknowledged.append((session, content, time.monotonic()))

    try:
        await metrics_add_up_across_workers(live, tokens)
        load = [asyncio.create_task(client(number)) for number in range(CLIENTS)]
        await asyncio.sleep(1.5)
        assert live.process is not None
        terminated_at = time.monotonic()
        live.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(asyncio.gather(*load), timeout=60)
        code = await asyncio.to_thread(live.process.wait, 60)
        assert code == 0, live.log()
    finally:
        log = live.log()
        live.close()

    after = sum(1 for _, _, at in acknowledged if at > terminated_at)
    print(f"{len(acknowledged)} acknowledged ({after} after SIGTERM), refused: {Counter(refused)}")
    assert len(acknowledged) > 50, log
    # Requests in flight when the signal came were answered, not dropped.
    assert after > 0, log
    assert "Traceback" not in log
    async with PostgresStorage.from_url(database_url) as store:
        stored: Counter[tuple[str, str]] = Counter()
        for index in range(SESSIONS):
            session = f"load-{index}"
            stored.update((session, message.content) for message in await store.load(session))
    missing = [(s, c) for s, c, _ in acknowledged if stored[(s, c)] != 1]
    assert missing == [], f"{len(missing)} acknowledged writes not stored exactly once"
    assert {content for _, content in stored} <= sent  # nothing stored that was not sent


async def metrics_add_up_across_workers(live: LiveServer, tokens: Tokens) -> None:
    """Whichever of the 2 workers answers a scrape reports both workers' samples."""
    for _ in range(10):  # new connections: spread over the workers
        async with httpx.AsyncClient(base_url=live.base_url, headers=tokens.header()) as http:
            assert (await http.get("/healthz")).status_code == 200
    # 11: the start's one successful probe, and these 10.
    line = 'ctxstore_http_requests_total{method="GET",route="/healthz",status="200"} 11.0'
    for _ in range(4):
        async with httpx.AsyncClient(base_url=live.base_url, headers=tokens.header()) as http:
            assert line in (await http.get("/metrics")).text
