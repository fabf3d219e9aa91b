"""The limits of an HTTP/1.1 connection that hold before a request reaches the application.

uvicorn reads a request head of any size and gives a connection unlimited time to send
it (its keep-alive timer starts only after a first response).  ``ctxstore serve`` gives
uvicorn this module's event loop (uvicorn's documented ``loop="module:function"``): every
server it creates puts a ``ConnectionGate`` in front of uvicorn's own protocol, which it
drives only through the ``asyncio.Protocol`` interface.  The gate watches the bytes with
httptools' public parser and, before authentication and before buffering past a limit:

- closes a connection past the per-worker cap before a byte of it is read;
- refuses a request target, a count of header fields or a head larger than the limits
  (414, 431: answered, then the connection is closed);
- holds a deadline for each request head: from the connection's opening for its first
  request (a client that connects and sends nothing is closed unanswered), from its first
  byte for a later one (the time between requests is uvicorn's keep-alive timeout).

The body's limits (its size, the time between its bytes) are the ASGI middleware's
(ctxstore.http.middleware).  The limits come from ctxstore's settings (``CTXSTORE_HTTP_*``),
read once per process.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from http import HTTPStatus
from typing import Any, cast

import httptools

from ctxstore.http.logs import request_id_of
from ctxstore.http.problems import (
    HEAD_TOO_LARGE,
    MALFORMED,
    MEDIA_TYPE,
    TARGET_TOO_LONG,
    TIMED_OUT,
    ProblemType,
)
from ctxstore.settings import Settings, load_settings

#: What ``ctxstore serve`` passes as uvicorn's ``loop``.
LOOP_FACTORY = "ctxstore.http.connections:new_event_loop"
#: Bytes a header field costs beyond its name and value (": " and CRLF).
FIELD_OVERHEAD = 4

log = logging.getLogger("uvicorn.error")


@dataclass(frozen=True)
class ConnectionLimits:
    max_request_line: int
    max_headers: int
    max_header_bytes: int
    head_timeout: float
    max_connections: int

    @classmethod
    def from_settings(cls, settings: Settings) -> ConnectionLimits:
        return cls(
            max_request_line=settings.http_max_request_line,
            max_headers=settings.http_max_headers,
            max_header_bytes=settings.http_max_header_bytes,
            head_timeout=settings.http_head_timeout,
            max_connections=settings.http_max_connections,
        )


@cache
def process_limits() -> ConnectionLimits:
    return ConnectionLimits.from_settings(load_settings())


ProtocolFactory = Callable[[], asyncio.BaseProtocol]


def gated(serve: ProtocolFactory, limits: ConnectionLimits | None = None) -> ProtocolFactory:
    """``serve``'s protocol factory with a gate in front of each connection."""
    chosen = limits or process_limits()
    open_gates: set[ConnectionGate] = set()
    return lambda: ConnectionGate(serve, chosen, open_gates)


class _GatedServers:
    """Mixed into an event loop: every TCP server it creates is gated."""

    async def create_server(  # type: ignore[no-untyped-def]
        self, protocol_factory: ProtocolFactory, *args: Any, **kwargs: Any
    ):
        return await super().create_server(gated(protocol_factory), *args, **kwargs)  # type: ignore[misc]


class GatedSelectorLoop(_GatedServers, asyncio.SelectorEventLoop):
    pass


def new_event_loop() -> asyncio.AbstractEventLoop:
    """uvicorn's loop factory: uvloop's loop when it is installed (as uvicorn's ``auto``
    would choose), else asyncio's, either with its servers gated."""
    try:
        import uvloop  # noqa: PLC0415 - optional, as for uvicorn
    except ImportError:
        return GatedSelectorLoop()

    class GatedUvloop(_GatedServers, uvloop.Loop):  # type: ignore[misc]
        pass

    return GatedUvloop()


class _Refused(Exception):
    """Raised from a parser callback to stop parsing: the request breaks a limit."""

    def __init__(self, kind: ProblemType, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class ConnectionGate(asyncio.Protocol):
    """One connection: its bytes checked, then handed to the server's own protocol."""

    def __init__(
        self, serve: ProtocolFactory, limits: ConnectionLimits, open_gates: set[ConnectionGate]
    ) -> None:
        self._serve = serve
        self.limits = limits
        self._open_gates = open_gates
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpRequestParser(self)
        #: Whether the bytes arriving belong to a request head (else to a body).
        self._in_head = True
        self._head_bytes = 0
        self._first_request = True
        self._target_bytes = 0
        self._header_count = 0
        self._field_bytes = 0
        self._refusal: _Refused | None = None
        #: The connection's one timer, and the deadline it serves (see _arm).
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0.0
        self._armed = False

    # -- the connection, passed on to the server's protocol ---------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are asyncio's in behaviour, not by class: cast, not checked.
        transport = cast(asyncio.Transport, transport)
        if len(self._open_gates) >= self.limits.max_connections:
            log.warning(
                "connection refused: %d open, the limit is %d",
                len(self._open_gates),
                self.limits.max_connections,
            )
            transport.abort()
            return
        self._open_gates.add(self)
        self._transport = transport
        inner = cast(asyncio.Protocol, self._serve())
        self._inner = inner
        inner.connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._armed = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._open_gates.discard(self)
        if self._inner is not None:
            self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        inner = self._inner
        if inner is None or self._transport is None or self._transport.is_closing():
            return
        if self._in_head:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse(_Refused(MALFORMED, "protocol upgrades are not served"))
            return
        except httptools.HttpParserError:
            self._refuse(self._refusal or _Refused(MALFORMED, "the request is not valid HTTP/1.1"))
            return
        # The head so far, unparsed into fields yet (httptools keeps a field until it ends).
        if self._in_head and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(self._head_too_large())
            return
        inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    # -- httptools' parser callbacks ---------------------------------------------------------

    def on_message_begin(self) -> None:
        self._in_head = True
        self._target_bytes = self._header_count = self._field_bytes = 0
        if not self._first_request:
            # A later request's head: its deadline runs from its first byte.
            self._arm()

    def on_url(self, fragment: bytes) -> None:
        self._target_bytes += len(fragment)
        if self._target_bytes > self.limits.max_request_line:
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
        self._field_bytes += len(name) + len(value) + FIELD_OVERHEAD

    def on_headers_complete(self) -> None:
        if self._target_bytes + self._field_bytes > self.limits.max_header_bytes:
            self._refusal = self._head_too_large()
            raise self._refusal
        self._in_head = False
        self._head_bytes = 0
        self._first_request = False
        self._armed = False

    # -- refusals and the deadline ---------------------------------------------------------

    def _head_too_large(self) -> _Refused:
        return _Refused(
            HEAD_TOO_LARGE,
            f"the request line and headers are larger than {self.limits.max_header_bytes} bytes",
        )

    def _head_timed_out(self) -> None:
        if self._transport is None:
            return
        if self._first_request and self._head_bytes == 0:
            self._transport.close()  # nothing was asked: nothing to answer
            return
        self._refuse(
            _Refused(TIMED_OUT, f"the request head took longer than {self.limits.head_timeout} s")
        )

    def _refuse(self, refusal: _Refused) -> None:
        """Answer ``refusal`` and close; the server's protocol sees nothing more."""
        self._armed = False
        self._refusal = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        # The head was not read whole, so the caller's X-Request-ID is not known: a new id
        # ties the response to its log line.
        request_id = request_id_of(None)
        transport.write(raw_problem(refusal.kind, refusal.detail, request_id))
        transport.close()
        log.info(
            "refused before the application: %d %s",
            refusal.kind.status,
            refusal.detail,
            extra={"request_id": request_id},
        )

    def _arm(self) -> None:
        """The head deadline, ``head_timeout`` from now.

        Every request arms it and its head's end disarms it, and a timer costs about 2 µs
        to make and cancel: the connection keeps one timer, moved only when the deadline
        comes earlier than it; when it fires early it sets itself for the deadline then
        current.
        """
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + self.limits.head_timeout
        self._armed = True
        timer = self._timer
        if timer is None or timer.when() > self._deadline:
            if timer is not None:
                timer.cancel()
            self._timer = loop.call_at(self._deadline, self._deadline_reached)

    def _deadline_reached(self) -> None:
        self._timer = None
        if not self._armed:
            return
        loop = asyncio.get_running_loop()
        if self._deadline > loop.time():  # armed again since: a later deadline
            self._timer = loop.call_at(self._deadline, self._deadline_reached)
            return
        self._armed = False
        self._head_timed_out()


def raw_problem(kind: ProblemType, detail: str, request_id: str) -> bytes:
    """A whole HTTP/1.1 response: the problem, then the connection is closed."""
    body = json.dumps(
        {"type": kind.uri, "title": kind.title, "status": kind.status, "detail": detail},
        separators=(",", ":"),
    ).encode()
    return b"".join(
        (
            f"HTTP/1.1 {kind.status} {HTTPStatus(kind.status).phrase}\r\n".encode(),
            b"content-type: " + MEDIA_TYPE.encode() + b"\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"x-request-id: " + request_id.encode() + b"\r\n",
            b"connection: close\r\n\r\n",
            body,
        )
    )
