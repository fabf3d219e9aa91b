"""clients/go/README.md's Go blocks compile as written (issue 49: a newcomer pasted one).

Each ```go block is a whole ``package main`` program: the test writes each into a package
of one module that requires the client from clients/go (a ``replace``, as the README's
install line does), then one ``go vet ./...`` type-checks and vets them all, and gofmt
checks their layout.  Nothing is run (there is no server): compiling is the contract.

Without ``go`` on PATH the test skips, saying so (.ci/run installs Debian's golang-go).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.interop.toolchain import go_env

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "clients" / "go"
README = CLIENT / "README.md"

_BLOCK = re.compile(r"^```go\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def go_blocks(markdown: str) -> list[str]:
    return _BLOCK.findall(markdown)


def test_every_go_block_is_a_whole_program() -> None:
    blocks = go_blocks(README.read_text(encoding="utf-8"))

    assert len(blocks) >= 3
    for number, block in enumerate(blocks, 1):
        assert block.startswith("package main\n"), f"block {number} is not a program"
        assert 'ctxstore "ctxstore.dev/client"' in block, f"block {number} imports no client"
        assert "chat." not in block, f"block {number} names a package it doesn't import"


def test_the_go_blocks_compile_and_pass_vet(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no `go` on PATH: building the README's Go needs Go 1.19+ (golang-go)")
    module = tmp_path / "readme"
    for number, block in enumerate(go_blocks(README.read_text(encoding="utf-8")), 1):
        package = module / f"block{number}"
        package.mkdir(parents=True)
        (package / "main.go").write_text(block, encoding="utf-8")
    (module / "go.mod").write_text(
        "module readme\n\ngo 1.19\n\nrequire ctxstore.dev/client v0.0.0\n\n"
        f"replace ctxstore.dev/client => {CLIENT}\n",
        encoding="utf-8",
    )
    env = go_env(tmp_path)

    def run(*command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, cwd=module, env=env, capture_output=True, text=True, timeout=600, check=False
        )

    vetted = run(go, "vet", "./...")  # type-checks every block: a compile error fails here
    assert vetted.returncode == 0, vetted.stderr
    unformatted = run(str(Path(go).with_name("gofmt")), "-l", ".")
    assert unformatted.returncode == 0 and unformatted.stdout == "", (
        f"gofmt would change: {unformatted.stdout}"
    )
