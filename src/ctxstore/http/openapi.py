"""The OpenAPI document: FastAPI's, from the routes and models, plus what it can't derive
(the problem details schema, each operation's scope, and the links between operations
that carry a session id and an ETag from one call to the next).

``ctxstore serve --openapi`` prints it; docs/openapi.json is that output, and a test
checks it is current.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ctxstore import __version__
from ctxstore.contract import contract_json_schema
from ctxstore.http.bodies import REQUEST_MODELS
from ctxstore.http.logs import REQUEST_ID_PATTERN
from ctxstore.http.problems import ERROR_TYPES, HTTP_TYPES
from ctxstore.http.security import BEARER_SCHEME

DESCRIPTION = """\
Sessions of an LLM consultation assistant, kept by ctxstore in PostgreSQL.

Every resource carries its version as a strong ETag ("7"). `If-Match: "7"` makes a write
conditional (412 with the current version when it moved on), `If-None-Match: *` creates
only (412 when the resource exists), and a GET with `If-None-Match` answers 304 while the
version is the same. Errors are RFC 9457 problem details (application/problem+json) with
one stable `type` per error. Every operation needs a bearer token with the scope named in
its `x-required-scope`. See docs/http.md.
"""

#: Request bodies described by the contract's schema rather than their model's.
DOCUMENTS = frozenset({"ConsultationState", "UserProfile"})
#: Every operation takes and answers X-Request-ID (the middleware, for every route).  Any
#: value is accepted: one that is not well-formed is replaced, never refused.
REQUEST_ID_PARAMETER = {
    "name": "X-Request-ID",
    "in": "header",
    "required": False,
    "description": "An id of the caller's for this request, taken when it matches "
    f"`{REQUEST_ID_PATTERN}` (else a new one is made): echoed in the response and "
    "written on the request's log lines.",
    "schema": {"type": "string"},
}
REQUEST_ID_HEADER = {
    "description": "The request's id: the caller's X-Request-ID when well-formed, else "
    "a new one (32 hex digits).",
    "schema": {"type": "string"},
}
_TYPES = sorted({kind.uri for kind in (*ERROR_TYPES.values(), *HTTP_TYPES)})

PROBLEM_SCHEMA: dict[str, Any] = {
    "title": "Problem",
    "description": "RFC 9457 problem details",
    "type": "object",
    "required": ["type", "title", "status", "detail"],
    "properties": {
        "type": {"type": "string", "enum": _TYPES},
        "title": {"type": "string"},
        "status": {"type": "integer", "minimum": 400, "maximum": 599},
        "detail": {"type": "string"},
        "current_version": {
            "type": "integer",
            "minimum": 0,
            "description": "A version conflict: the stored version (0: none)",
        },
        "errors": {
            "type": "array",
            "description": "Invalid input: each field that broke the schema",
            "items": {
                "type": "object",
                "required": ["location", "message"],
                "properties": {"location": {"type": "string"}, "message": {"type": "string"}},
            },
        },
    },
}


def _link(operation: str, *, etag: bool = False, key: str = "session_id") -> dict[str, Any]:
    parameters = {f"path.{key}": f"$request.path.{key}"}
    if etag:
        parameters["header.If-Match"] = "$response.header.ETag"
    return {"operationId": operation, "parameters": parameters}


_AFTER_MESSAGES = {
    "GetMessages": _link("get_messages"),
    "AppendAtVersion": _link("append_messages", etag=True),
    "ReplaceAtVersion": _link("put_messages", etag=True),
    "BuildContext": _link("build_context"),
    "PutState": _link("put_state"),
    "PutSummary": _link("put_summary"),
    "DeleteSession": _link("delete_session"),
}
#: A listing's next page: the same user and filters, from where this page ended.
_NEXT_PAGE = {
    "operationId": "list_sessions",
    "parameters": {
        "path.user_id": "$request.path.user_id",
        "query.cursor": "$response.body#/next_cursor",
        **{
            f"query.{name}": f"$request.query.{name}"
            for name in ("limit", "stage", "updated_since", "with_summaries")
        },
    },
    "description": "While next_cursor is not null",
}
#: operationId -> status -> links (what a client does next with what it got back).
LINKS: dict[str, dict[str, dict[str, Any]]] = {
    "list_sessions": {"200": {"NextPage": _NEXT_PAGE}},
    "put_messages": {"200": _AFTER_MESSAGES, "201": _AFTER_MESSAGES},
    "append_messages": {"200": _AFTER_MESSAGES, "201": _AFTER_MESSAGES},
    "get_messages": {
        "200": {
            "AppendAtVersion": _link("append_messages", etag=True),
            "ReplaceAtVersion": _link("put_messages", etag=True),
        }
    },
    "delete_session": {"204": {"GetMessages": _link("get_messages")}},
    "put_state": {
        status: {"GetState": _link("get_state"), "PutStateAtVersion": _link("put_state", etag=True)}
        for status in ("200", "201")
    },
    "put_summary": {
        status: {
            "GetSummary": _link("get_summary"),
            "PutSummaryAtVersion": _link("put_summary", etag=True),
        }
        for status in ("200", "201")
    },
    "put_profile": {
        status: {
            "GetProfile": _link("get_profile", key="user_id"),
            "PutProfileAtVersion": _link("put_profile", etag=True, key="user_id"),
        }
        for status in ("200", "201")
    },
}


def openapi_document(app: FastAPI) -> dict[str, Any]:
    if app.openapi_schema:
        return app.openapi_schema
    document = get_openapi(
        title="ctxstore",
        version=__version__,
        openapi_version="3.1.0",
        description=DESCRIPTION,
        routes=app.state.documented_routes,
    )
    document["components"]["securitySchemes"] = BEARER_SCHEME
    document["components"]["parameters"] = {"RequestId": REQUEST_ID_PARAMETER}
    document["components"]["headers"] = {"RequestId": REQUEST_ID_HEADER}
    schemas = document["components"]["schemas"]
    schemas["Problem"] = PROBLEM_SCHEMA
    contract = _relinked(contract_json_schema())
    for name, model in REQUEST_MODELS.items():
        if model.__name__ in DOCUMENTS:
            # A state or profile is what the Context Contract's schema says it is (the
            # library's one statement of what it accepts, leniencies included).
            schema = contract["$defs"][model.__name__]
            defined = {
                ref: contract["$defs"][ref] for ref in _references(schema, contract["$defs"])
            }
        else:
            schema = model.model_json_schema(
                mode="validation", ref_template="#/components/schemas/{model}"
            )
            defined = schema.pop("$defs", {})
        for nested, definition in defined.items():
            schemas.setdefault(nested, definition)
        schemas[name] = schema
    for path_item in document["paths"].values():
        for operation in path_item.values():
            _finish(operation)
    app.openapi_schema = document
    return document


def _finish(operation: dict[str, Any]) -> None:
    """What FastAPI doesn't write: optional headers without null, the request id every
    route takes and answers, and the links from one call to the next."""
    for parameter in operation.get("parameters", ()):
        _drop_null(parameter["schema"])
    operation.setdefault("parameters", []).append({"$ref": "#/components/parameters/RequestId"})
    for response in operation["responses"].values():
        response.setdefault("headers", {})["X-Request-ID"] = {
            "$ref": "#/components/headers/RequestId"
        }
    for status, links in LINKS.get(operation["operationId"], {}).items():
        operation["responses"][status]["links"] = links


def _relinked(schema: Any) -> Any:
    """A JSON Schema whose ``#/$defs/`` references point into the OpenAPI components."""
    if isinstance(schema, dict):
        return {
            key: value.replace("#/$defs/", "#/components/schemas/")
            if key == "$ref" and isinstance(value, str)
            else _relinked(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_relinked(item) for item in schema]
    return schema


def _references(schema: Any, defined: dict[str, Any]) -> set[str]:
    """The components ``schema`` refers to, directly or through one another."""
    found: set[str] = set()
    pending = [schema]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            target = item.get("$ref")
            if isinstance(target, str) and target.startswith("#/components/schemas/"):
                name = target.rsplit("/", 1)[1]
                if name not in found and name in defined:
                    found.add(name)
                    pending.append(defined[name])
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return found


def _drop_null(schema: dict[str, Any]) -> None:
    """An optional header or query parameter is absent, never null: ``anyOf [X, null]``,
    as FastAPI writes an optional one, becomes X."""
    options = schema.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        del schema["anyOf"]
        schema.update(next(option for option in options if option != {"type": "null"}))


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2, sort_keys=False) + "\n"
