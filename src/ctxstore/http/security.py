"""Each operation's scope, checked by its route before the body is read or the
parameters validated.  The token itself was checked by the middleware; here it must
carry the scope the operation names in its OpenAPI entry (``x-required-scope``).

A route class rather than a FastAPI dependency: one dictionary lookup per request
instead of a dependency graph to solve.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import request_response

from ctxstore.http.auth import SCOPES, Principal
from ctxstore.http.middleware import CHALLENGE, PRINCIPAL_KEY, PUBLIC
from ctxstore.http.parameters import direct_handler
from ctxstore.http.problems import FORBIDDEN, UNAUTHORIZED, Problem

SCOPE_KEY = "x-required-scope"
#: The OpenAPI security scheme every operation requires.
BEARER_SCHEME = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "A token from CTXSTORE_HTTP_TOKENS; each operation names the scope "
        "it needs (x-required-scope): read, write or admin.",
    }
}


def guarded(scope: str) -> dict[str, Any]:
    """A route's ``openapi_extra``: its scope, and the bearer scheme."""
    if scope not in SCOPES:
        raise ValueError(f"unknown scope {scope!r}")
    return {SCOPE_KEY: scope, "security": [{"bearer": []}]}


def public() -> dict[str, Any]:
    """A route anyone may call (the probes): a token is optional; it may show more."""
    return {SCOPE_KEY: PUBLIC, "security": [{}, {"bearer": []}]}


class ScopedRoute(APIRoute):
    """A route that answers 401 or 403 unless the request's token has its scope."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._direct: Callable[[Request], Coroutine[Any, Any, Response]] | None = None
        super().__init__(*args, **kwargs)
        if self._direct is not None:
            # FastAPI's request_response opens two exit stacks a request, for the cleanup
            # of dependencies with yield; a route called directly has none: Starlette's.
            self.app = request_response(self._direct)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        direct = direct_handler(self)
        handler = self._scoped(direct or super().get_route_handler())
        self._direct = handler if direct is not None else None
        return handler

    def _scoped(
        self, handler: Callable[[Request], Coroutine[Any, Any, Response]]
    ) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        scope = (self.openapi_extra or {}).get(SCOPE_KEY)
        if scope == PUBLIC:
            return handler
        if scope not in SCOPES:
            raise ValueError(f"route {self.path} names no scope (openapi_extra={SCOPE_KEY!r})")

        async def checked(request: Request) -> Response:
            principal = request.scope.get(PRINCIPAL_KEY)
            if not isinstance(principal, Principal):  # the middleware answers these first
                raise Problem(UNAUTHORIZED, "a bearer token is required", headers=_challenge(None))
            if scope not in principal.scopes:
                raise Problem(
                    FORBIDDEN, f"this token lacks the {scope!r} scope", headers=_challenge(scope)
                )
            return await handler(request)

        return checked


def _challenge(scope: str | None) -> dict[str, str]:
    if scope is None:
        return {"WWW-Authenticate": CHALLENGE}
    return {"WWW-Authenticate": f'{CHALLENGE}, error="insufficient_scope", scope="{scope}"'}
