"""The model and the check of tests/fallback_history.py, and its log format.

Per session, what the primary holds must equal a sequential replay of the acknowledged
operations plus some subset of the indeterminate ones (failed, or cut short by a kill).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

MESSAGE_KINDS = frozenset({"append", "save", "edit", "redact"})
Msg = tuple[str, str, str | None]  # role, content, turn_id: what the check compares

# -- the model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """What one session (or, for kind "profile", one user) holds."""

    exists: bool = False
    messages: tuple[Msg, ...] = ()
    marker: str | None = None  # the state's last_question, or the profile's exercise_habit


@dataclass
class Op:
    op: str
    session: str
    kind: str  # append, save, edit, redact, delete, state, profile
    payload: Any
    status: str = "open"  # "ok", "fail", or "open": no completion (killed mid-flight)
    error: str | None = None
    client: int = 0
    incarnation: int = 0

    @property
    def acked(self) -> bool:
        return self.status == "ok"


def as_msgs(payload: Any) -> tuple[Msg, ...]:
    return tuple((role, content, turn_id) for role, content, turn_id in payload)


def apply(model: Model, op: Op) -> Model | None:
    """The sequential effect of ``op``; None when it could only have failed."""
    if op.kind == "append":
        return Model(True, model.messages + as_msgs(op.payload), model.marker)
    if op.kind in MESSAGE_KINDS:  # a save replaces the messages and keeps the state
        return Model(True, as_msgs(op.payload), model.marker)
    if op.kind == "delete":
        return Model()
    if op.kind == "state":  # SessionNotFoundError on a missing session
        return replace(model, marker=op.payload) if model.exists else None
    if op.kind == "profile":
        return Model(True, (), op.payload)
    raise ValueError(f"unknown op kind {op.kind!r}")


# -- the check ---------------------------------------------------------------------------


@dataclass
class Verdict:
    anomalies: list[str] = field(default_factory=list)
    resurrected: int = 0  # messages found that every valid history had removed
    missing: int = 0  # messages every valid history keeps, not found
    duplicates: int = 0
    over_cap: int = 0  # sessions with too many candidate histories to check


def candidates(ops: list[Op], cap: int) -> tuple[set[Model], str | None]:
    """Every state a sequential replay of the acked ops plus a subset of the others can end
    in (deduplicated: saves and deletes collapse most subsets)."""
    states = {Model()}
    for op in ops:
        following: set[Model] = set()
        for state in states:
            after = apply(state, op)
            if after is not None:
                following.add(after)
            if not op.acked:
                following.add(state)
        if not following:
            return following, f"no history lets acknowledged {op.op} ({op.kind}) succeed"
        if len(following) > cap:
            return following, f"more than {cap} candidate histories"
        states = following
    return states, None


def describe(model: Model) -> str:
    if not model.exists:
        return "absent"
    contents = [content for _, content, _ in model.messages]
    shown = contents if len(contents) <= 8 else [*contents[:3], "...", *contents[-3:]]
    return f"{len(contents)} msgs [{', '.join(shown)}] marker={model.marker}"


def check_session(session: str, ops: list[Op], final: Model, verdict: Verdict, cap: int) -> None:
    states, problem = candidates(ops, cap)
    if problem is not None and not problem.startswith("no history"):
        verdict.over_cap += 1
        verdict.anomalies.append(f"history: {session}: unchecked, {problem}")
        return
    if final in states:
        return
    found = [content for _, content, _ in final.messages]
    written = {m[1] for op in ops if op.kind in MESSAGE_KINDS for m in as_msgs(op.payload)}
    possible = {m[1] for state in states for m in state.messages}
    required = set.intersection(*({m[1] for m in s.messages} for s in states)) if states else set()
    resurrected = sorted({c for c in found if c in written and c not in possible})
    missing = sorted(required - set(found))
    duplicates = len(found) - len(set(found))
    verdict.resurrected += len(resurrected)
    verdict.missing += len(missing)
    verdict.duplicates += duplicates
    parts = [problem] if problem else []
    if resurrected:
        parts.append(f"resurrected {resurrected}")
    if missing:
        parts.append(f"acknowledged messages missing {missing}")
    if duplicates:
        parts.append(f"{duplicates} duplicated messages")
    if unknown := sorted({c for c in found if c not in written}):
        parts.append(f"never written {unknown}")
    if final.marker not in {s.marker for s in states}:
        parts.append(
            f"marker {final.marker!r} not among {sorted(map(str, {s.marker for s in states}))}"
        )
    if final.exists not in {s.exists for s in states}:
        parts.append(f"exists={final.exists} in no valid history")
    acked_only, _ = candidates([op for op in ops if op.acked], cap)
    expected = describe(next(iter(acked_only))) if acked_only else "nothing"
    tail = ", ".join(
        f"{op.op} {op.kind} {op.status}{f'({op.error})' if op.error else ''}" for op in ops[-8:]
    )
    what = "; ".join(parts) or "order or content differs"
    verdict.anomalies.append(
        f"history: {session}: {what}; found {describe(final)}; "
        f"acked ops alone give {expected} ({len(states)} valid endings); last ops: {tail}"
    )


def check_history(
    histories: dict[str, list[Op]], finals: dict[str, Model], cap: int = 4096
) -> Verdict:
    verdict = Verdict()
    for session, ops in sorted(histories.items()):
        check_session(session, ops, finals.get(session, Model()), verdict, cap)
    return verdict


# -- the log -----------------------------------------------------------------------------


@dataclass
class Log:
    ops: list[Op] = field(default_factory=list)
    histories: dict[str, list[Op]] = field(default_factory=dict)
    stats: dict[int, dict[str, Any]] = field(default_factory=dict)  # the last per incarnation
    samples: list[dict[str, Any]] = field(default_factory=list)  # every stats record
    hung: list[dict[str, Any]] = field(default_factory=list)  # calls in flight for over 10 s
    incarnations: int = 0
    unreadable: int = 0

    def believed(self) -> dict[str, Model]:
        """Each session as its acknowledged ops left it: what a restarted client resumes from."""
        models: dict[str, Model] = {}
        for op in self.ops:
            if op.acked:
                current = models.get(op.session, Model())
                models[op.session] = apply(current, op) or current
        return models


def read_log(path: Path) -> Log:
    log, by_id = Log(), {}
    if not path.exists():
        return log
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            log.unreadable += 1
            continue
        kind = record["t"]
        if kind == "invoke":
            op = Op(**{name: value for name, value in record.items() if name not in ("t", "at")})
            by_id[op.op] = op
            log.ops.append(op)
            log.histories.setdefault(op.session, []).append(op)
        elif kind in ("ok", "fail"):
            by_id[record["op"]].status = kind
            by_id[record["op"]].error = record.get("error")
        elif kind == "stats":
            log.stats[record["inc"]] = record
            log.samples.append(record)
        elif kind == "start":
            log.incarnations += 1
        elif kind == "hung":
            log.hung.append(record)
    return log


class LogFile:
    """One os.write per line on an O_APPEND descriptor: a SIGKILL never leaves half a line."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write(self, **record: Any) -> None:
        record["at"] = round(time.time(), 3)  # for reading a finding against the schedule
        os.write(self._fd, (json.dumps(record, ensure_ascii=False) + "\n").encode())
