"""The Go client (clients/go) against a live ``ctxstore serve``: gofmt, ``go vet`` and
``go test`` with the server's address and a token in the environment.  Its tests cover
every message struct a Go service writes, the versioned operations, the typed errors,
retries that honour Retry-After, context deadlines and an append whose answer is lost.

Without ``go`` on PATH the test skips, saying so (.ci/run installs Debian's golang-go).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import URL

from tests.http.live import REPO, LiveServer, Tokens
from tests.interop.toolchain import go_env

pytestmark = pytest.mark.postgres

CLIENT = REPO / "clients" / "go"


@pytest.fixture(scope="module")
def go() -> str:
    found = shutil.which("go")
    if found is None:
        pytest.skip(
            "no `go` on PATH: the Go client's tests need Go 1.19+ (apt-get install golang-go)"
        )
    return found


@pytest.fixture(scope="module")
def server(module_database_url: URL) -> Iterator[tuple[LiveServer, Tokens]]:
    tokens = Tokens.make()
    live = LiveServer.on(module_database_url, tokens).start()
    try:
        yield live, tokens
        assert live.terminate() == 0, live.log()
    finally:
        live.close()


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=CLIENT, env=env, capture_output=True, text=True, timeout=600, check=False
    )


@pytest.mark.slow
def test_the_go_client_is_formatted_and_vetted(go: str, tmp_path: Path) -> None:
    env = go_env(tmp_path)
    unformatted = _run([str(Path(go).with_name("gofmt")), "-l", "."], env)
    assert unformatted.returncode == 0 and unformatted.stdout == "", unformatted.stdout
    vetted = _run([go, "vet", "./..."], env)
    assert vetted.returncode == 0, vetted.stderr


@pytest.mark.slow
def test_the_go_client_passes_its_tests_against_a_live_server(
    go: str, server: tuple[LiveServer, Tokens], tmp_path: Path
) -> None:
    live, tokens = server
    env = {**go_env(tmp_path), "CTXSTORE_URL": live.base_url, "CTXSTORE_TOKEN": tokens.full}
    tested = _run([go, "test", "-count=1", "-v", "./..."], env)
    output = tested.stdout + tested.stderr
    assert tested.returncode == 0, output
    assert "--- SKIP" not in output, output  # the server is there: nothing may skip
    assert output.count("--- PASS") >= 7, output
