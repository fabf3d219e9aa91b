"""The service's pieces that need no database: tokens, preconditions, the wire models, and
the published OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import pytest
from fastapi import Header, Query
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ctxstore.errors import ConfigurationError, CtxStoreError, NotSupportedError
from ctxstore.http.app import documentation_app
from ctxstore.http.auth import TokenRegistry, new_token, token_hash
from ctxstore.http.conditions import not_modified, write_expectation
from ctxstore.http.openapi import openapi_document, render
from ctxstore.http.parameters import Parameters
from ctxstore.http.problems import (
    ERROR_TYPES,
    NEVER_HOLDS,
    Problem,
    error_response,
    problem_type_of,
)
from ctxstore.http.registry import RouteApp
from ctxstore.http.routes import append_messages
from ctxstore.http.schemas import MessageIn, SessionOut, SessionsOut
from ctxstore.models import Message, SessionListing, SessionPage

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def test_a_token_is_kept_only_as_its_hash() -> None:
    token, line = new_token("go-backend", ["write", "read"])
    assert token.startswith("ctx_") and len(token) > 40
    assert line == f"go-backend read,write {token_hash(token)}"
    assert token not in line
    registry = TokenRegistry.parse(f"# comment\n{line}\n\n", source="t")
    principal = registry.authenticate(token)
    assert principal is not None
    assert (principal.name, principal.scopes) == ("go-backend", frozenset({"read", "write"}))
    assert registry.authenticate(token + "x") is None
    assert registry.authenticate(token_hash(token)) is None  # the hash is no password


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "no API tokens"),
        ("name read", "is not 'name scopes sha256:hex'"),
        ("name root sha256:" + "0" * 64, "unknown: root"),
        ("name read sha256:abc", "64 lowercase hex digits"),
        ("bad/name read sha256:" + "0" * 64, "a token's name"),
        ("a read sha256:" + "1" * 64 + ";b write sha256:" + "1" * 64, "appears twice"),
    ],
)
def test_a_bad_token_grant_is_refused_without_echoing_it(text: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says) as caught:
        TokenRegistry.parse(text, source="CTXSTORE_HTTP_TOKENS")
    assert "sha256:" + "0" * 64 not in str(caught.value)


def test_a_token_pasted_in_place_of_its_hash_is_not_echoed() -> None:
    token, _ = new_token("x", ["read"])
    with pytest.raises(ConfigurationError) as caught:
        TokenRegistry.parse(f"x read {token}", source="file")
    assert token not in str(caught.value)


@pytest.mark.parametrize(
    ("if_match", "if_none_match", "expected"),
    [
        (None, None, None),
        ('"7"', None, 7),
        (' "12" ', None, 12),
        (None, "*", 0),
        ('"7"', "*", NEVER_HOLDS),  # both can't hold: the store answers 412
    ],
)
def test_preconditions_become_expected_versions(
    if_match: str | None, if_none_match: str | None, expected: int | None
) -> None:
    assert write_expectation(if_match, if_none_match) == expected


@pytest.mark.parametrize(
    ("if_match", "if_none_match"),
    [
        ("7", None),
        ("*", None),
        ('W/"7"', None),
        ('"7", "8"', None),
        ('"0"', None),
        ('"99999999999999999999"', None),
        (None, '"7"'),
        ("7", "*"),
    ],
)
def test_unsupported_preconditions_are_400(if_match: str | None, if_none_match: str | None) -> None:
    with pytest.raises(Problem) as caught:
        write_expectation(if_match, if_none_match)
    assert caught.value.kind.status == 400


def test_if_none_match_on_a_read() -> None:
    assert not_modified('"3"', 3)
    assert not_modified('"1", W/"3"', 3)
    assert not_modified("*", 3)
    assert not not_modified('"2"', 3)
    assert not not_modified("*", 0)  # nothing there: nothing to be unmodified
    assert not not_modified(None, 3)
    with pytest.raises(Problem):
        not_modified('"1" "3"', 3)


def test_every_ctxstore_error_has_its_own_problem_type() -> None:
    slugs = [kind.slug for kind in ERROR_TYPES.values()]
    assert len(slugs) == len(set(slugs))
    classes: list[type[CtxStoreError]] = []
    pending: list[type[CtxStoreError]] = [CtxStoreError]
    while pending:
        cls = pending.pop()
        classes.append(cls)
        pending.extend(cls.__subclasses__())
    library = [cls for cls in classes if cls.__module__ == "ctxstore.errors"]
    missing = [cls.__name__ for cls in library if cls not in ERROR_TYPES]
    # Errors the service never raises take their parent's type: the CLI demo's embedded
    # server, and the framework adapters' (a missing extra, the Agents SDK's settings).
    assert set(missing) <= {
        "EmbeddedServerUnavailableError",
        "MissingExtraError",
        "SessionSettingsError",
    }
    for cls in library:
        kind = problem_type_of(cls.__new__(cls))
        assert kind.status >= 400


def test_the_wire_message_has_the_library_messages_fields() -> None:
    assert list(MessageIn.model_fields) == list(Message.model_fields)


def test_a_listed_session_has_the_library_listings_fields() -> None:
    assert list(SessionOut.model_fields) == list(SessionListing.model_fields)
    assert list(SessionsOut.model_fields) == list(SessionPage.model_fields)


def test_an_operation_the_storage_cant_do_is_501_with_a_fixed_detail() -> None:
    """What RedisStorage raises for a listing (the service itself runs on PostgreSQL)."""
    error = NotSupportedError(
        "RedisStorage can't list a user's sessions",
        operation="list_sessions",
        backend="RedisStorage",
    )
    kind = problem_type_of(error)
    assert (kind.slug, kind.status) == ("not-supported", 501)
    response = error_response(error, conditional=False, retry_after=2)
    body = json.loads(response.body)
    assert (response.status_code, body["type"]) == (501, kind.uri)
    assert "Redis" not in body["detail"]
    assert "Retry-After" not in response.headers  # retrying never helps


def test_the_published_openapi_document_is_current() -> None:
    current = render(openapi_document(documentation_app()))
    assert DOCUMENT.read_text(encoding="utf-8") == current, (
        "docs/openapi.json is stale: run `ctxstore serve --openapi > docs/openapi.json`"
    )


def test_the_service_routes_validate_their_parameters_without_dependency_solving() -> None:
    """Served by Starlette's routing (a RouteApp each), documented by FastAPI: every
    documented operation is served, and no route is FastAPI's APIRoute."""
    app = documentation_app()
    served = {
        (r.path, method)
        for r in app.routes
        if isinstance(r, Route) and isinstance(r.app, RouteApp)
        for method in r.methods or ()
    }
    assert not [r for r in app.routes if isinstance(r, APIRoute)]
    documented = {(r.path, m) for r in app.state.documented_routes for m in r.methods}
    assert documented <= served
    assert {p for p, _ in documented if p.startswith("/v1/")}


_MADE: list[str] = []


def _fresh() -> str:
    _MADE.append(f"made-{len(_MADE) + 1}")
    return _MADE[-1]


async def _tagged(
    request: Request,
    tag: Annotated[str, Query(default_factory=_fresh)],
    note: Annotated[str | None, Header()] = "plain",
) -> Response:
    return Response(f"{tag} {note}")


async def test_a_parameters_default_factory_runs_for_each_request_as_fastapi_runs_it() -> None:
    made = _MADE
    parameters = Parameters.of(_tagged)
    scope = {"type": "http", "method": "GET", "path": "/x", "headers": [], "query_string": b""}
    answers = [
        (await _tagged(**parameters.values(Request({**scope, "path_params": {}})))).body
        for _ in range(2)
    ]
    assert answers[-2:] == [f"{made[-2]} plain".encode(), f"{made[-1]} plain".encode()]
    assert made[-2] != made[-1]  # a value of its own for each request


async def test_a_malformed_header_is_refused_by_its_field_where_fastapi_would() -> None:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/v1/sessions/s/messages",
        "headers": [(b"if-match", b"7"), (b"idempotency-key", b"")],
        "path_params": {"session_id": ""},
        "query_string": b"",
    }
    with pytest.raises(RequestValidationError) as raised:
        Parameters.of(append_messages).values(Request(scope))
    locations = {tuple(item["loc"]) for item in raised.value.errors()}
    assert locations == {
        ("path", "session_id"),
        ("header", "If-Match"),
        ("header", "Idempotency-Key"),
    }
