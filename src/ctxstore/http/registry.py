"""Routes declared with decorators in their modules, served by Starlette's routing and
documented by FastAPI.

``install`` adds each route to the app as a Starlette ``Route`` whose ASGI app checks the
token's scope, validates the parameters (ctxstore.http.parameters) and calls the
endpoint: no dependency solving on a request's path.  The same declarations, as FastAPI
``APIRoute``s that serve nothing, are what the OpenAPI document is made from
(``documented``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ctxstore.http.parameters import Parameters
from ctxstore.http.security import check_scope, required_scope

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


class RouteApp:
    """One route's ASGI app.  ``path`` is its template: ``scope["route"]`` is this app, so
    the metrics and the access log name the template on every Starlette release."""

    __slots__ = ("endpoint", "parameters", "path", "required_scope")

    def __init__(
        self,
        path: str,
        endpoint: Callable[..., Coroutine[Any, Any, Response]],
        required_scope: str,
    ) -> None:
        self.path = path
        self.endpoint = endpoint
        self.required_scope = required_scope
        self.parameters = Parameters.of(endpoint)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = self
        check_scope(scope, self.required_scope)
        request = Request(scope, receive, send)
        response = await self.endpoint(**self.parameters.values(request))
        if not isinstance(response, Response):
            raise TypeError(f"{self.path}: the endpoint must return a Response")
        await response(scope, receive, send)


class Routes:
    def __init__(self) -> None:
        self._routes: list[tuple[str, str, Callable[..., Any], dict[str, Any]]] = []
        self._documented: list[APIRoute] | None = None

    def route(self, method: str, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        """Declare the decorated endpoint as ``method`` on ``path`` (FastAPI's options)."""

        def register(endpoint: Endpoint) -> Endpoint:
            self._routes.append((method, path, endpoint, options))
            return endpoint

        return register

    def get(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route("GET", path, **options)

    def put(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route("PUT", path, **options)

    def post(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route("POST", path, **options)

    def delete(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self.route("DELETE", path, **options)

    def install(self, app: FastAPI) -> None:
        """Serve the routes on ``app``'s own router (not an included router, whose extra
        layer of matching would cost on every request)."""
        for method, path, endpoint, options in self._routes:
            required = required_scope(path, options.get("openapi_extra"))
            served = RouteApp(path, endpoint, required)
            app.router.routes.append(Route(path, served, methods=[method], name=endpoint.__name__))

    def documented(self) -> list[APIRoute]:
        """The routes as FastAPI declares them, for the OpenAPI document only."""
        if self._documented is None:
            router = APIRouter()
            for method, path, endpoint, options in self._routes:
                router.add_api_route(path, endpoint, methods=[method], **options)
            self._documented = [r for r in router.routes if isinstance(r, APIRoute)]
        return self._documented
