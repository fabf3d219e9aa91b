"""SIGTERM under load: the server stops accepting, finishes what is in flight, and every
write it acknowledged (2xx) is in the database, exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections import Counter
from pathlib import Path

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
    loaded = asyncio.Event()  # enough appends acknowledged: the signal comes under load

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
                if len(acknowledged) >= 60:
                    loaded.set()

    try:
        await metrics_add_up_across_workers(live, tokens)
        load = [asyncio.create_task(client(number)) for number in range(CLIENTS)]
        # The signal comes under load: once appends are being acknowledged (a loaded
        # machine takes longer to get there than a fixed sleep would allow).
        with contextlib.suppress(TimeoutError):  # then the count is asserted below
            await asyncio.wait_for(loaded.wait(), timeout=60)
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


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rpartition(")")[2].split()
                if int(fields[1]) == pid:
                    found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
def test_workers_die_with_a_killed_parent_and_the_port_is_free(
    database_url: URL, tokens: Tokens
) -> None:
    """SIGKILL reaches the supervisor only: its workers must not keep the port."""
    first = LiveServer.on(database_url, tokens, workers=2).start()
    try:
        assert first.process is not None
        workers = [pid for pid in _children(first.process.pid) if _alive(pid)]
        assert len(workers) >= 2, workers  # the workers (and multiprocessing's tracker)
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait(10)
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.1)
        assert not any(_alive(pid) for pid in workers), first.log()
        second = LiveServer.on(database_url, tokens, port=first.port).start(timeout=30)
        try:
            answer = httpx.get(f"{second.base_url}/healthz", headers=tokens.header(), timeout=10)
            assert answer.status_code == 200
        finally:
            assert second.terminate() == 0, second.log()
            second.close()
    finally:
        first.close()
