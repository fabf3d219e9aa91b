"""The Containerfile and docker-compose.yml, read as the engines read them (no engine
runs a container here: scripts/build-image builds the image with buildah and
smoke-tests it, docs/http.md §1).  What must hold: two stages, the final one without a
compiler or pip, a non-root user, a health check; every input pinned (the base by digest,
the packages from the hashed locks); compose runs the migrations as the superuser and the
service as a login of its own, with health checks and a restart policy, and takes the
passwords and tokens from the environment, with no default password."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
    # The service's login exists once the migrations have made the app role it joins.
    login = services["login"]
    assert login["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    assert http["depends_on"] == {"login": {"condition": "service_completed_successfully"}}
    assert "/readyz" in " ".join(http["healthcheck"]["test"])
    assert "healthcheck" in db
    # Tokens from the environment: nothing installed or mounted from the host.
    assert http["environment"]["CTXSTORE_HTTP_TOKENS"].startswith("${CTXSTORE_HTTP_TOKENS")
    assert "volumes" not in http and "volumes" not in migrate


def test_the_base_is_pinned_by_digest_beside_its_tag() -> None:
    (line,) = [
        line
        for line in (ROOT / "Containerfile").read_text(encoding="utf-8").splitlines()
        if line.startswith("ARG BASE=")
    ]
    # The tag says what the image is; the digest (scripts/refresh-base) what it is exactly.
    assert re.fullmatch(
        r"ARG BASE=docker\.io/library/python:3\.\d+-slim-[a-z]+@sha256:[0-9a-f]{64}", line
    ), line
    build, final = stages()
    assert build[0] == "FROM ${BASE} AS build" and final[0] == "FROM ${BASE}"


def installs(stage: list[str]) -> list[str]:
    """Each `pip ... install` command of a stage's RUN lines."""
    commands = [part.strip() for line in stage for part in line.split("&&")]
    return [part for part in commands if re.search(r"\bpip\b.*\binstall\b", part)]


def test_the_build_installs_only_what_the_locks_pin() -> None:
    build, _ = stages()
    found = installs(build)
    assert any("-r requirements/image.lock" in part for part in found), found
    assert any("-r requirements/image-build.lock" in part for part in found), found
    for part in found:
        # From a lock, every file checked against its hash; else ctxstore's own wheel,
        # alone, without its dependencies (the lock brought them).
        if "--require-hashes" in part:
            assert re.search(r"-r requirements/image(-build)?\.lock\b", part), part
        else:
            assert "--no-deps" in part and part.endswith("/dist/ctxstore-*.whl"), part
    text = "\n".join(build)
    assert "COPY requirements/image.lock requirements/image-build.lock" in text
    # The build backend from its lock too: no isolated build fetching an unpinned one.
    assert "--no-build-isolation" in text


def test_no_pip_in_the_runtime_stage() -> None:
    build, final = stages()
    # The runtime virtualenv never gets a pip of its own (the build's pip installs into it).
    assert "python3 -m venv --without-pip /opt/ctxstore" in "\n".join(build)
    assert not installs(final)
    final_text = "\n".join(final)
    # The base's own pip goes, and the stage fails if python could still import one.
    assert "/usr/local/bin/pip" in final_text
    assert "site-packages/pip " in final_text
    assert 'python3 -c "import pip"' in final_text


def database_url_of(service: dict[str, Any]) -> str:
    return str(service["environment"]["CTXSTORE_DATABASE_URL"])


def required_variable(value: str) -> str:
    """The variable a `${VAR:?message}` value names: compose refuses to run without it."""
    found = re.fullmatch(r"\$\{([A-Z_]+):\?[^}]+\}", value)
    assert found, f"{value!r} is not a required variable (${{VAR:?message}}), or has a default"
    return found.group(1)


def test_compose_serves_as_a_login_of_its_own_not_the_superuser() -> None:
    services = compose()["services"]
    db, migrate, login, http = (services[name] for name in ("db", "migrate", "login", "http"))
    superuser = db["environment"]["POSTGRES_USER"]
    # The migrations run as the superuser (they create ctxstore's roles)...
    assert urlsplit(database_url_of(migrate)).username == superuser
    assert login["environment"]["PGUSER"] == superuser
    # ...the service as the login the `login` step makes, a member of the app role.
    service_user = urlsplit(database_url_of(http)).username
    assert service_user and service_user != superuser
    assert login["environment"]["CTXSTORE_SERVICE_LOGIN"] == service_user
    assert 'GRANT :"app" TO :"login"' in login["command"][0]
    assert "NOSUPERUSER" in login["command"][0]
    assert http["restart"] in ("on-failure", "unless-stopped")


def test_compose_passwords_come_from_the_environment_with_no_default() -> None:
    services = compose()["services"]
    db, migrate, login, http = (services[name] for name in ("db", "migrate", "login", "http"))
    superuser_password = required_variable(db["environment"]["POSTGRES_PASSWORD"])
    assert required_variable(migrate["environment"]["PGPASSWORD"]) == superuser_password
    assert required_variable(login["environment"]["PGPASSWORD"]) == superuser_password
    # The service's own password, set by the `login` step and used by http.
    service_password = required_variable(http["environment"]["PGPASSWORD"])
    assert service_password != superuser_password
    assert required_variable(login["environment"]["CTXSTORE_SERVICE_PASSWORD"]) == (
        service_password
    )
    # No password inside a URL, and no `${...PASSWORD:-default}` anywhere.
    for service in (migrate, http):
        assert urlsplit(database_url_of(service)).password is None, database_url_of(service)
    text = (ROOT / "docker-compose.yml").read_text(encoding="utf-8")
    assert not re.search(r"\$\{\w*PASSWORD\w*(:?-)", text)
    # .env.example names every variable compose requires; .env itself is never committed.
    required = set(re.findall(r"\$\{(\w+):\?", text))
    example = (ROOT / ".env.example").read_text(encoding="utf-8")
    named = set(re.findall(r"(?m)^(\w+)=", example))
    assert required == {superuser_password, service_password} and required <= named
    assert ".env" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
