"""How long each migration step stops the writers, on a database of a million messages.

Issue 47: from the 1.0 baseline on, no revision may stop the writers; the target is a
longest writer stall of at most 100 ms at 1,000,000 messages.  For each plan below, a
fresh database is brought to the plan's starting schema, seeded with ``--messages``
messages in sessions of 100-500 (rows made by PostgreSQL with generate_series:
tests/migrations/seed.py) and ``--states`` consultation states (through the API), then
each of the plan's steps runs while eight writers append turns through ctxstore, in a
process of their own (tests/migrations/writers.py).  Per step:

- stall: the longest write under way during the step minus the p99 of the writes outside
  it (each writer's first writes, which open its connections, left out), and both raw;
- the writes failed and lost (acknowledged but not read back), which must be 0;
- the step's duration.

Plans: ``checked``, every revision tests/migrations/checked_revisions.py checks (all but
the pre-release 0001-0026 and the baseline 1000; none today), applied in order on one
database seeded at the first one's parent; and the named steps of ``NAMED_STEPS``, each on
a database of its own.  A named step is a ``Step(prepare, run, available)``: ``prepare``
brings an empty database to where it starts, ``run`` is the step, ``available`` says why it
can't run (None: it can).  Today's: "pre-release 0026 -> 1000", the squash's own step,
from the database ctxstore 0.x wrote (tests/migrations/golden/prerelease-0026.sql) seeded
further.

The writers are this checkout's code: a step must start from a schema it writes to (the
benchmark stops, saying so, when writes fail before the step begins).

Run: python -m benchmarks.bench_migration_stalls [--messages 1000000] [--states 2000]
         [--plans checked,"pre-release 0026 -> 1000"] [--before 100] [--after 100]
     (PostgreSQL: $CTXSTORE_BENCH_DATABASE_URL or the embedded server; the table is printed
     and written, with every figure, to benchmarks/results/migration_stalls.json)
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import URL
from tests.migrations.checked_revisions import (
    checked_revisions,
    migrate,
    parent_of,
)
from tests.migrations.prerelease import restore_prerelease
from tests.migrations.seed import seed_messages, seed_states
from tests.migrations.writers import WRITERS, WritesReport, writes_during

from benchmarks.common import bench_server, scratch_database, table
from ctxstore.db import migrations

RESULTS = Path(__file__).resolve().parent / "results"
#: Issue 47's target for the longest writer stall of any step.
TARGET_MS = 100.0


@dataclass(frozen=True)
class Step:
    """A named migration step: from where ``prepare`` leaves an empty database, ``run``."""

    prepare: Callable[[URL], None]
    run: Callable[[URL], None]
    available: Callable[[], str | None] = lambda: None


@dataclass(frozen=True)
class Plan:
    """Steps measured one after the other on one seeded database."""

    name: str
    prepare: Callable[[URL], None]
    steps: list[tuple[str, Callable[[URL], None]]]


@dataclass(frozen=True)
class Measured:
    plan: str
    step: str
    messages: int
    step_seconds: float
    stall_ms: float
    max_during_ms: float
    p99_outside_ms: float
    writes_during: int
    writes: int
    failed: int
    lost: int
    unacknowledged: int


def _prerelease(url: URL) -> None:
    """The database ctxstore 0.x left at 0026 (tests/migrations/golden), restored."""
    asyncio.run(restore_prerelease(url))


def _to_head(url: URL) -> None:
    migrations.upgrade(url, "head")


NAMED_STEPS: dict[str, Step] = {
    "pre-release 0026 -> 1000": Step(prepare=_prerelease, run=_to_head),
}


def checked_plan() -> Plan | None:
    """Every checked revision, in order, from the first one's parent (None: there is none)."""
    checked = checked_revisions()
    if not checked:
        return None
    first_parent = parent_of(checked[0])
    assert first_parent is not None

    def up_to(revision: str) -> Callable[[URL], None]:
        return lambda url: migrate(url, "upgrade", revision)

    steps = [(f"{parent_of(r)} -> {r}", up_to(r)) for r in checked]
    return Plan("checked", up_to(first_parent), steps)


def plans(names: list[str] | None) -> list[Plan]:
    """The plans asked for (default: all), saying why any of them can't run."""
    chosen: list[Plan] = []
    for name in names or ["checked", *NAMED_STEPS]:
        if name == "checked":
            plan = checked_plan()
            if plan is None:
                print("checked: no checked revision in the tree yet (nothing to measure)")
            else:
                chosen.append(plan)
            continue
        step = NAMED_STEPS.get(name)
        why_not = "no such step" if step is None else step.available()
        if step is None or why_not is not None:
            print(f"{name}: skipped, {why_not}")
            continue
        chosen.append(Plan(name, step.prepare, [(name, step.run)]))
    return chosen


def measured(plan: str, step: str, messages: int, report: WritesReport) -> Measured:
    stall = report.stall_ms()
    return Measured(
        plan=plan,
        step=step,
        messages=messages,
        step_seconds=round(report.step_seconds, 3),
        stall_ms=round(stall["stall"], 1),
        max_during_ms=round(stall["max_during"], 1),
        p99_outside_ms=round(stall["p99_outside"], 1),
        writes_during=len(report.latencies_ms(during=True)),
        writes=len(report.writes()),
        failed=len(report.failed),
        lost=len(report.lost),
        unacknowledged=len(report.unacknowledged),
    )


def run_plan(server: URL, plan: Plan, args: argparse.Namespace) -> list[Measured]:
    results = []
    with scratch_database(server, revision=None) as url:
        plan.prepare(url)
        started = time.perf_counter()
        seeded = seed_messages(url, args.messages, progress=f"{plan.name}: seeding messages")
        seed_states(url, seeded.session_ids[: args.states])
        print(
            f"{plan.name}: seeded {args.messages:,} messages in {len(seeded.session_ids):,} "
            f"sessions and {min(args.states, len(seeded.session_ids)):,} states "
            f"in {time.perf_counter() - started:.1f} s"
        )
        for number, (name, run) in enumerate(plan.steps):
            report = writes_during(
                url,
                functools.partial(run, url),
                before=args.before,
                after=args.after,
                in_process=False,
                prefix=f"bench-{number}",
            )
            if report.failed_before_step():
                raise SystemExit(
                    f"{plan.name}: {report.failed_before_step()} writes failed before {name} "
                    f"began ({report.failed[0]}): the writers are this code, which can't "
                    "write to the schema the step starts from"
                )
            results.append(measured(plan.name, name, args.messages, report))
            print(f"{plan.name}: {name} done in {report.step_seconds:.2f} s")
    return results


def report_table(results: list[Measured]) -> str:
    rows = [
        (
            m.step,
            f"{m.messages:,}",
            f"{m.stall_ms:.1f}",
            f"{m.max_during_ms:.1f}",
            f"{m.p99_outside_ms:.1f}",
            f"{m.writes_during:,}",
            str(m.failed),
            str(m.lost + m.unacknowledged),
            f"{m.step_seconds:.2f}",
        )
        for m in results
    ]
    header = (
        "step",
        "messages",
        "stall ms",
        "max during ms",
        "p99 outside ms",
        "writes during",
        "failed",
        "lost",
        "step s",
    )
    return table(rows, header)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--states", type=int, default=2_000, help="sessions given a state")
    parser.add_argument("--plans", help='comma-separated: "checked" and NAMED_STEPS names')
    parser.add_argument("--before", type=int, default=100, help="writes each before a step")
    parser.add_argument("--after", type=int, default=100, help="writes each after a step")
    parser.add_argument("--json", type=Path, default=RESULTS / "migration_stalls.json")
    args = parser.parse_args()
    chosen = plans(args.plans.split(",") if args.plans else None)
    if not chosen:
        print("nothing to measure")
        return
    results: list[Measured] = []
    with bench_server() as server:
        for plan in chosen:
            results.extend(run_plan(server, plan, args))
    print()
    print(report_table(results))
    print(
        f"\n{WRITERS} writers; stall = the longest write under way during the step minus the "
        f"p99 outside it; target {TARGET_MS:.0f} ms (issue 47); lost counts stored messages "
        "never acknowledged too"
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "run": datetime.now(UTC).isoformat(timespec="seconds"),
        "writers": WRITERS,
        "target_ms": TARGET_MS,
        "steps": [asdict(m) for m in results],
    }
    args.json.write_text(json.dumps(document, indent=2), encoding="utf-8")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
