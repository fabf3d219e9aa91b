"""The HTTP/1.1 connection, bounded: uvicorn's httptools protocol with the limits it lacks.

uvicorn buffers a request head of any size and gives a connection unlimited time to
send it (its keep-alive timer starts only after a first response, and any byte resets
it); a body that stops arriving holds its request forever.  This protocol, which
``ctxstore serve`` hands uvicorn, enforces before the application (so before
authentication) and before buffering past the limit:

- the request target, the number of header fields and the bytes of the whole head
  (414, 431: answered, then the connection is closed);
- a deadline for each request head: from the connection's opening for its first request
  (a client that connects and sends nothing is closed), from its first byte for a later
  one (the time between requests is uvicorn's keep-alive timeout);
- a timeout between the bytes of a body (408 while nothing was answered; closed);
- the open connections per worker: one more is closed before a byte of it is read.

It also writes a response's head and its first body bytes in one write (uvicorn writes
them apart: two sends, two packets, for every response).

The limits come from ctxstore's settings (``CTXSTORE_HTTP_*``), read once per process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ctxstore.http.problems import (
    HEAD_TOO_LARGE,
    MALFORMED,
    MEDIA_TYPE,
    TARGET_TOO_LONG,
    TIMED_OUT,
    ProblemType,
)
from ctxstore.settings import Settings, load_settings

#: Bytes a header field costs beyond its name and value (": " and CRLF).
_FIELD_OVERHEAD = 4


@dataclass(frozen=True)
class ConnectionLimits:
    max_request_line: int
    max_headers: int
    max_header_bytes: int
    head_timeout: float
    body_timeout: float
    max_connections: int

    @classmethod
    def from_settings(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            max_request_line=settings.http_max_request_line,
            max_headers=settings.http_max_headers,
            max_header_bytes=settings.http_max_header_bytes,
            head_timeout=settings.http_head_timeout,
            body_timeout=settings.http_body_timeout,
            max_connections=settings.http_max_connections,
        )


@cache
def process_limits() -> ConnectionLimits:
    return ConnectionLimits.from_settings(load_settings())


class _Refused(Exception):
    """Raised from a parser callback to stop parsing: the request breaks a limit."""

    def __init__(self, kind: ProblemType, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class BoundedHttpProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = process_limits()
        #: Whether the bytes arriving belong to a request head (else to a body).
        self._in_head = True
        self._head_bytes = 0
        self._first_request = True
        self._header_count = 0
        self._refusal: _Refused | None = None
        #: The connection's one timer, and the deadline and action it serves (see _arm).
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._on_deadline: Callable[[], None] | None = None

    # -- the connection ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self.logger.warning(
                "connection refused: %d open, the limit is %d",
                len(self.connections) - 1,
                self.limits.max_connections,
            )
            transport.abort()
            return
        self._arm(self.limits.head_timeout, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        if self._in_head:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse(_malformed("protocol upgrades are not served"))
            return
        except httptools.HttpParserError:
            refusal = self._refusal or _malformed("the request is not valid HTTP/1.1")
            self._refuse(refusal)
            return
        # The head so far, unparsed into fields yet (httptools keeps a field until it ends).
        if self._in_head and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(self._head_too_large())

    # -- parser callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_count = 0
        if not self._first_request:
            # A later request's head: its deadline runs from its first byte.
            self._arm(self.limits.head_timeout, self._head_timed_out)

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_request_line:
            self._refusal = _Refused(
                TARGET_TOO_LONG,
                f"the request target is longer than {self.limits.max_request_line} bytes",
            )
            raise self._refusal

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            self._refusal = _Refused(
                HEAD_TOO_LARGE, f"the request has more than {self.limits.max_headers} header fields"
            )
            raise self._refusal
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        size = len(self.url) + sum(len(n) + len(v) + _FIELD_OVERHEAD for n, v in self.headers)
        if size > self.limits.max_header_bytes:
            self._refusal = self._head_too_large()
            raise self._refusal
        self._in_head = False
        self._head_bytes = 0
        self._first_request = False
        self._arm(self.limits.body_timeout, self._body_timed_out)
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None:  # its task is created, not started: it writes through this
            cycle.transport = cast(asyncio.Transport, _HeadWithBody(self.transport, cycle))

    def on_body(self, body: bytes) -> None:
        self._arm(self.limits.body_timeout, self._body_timed_out)
        super().on_body(body)

    def on_response_complete(self) -> None:
        cycle = self.cycle
        if cycle is not None and isinstance(cycle.transport, _HeadWithBody):
            cycle.transport.flush()  # a head with no body (HEAD, 304) goes now
        super().on_response_complete()

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head = True
        super().on_message_complete()

    # -- refusals and timers ----------------------------------------------------------------

    def _head_too_large(self) -> _Refused:
        return _Refused(
            HEAD_TOO_LARGE,
            f"the request line and headers are larger than {self.limits.max_header_bytes} bytes",
        )

    def _head_timed_out(self) -> None:
        if self._first_request and self._head_bytes == 0:
            self.transport.close()  # nothing was asked: nothing to answer
            return
        self._refuse(
            _Refused(TIMED_OUT, f"the request head took longer than {self.limits.head_timeout} s")
        )

    def _body_timed_out(self) -> None:
        if self.flow.read_paused:
            # Not the client's doing: the application has yet to take what arrived.
            self._arm(self.limits.body_timeout, self._body_timed_out)
            return
        cycle = self.cycle
        if cycle is None or cycle.response_started or cycle.disconnected:
            # Already answered (a 401 before its body, say): nothing more to say.
            self._disarm()
            self.transport.close()
            return
        # The application sees a disconnect; whatever it answers goes nowhere.
        cycle.disconnected = True
        cycle.message_event.set()
        self._refuse(
            _Refused(
                TIMED_OUT,
                f"the request body stopped arriving for {self.limits.body_timeout} s",
            )
        )

    def _refuse(self, refusal: _Refused) -> None:
        """Answer ``refusal`` when no response is under way, then close."""
        self._disarm()
        self._refusal = None
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or cycle.response_complete or not cycle.response_started:
            self.transport.write(_raw_problem(refusal.kind, refusal.detail))
        self.transport.close()

    def _arm(self, seconds: float, callback: Callable[[], None]) -> None:
        """``callback`` once ``seconds`` pass, unless disarmed or armed again before.

        Every request arms three deadlines (its head, its body, each body chunk's), and a
        timer costs about 2 µs to make and cancel: the connection keeps one timer, moved
        only when a deadline comes earlier than it; when it fires early it sets itself
        for the deadline then current.
        """
        deadline = self.loop.time() + seconds
        self._deadline, self._on_deadline = deadline, callback
        timer = self._timer
        if timer is None or timer.when() > deadline:
            if timer is not None:
                timer.cancel()
            self._timer = self.loop.call_at(deadline, self._deadline_reached)

    def _deadline_reached(self) -> None:
        self._timer = None
        callback = self._on_deadline
        if callback is None:
            return  # disarmed
        if self._deadline > self.loop.time():  # armed again since: a later deadline
            self._timer = self.loop.call_at(self._deadline, self._deadline_reached)
            return
        self._on_deadline = None
        callback()

    def _disarm(self) -> None:
        self._on_deadline = None  # the timer, if it fires, has nothing to do


class _HeadWithBody:
    """A request's transport, as its response cycle sees it: the response head is held
    until the first body bytes and written with them.  Everything else passes through
    (an interim ``100 Continue`` is written before the response starts); the head is
    written before a close and when the response completes without a body."""

    def __init__(self, transport: asyncio.Transport, cycle: Any) -> None:
        self._transport = transport
        self._cycle = cycle
        self._head: bytes | None = None
        self._head_done = False

    def write(self, data: bytes) -> None:
        if not self._head_done and self._cycle.response_started:
            self._head_done = True
            self._head = data
            return
        if self._head is not None:
            data, self._head = self._head + data, None
        self._transport.write(data)

    def flush(self) -> None:
        if self._head is not None:
            head, self._head = self._head, None
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _malformed(detail: str) -> _Refused:
    return _Refused(MALFORMED, detail)


def _raw_problem(kind: ProblemType, detail: str) -> bytes:
    body = json.dumps(
        {"type": kind.uri, "title": kind.title, "status": kind.status, "detail": detail},
        separators=(",", ":"),
    ).encode()
    return b"".join(
        (
            STATUS_LINE[kind.status],
            b"content-type: " + MEDIA_TYPE.encode() + b"\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
            body,
        )
    )
