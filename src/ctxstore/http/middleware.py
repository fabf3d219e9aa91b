"""What every request goes through before its route: authentication, the body's limits,
timing, the access log, and the last-resort 500.

A plain ASGI middleware (no per-request task or body buffering).  The token is checked
here, before a byte of the body is read or parsed: an unauthenticated client gets 401
whatever it sends.  The route then checks the token's scope (ctxstore.http.security).

The body's limits hold here, as it is received: its size (413) and the time between its
bytes (408, when the application waits for a byte that does not come).  A response that
starts before its request's body was read whole closes the connection after it, so a
body that stops after a refusal holds nothing.  The request head's limits are the
connection's (ctxstore.http.connections).

Every request has an id: the caller's ``X-Request-ID`` when well-formed, else a new one
(ctxstore.http.logs).  It tags every log line of the request (the access line's too), is
put on the current OpenTelemetry span, and comes back in the response's ``X-Request-ID``,
whoever answers (a route, or this middleware's 401, 413 or 500).
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from typing import Any
from urllib.parse import unquote_to_bytes

from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ctxstore import telemetry
from ctxstore.http import logs
from ctxstore.http.auth import TokenRegistry
from ctxstore.http.metrics import Metrics
from ctxstore.http.problems import (
    BODY_TOO_LARGE,
    INTERNAL,
    MALFORMED,
    UNAUTHORIZED,
    problem_response,
)
from ctxstore.redaction import redact

PRINCIPAL_KEY = "ctxstore.principal"
#: The scope of the routes that need no token: the probes a deployment calls.
PUBLIC = "public"
PUBLIC_PATHS = frozenset({"/healthz", "/readyz"})
#: Answered before routing (401, 413 by Content-Length): no route template to label with.
UNROUTED = "-"
CHALLENGE = 'Bearer realm="ctxstore"'
#: The status metrics and the access log give a request whose client left (nginx's 499).
CLIENT_CLOSED = 499

#: The rest of an unread body is never waited for: the connection ends with the response.
_CLOSE = (b"connection", b"close")
REQUEST_ID_HEADER = b"x-request-id"

access_log = logging.getLogger("ctxstore.http.access")
error_log = logging.getLogger("ctxstore.http")


class BodyTooLarge(HTTPException):
    """Raised by receive() once a body passes the limit (FastAPI re-raises HTTPExceptions
    met while it reads a body, where it would turn anything else into a 400)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body is larger than the limit of {limit} bytes")


class BodyTimedOut(HTTPException):
    """Raised by receive() when no byte of the body arrived for the body timeout."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"the request body stopped arriving for {seconds} s")


class ServiceMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens: TokenRegistry,
        metrics: Metrics,
        max_body_bytes: int,
        body_timeout: float = 10.0,
        log_requests: bool = True,
    ) -> None:
        self.app = app
        self.tokens = tokens
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.body_timeout = body_timeout
        self.log_requests = log_requests

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = logs.request_id_of(_given_request_id(scope))
        serving = logs.serving(request_id)
        telemetry.mark_request(request_id)
        state = _Exchange(send, request_id.encode("ascii"))
        principal = "-"
        try:
            name, length, hosts, presented, chunked = self._read_headers(scope)
            state.body_done = not chunked and not length
            if hosts != 1 and scope.get("http_version") == "1.1":
                await _answer(scope, receive, state, _not_one_host(hosts))
            elif name is None and not (self._public(scope) and not presented):
                await _answer(scope, receive, state, _unauthorized(presented))
            elif length is not None and length > self.max_body_bytes:
                await _answer(scope, receive, state, self._too_large())
            elif not _exact_path(scope):
                await _answer(scope, receive, state, _not_utf8())
            else:
                principal = name or "-"
                if scope["method"] == "HEAD":
                    # Every GET route answers HEAD: the GET, its body left unsent.
                    scope = {**scope, "method": "GET"}
                    await self.app(scope, self._limited(receive, state), state.send_head)
                else:
                    await self.app(scope, self._limited(receive, state), state.send)
        except ClientDisconnect:
            # The client went away while its body was read: nobody to answer, no bug.
            state.status = CLIENT_CLOSED
        except Exception as error:
            # A bug (ctxstore errors have their handler): its traceback, redacted, for the
            # operator; the client learns nothing of it.
            error_log.error(
                "unhandled %s on %s %s:\n%s",
                type(error).__name__,
                scope.get("method"),
                route_of(scope),
                redact("".join(traceback.format_exception(error, chain=False))),
            )
            if not state.started:
                await _answer(scope, receive, state, problem_response(INTERNAL))
        finally:
            seconds = time.perf_counter() - started
            route = route_of(scope)
            self.metrics.observe(route, scope["method"], state.status, seconds)
            if self.log_requests:
                milliseconds = seconds * 1000
                access_log.info(
                    "%s %s %d %.1fms by %s",
                    scope["method"],
                    route,
                    state.status,
                    milliseconds,
                    principal,
                    extra={
                        "method": scope["method"],
                        "route": route,
                        "status": state.status,
                        "duration_ms": round(milliseconds, 1),
                        "principal": principal,
                    },
                )
            logs.served(serving)

    def _read_headers(self, scope: Scope) -> tuple[str | None, int | None, int, bool, bool]:
        """The token's name (None: no valid token; else its Principal is put in the
        scope), the declared body length, how many Host fields came, whether an
        Authorization field did, and whether the body is sent in chunks."""
        authorization = length = None
        hosts = 0
        chunked = False
        for key, value in scope["headers"]:
            if key == b"authorization":
                authorization = value
            elif key == b"content-length":
                length = value
            elif key == b"host":
                hosts += 1
            elif key == b"transfer-encoding":
                chunked = True
        name = None
        if authorization is not None:
            scheme, _, token = authorization.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                found = self.tokens.authenticate(token.strip())
                if found is not None:
                    scope[PRINCIPAL_KEY] = found
                    name = found.name
        declared = int(length) if length is not None and length.isdigit() else None
        return name, declared, hosts, authorization is not None, chunked

    @staticmethod
    def _public(scope: Scope) -> bool:
        """A probe (asked without a token: a wrong token is still 401)."""
        return scope["path"] in PUBLIC_PATHS

    def _too_large(self) -> Any:
        return problem_response(
            BODY_TOO_LARGE,
            f"the request body is larger than the limit of {self.max_body_bytes} bytes",
        )

    def _limited(self, receive: Receive, state: _Exchange) -> Receive:
        limit = self.max_body_bytes
        seconds = self.body_timeout
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            if state.body_done:
                return await receive()  # a disconnect, awaited as long as it takes
            try:
                async with asyncio.timeout(seconds):
                    message = await receive()
            except TimeoutError:
                raise BodyTimedOut(seconds) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
                state.body_done = not message.get("more_body", False)
            return message

        return limited


class _Exchange:
    """Remembers the response's status as it is sent, gives every response the request's
    id, and closes the connection after a response that starts before the request's body
    was read whole."""

    def __init__(self, send: Send, request_id: bytes) -> None:
        self._send = send
        self._request_id = (REQUEST_ID_HEADER, request_id)
        self.status = 500
        self.started = False
        self.body_done = True
        self._body_sent = False

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.started = True
            added = [self._request_id] if self.body_done else [self._request_id, _CLOSE]
            message = {**message, "headers": [*message.get("headers", ()), *added]}
        await self._send(message)

    async def send_head(self, message: Message) -> None:
        """The response to a GET, as HEAD's: status and headers, no body."""
        if message["type"] == "http.response.body":
            message = {"type": "http.response.body", "body": b"", "more_body": False}
            if self._body_sent:
                return
            self._body_sent = True
        await self.send(message)


def _given_request_id(scope: Scope) -> bytes | None:
    """The first X-Request-ID the caller sent (None: none)."""
    for key, value in scope["headers"]:
        if key == REQUEST_ID_HEADER:
            return bytes(value)
    return None


async def _answer(scope: Scope, receive: Receive, state: _Exchange, response: Any) -> None:
    await response(scope, receive, state.send)


def _unauthorized(presented: bool) -> Any:
    # RFC 6750 section 3.1: a request that sent a token this server doesn't know says so.
    challenge = f'{CHALLENGE}, error="invalid_token"' if presented else CHALLENGE
    return problem_response(
        UNAUTHORIZED,
        "send Authorization: Bearer <token> with a token this server knows",
        {"WWW-Authenticate": challenge},
    )


def _not_one_host(count: int) -> Any:
    return problem_response(
        MALFORMED, f"an HTTP/1.1 request has exactly one Host header field, not {count}"
    )


def route_of(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path.replace(":ctxstore_id}", "}") if isinstance(path, str) else UNROUTED


def _exact_path(scope: Scope) -> bool:
    """Whether the path, percent-decoded from the raw bytes, is UTF-8.  The ASGI server
    decodes it with replacement: ``%FFabc`` and ``%EF%BF%BDabc`` would name one session."""
    raw = scope.get("raw_path")
    if not isinstance(raw, bytes):
        return True
    try:
        unquote_to_bytes(raw.partition(b"?")[0]).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _not_utf8() -> Any:
    return problem_response(
        MALFORMED,
        "the request path is not UTF-8 once percent-decoded: ids are exact text, never "
        "guessed (percent-encode each id's UTF-8 bytes)",
    )
