"""The connection gate on its own: a recording transport and a recording protocol in
place of uvicorn's (the live server's hostile client: test_hostile.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import pytest

from ctxstore.http.connections import ConnectionGate, ConnectionLimits, gated, new_event_loop

LIMITS = ConnectionLimits(
    max_request_line=64, max_headers=3, max_header_bytes=256, head_timeout=0.2, max_connections=2
)


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = b""
        self.closed = self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += bytes(data)

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted


class Served(asyncio.Protocol):
    """What the gate hands the connection to: records what reaches it."""

    def __init__(self) -> None:
        self.received = b""
        self.made = self.lost = False

    def connection_made(self, transport: Any) -> None:
        self.made = True

    def data_received(self, data: bytes) -> None:
        self.received += data

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True


def _open(
    open_gates: set[ConnectionGate] | None = None,
) -> tuple[ConnectionGate, Transport, Served]:
    served = Served()
    gate = ConnectionGate(lambda: served, LIMITS, set() if open_gates is None else open_gates)
    transport = Transport()
    gate.connection_made(transport)
    return gate, transport, served


def _status(transport: Transport) -> int:
    return int(transport.written.split(b" ", 2)[1])


async def test_a_request_within_the_limits_passes_through_untouched() -> None:
    gate, transport, served = _open()
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    gate.data_received(request[:10])
    gate.data_received(request[10:])
    assert served.made and served.received == request and transport.written == b""
    gate.connection_lost(None)
    assert served.lost


@pytest.mark.parametrize(
    ("head", "status", "detail"),
    [
        (b"GET /" + b"a" * 100 + b" HTTP/1.1\r\n", 414, "longer than 64 bytes"),
        (b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(5)), 431, "3 header"),
        (b"GET / HTTP/1.1\r\nX-Big: " + b"a" * 300, 431, "larger than 256 bytes"),
        (
            b"GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nHost: x\r\n\r\n",
            400,
            "upgrade",
        ),
    ],
    ids=["target", "fields", "bytes", "upgrade"],
)
async def test_a_head_past_a_limit_is_answered_and_closed_unseen(
    head: bytes, status: int, detail: str, caplog: pytest.LogCaptureFixture
) -> None:
    gate, transport, served = _open()
    with caplog.at_level(logging.INFO, logger="uvicorn.error"):
        gate.data_received(head)
    assert _status(transport) == status and transport.closed
    response_head, _, body = transport.written.partition(b"\r\n\r\n")
    assert detail in json.loads(body)["detail"]
    # The response's id is on the line that logs the refusal.
    found = re.search(rb"\r\nx-request-id: ([0-9a-f]{32})\r\n", response_head + b"\r\n")
    assert found is not None
    (record,) = [r for r in caplog.records if r.getMessage().startswith("refused before")]
    assert record.request_id == found.group(1).decode()
    assert served.received == b""
    gate.data_received(b"more\r\n\r\n")  # nothing more reaches the server's protocol
    assert served.received == b""


async def test_a_head_past_its_deadline_is_408_and_silence_is_closed_unanswered() -> None:
    _, quiet, _ = _open()
    slow, trickled, _ = _open()
    slow.data_received(b"GET / HTTP/1.1\r\n")
    await asyncio.sleep(LIMITS.head_timeout * 1.5)
    assert quiet.closed and quiet.written == b""
    assert trickled.closed and _status(trickled) == 408


async def test_connections_past_the_cap_are_aborted_before_the_server_sees_them() -> None:
    open_gates: set[ConnectionGate] = set()
    held = [_open(open_gates) for _ in range(LIMITS.max_connections)]
    _, refused, served = _open(open_gates)
    assert refused.aborted and not served.made
    held[0][0].connection_lost(None)
    _, accepted, _ = _open(open_gates)
    assert not accepted.aborted


def test_the_loop_uvicorn_is_given_gates_its_servers() -> None:
    loop = new_event_loop()
    try:

        async def serve() -> bytes:
            server = await loop.create_server(Served, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n")
            answer = await reader.read()
            writer.close()
            server.close()
            return answer

        answer = loop.run_until_complete(serve())
    finally:
        loop.close()
    assert answer.startswith(b"HTTP/1.1 414 ")


def test_gated_takes_the_process_limits_when_none_are_given() -> None:
    gate = gated(Served)()
    assert isinstance(gate, ConnectionGate) and gate.limits.max_headers >= 1
