"""The operator's routes: liveness, readiness, metrics, and the OpenAPI document."""

from __future__ import annotations

import asyncio
import logging

from fastapi import Request
from starlette.responses import JSONResponse, Response

from ctxstore.db.errors import schema_missing, translated
from ctxstore.errors import CtxStoreError
from ctxstore.http.auth import Principal
from ctxstore.http.docs import problems
from ctxstore.http.metrics import CONTENT_TYPE, Metrics
from ctxstore.http.middleware import PRINCIPAL_KEY
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
    summary="PostgreSQL answers and its schema is at this server's head revision (no token "
    "needed; with an admin token, the revision, or the reason it is not ready)",
    response_model=Ready,
    responses={503: {"model": NotReady, "description": "Not ready"}, **problems()},
    openapi_extra=public(),
)
async def readyz(request: Request) -> Response:
    store: PostgresStorage = request.app.state.store
    head: str = request.app.state.head_revision
    principal = request.scope.get(PRINCIPAL_KEY)
    detailed = isinstance(principal, Principal) and "admin" in principal.scopes
    try:
        with translated("readiness check"):
            async with asyncio.timeout(READY_TIMEOUT), store.driver() as driver:
                revision = await driver.fetchval("SELECT version_num FROM alembic_version")
        if revision != head:
            raise schema_missing("readiness check", f"revision {revision}", current=revision)
    except CtxStoreError as error:
        if detailed:
            raise
        log.warning("not ready: %s", type(error).__name__)
        return JSONResponse(
            {"status": "not ready"},
            status_code=503,
            headers={"Retry-After": str(request.app.state.retry_after)},
        )
    if detailed:
        return JSONResponse({"status": "ready", "revision": head})
    return JSONResponse({"status": "ready"})


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
    return Response(collected.render(), media_type=CONTENT_TYPE)


@router.get("/openapi.json", include_in_schema=False, openapi_extra=guarded("read"))
async def openapi(request: Request) -> Response:
    return JSONResponse(request.app.openapi())
