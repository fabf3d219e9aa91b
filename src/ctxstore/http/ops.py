"""The operator's routes: liveness, readiness, metrics, and the OpenAPI document."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from fastapi import Request
from starlette.responses import JSONResponse, Response

from ctxstore.db.compat import CodeRevisions, SchemaCheck, SchemaState, check
from ctxstore.db.errors import reading_revision, translated
from ctxstore.errors import CtxStoreError, SchemaMissingError
from ctxstore.http.auth import Principal
from ctxstore.http.docs import problems
from ctxstore.http.metrics import CONTENT_TYPE, Metrics
from ctxstore.http.middleware import PRINCIPAL_KEY
from ctxstore.http.problems import ERROR_TYPES, problem_response
from ctxstore.http.registry import Routes
from ctxstore.http.schemas import Health, NotReady, Ready
from ctxstore.http.security import guarded, public
from ctxstore.storage.postgres import PostgresStorage

#: The readiness query's own bound (seconds): a probe must answer quickly either way.
READY_TIMEOUT = 3.0

log = logging.getLogger("ctxstore.http")
router = Routes()


@router.get(
    "/healthz",
    operation_id="healthz",
    summary="The process is alive (touches no database; no token needed)",
    response_model=Health,
    responses=problems(),
    openapi_extra=public(),
)
async def healthz() -> Response:
    return Response(b'{"status":"ok"}', media_type="application/json")


@router.get(
    "/readyz",
    operation_id="readyz",
    summary="PostgreSQL answers and its schema is one this server runs on: at its head "
    "revision, or ahead of it by a later release's additive revisions (no token needed; "
    "with an admin token, the revision, or the reason it is not ready)",
    response_model=Ready,
    responses={503: {"model": NotReady, "description": "Not ready"}, **problems()},
    openapi_extra=public(),
)
async def readyz(request: Request) -> Response:
    store: PostgresStorage = request.app.state.store
    code: CodeRevisions = request.app.state.code_revisions
    principal = request.scope.get(PRINCIPAL_KEY)
    detailed = isinstance(principal, Principal) and "admin" in principal.scopes
    try:
        with translated(reading_revision(store.url)):
            async with asyncio.timeout(READY_TIMEOUT), store.driver() as driver:
                found = await check(driver, code)
    except CtxStoreError as error:
        if detailed:
            raise
        # What `ctxstore db current` says for the same URL (the same translation of the
        # same failure): which host refused and what to check; its password masked.
        log.warning("not ready: %s", error)
        return _not_ready(request)
    if not found.runnable:
        log.warning("not ready: %s", found.reason)
        return _schema_problem(request, found) if detailed else _not_ready(request)
    if not detailed:
        return JSONResponse({"status": "ready"})
    if found.state is SchemaState.AHEAD:
        return JSONResponse({"status": "ready", "revision": found.revision, "detail": found.reason})
    return JSONResponse({"status": "ready", "revision": found.revision})


def _not_ready(request: Request) -> Response:
    return JSONResponse(
        {"status": "not ready"},
        status_code=503,
        headers={"Retry-After": str(request.app.state.retry_after)},
    )


def _schema_problem(request: Request, found: SchemaCheck) -> Response:
    """The schema-missing problem with the check's own reason as its detail, not the
    type's fixed text: it names revisions and what to run, nothing a driver said, and
    the fix differs (a pre-release schema older than 0026 needs ctxstore 0.x first)."""
    kind = replace(ERROR_TYPES[SchemaMissingError], fixed_detail=None)
    headers = {"Retry-After": str(request.app.state.retry_after)}
    return problem_response(kind, found.reason, headers, revision=found.revision, head=found.head)


@router.get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics (text format 0.0.4)",
    responses={
        200: {
            "description": "The metrics",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        },
        **problems(),
    },
    response_class=Response,
    openapi_extra=guarded("admin"),
)
async def metrics(request: Request) -> Response:
    collected: Metrics = request.app.state.metrics
    return Response(await collected.render(), media_type=CONTENT_TYPE)


@router.get("/openapi.json", include_in_schema=False, openapi_extra=guarded("read"))
async def openapi(request: Request) -> Response:
    return JSONResponse(request.app.openapi())
