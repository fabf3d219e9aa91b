"""A route's path, query and header parameters, validated field by field, and its
endpoint called with them: what FastAPI's request handler does for the service's routes,
without its generic dependency solving (a tenth of an append's CPU, measured by
benchmarks/bench_http_wrk.py).

Each parameter is validated by the very field FastAPI built from its declaration (so
the OpenAPI document and the checks stay one), at the same location (``("header",
"If-Match")``), and the errors are FastAPI's ``RequestValidationError``.  A route this
module can't call directly (a dependency, a body parameter, a cookie, a list-valued
parameter, a synchronous endpoint) keeps FastAPI's handler.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, get_origin

from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

Handler = Callable[[Request], Coroutine[Any, Any, Response]]
_SOURCES = ("path", "query", "header")
_SEQUENCES = (list, tuple, set, frozenset)


def direct_handler(route: APIRoute) -> Handler | None:
    """The route's handler without dependency solving, or None: FastAPI's then."""
    dependant = route.dependant
    call = dependant.call
    if (
        call is None
        or not inspect.iscoroutinefunction(call)
        or dependant.dependencies
        or dependant.body_params
        or dependant.cookie_params
        or dependant.request_param_name is None
        or dependant.websocket_param_name is not None
        or dependant.http_connection_param_name is not None
        or dependant.response_param_name is not None
        or dependant.background_tasks_param_name is not None
        or dependant.security_scopes_param_name is not None
    ):
        return None
    fields = [
        *((field, "path") for field in dependant.path_params),
        *((field, "query") for field in dependant.query_params),
        *((field, "header") for field in dependant.header_params),
    ]
    plan = []
    for field, source in fields:
        info = field.field_info
        if get_origin(info.annotation) in _SEQUENCES or info.annotation in _SEQUENCES:
            return None  # list-valued: FastAPI collects every occurrence
        if info.validation_alias is not None and not isinstance(info.validation_alias, str):
            return None  # alias choices
        alias = field.validation_alias or field.alias
        plan.append(_Parameter(field, source, alias))
    request_name = dependant.request_param_name
    # Only the sources some parameter reads (a request's query is parsed when asked for).
    needed = tuple(dict.fromkeys(parameter.source for parameter in plan))

    async def handler(request: Request) -> Response:
        values: dict[str, Any] = {request_name: request}
        errors: list[Any] = []
        sources = {source: _SOURCE_OF[source](request) for source in needed}
        for parameter in plan:
            field, location = parameter.field, parameter.location
            raw = sources[parameter.source].get(parameter.alias)
            if raw is None:
                if parameter.required:
                    errors.append(_missing(location))
                    continue
                value = parameter.default()
                if field.field_info.validate_default:
                    value, problems = field.validate(value, values, loc=location)
                    if problems:
                        errors.extend(problems)
                        continue
                values[field.name] = value
                continue
            value, problems = field.validate(raw, values, loc=location)
            if problems:
                errors.extend(problems)
            else:
                values[field.name] = value
        if errors:
            raise RequestValidationError(errors)
        response = await call(**values)
        if not isinstance(response, Response):
            raise TypeError(f"{route.path}: the endpoint must return a Response")
        return response

    return handler


_SOURCE_OF: dict[str, Callable[[Request], Mapping[str, Any]]] = {
    "path": lambda request: request.path_params,
    "query": lambda request: request.query_params,
    "header": lambda request: request.headers,
}
#: Defaults shared safely between requests (FastAPI deep-copies any other for each).
_IMMUTABLE = frozenset({type(None), bool, int, float, str, bytes})


class _Parameter:
    """One parameter of a route, with what the handler needs of it worked out once."""

    __slots__ = ("_fixed", "_shared", "alias", "field", "location", "required", "source")

    def __init__(self, field: Any, source: str, alias: str) -> None:
        self.field = field
        self.source = source
        self.alias = alias
        self.location = (source, alias)
        self.required: bool = field.field_info.is_required()
        # A plain immutable default is shared; anything else is made for each request as
        # FastAPI makes it (``field.default`` calls a default factory).
        fixed = not self.required and field.field_info.default_factory is None
        self._shared = field.default if fixed else None
        self._fixed = fixed and type(self._shared) in _IMMUTABLE

    def default(self) -> Any:
        return self._shared if self._fixed else copy.deepcopy(self.field.default)


def _missing(location: tuple[str, str]) -> dict[str, Any]:
    return {"type": "missing", "loc": location, "msg": "Field required", "input": None}
