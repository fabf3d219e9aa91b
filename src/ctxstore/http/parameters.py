"""A route's path, query and header parameters, parsed and validated as they are declared.

Each endpoint declares its parameters as FastAPI reads them (``Annotated[str | None,
Header(alias="If-Match", pattern=...)]``), so FastAPI documents them in the OpenAPI
document.  Requests are served by Starlette's routing (ctxstore.http.registry), and each
parameter is validated here by a pydantic ``TypeAdapter`` of that same annotation: the
same checks and messages as FastAPI's, at its locations (``("header", "If-Match")``),
raised as its public ``RequestValidationError``.  Nothing is solved per request.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from fastapi import Header, Path, Query
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from starlette.requests import Request

Source = Literal["path", "query", "header"]
#: The classes FastAPI's public Path, Query and Header return, in the order FastAPI
#: reports its errors.
_SOURCES: tuple[tuple[type[Any], Source], ...] = (
    (type(Path()), "path"),
    (type(Query()), "query"),
    (type(Header()), "header"),
)
_ORDER = {source: index for index, (_, source) in enumerate(_SOURCES)}


@dataclass(frozen=True, slots=True)
class Parameter:
    """One declared parameter: where it is read, and what validates it."""

    name: str
    source: Source
    key: str
    adapter: TypeAdapter[Any]
    #: Made for each request when the parameter is absent (None: it is required).
    default: Callable[[], Any] | None

    @property
    def location(self) -> tuple[str, str]:
        return (self.source, self.key)


class Parameters:
    """An endpoint's parameters, worked out once from its signature."""

    __slots__ = ("_declared", "_request_name", "_sources")

    def __init__(self, request_name: str | None, declared: list[Parameter]) -> None:
        self._request_name = request_name
        self._declared = sorted(declared, key=lambda parameter: _ORDER[parameter.source])
        self._sources = tuple(dict.fromkeys(parameter.source for parameter in self._declared))

    @classmethod
    def of(cls, endpoint: Callable[..., Any]) -> Parameters:
        hints = get_type_hints(endpoint, include_extras=True)
        request_name = None
        declared = []
        for name, signature in inspect.signature(endpoint).parameters.items():
            hint = hints.get(name)
            if hint is Request:
                request_name = name
                continue
            declared.append(_declared(endpoint, name, hint, signature.default))
        return cls(request_name, declared)

    def values(self, request: Request) -> dict[str, Any]:
        """The endpoint's keyword arguments (``RequestValidationError`` if any is invalid)."""
        values: dict[str, Any] = {}
        if self._request_name is not None:
            values[self._request_name] = request
        if not self._declared:
            return values
        sources = {source: _READ[source](request) for source in self._sources}
        errors: list[Any] = []
        for parameter in self._declared:
            raw = sources[parameter.source].get(parameter.key)
            if raw is None:
                if parameter.default is None:
                    errors.append(_missing(parameter.location))
                else:
                    values[parameter.name] = parameter.default()
                continue
            try:
                values[parameter.name] = parameter.adapter.validate_python(raw)
            except ValidationError as error:
                errors.extend(
                    {**item, "loc": (*parameter.location, *item["loc"])}
                    for item in error.errors(include_url=False)
                )
        if errors:
            raise RequestValidationError(errors)
        return values


def _declared(endpoint: Callable[..., Any], name: str, hint: Any, default: Any) -> Parameter:
    info = next((m for m in get_args(hint)[1:] if _source(m) is not None), None)
    source = _source(info)
    if get_origin(hint) is not Annotated or info is None or source is None:
        raise TypeError(
            f"{endpoint.__name__}({name}): declare it Annotated with Path, Query or Header"
        )
    key = info.alias or (name.replace("_", "-") if source == "header" else name)
    return Parameter(name, source, key, TypeAdapter(hint), _default_of(info, default))


def _source(metadata: Any) -> Source | None:
    for kind, source in _SOURCES:
        if isinstance(metadata, kind):
            return source
    return None


def _default_of(info: Any, default: Any) -> Callable[[], Any] | None:
    factory: Callable[[], Any] | None = info.default_factory
    if factory is not None:
        return factory  # a value of its own for each request, as FastAPI makes it
    if default is inspect.Parameter.empty:
        return None
    if not isinstance(default, _IMMUTABLE):
        raise TypeError(f"a parameter's default is shared between requests: {default!r}")
    return lambda: default


_IMMUTABLE = (type(None), bool, int, float, str, bytes)
_READ: dict[Source, Callable[[Request], Mapping[str, Any]]] = {
    "path": lambda request: request.path_params,
    "query": lambda request: request.query_params,
    "header": lambda request: request.headers,
}


def _missing(location: tuple[str, str]) -> dict[str, Any]:
    return {"type": "missing", "loc": location, "msg": "Field required", "input": None}
