"""The service's log: JSON lines or text, its level, and each request's id (X-Request-ID:
the caller's when well-formed, else a new one; echoed, logged, on the span)."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import URL

from ctxstore import telemetry
from ctxstore.http import logs
from tests.http.live import REPO, LiveServer, Tokens

pytestmark = pytest.mark.postgres

GENERATED = re.compile(r"[0-9a-f]{32}")
GIVEN = "go-7f3a.2:attempt_1-B"


def refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- in this process -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (GIVEN, True),
        ("x" * 200, True),
        ("x" * 201, False),
        ("", False),
        ("has space", False),
        ("semi;colon", False),
        ("caf\xe9", False),
        (None, False),
    ],
)
def test_a_well_formed_id_is_kept_and_any_other_replaced(given: str | None, kept: bool) -> None:
    found = logs.request_id_of(None if given is None else given.encode("latin-1"))
    if kept:
        assert found == given
    else:
        assert GENERATED.fullmatch(found)
    assert logs.request_id_of(None) != logs.request_id_of(None)


def test_every_line_of_a_request_carries_its_id_in_either_format() -> None:
    json_out, text_out = io.StringIO(), io.StringIO()
    logger = logging.getLogger("ctxstore.test_logs")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    handlers = [logs.make_handler("json", json_out), logs.make_handler("text", text_out)]
    for handler in handlers:
        logger.addHandler(handler)
    try:
        logger.info("before")
        token = logs.serving(GIVEN)
        try:
            logger.warning("not ready: reading postgresql://ctxuser:Zq-pw@db:5432/x failed")
            logger.info("GET /x 200", extra={"method": "GET", "status": 200, "route": "/x"})
        finally:
            logs.served(token)
        logger.info("after")
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
    records = [json.loads(line) for line in json_out.getvalue().splitlines()]
    assert [r.get("request_id") for r in records] == [None, GIVEN, GIVEN, None]
    assert set(records[1]) == {"time", "level", "logger", "message", "request_id"}
    assert records[1]["level"] == "WARNING" and records[1]["logger"] == "ctxstore.test_logs"
    assert records[1]["message"].startswith("not ready: reading postgresql://ctxuser:***@db")
    assert (records[2]["method"], records[2]["status"], records[2]["route"]) == ("GET", 200, "/x")
    text = text_out.getvalue().splitlines()
    assert text[0].endswith("INFO ctxstore.test_logs: before")
    assert text[1].endswith(f"@db:5432/x failed request_id={GIVEN}")
    assert "Zq-pw" not in json_out.getvalue() + text_out.getvalue()


async def test_a_caller_s_id_is_echoed_and_put_on_the_current_span(
    client: httpx.AsyncClient, tokens: Tokens
) -> None:
    trace = pytest.importorskip("opentelemetry.sdk.trace")
    exporting = pytest.importorskip("opentelemetry.sdk.trace.export")
    in_memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    spans = in_memory.InMemorySpanExporter()
    provider = trace.TracerProvider()
    provider.add_span_processor(exporting.SimpleSpanProcessor(spans))
    tracer = provider.get_tracer("test")
    # The server span an instrumented application would have open around the request.
    with tracer.start_as_current_span("GET /healthz"):
        answer = await client.get("/healthz", headers={"X-Request-ID": GIVEN})
    assert answer.headers["X-Request-ID"] == GIVEN
    (span,) = spans.get_finished_spans()
    assert (span.attributes or {})[telemetry.REQUEST_ID_ATTRIBUTE] == GIVEN
    provider.shutdown()
    # Outside a span, nothing to mark; a malformed id is replaced, then echoed.
    answer = await client.get("/healthz", headers={"X-Request-ID": "no good"})
    assert GENERATED.fullmatch(answer.headers["X-Request-ID"])
    refused = await client.get("/v1/sessions/s/messages", headers=tokens.header("ctx_wrong"))
    assert refused.status_code == 401 and GENERATED.fullmatch(refused.headers["X-Request-ID"])


# -- the real server -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def json_server(module_database_url: URL, tokens: Tokens) -> Iterator[LiveServer]:
    live = LiveServer.on(
        module_database_url,
        tokens,
        env={"CTXSTORE_HTTP_LOG_FORMAT": "json"},
        extra_args=("--max-body-bytes", "1000"),
    ).start()
    try:
        yield live
    finally:
        live.close()


def test_json_lines_carry_the_request_id_the_response_echoes(
    json_server: LiveServer, tokens: Tokens
) -> None:
    base = json_server.base_url
    session = "s-hidden-3131"
    answers = {
        "given": httpx.get(
            f"{base}/v1/sessions/{session}/messages",
            headers={**tokens.header(), "X-Request-ID": GIVEN},
        ),
        "malformed": httpx.get(
            f"{base}/v1/sessions/{session}/messages",
            headers={**tokens.header(), "X-Request-ID": "two words"},
        ),
        "none": httpx.get(f"{base}/v1/sessions/{session}/messages", headers=tokens.header()),
        "unauthorized": httpx.get(
            f"{base}/v1/sessions/{session}/messages", headers={"X-Request-ID": "no-token-1"}
        ),
        "too large": httpx.post(
            f"{base}/v1/sessions/{session}/messages",
            content=b"{" + b" " * 2000 + b"}",
            headers={**tokens.header(), "Content-Type": "application/json"},
        ),
    }
    statuses = {name: answer.status_code for name, answer in answers.items()}
    assert statuses == {
        "given": 404,
        "malformed": 404,
        "none": 404,
        "unauthorized": 401,
        "too large": 413,
    }
    ids = {name: answer.headers["X-Request-ID"] for name, answer in answers.items()}
    assert ids["given"] == GIVEN and ids["unauthorized"] == "no-token-1"
    for name in ("malformed", "none", "too large"):
        assert GENERATED.fullmatch(ids[name]), name
    assert len(set(ids.values())) == len(ids)

    assert json_server.terminate() == 0, json_server.log()
    log = json_server.log()
    records = [json.loads(line) for line in log.splitlines() if line.strip()]
    assert {"time", "level", "logger", "message"} <= set(records[0])
    access = {r["request_id"]: r for r in records if r["logger"] == "ctxstore.http.access"}
    for name, request_id in ids.items():
        assert request_id in access, (name, log)
        assert access[request_id]["status"] == statuses[name]
    line = access[GIVEN]
    assert (line["method"], line["route"], line["principal"]) == (
        "GET",
        "/v1/sessions/{session_id}/messages",
        "full",
    )
    assert line["duration_ms"] >= 0 and "messages 404" in line["message"]
    assert access["no-token-1"]["route"] == "-" and access["no-token-1"]["principal"] == "-"
    assert session not in log  # the access line still hides the path's ids
    assert all(secret not in log for secret in (tokens.full, "two words"))


def test_the_not_ready_line_says_what_the_cli_says_and_the_level_filters(
    tokens: Tokens,
) -> None:
    secret = "Zq7-pw"
    url = URL.create("postgresql", "ctxuser", secret, "127.0.0.1", refused_port(), "gone")
    shown = url.render_as_string(hide_password=False)
    # What `ctxstore db current` says for the same URL.
    cli = subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", "db", "current"],
        cwd=REPO,
        env={**os.environ, "CTXSTORE_DATABASE_URL": shown},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert cli.returncode == 1
    said = cli.stderr.strip().removeprefix("ctxstore: error: ")
    assert "is PostgreSQL running at the URL's host and port?" in said
    assert "ctxuser:***@127.0.0.1" in said and secret not in said

    live = LiveServer.on(url, tokens, env={"CTXSTORE_HTTP_LOG_LEVEL": "warning"}).start()
    try:
        answer = httpx.get(f"{live.base_url}/readyz", headers={"X-Request-ID": GIVEN}, timeout=30)
        assert answer.status_code == 503 and answer.json() == {"status": "not ready"}
        assert answer.headers["X-Request-ID"] == GIVEN
        assert httpx.get(f"{live.base_url}/healthz").status_code == 200
        assert live.terminate() == 0, live.log()
        log = live.log()
    finally:
        live.close()
    (line,) = [line for line in log.splitlines() if "not ready" in line]
    # The same words but the socket's own (the CLI connects through SQLAlchemy, the
    # service through its pool: "Connect call failed (host, port)" / "Connection refused").
    named, _, rest = said.partition("[Errno")
    explained = rest[rest.index(" (is PostgreSQL") :]
    assert f"WARNING ctxstore.http: not ready: {named}[Errno" in line, (said, line)
    assert line.endswith(f"{explained} request_id={GIVEN}"), (said, line)
    assert secret not in log
    # warning: no access line, no uvicorn INFO (the not-ready line is a WARNING).
    assert "ctxstore.http.access" not in log and "INFO" not in log


def test_the_openapi_document_names_the_request_id_everywhere() -> None:
    """Every operation takes X-Request-ID and every response carries it, as the
    middleware does for every route; its description states the accepted form."""
    document = json.loads((REPO / "docs" / "openapi.json").read_text(encoding="utf-8"))
    parameter = document["components"]["parameters"]["RequestId"]
    assert (parameter["name"], parameter["in"]) == ("X-Request-ID", "header")
    assert logs.REQUEST_ID_PATTERN in parameter["description"]
    for path, item in document["paths"].items():
        for method, operation in item.items():
            refs = [p.get("$ref") for p in operation["parameters"]]
            assert "#/components/parameters/RequestId" in refs, f"{method} {path}"
            for status, response in operation["responses"].items():
                header = response["headers"]["X-Request-ID"]
                assert header == {"$ref": "#/components/headers/RequestId"}, (method, path, status)
