"""The image's lock files agree with pyproject.toml (no network: the files only).

requirements/image.lock is what the Containerfile installs (--require-hashes), and
requirements/image-build.lock the build backend it builds ctxstore's wheel with; both are
written by scripts/lock-image for the image's Python.  They must pin every runtime
dependency and every `http` extra dependency pyproject.toml declares, at a version its
range allows, each pin with its files' hashes, and hold nothing pyproject.toml no longer
asks for.  A failure names the package and says to run scripts/lock-image."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
IMAGE_LOCK = ROOT / "requirements" / "image.lock"
BUILD_LOCK = ROOT / "requirements" / "image-build.lock"
EXTRA = "http"  # the extra the Containerfile's image serves with
# How uv names pyproject.toml's own requirements in a `# via` comment.
FROM_PYPROJECT = "ctxstore (pyproject.toml)"
RUN = "run scripts/lock-image"


@dataclass
class Pin:
    version: Version
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)


def parse_lock(text: str) -> dict[str, Pin]:
    """pip's hash-checking requirements format, as uv writes it: `name==version \\`, then
    `--hash=sha256:...` lines, then `# via` comments naming what asked for it."""
    pins: dict[str, Pin] = {}
    current: Pin | None = None
    in_via = False
    for raw in text.splitlines():
        line = raw.strip().removesuffix("\\").strip()
        if not line:
            continue
        if line.startswith("--hash="):
            assert current is not None, f"a hash before any pin: {raw!r}"
            current.hashes.append(line.removeprefix("--hash="))
        elif line.startswith("# via"):
            assert current is not None, f"a `# via` before any pin: {raw!r}"
            named = line.removeprefix("# via").strip()
            in_via = not named  # `# via` alone: the names follow, one a line
            if named:
                current.via.append(named)
        elif line.startswith("#"):
            named = line.removeprefix("#").strip()
            if in_via and current is not None and named:
                current.via.append(named)
        else:
            in_via = False
            requirement = Requirement(line)
            specifiers = list(requirement.specifier)
            assert len(specifiers) == 1 and specifiers[0].operator == "==", (
                f"{line!r} is not pinned with `==`: {RUN}"
            )
            current = Pin(Version(specifiers[0].version))
            pins[canonicalize_name(requirement.name)] = current
    return pins


def pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def image_python() -> str:
    """The Python of the Containerfile's base tag (python:3.12-slim-... gives 3.12)."""
    base = re.search(r"(?m)^ARG BASE=(\S+)$", (ROOT / "Containerfile").read_text())
    assert base, "the Containerfile has no ARG BASE= line"
    version = re.search(r"/python:(\d+\.\d+)", base.group(1))
    assert version, f"the base {base.group(1)} names no python:X.Y tag"
    return version.group(1)


def target_environment() -> dict[str, str]:
    """Markers as they evaluate in the image: its Python on Linux x86_64."""
    python = image_python()
    return {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
        "platform_machine": "x86_64",
    }


def runtime_requirements(project: dict[str, Any]) -> list[Requirement]:
    declared = (
        project["project"]["dependencies"] + project["project"]["optional-dependencies"][EXTRA]
    )
    environment = target_environment()
    found = [Requirement(text) for text in declared]
    return [r for r in found if r.marker is None or r.marker.evaluate(environment)]


def problems(requirements: list[Requirement], pins: dict[str, Pin]) -> list[str]:
    """What keeps the lock from agreeing with the requirements: empty when it agrees."""
    found: list[str] = []
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        pin = pins.get(name)
        if pin is None:
            found.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            found.append(f"{name}=={pin.version} is outside pyproject.toml's {requirement}")
    return found


def test_the_image_lock_pins_every_runtime_and_http_dependency_within_its_range() -> None:
    found = problems(runtime_requirements(pyproject()), parse_lock(IMAGE_LOCK.read_text()))
    assert not found, f"requirements/image.lock disagrees with pyproject.toml: {found}: {RUN}"


def test_the_build_lock_pins_the_build_backend_within_its_range() -> None:
    requires = [Requirement(text) for text in pyproject()["build-system"]["requires"]]
    found = problems(requires, parse_lock(BUILD_LOCK.read_text()))
    assert not found, f"requirements/image-build.lock disagrees with pyproject.toml: {found}: {RUN}"


@pytest.mark.parametrize("lock", [IMAGE_LOCK, BUILD_LOCK], ids=lambda path: path.name)
def test_every_pin_has_sha256_hashes(lock: Path) -> None:
    pins = parse_lock(lock.read_text())
    assert pins, f"{lock.name} pins nothing"
    for name, pin in pins.items():
        assert pin.hashes, f"{name}=={pin.version} has no hash: {RUN}"
        for digest in pin.hashes:
            assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), (name, digest)


def test_the_lock_is_closed_and_holds_nothing_pyproject_dropped() -> None:
    """Every package a `# via` names is pinned too, and whatever the lock says came from
    pyproject.toml is still asked for there (a dependency dropped leaves no stale pin)."""
    pins = parse_lock(IMAGE_LOCK.read_text())
    declared = {canonicalize_name(r.name) for r in runtime_requirements(pyproject())}
    for name, pin in pins.items():
        assert pin.via, f"{name} says nothing asked for it: {RUN}"
        for source in pin.via:
            if source == FROM_PYPROJECT:
                assert name in declared, f"{name} is no longer in pyproject.toml: {RUN}"
            else:
                assert canonicalize_name(source) in pins, (
                    f"{name} is there for {source}, which the lock does not pin: {RUN}"
                )


def test_the_lock_is_written_for_the_image_python() -> None:
    """scripts/lock-image resolves for the Python of the Containerfile's base tag."""
    script = (ROOT / "scripts" / "lock-image").read_text()
    target = re.search(r"--python-version (\S+)", script)
    assert target, "scripts/lock-image names no --python-version"
    assert target.group(1) == image_python(), (
        f"scripts/lock-image resolves for Python {target.group(1)}, the image's base is "
        f"python:{image_python()}: change one of them and run scripts/lock-image"
    )
    assert "scripts/lock-image" in IMAGE_LOCK.read_text().splitlines()[1]


def test_a_range_that_excludes_the_pin_is_caught() -> None:
    """The check itself: pyproject.toml tightened above a locked version fails it."""
    pins = parse_lock(IMAGE_LOCK.read_text())
    locked = pins["fastapi"].version
    tightened = [Requirement(f"fastapi>{locked}"), Requirement("no-such-package>=1")]
    assert problems(tightened, pins) == [
        f"fastapi=={locked} is outside pyproject.toml's fastapi>{locked}",
        "no-such-package>=1 is not in the lock",
    ]
