"""`ctxstore serve` as a real server (uvicorn, a subprocess on a free 127.0.0.1 port):
schemathesis over every operation, the Go client's consultation turn, what the server
logs, and a database that is not there."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import URL

from ctxstore.storage.postgres import PostgresStorage
from tests.http.live import REPO, LiveServer, Tokens
from tests.integration.test_deidentified_analytics import create_login, drop_login, read_roles

pytestmark = pytest.mark.postgres

BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def server(module_database_url: URL, tokens: Tokens) -> Iterator[LiveServer]:
    live = LiveServer.on(module_database_url, tokens).start()
    try:
        yield live
        # A graceful stop: SIGTERM, requests finished, pool closed, exit 0.
        assert live.terminate() == 0, live.log()
        log = live.log()
        assert "Application shutdown complete" in log
        for secret in (tokens.full, tokens.read, tokens.write, tokens.admin):
            assert secret not in log
        assert "Traceback" not in log
    finally:
        live.close()


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    server: LiveServer, tokens: Tokens, tmp_path: Path
) -> None:
    """Every operation, generated and mutated from the served OpenAPI document, then the
    stateful phase along its links (a write's ETag into the next If-Match).

    Every check runs but positive_data_acceptance: a request the schema allows may still
    be refused for what is stored (If-Match of another version: 412; a summary covering
    messages the session doesn't have: 422; a state for a missing session: 404), which no
    schema can say.
    """
    command = [
        str(BIN / "st"),
        "run",
        f"{server.base_url}/openapi.json",
        "--header",
        f"Authorization: Bearer {tokens.full}",
        "--checks",
        "all",
        "--exclude-checks",
        "positive_data_acceptance",
        "--max-examples",
        "20",
        "--seed",
        "20261201",
        "--workers",
        "1",  # CPython 3.11's parser is not thread-safe under schemathesis' workers
        "--request-timeout",
        "30",
        "--no-color",
    ]
    result = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "Operations:       19 selected / 19 total" in report
    assert "Stateful" in report and "API Links:" in report
    assert tokens.full not in server.log()


@pytest.mark.slow
def test_the_go_client_plays_consultation_turns(
    server: LiveServer, tokens: Tokens, module_database_url: URL, tmp_path: Path
) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no `go` on PATH: the Go client example (examples/go) was not built")
    env = {
        **os.environ,
        "GOCACHE": str(tmp_path / "gocache"),
        "GOPATH": str(tmp_path / "gopath"),
        "GOPROXY": "off",  # standard library only: nothing to download
        "GOFLAGS": "-mod=mod",
        "CGO_ENABLED": "0",
    }
    binary = tmp_path / "consult"
    build = subprocess.run(
        [go, "build", "-o", str(binary), "."],
        cwd=REPO / "examples" / "go",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    session = "go/consultation 1"
    common = [str(binary), "-url", server.base_url, "-session", session, "-user", "go-user"]
    lines = []
    for number, text in ((1, "我膝盖有下坠感"), (2, "大概一周了，走路的时候比较明显。")):
        run = subprocess.run(
            [*common, "-turn", str(number), "-message", text],
            env={**env, "CTXSTORE_TOKEN": tokens.full},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        lines.append(run.stdout.strip())
    assert lines == [
        'turn 1 ok: session "1", state "1", 0 messages in the contract, re-read 304',
        'turn 2 ok: session "2", state "2", 2 messages in the contract, re-read 304',
    ]

    async def stored() -> tuple[list[str], str | None, int]:
        async with PostgresStorage.from_url(module_database_url) as store:
            messages = await store.load(session)
            state = await store.load_state(session)
            assert state is not None
            return [m.content for m in messages], state.value.stage, state.version

    contents, stage, state_version = asyncio.run(stored())
    assert contents[0] == "我膝盖有下坠感" and contents[2].startswith("大概一周了")
    assert len(contents) == 4
    assert (stage, state_version) == ("collecting_details", 2)

    # Without a token the client is refused, and says so.
    refused = subprocess.run(
        [str(binary), "-url", server.base_url, "-session", session],
        env={**env, "CTXSTORE_TOKEN": "ctx_wrong"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1
    assert "401 https://ctxstore.dev/problems/unauthorized" in refused.stderr


def test_a_missing_database_is_503_and_nothing_leaks(tokens: Tokens) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    secret = "Zq4Kx4-pw"
    url = URL.create("postgresql", "ctxuser", secret, "127.0.0.1", port, "ctxstore_gone")
    live = LiveServer.on(url, tokens).start()  # alive without a database: healthz answers
    try:
        headers = tokens.header()
        answers = [
            httpx.get(f"{live.base_url}/readyz", headers=headers, timeout=30),
            httpx.post(
                f"{live.base_url}/v1/sessions/s/messages",
                json={"messages": [{"role": "user", "content": "x"}]},
                headers=headers,
                timeout=30,
            ),
        ]
        for answer in answers:
            assert answer.status_code == 503
            assert answer.headers["Retry-After"] == "2"
            assert answer.json()["type"] == "https://ctxstore.dev/problems/storage-unavailable"
        assert live.terminate() == 0
        log = live.log()
        assert "storage-unavailable" in log  # the operator hears of it ...
        for leak in (secret, tokens.full, "Connect call failed", "Errno", "Traceback"):
            for text in [log, *(answer.text for answer in answers)]:
                assert leak not in text  # ... without the driver's text or a secret
    finally:
        live.close()


def test_serve_refuses_to_start_without_tokens(module_database_url: URL) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSTORE_HTTP_TOKENS")}
    env["CTXSTORE_DATABASE_URL"] = module_database_url.render_as_string(hide_password=False)
    result = subprocess.run(
        [sys.executable, "-m", "ctxstore.cli", "serve", "--port", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("ctxstore: error: no API tokens: set CTXSTORE_HTTP_TOKENS")


def test_serve_speaks_tls_with_the_given_certificate(
    module_database_url: URL, tokens: Tokens, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    trusted = ssl.create_default_context(cafile=str(cert))
    live = LiveServer.on(
        module_database_url,
        tokens,
        extra_args=("--ssl-certfile", str(cert), "--ssl-keyfile", str(key)),
        scheme="https",
        verify=trusted,
    ).start()
    try:
        answer = httpx.get(f"{live.base_url}/healthz", headers=tokens.header(), verify=trusted)
        assert answer.status_code == 200
        with pytest.raises(httpx.RemoteProtocolError):  # plain HTTP is not served
            httpx.get(f"http://127.0.0.1:{live.port}/healthz", headers=tokens.header())
        assert live.terminate() == 0
    finally:
        live.close()


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key, made here (cryptography, a core dependency)."""
    import datetime  # noqa: PLC0415
    import ipaddress  # noqa: PLC0415

    from cryptography import x509  # noqa: PLC0415
    from cryptography.hazmat.primitives import hashes, serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ec  # noqa: PLC0415
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_the_real_server_refuses_an_id_that_is_not_utf8(server: LiveServer, tokens: Tokens) -> None:
    """uvicorn decodes ``%FF`` to U+FFFD; the service reads the raw path instead."""
    answer = httpx.get(
        f"{server.base_url}/v1/sessions/%FFabc/messages", headers=tokens.header(), timeout=30
    )
    assert answer.status_code == 400, answer.text
    assert "not UTF-8" in answer.json()["detail"]


def test_probes_answer_without_a_token_as_the_least_privileged_role(
    module_database_url: URL, tokens: Tokens
) -> None:
    """A deployment's healthcheck has no token, and the service runs as the app role."""
    roles = asyncio.run(read_roles(module_database_url))
    login, password = asyncio.run(create_login(module_database_url, roles.app))
    try:
        as_app = module_database_url.set(username=login, password=password)
        live = LiveServer.on(as_app, tokens).start()
        try:
            for path, expected in (
                ("/healthz", {"status": "ok"}),
                ("/readyz", {"status": "ready"}),
            ):
                answer = httpx.get(f"{live.base_url}{path}", timeout=30)
                assert answer.status_code == 200, answer.text
                assert answer.json() == expected
            admin = httpx.get(f"{live.base_url}/readyz", headers=tokens.header(tokens.admin))
            assert admin.json()["revision"]
            metrics = httpx.get(f"{live.base_url}/metrics", timeout=30)
            assert metrics.status_code == 401  # metrics stay behind the admin scope
            assert live.terminate() == 0, live.log()
        finally:
            live.close()
    finally:
        asyncio.run(drop_login(module_database_url, login))


def test_readiness_without_a_token_says_only_not_ready(tokens: Tokens) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = URL.create("postgresql", "ctxuser", "Zq6-pw", "127.0.0.1", port, "ctxstore_gone")
    live = LiveServer.on(url, tokens).start()
    try:
        answer = httpx.get(f"{live.base_url}/readyz", timeout=30)
        assert answer.status_code == 503
        assert answer.json() == {"status": "not ready"}
        assert answer.headers["Retry-After"] == "2"
    finally:
        live.close()
