"""Responses on the wire from a live ``ctxstore serve``: the protocol writes a response's
head with its first body bytes (one send), so every way a response can end is checked
here byte for byte: with a body, without one (HEAD, 204), after an interim
``100 Continue``, pipelined, and closed."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest
from sqlalchemy import URL

from tests.http.live import LiveServer, Tokens, serving

pytestmark = pytest.mark.postgres

PATIENCE = 10.0


@pytest.fixture(scope="module")
def server(module_database_url: URL, tokens: Tokens) -> Iterator[LiveServer]:
    yield from serving(module_database_url, tokens)


class Wire:
    """A raw keep-alive connection that reads exactly one response at a time."""

    def __init__(self, server: LiveServer) -> None:
        self.conn = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE)
        self.buffer = b""

    def send(self, data: bytes) -> None:
        self.conn.sendall(data)

    def response(self, *, head_only: bool = False) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buffer:
            self._more()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        status_line, *lines = head.decode("latin-1").split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
        length = 0 if head_only else int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            self._more()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(status_line.split(" ", 2)[1]), headers, body

    def _more(self) -> None:
        chunk = self.conn.recv(65536)
        assert chunk, f"the server closed the connection; held: {self.buffer[:200]!r}"
        self.buffer += chunk

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def wire(server: LiveServer) -> Iterator[Wire]:
    connection = Wire(server)
    yield connection
    connection.close()


def _request(method: str, path: str, tokens: Tokens, body: bytes = b"", extra: str = "") -> bytes:
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {tokens.full}\r\n"
        f"Content-Length: {len(body)}\r\n"
    )
    if body:
        head += "Content-Type: application/json\r\n"
    return (head + extra + "\r\n").encode() + body


TURN = json.dumps({"messages": [{"role": "user", "content": "膝盖疼", "turn_id": "t1"}]}).encode()


def test_a_response_and_its_body_then_another_on_the_same_connection(
    wire: Wire, tokens: Tokens
) -> None:
    wire.send(_request("POST", "/v1/sessions/wire-a/messages", tokens, TURN))
    status, headers, body = wire.response()
    assert (status, json.loads(body)["version"]) == (201, 1)
    assert headers["content-length"] == str(len(body))
    wire.send(_request("GET", "/v1/sessions/wire-a/messages", tokens))
    status, _, body = wire.response()
    assert status == 200 and json.loads(body)["messages"][0]["content"] == "膝盖疼"


def test_a_head_without_a_body_is_sent_and_the_connection_goes_on(
    wire: Wire, tokens: Tokens
) -> None:
    wire.send(_request("POST", "/v1/sessions/wire-b/messages", tokens, TURN))
    assert wire.response()[0] == 201
    wire.send(_request("HEAD", "/v1/sessions/wire-b/messages", tokens))
    status, headers, _ = wire.response(head_only=True)
    assert status == 200 and int(headers["content-length"]) > 0
    wire.send(_request("DELETE", "/v1/sessions/wire-b/messages", tokens))
    status, _, body = wire.response()
    assert (status, body) == (204, b"")
    wire.send(_request("GET", "/healthz", tokens))
    assert wire.response()[0] == 200
    assert wire.buffer == b""  # nothing more was sent: no body after the HEAD's head


def test_an_interim_100_continue_is_sent_before_the_body_is(wire: Wire, tokens: Tokens) -> None:
    head = _request(
        "POST", "/v1/sessions/wire-c/messages", tokens, extra="Expect: 100-continue\r\n"
    )
    head = head.replace(b"Content-Length: 0", f"Content-Length: {len(TURN)}".encode())
    head = head.replace(b"\r\n\r\n", b"\r\nContent-Type: application/json\r\n\r\n")
    wire.send(head)
    status, _, _ = wire.response(head_only=True)  # before any body byte is sent
    assert status == 100
    wire.send(TURN)
    status, _, body = wire.response()
    assert (status, json.loads(body)["version"]) == (201, 1)


def test_pipelined_requests_are_answered_in_order(wire: Wire, tokens: Tokens) -> None:
    wire.send(
        _request("POST", "/v1/sessions/wire-d/messages", tokens, TURN)
        + _request("GET", "/v1/sessions/wire-d/messages", tokens)
        + _request("GET", "/v1/sessions/no-such-session/messages", tokens)
    )
    answers = [wire.response() for _ in range(3)]
    assert [status for status, _, _ in answers] == [201, 200, 404]
    assert json.loads(answers[1][2])["messages"][0]["turn_id"] == "t1"


def test_a_response_before_a_close_is_sent_whole(server: LiveServer, tokens: Tokens) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE) as conn:
        conn.sendall(_request("GET", "/healthz", tokens, extra="Connection: close\r\n"))
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"connection: close" in head.lower()
    assert json.loads(body) == {"status": "ok"}
