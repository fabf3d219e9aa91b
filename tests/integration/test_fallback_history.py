"""FallbackStorage's history under outages and crashes: what the primary ends with is a
sequential replay of the acknowledged writes plus some of the indeterminate ones.

The first tests check the checker itself on small synthetic histories; the last runs the
real thing for 30 s at two paces (tests/fallback_history.py; the longer run is
benchmarks/bench_fallback_history.py).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy import URL

from tests.fallback_history import (
    LogFile,
    Model,
    Op,
    Verdict,
    check_history,
    read_log,
    run_history,
    schedule,
)
from tests.faults import REDIS_SERVER, redis_server, redis_version


def op(name: str, kind: str, payload: object = None, status: str = "ok") -> Op:
    return Op(name, "s", kind, payload, status)


def msgs(*contents: str) -> list[list[str | None]]:
    return [["user", content, None] for content in contents]


def model(*contents: str, marker: str | None = None) -> Model:
    return Model(True, tuple(("user", c, None) for c in contents), marker)


def verdict_for(ops: list[Op], final: Model, cap: int = 4096) -> Verdict:
    return check_history({"s": ops}, {"s": final}, cap)


def test_acknowledged_operations_replayed_in_order_pass() -> None:
    ops = [
        op("1", "append", msgs("a", "b")),
        op("2", "state", "q1"),
        op("3", "redact", msgs("b")),
        op("4", "append", msgs("c")),
        op("5", "edit", msgs("b", "c2")),
    ]
    assert verdict_for(ops, model("b", "c2", marker="q1")).anomalies == []
    assert verdict_for([*ops, op("6", "delete")], Model()).anomalies == []


def test_an_indeterminate_operation_may_or_may_not_have_landed() -> None:
    for status in ("fail", "open"):
        ops = [op("1", "append", msgs("a")), op("2", "append", msgs("b"), status)]
        assert verdict_for(ops, model("a")).anomalies == []
        assert verdict_for(ops, model("a", "b")).anomalies == []
        assert (
            verdict_for([*ops, op("3", "append", msgs("c"))], model("a", "b", "c")).anomalies == []
        )


def test_an_indeterminate_write_landing_after_a_later_acknowledged_one_is_caught() -> None:
    ops = [
        op("1", "save", msgs("a")),
        op("2", "append", msgs("b"), "fail"),
        op("3", "save", msgs("c")),
    ]
    verdict = verdict_for(ops, model("c", "b"))
    assert len(verdict.anomalies) == 1
    assert verdict.resurrected == 1  # "b" can only come before the save of "c"


def test_resurrected_missing_and_duplicated_messages_are_counted() -> None:
    redacted = [op("1", "append", msgs("a", "b")), op("2", "redact", msgs("b"))]
    assert verdict_for(redacted, model("a", "b")).resurrected == 1
    deleted = [op("1", "append", msgs("a")), op("2", "delete")]
    verdict = verdict_for(deleted, model("a"))
    assert verdict.resurrected == 1
    assert "exists=True in no valid history" in verdict.anomalies[0]
    lost = verdict_for([op("1", "append", msgs("a")), op("2", "append", msgs("b"))], model("a"))
    assert lost.missing == 1
    assert "missing ['b']" in lost.anomalies[0]
    twice = verdict_for([op("1", "append", msgs("a"))], model("a", "a"))
    assert twice.duplicates == 1


def test_a_lost_state_or_a_state_on_a_missing_session_is_caught() -> None:
    ops = [op("1", "append", msgs("a")), op("2", "state", "q1"), op("3", "state", "q2")]
    assert "marker 'q1'" in verdict_for(ops, model("a", marker="q1")).anomalies[0]
    # An acknowledged state on a deleted session: no sequential history explains it.
    gone = [op("1", "append", msgs("a")), op("2", "delete"), op("3", "state", "q")]
    assert "no history lets acknowledged 3" in verdict_for(gone, Model()).anomalies[0]
    # The same but indeterminate: the state simply failed.
    maybe = [*gone[:2], op("3", "state", "q", "fail")]
    assert verdict_for(maybe, Model()).anomalies == []


def test_too_many_candidate_histories_are_reported_not_passed() -> None:
    ops = [op(str(i), "append", msgs(f"m{i}"), "fail") for i in range(13)]
    verdict = verdict_for(ops, model(), cap=4096)
    assert verdict.over_cap == 1
    assert "unchecked" in verdict.anomalies[0]


def test_the_log_round_trips_and_a_restart_resumes_from_acknowledged_operations(
    tmp_path: Path,
) -> None:
    path = tmp_path / "log.jsonl"
    out = LogFile(path)
    out.write(t="start", inc=1)
    for number, (kind, payload, status) in enumerate(
        [("append", msgs("a"), "ok"), ("append", msgs("b"), "fail"), ("state", "q", None)]
    ):
        out.write(t="invoke", **vars(Op(f"o{number}", "s", kind, payload, client=0, incarnation=1)))
        if status:
            out.write(t=status, op=f"o{number}", error="StorageUnavailableError")
    out.write(t="stats", inc=1, failovers=2)
    log = read_log(path)
    assert [o.status for o in log.ops] == ["ok", "fail", "open"]
    assert log.incarnations == 1
    assert log.stats[1]["failovers"] == 2
    assert log.believed() == {"s": model("a")}


def test_the_schedule_has_the_outages_and_kills_asked_for() -> None:
    events = schedule(random.Random(7), 30.0, outages=10, kills=3)
    cuts = [at for at, action in events if action in ("refuse", "blackhole")]
    ends = [at for at, action in events if action == "forward"]
    kills = [at for at, action in events if action == "kill"]
    assert len(cuts) >= 10
    assert len(kills) >= 3
    assert all(0.5 <= end - cut <= 2.0 for cut, end in zip(cuts, ends, strict=True))
    assert all(cut - end >= 0.5 for end, cut in zip(ends, cuts[1:], strict=False))
    assert any(cut < kill < end for kill in kills for cut, end in zip(cuts, ends, strict=True))
    assert max(events)[0] < 30.0


#: The most seconds of calm after the faults (it ends once the worker is healthy).
#: Whether the worker gets a whole journal replayed between two outages of the schedule
#: depends on the machine's load (0 of 12 outages, once, with three suites beside); with
#: the primary up for good it must.
CALM = 120.0


@pytest.mark.slow
@pytest.mark.parametrize(
    "pause",
    [
        # The load asked for: 8 clients, at most 20 ms between calls.
        pytest.param(0.02, id="full-pace"),
        # A tenth of it: on a quiet machine the worker also catches up between outages, so
        # switching back mid-run (and removing the secondary's copies) is exercised too.
        pytest.param(0.2, id="paced"),
    ],
)
async def test_30_seconds_of_outages_and_crashes_leave_a_valid_history(
    database_url: URL, redis_url: str, pause: float
) -> None:
    result = await run_history(
        database_url, redis_url, duration=30.0, clients=8, pause=pause, calm=CALM, min_acked=201
    )
    print()
    for name, value in result.figures():
        print(f"{name:>26}: {value}")
    for anomaly in result.anomalies[:20]:
        print("ANOMALY", anomaly)
    if result.log_dir:
        print(f"logs kept in {result.log_dir}")
    assert result.anomalies == []
    assert result.faults["outages"] >= 10
    assert result.faults["kills"] >= 3
    assert result.faults["restarts"] >= 3
    assert result.ops["ok"] > 200
    # Journaled writes: some incarnation failed over.  Its own count of failovers may die
    # with it (a kill before its next twice-a-second report), so the journal is the witness.
    assert result.worker_stats["journaled"] > 0
    # Once the primary stays up, the worker replays its journal and is healthy again, at
    # either pace: writes to a replayed key go to the primary, so the journal only shrinks.
    assert result.healthy_after is not None
    assert result.worker_stats["recoveries"] >= 1


def _waitaof() -> bool:
    return REDIS_SERVER is not None and redis_version() >= (7, 2)


@pytest.mark.slow
@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server is not installed")
@pytest.mark.parametrize(
    ("options", "durable"),
    [
        pytest.param(("--appendonly", "yes", "--appendfsync", "always"), True, id="aof-always"),
        # durable on Redis 7.2+ (WAITAOF), refused below
        pytest.param(("--appendonly", "yes", "--appendfsync", "everysec"), None, id="everysec"),
        pytest.param((), False, id="defaults"),  # RDB save points, no AOF
    ],
)
async def test_redis_killed_in_outages_loses_no_acknowledged_write(
    database_url: URL, options: tuple[str, ...], durable: bool | None
) -> None:
    """Issue 25: SIGKILL of redis-server during PostgreSQL outages, with worker kills too.
    A journal that can keep its entries acknowledges and loses none; one that can't
    refuses the outage's writes: either way every acknowledged write is in PostgreSQL,
    once, in order."""
    durable = _waitaof() if durable is None else durable
    with redis_server(*options) as redis:
        # Refused writes after a failed primary call are indeterminate (the primary may
        # have applied them): fewer ops per session keep the histories checkable.
        result = await run_history(
            database_url,
            redis.url,
            duration=20.0,
            clients=6,
            pause=0.05 if durable else 0.3,
            sessions_per_client=3 if durable else 6,
            redis=redis,
            redis_kills=4,
            journal_loss="refuse",
            # Enough acknowledged work for the history to mean something, however loaded
            # the machine: a journal that refuses acknowledges nothing during outages.
            min_acked=101 if durable else 41,
        )
    print()
    for name, value in result.figures():
        print(f"{name:>26}: {value}")
    for anomaly in result.anomalies[:20]:
        print("ANOMALY", anomaly)
    assert result.anomalies == []
    assert result.faults["redis kills"] >= 4 and result.faults["outages"] >= 8
    stats = result.worker_stats
    assert stats["lost"] == 0
    if durable:
        assert stats["journaled"] > 0 and stats["refused"] == 0
    else:
        assert stats["refused"] > 0 and stats["journaled"] == 0
    assert result.ops["ok"] > (100 if durable else 40)  # reached after the faults if not before
