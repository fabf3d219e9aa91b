"""A hostile client against a live ``ctxstore serve``: heads too long, too many or too
slow, bodies that stop arriving, connections past the cap.  Each limit is set small here
(``CTXSTORE_HTTP_*``) so the tests run in seconds; the defaults are documented."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import URL

from tests.http.live import LiveServer, Tokens, serving

pytestmark = pytest.mark.postgres

HEAD_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
MAX_CONNECTIONS = 12
LIMITS = {
    "CTXSTORE_HTTP_HEAD_TIMEOUT": str(HEAD_TIMEOUT),
    "CTXSTORE_HTTP_BODY_TIMEOUT": str(BODY_TIMEOUT),
    "CTXSTORE_HTTP_MAX_HEADER_BYTES": "4096",
    "CTXSTORE_HTTP_MAX_HEADERS": "20",
    "CTXSTORE_HTTP_MAX_REQUEST_LINE": "1024",
    "CTXSTORE_HTTP_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
}
#: What a test waits for at most before it calls the server stuck.
PATIENCE = 10.0


@pytest.fixture(scope="module")
def server(module_database_url: URL, tokens: Tokens) -> Iterator[LiveServer]:
    yield from serving(module_database_url, tokens, env=LIMITS)


def _connect(server: LiveServer) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE)
    return conn


def _read_all(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes (raises past PATIENCE)."""
    received = b""
    while True:
        try:
            chunk = conn.recv(65536)
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk


def _read_response(conn: socket.socket) -> bytes:
    """One whole response with a Content-Length, head and body (they may come in two
    writes)."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += conn.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += conn.recv(65536)
    return head + b"\r\n\r\n" + body


def _status(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.1 "), answer[:200]
    return int(answer.split(b" ", 2)[1])


def _problem(answer: bytes) -> dict[str, object]:
    body = answer.partition(b"\r\n\r\n")[2]
    found: dict[str, object] = json.loads(body)
    return found


def _auth(tokens: Tokens) -> bytes:
    return f"Authorization: Bearer {tokens.full}\r\n".encode()


def test_a_connection_that_sends_nothing_is_closed(server: LiveServer) -> None:
    with _connect(server) as conn:
        started = time.monotonic()
        assert _read_all(conn) == b""
        waited = time.monotonic() - started
    assert HEAD_TIMEOUT * 0.8 <= waited < PATIENCE


def test_a_trickled_head_gets_408_at_its_deadline(server: LiveServer) -> None:
    with _connect(server) as conn:
        started = time.monotonic()
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        answer = b""
        # One byte of a header field every 0.2 s: each byte would reset an idle timer.
        try:
            for byte in b"X-Slow: " + b"a" * 100:
                conn.sendall(bytes([byte]))
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_all(conn)
        waited = time.monotonic() - started
    assert _status(answer) == 408
    assert _problem(answer)["type"] == "https://ctxstore.dev/problems/request-timeout"
    assert waited < HEAD_TIMEOUT + 2


def test_a_body_that_stops_arriving_gets_408(server: LiveServer, tokens: Tokens) -> None:
    body = b'{"messages": ['
    with _connect(server) as conn:
        conn.sendall(
            b"POST /v1/sessions/hostile-body/messages HTTP/1.1\r\nHost: x\r\n"
            + _auth(tokens)
            + b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            + body
        )
        started = time.monotonic()
        answer = _read_all(conn)
        waited = time.monotonic() - started
    assert _status(answer) == 408
    assert b"stopped arriving" in answer
    assert BODY_TIMEOUT * 0.8 <= waited < PATIENCE


def test_a_body_arriving_slower_than_its_timeout_in_all_but_steadily_is_served(
    server: LiveServer, tokens: Tokens
) -> None:
    """Each chunk within the body timeout, the whole well past it: every chunk moves the
    deadline on, so the connection's timer, when it fires, finds a later one."""
    body = json.dumps({"messages": [{"role": "user", "content": "膝盖" * 20}]}).encode()
    chunks = [body[i : i + 10] for i in range(0, len(body), 10)]
    with _connect(server) as conn:
        conn.sendall(
            b"POST /v1/sessions/hostile-steady/messages HTTP/1.1\r\nHost: x\r\n"
            + _auth(tokens)
            + b"Content-Type: application/json\r\nConnection: close\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        started = time.monotonic()
        for chunk in chunks[:-1]:
            conn.sendall(chunk)
            time.sleep(BODY_TIMEOUT * 0.3)
        assert time.monotonic() - started > BODY_TIMEOUT * 2
        conn.sendall(chunks[-1])
        answer = _read_all(conn)
    assert _status(answer) == 201, answer


def test_a_later_heads_deadline_runs_from_its_first_byte(server: LiveServer) -> None:
    """Between requests a connection is idle (uvicorn's keep-alive); the next head has its
    whole deadline from its first byte, not from the first request's."""
    request = b"GET /healthz HTTP/1.1\r\nHost: x\r\nUser-Agent: a-slow-client\r\n"
    with _connect(server) as conn:
        conn.sendall(request + b"\r\n")
        first = _read_response(conn)
        assert _status(first) == 200, first
        time.sleep(HEAD_TIMEOUT * 0.6)
        started = time.monotonic()
        conn.sendall(request[:20])
        time.sleep(HEAD_TIMEOUT * 0.6)  # past the first head's deadline, within its own
        conn.sendall(request[20:] + b"Connection: close\r\n\r\n")
        second = _read_all(conn)
        assert time.monotonic() - started < HEAD_TIMEOUT
    assert _status(second) == 200, second


def test_an_unauthenticated_body_that_stops_is_answered_once_and_closed(
    server: LiveServer,
) -> None:
    with _connect(server) as conn:
        conn.sendall(
            b"POST /v1/sessions/x/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab"
        )
        answer = _read_all(conn)
    assert _status(answer) == 401
    assert answer.count(b"HTTP/1.1 ") == 1


def test_a_huge_header_is_431_before_authentication_and_unread(server: LiveServer) -> None:
    """64 MB of one header: the server answers and closes long before it is sent."""
    sent = 0
    with _connect(server) as conn:
        conn.sendall(b"GET /v1/sessions/x/messages HTTP/1.1\r\nHost: x\r\nX-Big: ")
        chunk = b"a" * 65536
        try:
            while sent < 64 * 1024 * 1024:
                conn.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_all(conn)
    assert sent < 8 * 1024 * 1024, f"the server read {sent} bytes of one header"
    if answer:  # the reset may arrive before the answer is read
        assert _status(answer) == 431


def test_too_many_header_fields_is_431(server: LiveServer, tokens: Tokens) -> None:
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(21))
    with _connect(server) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + _auth(tokens) + fields + b"\r\n")
        answer = _read_all(conn)
    assert _status(answer) == 431
    assert "more than 20 header fields" in str(_problem(answer)["detail"])


def test_a_head_over_the_byte_limit_is_431(server: LiveServer, tokens: Tokens) -> None:
    with _connect(server) as conn:
        conn.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\n"
            + _auth(tokens)
            + b"X-A: "
            + b"a" * 5000
            + b"\r\n\r\n"
        )
        answer = _read_all(conn)
    assert _status(answer) == 431


def test_a_long_request_target_is_414(server: LiveServer) -> None:
    with _connect(server) as conn:
        conn.sendall(b"GET /v1/sessions/" + b"a" * 2000 + b"/messages HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = _read_all(conn)
    assert _status(answer) == 414


def test_requests_within_the_limits_are_served_on_one_connection(
    server: LiveServer, tokens: Tokens
) -> None:
    with httpx.Client(
        base_url=server.base_url, headers=tokens.header(), timeout=PATIENCE
    ) as client:
        for _ in range(3):
            assert client.get("/healthz", headers={"X-Pad": "p" * 3000}).status_code == 200
            time.sleep(HEAD_TIMEOUT * 0.6)  # idle between requests: keep-alive, not the head


def test_connections_past_the_cap_are_closed_at_once(server: LiveServer) -> None:
    held = [_connect(server) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)  # accepted by now
        with _connect(server) as extra:
            started = time.monotonic()
            assert _read_all(extra) == b""
            assert time.monotonic() - started < HEAD_TIMEOUT * 0.8
    finally:
        for conn in held:
            conn.close()


@pytest.mark.parametrize("hosts", [b"", b"Host: a\r\nHost: b\r\n"], ids=["none", "two"])
def test_a_request_without_exactly_one_host_is_400(
    server: LiveServer, tokens: Tokens, hosts: bytes
) -> None:
    """RFC 9112 section 3.2: any other count of Host fields is answered 400."""
    with _connect(server) as conn:
        conn.sendall(
            b"GET /v1/sessions/x/messages HTTP/1.1\r\n"
            + hosts
            + _auth(tokens)
            + b"Connection: close\r\n\r\n"
        )
        answer = _read_all(conn)  # the head and the body may come in two segments
    assert _status(answer) == 400
    assert b"exactly one Host" in answer


def test_head_is_the_get_without_its_body(server: LiveServer) -> None:
    with _connect(server) as conn:
        conn.sendall(b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = _read_all(conn)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert _status(answer) == 200 and body == b""
    assert b"content-length: 15" in head.lower()
