"""Each operation's scope, checked by its route before the body is read or the
parameters validated.  The token itself was checked by the middleware; here it must
carry the scope the operation names in its OpenAPI entry (``x-required-scope``).

A lookup in the route's own ASGI app (ctxstore.http.registry), not a FastAPI dependency:
one set membership per request instead of a dependency graph to solve.
"""

from __future__ import annotations

from typing import Any

from starlette.types import Scope

from ctxstore.http.auth import SCOPES, Principal
from ctxstore.http.middleware import CHALLENGE, PRINCIPAL_KEY, PUBLIC
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


def required_scope(path: str, openapi_extra: dict[str, Any] | None) -> str:
    """The scope a route's ``openapi_extra`` names (``guarded``, ``public``)."""
    scope = (openapi_extra or {}).get(SCOPE_KEY)
    if scope != PUBLIC and scope not in SCOPES:
        raise ValueError(f"route {path} names no scope (openapi_extra={SCOPE_KEY!r})")
    return str(scope)


def check_scope(scope: Scope, required: str) -> None:
    """401 or 403 unless the request's token carries ``required`` (a public route: none)."""
    if required == PUBLIC:
        return
    principal = scope.get(PRINCIPAL_KEY)
    if not isinstance(principal, Principal):  # the middleware answers these first
        raise Problem(UNAUTHORIZED, "a bearer token is required", headers=_challenge(None))
    if required not in principal.scopes:
        raise Problem(
            FORBIDDEN, f"this token lacks the {required!r} scope", headers=_challenge(required)
        )


def _challenge(scope: str | None) -> dict[str, str]:
    if scope is None:
        return {"WWW-Authenticate": CHALLENGE}
    return {"WWW-Authenticate": f'{CHALLENGE}, error="insufficient_scope", scope="{scope}"'}
