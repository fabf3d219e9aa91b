"""The ASGI application: routes, error handlers, middleware and the store's lifetime.

``app_from_environment`` is what ``ctxstore serve`` hands to uvicorn (a factory, so each
worker process builds its own app, store and connection pool).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from sqlalchemy import URL
from starlette.exceptions import HTTPException
from starlette.responses import Response

from ctxstore import __version__, telemetry
from ctxstore.context.builder import ContextBuilder
from ctxstore.db import compat
from ctxstore.errors import CtxStoreError, InvalidInputError
from ctxstore.http import ops, routes
from ctxstore.http.auth import Principal, TokenRegistry
from ctxstore.http.logs import configure_logging
from ctxstore.http.metrics import Metrics
from ctxstore.http.middleware import ServiceMiddleware, route_of
from ctxstore.http.openapi import openapi_document
from ctxstore.http.problems import (
    BODY_TOO_LARGE,
    ERROR_TYPES,
    FORBIDDEN,
    INTERNAL,
    MALFORMED,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    TIMED_OUT,
    UNAUTHORIZED,
    Problem,
    error_response,
    problem_response,
    problem_type_of,
)
from ctxstore.http.settings import HttpSettings
from ctxstore.http.workers import end_with_parent
from ctxstore.settings import load_settings
from ctxstore.storage.postgres import PostgresStorage

log = logging.getLogger("ctxstore.http")

_BY_STATUS = {
    400: MALFORMED,
    401: UNAUTHORIZED,
    403: FORBIDDEN,
    404: NOT_FOUND,
    405: METHOD_NOT_ALLOWED,
    408: TIMED_OUT,
    413: BODY_TOO_LARGE,
}
_WRITES = frozenset({"PUT", "POST", "DELETE", "PATCH"})
# FastAPI's own OpenTelemetry hooks (newer releases) would check for a provider on every
# request; the service's metrics are Prometheus's (metrics.py).
_NO_TELEMETRY: dict[str, Any] = (
    {"telemetry": {"tracing": False, "metrics": False, "logs": False}}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters
    else {}
)


def create_app(settings: HttpSettings, *, store: PostgresStorage | None = None) -> FastAPI:
    """The service on ``settings``; on ``store`` when given (left open at shutdown)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if store is not None:
            yield
            return
        _attach(app, settings.open_store())
        await _check_schema_at_start(app.state.store)
        # What the worker has built so far (modules, routes, schemas, the encoding) lives
        # as long as it does: out of the collector's sight, a full collection no longer
        # walks it (tens of milliseconds each, on the event loop, under load).
        gc.freeze()
        try:
            async with app.state.metrics.publishing():
                yield
        finally:
            await app.state.store.close()

    app = FastAPI(
        title="ctxstore",
        version=__version__,
        lifespan=lifespan,
        openapi_url=None,  # served by ops.openapi, behind a token like every route
        docs_url=None,
        redoc_url=None,
        **_NO_TELEMETRY,
    )
    app.state.metrics = Metrics()
    app.state.code_revisions = compat.code_revisions()
    app.state.retry_after = settings.retry_after
    app.state.max_messages = settings.max_messages
    if store is not None:
        _attach(app, store)
    routes.router.install(app)
    ops.router.install(app)
    app.state.documented_routes = [*routes.router.documented(), *ops.router.documented()]
    _install_handlers(app, settings.retry_after)
    app.add_middleware(
        ServiceMiddleware,
        tokens=settings.tokens,
        metrics=app.state.metrics,
        max_body_bytes=settings.max_body_bytes,
        body_timeout=settings.body_timeout,
        log_requests=settings.access_log,
    )
    app.openapi = lambda: openapi_document(app)  # type: ignore[method-assign]
    return app


def app_from_environment() -> FastAPI:
    """Each worker's entry: its settings read once, here."""
    settings = load_settings()  # valid: `ctxstore serve` checked them before it started
    # In each worker process: logging is not inherited.
    configure_logging(settings.http_log_format, settings.http_log_level)
    end_with_parent()
    telemetry.from_settings(settings)
    return create_app(HttpSettings.from_settings(settings))


def documentation_app() -> FastAPI:
    """The routes without a server behind them: enough to render the OpenAPI document."""
    placeholder = TokenRegistry({"sha256:" + "0" * 64: Principal("docs", frozenset({"read"}))})
    url = URL.create("postgresql+asyncpg", host="localhost", database="ctxstore")
    return create_app(HttpSettings(database_url=url, tokens=placeholder))


def _attach(app: FastAPI, store: PostgresStorage) -> None:
    app.state.store = store
    app.state.metrics.watch(store)
    app.state.builder = ContextBuilder(store)
    # The encoding loaded now, not by the worker's first write or context (100 ms or more).
    app.state.builder.counter.encoder  # noqa: B018
    app.state.builders = {}  # a builder per encoding a request's model asks for


async def _check_schema_at_start(store: PostgresStorage) -> None:
    """Say at start, in the log, when the schema is one this code can't run on, not first
    at a write.  The service starts all the same: /readyz answers 503 with the reason
    until `ctxstore db upgrade` runs, then turns ready."""
    try:
        async with asyncio.timeout(ops.READY_TIMEOUT):
            compat.report(await store.check_schema())
    except (CtxStoreError, TimeoutError) as error:
        # The class only: the driver's text may quote an address.
        log.warning(
            "schema check at start: the revision could not be read (%s); /readyz says when it can",
            type(error).__name__,
        )


def _install_handlers(app: FastAPI, retry_after: int) -> None:
    metrics: Metrics = app.state.metrics

    async def on_problem(request: Request, problem: Exception) -> Response:
        assert isinstance(problem, Problem)
        response = problem.response()
        metrics.count_problem(route_of(request.scope), problem.kind.slug, response.status_code)
        return response

    async def on_ctxstore_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, CtxStoreError)
        headers = request.headers
        # A false If-Match is 412 on any method; If-None-Match: * only guards writes.
        conditional = "if-match" in headers or (
            request.method in _WRITES and "if-none-match" in headers
        )
        response = error_response(error, conditional=conditional, retry_after=retry_after)
        kind = problem_type_of(error).slug
        metrics.count_problem(route_of(request.scope), kind, response.status_code)
        if response.status_code >= 500:
            # The class and SQLSTATE only: the message may quote the driver or an address.
            log.warning(
                "%s %s failed: %s (%s, sqlstate %s)%s",
                request.method,
                route_of(request.scope),
                kind,
                type(error).__name__,
                error.details.get("sqlstate"),
                _missing_grant(error),
            )
        return response

    async def on_invalid(_request: Request, error: Exception) -> Response:
        assert isinstance(error, RequestValidationError)
        found = error.errors()
        if any(item.get("type") == "json_invalid" for item in found):
            return problem_response(MALFORMED, "the request body is not valid JSON")
        listed = [_field_error(item) for item in found]
        if all(item.get("loc", ("",))[0] == "header" for item in found):
            return problem_response(MALFORMED, "a header is malformed", errors=listed)
        return problem_response(
            ERROR_TYPES[InvalidInputError],
            "the request breaks the schema: see errors",
            errors=listed,
        )

    async def on_http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        status = error.status_code
        kind = _BY_STATUS.get(status) or (MALFORMED if status < 500 else INTERNAL)
        detail = "no such resource" if status == 404 else str(error.detail)
        headers = dict(error.headers or {})
        if status == 405:
            # Starlette names the methods of the first route matching the path; the
            # resource has one route per method.
            headers["Allow"] = allowed_methods(app, request.url.path)
            detail = f"{request.method} is not one of this resource's methods ({headers['Allow']})"
        return problem_response(kind, detail, headers, status=status)

    app.add_exception_handler(Problem, on_problem)
    app.add_exception_handler(CtxStoreError, on_ctxstore_error)
    app.add_exception_handler(RequestValidationError, on_invalid)
    app.add_exception_handler(HTTPException, on_http_error)


def allowed_methods(app: FastAPI, path: str) -> str:
    """The methods the OpenAPI document lists for the resource at ``path``."""
    table: list[tuple[re.Pattern[str], str]] | None = getattr(app.state, "allow_table", None)
    if table is None:
        table = []
        for template, item in app.openapi()["paths"].items():
            source = re.sub(r"\\{[^}]*\\}", r"[\\s\\S]*", re.escape(template))
            listed = {m.upper() for m in item}
            if "GET" in listed:
                listed.add("HEAD")  # answered by the middleware for every GET
            table.append((re.compile(source), ", ".join(sorted(listed))))
        app.state.allow_table = table
    for compiled, methods in table:
        if compiled.fullmatch(path):
            return methods
    return ""


def _missing_grant(error: CtxStoreError) -> str:
    """What a permission error says to grant (names of roles and objects, no data)."""
    details = error.details
    if "privilege" not in details:
        return ""
    role = details.get("role") or "the URL's role"
    return (
        f": role {role} lacks {details['privilege']} on {details['object']} "
        "(`ctxstore db roles` prints the role to grant)"
    )


def _field_error(item: dict[str, Any]) -> dict[str, str]:
    location = ".".join(str(part) for part in item.get("loc", ()))
    message = str(item.get("msg", "invalid")).removeprefix("Value error, ")
    return {"location": location, "message": message}
