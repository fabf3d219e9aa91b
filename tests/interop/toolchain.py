"""The environment a test runs ``go`` in: everything Go writes stays in ``folder`` (a
clean CI works), no module downloads, no toolchain switch, no cgo."""

from __future__ import annotations

import os
from pathlib import Path


def go_env(folder: Path) -> dict[str, str]:
    return {
        **os.environ,
        "GOCACHE": str(folder / "cache"),
        "GOPATH": str(folder / "path"),
        "GOFLAGS": "-mod=mod",
        "GOPROXY": "off",
        "GOTOOLCHAIN": "local",
        "CGO_ENABLED": "0",
    }
