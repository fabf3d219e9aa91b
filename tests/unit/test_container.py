"""The Containerfile and docker-compose.yml, read as the engines read them (no engine
runs a container here: scripts/build-image builds the image with buildah and
smoke-tests it, docs/http.md §1).  What must hold: two stages, the final one without a
compiler, a non-root user, a health check; compose runs the migrations and the service
from that image, with health checks, and takes the tokens from the environment."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def stages() -> list[list[str]]:
    found: list[list[str]] = []
    logical = re.sub(r"\\\n", " ", (ROOT / "Containerfile").read_text(encoding="utf-8"))
    for raw in logical.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            found.append([])
        if found:
            found[-1].append(line)
    return found


def test_the_image_builds_in_two_stages_and_runs_unprivileged() -> None:
    build, final = stages()
    assert build[0].endswith(" AS build")
    final_text = "\n".join(final)
    assert "COPY --from=build /opt/ctxstore /opt/ctxstore" in final_text
    for compiler in ("gcc", "build-essential", "apt-get install", "pip install"):
        assert compiler not in final_text, compiler
    user = [line for line in final if line.startswith("USER ")]
    assert user and user[-1].split()[1] not in ("root", "0")
    assert any(line.startswith("HEALTHCHECK ") and "/healthz" in line for line in final)
    assert final[-2].startswith('ENTRYPOINT ["ctxstore"]')


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_compose_migrates_then_serves_from_the_image_with_health_checks() -> None:
    services = compose()["services"]
    migrate, http, db = services["migrate"], services["http"], services["db"]
    assert migrate["image"] == http["image"] == "ctxstore:latest"
    assert migrate["build"]["dockerfile"] == "Containerfile"
    assert migrate["command"] == ["db", "upgrade"]
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert http["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    assert "/readyz" in " ".join(http["healthcheck"]["test"])
    assert "healthcheck" in db
    # Tokens from the environment: nothing installed or mounted from the host.
    assert http["environment"]["CTXSTORE_HTTP_TOKENS"].startswith("${CTXSTORE_HTTP_TOKENS")
    assert "volumes" not in http and "volumes" not in migrate
