"""bench_http_fairness: does one request starve the others? (issue 27)

``ctxstore serve`` with one worker.  A writer sends the largest request the service
allows, again and again: ``CTXSTORE_HTTP_MAX_MESSAGES`` (2,000) messages whose content
fills the body limit (4 MiB), each an append to a session of its own.  Meanwhile a
prober calls ``GET /healthz`` on its own connection, one call after another.  Reported:
the probe's p50, p99 and worst latency alone and while the large requests run, and the
large request's own time.  The probe needs no database: its latency is the event loop's.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import statistics
import threading
import time
from pathlib import Path

from benchmarks.bench_http import Server
from benchmarks.common import bench_database, table
from ctxstore.http.auth import new_token
from ctxstore.settings import DEFAULT_MAX_BODY

MESSAGES = 2000
PROBE_SECONDS = 20.0
RESULTS = Path(__file__).resolve().parent / "results" / "http_fairness.json"


def largest_body() -> bytes:
    overhead = len(json.dumps({"messages": [{"role": "user", "content": ""}] * MESSAGES}))
    per = (DEFAULT_MAX_BODY - overhead - 1024) // MESSAGES
    text = "膝" * (per // 3)  # three UTF-8 bytes each
    return json.dumps(
        {"messages": [{"role": "user", "content": text}] * MESSAGES}, ensure_ascii=False
    ).encode()


def probe(port: int, seconds: float, token: str) -> list[float]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    took: list[float] = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        connection.request("GET", "/healthz")
        answer = connection.getresponse()
        answer.read()
        took.append((time.perf_counter() - started) * 1000)
        assert answer.status == 200
        time.sleep(0.005)
    connection.close()
    return took


def writer(port: int, token: str, body: bytes, stop: threading.Event, took: list[float]) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    number = 0
    while not stop.is_set():
        number += 1
        started = time.perf_counter()
        connection.request(
            "POST",
            f"/v1/sessions/fair-{number}/messages",
            body=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 201, answer.status
        took.append((time.perf_counter() - started) * 1000)
    connection.close()


def summary(values: list[float]) -> tuple[str, str, str, str]:
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        str(len(values)),
        f"{statistics.median(values):.1f} ms",
        f"{p99:.1f} ms",
        f"{ordered[-1]:.1f} ms",
    )


def main() -> None:
    token, grant = new_token("bench", ["read", "write"])
    body = largest_body()
    print(f"the largest request: {MESSAGES} messages, {len(body) / 2**20:.1f} MiB")
    with bench_database() as url:
        server = Server(url, grant, workers=1)
        try:
            asyncio.run(server.ready(token))
            alone = probe(server.port, PROBE_SECONDS / 2, token)
            stop, big = threading.Event(), []
            thread = threading.Thread(target=writer, args=(server.port, token, body, stop, big))
            thread.start()
            time.sleep(1.0)
            during = probe(server.port, PROBE_SECONDS, token)
            stop.set()
            thread.join()
        finally:
            server.stop()
    rows = [
        ("/healthz alone", *summary(alone)),
        ("/healthz beside the largest requests", *summary(during)),
        ("the largest request itself", *summary(big)),
    ]
    print(table(rows, ("", "calls", "p50", "p99", "worst")))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"rows": rows}, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
