"""bench_go_client: the Go service's real turn on the Go client against the seed's Redis
store, at 10, 100 and 1,000 stored messages.

The turn, as the Go service writes it with its own untagged struct (``UntaggedMsg`` of
clients/go/storage_test.go: a ~28-character Chinese question, a longer Chinese answer, a
new turn id per turn, ``time.Time`` values with nanoseconds in +08:00)::

    messages, _ := storage.Load(ctx, id)
    messages = append(messages, question, answer)
    storage.Save(ctx, id, messages)

on one storage value reused for every turn, as a service keeps one, for two storages:

- ``swap``: ``ctxstore.NewStorage[UntaggedMsg](client)`` over HTTP to ``ctxstore serve``
  (1 worker, no access log) on a freshly migrated scratch database;
- ``redis``: the seed's Redis store, ``GET`` + ``json.Unmarshal`` to load,
  ``json.Marshal`` + ``SET key value EX 86400`` to save.

Each turn is on a session of its own, brought to its length through the same storage
before any turn is timed (saved whole, then its last turn), so each turn loads exactly
10, 100 or 1,000 messages, saves 2 more, and follows a turn as in a consultation; the
swap's Storage remembers all of them (``WithSessionCache``), as a service sized for its
sessions does.  The timing is Go's: ``BenchmarkServiceTurn`` in
clients/go/bench_test.go prints one line per turn.  A round runs every (storage, length)
cell in a new random order, ``TURNS`` turns a cell (after ``WARMUP`` untimed turns a cell
before the first round); the figure of a cell is the median over ``ROUNDS`` rounds of
each round's median turn.  Everything shares one machine: compare the figures with each
other.

``--client DIR`` (default clients/go) runs the same benchmark against another copy of
the client (``git archive HEAD clients/go | tar -x -C /tmp/before``, then
``--client /tmp/before/clients/go``): the client's package files are copied to a scratch
folder beside this repository's bench_test.go and the two declarations it takes from
storage_test.go (``UntaggedMsg``, ``live``), so the benchmark code is the same for
every client.

    CTXSTORE_BENCH_DATABASE_URL=postgresql://postgres@127.0.0.1:5432/postgres \\
        python -m benchmarks.bench_go_client [--client DIR]

Environment: ``CTXSTORE_BENCH_GO_ROUNDS`` (default 15), ``CTXSTORE_BENCH_GO_TURNS``
(turns a cell a round, default 20), ``CTXSTORE_BENCH_GO_WARMUP`` (default 3),
``CTXSTORE_BENCH_GO_LENGTHS`` (default 10,100,1000), ``CTXSTORE_BENCH_REDIS_ADDR``
(default 127.0.0.1:6379); without ``CTXSTORE_BENCH_DATABASE_URL`` the database is on an
embedded PostgreSQL.  Needs ``go`` (1.19+) and a Redis.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path

from benchmarks.bench_http import Server
from benchmarks.common import bench_database, table
from ctxstore.http.auth import new_token

ROUNDS = int(os.environ.get("CTXSTORE_BENCH_GO_ROUNDS", "15"))
TURNS = int(os.environ.get("CTXSTORE_BENCH_GO_TURNS", "20"))
WARMUP = int(os.environ.get("CTXSTORE_BENCH_GO_WARMUP", "3"))
LENGTHS = os.environ.get("CTXSTORE_BENCH_GO_LENGTHS", "10,100,1000")
REDIS_ADDR = os.environ.get("CTXSTORE_BENCH_REDIS_ADDR", "127.0.0.1:6379")
HERE = Path(__file__).resolve().parents[1] / "clients" / "go"
BENCHMARK = "BenchmarkServiceTurn"
_SAMPLE = re.compile(r"turn (\w+) (\d+) (\d+) (\d+)")
# The declarations of storage_test.go that bench_test.go uses, found by their first line
# and ended by the first line that closes them.
_DECLARATIONS = (r"^type UntaggedMsg struct \{$.*?^\}$", r"^func live\(.*?^\}$")
_SUPPORT = """// Copied by benchmarks/bench_go_client.py from clients/go/storage_test.go.

package ctxstore_test

import (
\t"os"
\t"testing"
\t"time"

\tctxstore "ctxstore.dev/client"
)

{declarations}
"""


def prepare(client: Path, folder: Path) -> Path:
    """A copy of ``client``'s package with this repository's benchmark: its non-test
    files, bench_test.go, and UntaggedMsg and live() from storage_test.go."""
    copy = folder / "client"
    copy.mkdir()
    for path in client.iterdir():
        wanted = path.suffix == ".go" and not path.name.endswith("_test.go")
        if path.is_file() and (wanted or path.name in ("go.mod", "go.sum")):
            shutil.copy2(path, copy / path.name)
    if not (copy / "go.mod").exists():
        raise SystemExit(f"{client} has no go.mod: not the Go client's directory")
    shutil.copy2(HERE / "bench_test.go", copy / "bench_test.go")
    source = (HERE / "storage_test.go").read_text()
    declarations = []
    for pattern in _DECLARATIONS:
        found = re.search(pattern, source, re.MULTILINE | re.DOTALL)
        if found is None:
            raise SystemExit(f"storage_test.go has no match for {pattern!r}")
        declarations.append(found.group(0))
    support = _SUPPORT.format(declarations="\n\n".join(declarations))
    (copy / "benchsupport_test.go").write_text(support)
    return copy


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


def build(go: str, copy: Path, folder: Path) -> Path:
    binary = folder / "turn.test"
    built = subprocess.run(
        [go, "test", "-c", "-o", str(binary), "."],
        cwd=copy, env=go_env(folder), capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    if built.returncode != 0:
        raise SystemExit(f"go test -c failed:\n{built.stdout}{built.stderr}")
    return binary


def run(binary: Path, copy: Path, folder: Path, base_url: str, token: str) -> list[tuple]:
    """The benchmark's samples: (storage, length, round, milliseconds) a timed turn."""
    env = {
        **go_env(folder),
        "CTXSTORE_URL": base_url,
        "CTXSTORE_TOKEN": token,
        "CTXSTORE_BENCH_REDIS_ADDR": REDIS_ADDR,
        "CTXSTORE_BENCH_GO_ROUNDS": str(ROUNDS),
        "CTXSTORE_BENCH_GO_TURNS": str(TURNS),
        "CTXSTORE_BENCH_GO_WARMUP": str(WARMUP),
        "CTXSTORE_BENCH_GO_LENGTHS": LENGTHS,
    }
    command = [str(binary), "-test.run", "^$", "-test.bench", f"^{BENCHMARK}$"]
    command += ["-test.benchtime", "1x", "-test.count", "1"]
    samples: list[tuple] = []
    output: list[str] = []
    with subprocess.Popen(
        command, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            if found := _SAMPLE.fullmatch(line.strip()):
                name, length, number, nanoseconds = found.groups()
                samples.append((name, int(length), int(number), int(nanoseconds) / 1e6))
            elif line.startswith("# "):
                print(line[2:].rstrip(), flush=True)
    if process.returncode != 0 or "--- SKIP" in "".join(output) or not samples:
        raise SystemExit(f"{BENCHMARK} printed:\n{''.join(output)}")
    return samples


def medians(samples: list[tuple]) -> dict[tuple[str, int], list[float]]:
    """Each cell's median turn of every round, in round order."""
    by_round: dict[tuple[str, int], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for name, length, number, ms in samples:
        by_round[(name, length)][number].append(ms)
    return {
        cell: [statistics.median(rounds[n]) for n in sorted(rounds)]
        for cell, rounds in by_round.items()
    }


def report(cells: dict[tuple[str, int], list[float]]) -> str:
    lengths = sorted({length for _, length in cells})
    figure = {cell: statistics.median(values) for cell, values in cells.items()}
    rows: list[tuple[str, ...]] = []
    for length in lengths:
        swap, redis = figure[("swap", length)], figure[("redis", length)]
        spread = [
            f"{min(cells[(n, length)]):.2f}-{max(cells[(n, length)]):.2f}"
            for n in ("swap", "redis")
        ]
        rows.append((f"{length:,}", f"{swap:.2f}", f"{redis:.2f}", f"{swap / redis:.1f}x", *spread))
    low, high = lengths[0], lengths[-1]
    rows.append(
        (
            f"turn at {high:,} / turn at {low:,}",
            f"{figure[('swap', high)] / figure[('swap', low)]:.1f}x",
            f"{figure[('redis', high)] / figure[('redis', low)]:.1f}x",
            "", "", "",
        )
    )  # fmt: skip
    header = ("stored messages", "swap: NewStorage over HTTP (ms)", "seed's Redis (ms)",
              "swap / Redis", "swap round medians", "Redis round medians")  # fmt: skip
    return table(rows, header)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--client", type=Path, default=HERE, help="the Go client's directory (default clients/go)"
    )
    client = parser.parse_args().client.resolve()
    go = shutil.which("go")
    if go is None:
        raise SystemExit("needs `go` (apt-get install golang-go)")
    token, grant = new_token("bench", ["read", "write"])
    folder = Path(tempfile.mkdtemp(prefix="ctxstore-bench-go-"))
    try:
        copy = prepare(client, folder)
        print(f"client: {client}; building {BENCHMARK} ...", flush=True)
        binary = build(go, copy, folder)
        with bench_database() as url:
            server = Server(url, grant, workers=1)
            try:
                asyncio.run(server.ready(token))
                base_url = f"http://127.0.0.1:{server.port}"
                samples = run(binary, copy, folder, base_url, token)
            finally:
                server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(
        f"\n{client}: one turn (Load, append 2, Save), ms; median of {ROUNDS} rounds of each "
        f"round's median of {TURNS} turns a cell, cells interleaved"
    )
    print(report(medians(samples)))


if __name__ == "__main__":
    main()
