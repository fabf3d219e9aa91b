"""Routes declared with decorators in their modules, added to the app by ``install``.

The app's own ``add_api_route``, not ``include_router``: an included router is matched
through a layer of its own on every request (half the routing cost, measured).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import FastAPI

from ctxstore.http.security import ScopedRoute

Endpoint = TypeVar("Endpoint", bound=Callable[..., Any])


class Routes:
    def __init__(self) -> None:
        self._routes: list[tuple[str, str, Callable[..., Any], dict[str, Any]]] = []

    def _method(self, method: str, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        def register(endpoint: Endpoint) -> Endpoint:
            self._routes.append((method, path, endpoint, options))
            return endpoint

        return register

    def get(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._method("GET", path, **options)

    def put(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._method("PUT", path, **options)

    def post(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._method("POST", path, **options)

    def delete(self, path: str, **options: Any) -> Callable[[Endpoint], Endpoint]:
        return self._method("DELETE", path, **options)

    def install(self, app: FastAPI) -> None:
        for method, path, endpoint, options in self._routes:
            app.router.add_api_route(
                path, endpoint, methods=[method], route_class_override=ScopedRoute, **options
            )
