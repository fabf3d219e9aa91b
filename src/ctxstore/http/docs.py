"""The OpenAPI ``responses`` of each kind of operation (what the routes declare)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}

_ETAG = {
    "ETag": {
        "description": 'The resource\'s version as a strong entity tag, e.g. "7"',
        "required": True,
        "schema": {"type": "string", "pattern": r'^"[1-9][0-9]*"$'},
    }
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    }
}
_CHALLENGE = {
    "WWW-Authenticate": {
        "description": "The bearer challenge (RFC 6750)",
        "required": True,
        "schema": {"type": "string"},
    }
}

_PROBLEMS: dict[int, tuple[str, dict[str, Any]]] = {
    400: ("Malformed request: not JSON, or a malformed header", {}),
    401: ("No bearer token, or one this server does not know", _CHALLENGE),
    403: ("The token lacks the scope this operation needs", _CHALLENGE),
    404: ("Not found", {}),
    409: ("Version conflict without a precondition: another writer got there first", {}),
    412: (
        "Precondition failed: the stored version is not the one If-Match named, or the "
        "resource exists (If-None-Match: *). current_version says which it is",
        {},
    ),
    413: ("A body or input over the size limits", {}),
    415: ("The body is not sent as application/json", {}),
    422: ("Invalid input: the body or a parameter breaks the schema or ctxstore's rules", {}),
    500: ("Internal error (the operator's log says why)", {}),
    501: ("Not supported: this server's storage can't do this operation", {}),
    503: ("PostgreSQL unavailable, or its schema not ready; retry after Retry-After", _RETRY_AFTER),
}

#: Every authenticated operation can answer these.
COMMON = (400, 401, 403, 413, 422, 500, 503)
#: And every operation that takes a body these.
BODY = (415,)


def problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    documented: dict[int | str, dict[str, Any]] = {}
    for code in sorted({*COMMON, *codes}):
        description, headers = _PROBLEMS[code]
        entry: dict[str, Any] = {
            "description": description,
            "content": {"application/problem+json": {"schema": PROBLEM_REF}},
        }
        if headers:
            entry["headers"] = headers
        if code == 412:
            entry["headers"] = {"ETag": {**_ETAG["ETag"], "required": False}}
        documented[code] = entry
    return documented


def read_responses() -> dict[int | str, dict[str, Any]]:
    """A GET of a versioned resource: 200 with its ETag, 304, 404, 412 (If-Match)."""
    return {
        200: {"description": "The resource", "headers": _ETAG},
        304: {
            "description": "Not modified: If-None-Match named the current version",
            "headers": _ETAG,
        },
        **problems(404, 412),
    }


def write_responses(
    model: type[BaseModel], *extra: int, created: str = "Created (its version is 1)"
) -> dict[int | str, dict[str, Any]]:
    """A conditional write: 200, or 201 when it made the resource, with the new ETag."""
    return {
        200: {"description": "Written", "headers": _ETAG},
        201: {"description": created, "model": model, "headers": _ETAG},
        **problems(409, 412, *BODY, *extra),
    }
