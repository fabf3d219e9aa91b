"""``ctxstore import-redis``: copy the original Go service's sessions into PostgreSQL.

SCAN (never KEYS) walks ``{prefix}:*``; each value is read with its remaining TTL in one
MULTI, parsed and upgraded from whatever format it is in, and compared (with ``==``, the
storage contract's equality) with what PostgreSQL holds, read from one snapshot together
with the session's version.  Then, per session:

- PostgreSQL has nothing: Redis's list is saved as a new session ("imported");
- PostgreSQL holds a prefix of Redis's list: the rest is appended ("appended"), the
  stored rows are not touched;
- the lists are equal: nothing is written ("unchanged"), so a second run changes nothing;
- anything else (PostgreSQL has messages Redis lacks, or other ones): "diverged", and
  both sides stay as they are, unless ``overwrite`` asks to save Redis's list over
  PostgreSQL's (then it counts as imported and is listed as replaced).

Every write carries the version its decision was made on, so a concurrent writer makes
the import read again and decide again: it never overwrites what it did not see.  A
session that can't be read, or that PostgreSQL refuses (a timestamp it can't hold
exactly), is reported as failed; it never stops the others.  Redis's ``null`` (Go's nil
slice) is a session without messages.  See docs/legacy-formats.md.

Every key SCAN found ends as one :class:`KeyResult` (imported, appended, unchanged,
diverged, replaced, skipped or failed, with the reason), handed to ``on_result`` as it
finishes: ``ctxstore import-redis --report FILE`` writes them as JSON lines, so an
operator sees each key that needs attention, not only the first LISTED of a kind.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.errors import ConfigurationError, ConflictError, CorruptDataError, CtxStoreError
from ctxstore.models import Message
from ctxstore.progress import Progress, counted
from ctxstore.storage.base import NEW_SESSION, check_session_id
from ctxstore.storage.postgres import PostgresStorage, sql
from ctxstore.storage.redis import parse_session_value, translated_redis
from ctxstore.storage.store import VersionedStorage

#: How often one session is read again after concurrent writes before it counts as failed.
ATTEMPTS = 5
#: How many sessions of each kind the summary names.
LISTED = 20

#: Called with the session id after each read of PostgreSQL, before the decision is
#: written (tests write concurrently from here).
AfterRead = Callable[[str], Awaitable[None]]


class Outcome(Enum):
    IMPORTED = "imported"
    APPENDED = "appended"
    UNCHANGED = "unchanged"
    DIVERGED = "diverged"
    REPLACED = "replaced"
    #: Not a session this import can take (its name, its Redis type, expired meanwhile).
    SKIPPED = "skipped"
    #: A session that could not be read or written: nothing of it was written.
    FAILED = "failed"


@dataclass(frozen=True)
class Stored:
    """What PostgreSQL held, from one snapshot: enough of it to decide."""

    exists: bool
    version: int
    count: int
    #: The first min(count, len(Redis's list)) messages: a longer stored list can't be
    #: a prefix, so the rest is never read.
    messages: list[Message]


@dataclass(frozen=True)
class Decision:
    outcome: Outcome
    stored: Stored
    #: How many leading messages the two lists share.
    common: int


@dataclass(frozen=True)
class Parting:
    """A session whose lists differ beyond a shared prefix (diverged or replaced)."""

    session_id: str
    postgres_count: int
    redis_count: int
    common: int

    def __str__(self) -> str:
        return (
            f"{self.session_id!r}: PostgreSQL holds {self.postgres_count} messages, "
            f"Redis {self.redis_count}, the first {self.common} equal"
        )


@dataclass(frozen=True)
class KeyResult:
    """What the import did with one Redis key."""

    key: str
    outcome: Outcome
    session_id: str | None = None
    #: Why it was skipped or failed, or how the lists part (diverged, replaced).
    reason: str | None = None
    redis_messages: int | None = None
    postgres_messages: int | None = None
    #: Leading messages the two lists share (diverged, replaced).
    common: int | None = None

    def to_json(self) -> str:
        """One JSON line: every field, ``outcome`` as its name."""
        return json.dumps(
            {
                "key": self.key,
                "outcome": self.outcome.value,
                "session_id": self.session_id,
                "reason": self.reason,
                "redis_messages": self.redis_messages,
                "postgres_messages": self.postgres_messages,
                "common": self.common,
            },
            ensure_ascii=False,
        )


#: Called with each key's result as soon as it is known.
OnResult = Callable[[KeyResult], None]


@dataclass
class ImportReport:
    """What an import did, session by session."""

    #: Saved whole: new in PostgreSQL, or (``overwrite``) replacing what it held.
    imported: int = 0
    appended: int = 0
    unchanged: int = 0
    diverged: list[Parting] = field(default_factory=list)
    #: Among ``imported``: sessions whose PostgreSQL messages ``overwrite`` replaced.
    replaced: list[Parting] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    #: Reads repeated because another writer changed the session first.
    rereads: int = 0
    seconds: float = 0.0

    @property
    def seen(self) -> int:
        return (
            self.imported
            + self.appended
            + self.unchanged
            + len(self.diverged)
            + len(self.skipped)
            + len(self.failed)
        )

    def summary(self) -> str:
        rate = self.seen / self.seconds if self.seconds else 0.0
        lines = [
            f"{counted(self.seen, 'session')} in {self.seconds:.1f} s ({rate:,.0f}/s): "
            f"{self.imported:,} imported, {self.appended:,} appended, "
            f"{self.unchanged:,} unchanged, {len(self.diverged):,} diverged, "
            f"{len(self.skipped):,} skipped, {len(self.failed):,} failed"
        ]
        kinds: Sequence[tuple[str, Sequence[object]]] = (
            ("diverged", self.diverged),
            ("replaced", self.replaced),
            ("skipped", self.skipped),
            ("failed", self.failed),
        )
        for kind, items in kinds:
            lines += [f"  {kind}: {item}" for item in items[:LISTED]]
            if len(items) > LISTED:
                lines.append(
                    f"  ... and {len(items) - LISTED:,} more {kind} (--report FILE lists every key)"
                )
            if kind == "diverged" and items:
                lines.append(
                    "  (diverged sessions were left as they are on both sides; "
                    "--overwrite replaces them with Redis's list)"
                )
        if self.rereads:
            lines.append(f"  reads repeated after a concurrent write: {self.rereads:,}")
        return "\n".join(lines)

    def add(self, result: KeyResult) -> None:
        """Count ``result`` under its outcome."""
        outcome = result.outcome
        described = f"{result.key!r}: {result.reason}"
        if outcome is Outcome.IMPORTED:
            self.imported += 1
        elif outcome is Outcome.APPENDED:
            self.appended += 1
        elif outcome is Outcome.UNCHANGED:
            self.unchanged += 1
        elif outcome is Outcome.SKIPPED:
            self.skipped.append(described)
        elif outcome is Outcome.FAILED:
            self.failed.append(described)
        elif outcome is Outcome.REPLACED:
            self.imported += 1
            self.replaced.append(_parting(result))
        else:
            self.diverged.append(_parting(result))


def _parting(result: KeyResult) -> Parting:
    return Parting(
        result.session_id or "",
        result.postgres_messages or 0,
        result.redis_messages or 0,
        result.common or 0,
    )


# -- one session ------------------------------------------------------------------------------


async def read_stored(storage: VersionedStorage, session_id: str, wanted: int) -> Stored:
    """The session's version, count and first ``wanted`` messages, from one snapshot."""
    async with storage.reader(session_id) as reader:
        head = await reader.head()
        if not head.exists:
            return Stored(False, 0, 0, [])
        upto = min(head.message_count, wanted)
        messages = await reader.span(0, upto) if upto else []
    if len(messages) != upto:
        raise CorruptDataError(
            f"session records {head.message_count} messages but positions 0..{upto - 1} "
            f"hold {len(messages)}",
            session_id=session_id,
        )
    return Stored(True, head.version, head.message_count, messages)


def decide(stored: Stored, incoming: Sequence[Message], *, overwrite: bool = False) -> Decision:
    """What to do with Redis's list ``incoming`` given what PostgreSQL held."""
    if not stored.exists:
        return Decision(Outcome.IMPORTED, stored, 0)
    common = 0
    for held, new in zip(stored.messages, incoming, strict=False):
        if held != new:
            break
        common += 1
    if common == stored.count:  # every stored message, in order, starts Redis's list
        outcome = Outcome.UNCHANGED if common == len(incoming) else Outcome.APPENDED
    else:
        outcome = Outcome.REPLACED if overwrite else Outcome.DIVERGED
    return Decision(outcome, stored, common)


async def write_decision(
    storage: VersionedStorage, session_id: str, incoming: list[Message], decision: Decision
) -> int | None:
    """Carry ``decision`` out at the version it was made on; the new version (None: no
    write).  ConflictError when the session is no longer at that version."""
    stored = decision.stored
    if decision.outcome is Outcome.IMPORTED:
        return await storage.save(session_id, incoming, expected_version=NEW_SESSION)
    if decision.outcome is Outcome.APPENDED:
        # An append writes only the new rows: the stored ones stay exactly as they are.
        return await storage.append(
            session_id, incoming[stored.count :], expected_version=stored.version
        )
    if decision.outcome is Outcome.REPLACED:
        return await storage.save(session_id, incoming, expected_version=stored.version)
    return None


async def carry_expiry(
    storage: PostgresStorage, session_id: str, version: int, ttl: timedelta | None
) -> bool:
    """Make the session expire ``ttl`` from now (None: never), if it is still at
    ``version``; False when another writer got there first (its own expiry stands)."""
    with translated("carrying the Redis TTL"):
        async with asyncio.timeout(storage.operation_timeout), storage.driver() as driver:
            status = await sql.CARRY_EXPIRY.execute(
                driver, sid=session_id, version=version, ttl=ttl
            )
    return status == "UPDATE 1"


async def import_session(
    storage: VersionedStorage,
    session_id: str,
    incoming: list[Message],
    *,
    overwrite: bool = False,
    expiry: Callable[[], timedelta | None] | None = None,
    after_read: AfterRead | None = None,
    report: ImportReport | None = None,
) -> Decision:
    """Bring one session over (see the module's docstring); the decision carried out.

    ``expiry``: with a PostgresStorage, gives the expiry to carry into a session this
    import writes (called right after the write).  A concurrent write makes the session
    be read and decided again, up to ATTEMPTS times; then ConflictError.
    """
    postgres = storage if isinstance(storage, PostgresStorage) else None
    if expiry is not None and postgres is None:
        raise ConfigurationError("carrying Redis TTLs needs a PostgresStorage")
    for _attempt in range(ATTEMPTS):
        decision = await _read_and_decide(storage, session_id, incoming, overwrite, after_read)
        try:
            version = await write_decision(storage, session_id, incoming, decision)
        except ConflictError:
            if report is not None:
                report.rereads += 1
            continue
        if version is not None and expiry is not None and postgres is not None:
            await carry_expiry(postgres, session_id, version, expiry())
        return decision
    raise ConflictError(
        f"session {session_id!r} changed {ATTEMPTS} times while it was being imported; "
        "run the import again",
        session_id=session_id,
    )


async def _read_and_decide(
    storage: VersionedStorage,
    session_id: str,
    incoming: list[Message],
    overwrite: bool,
    after_read: AfterRead | None,
) -> Decision:
    stored = await read_stored(storage, session_id, len(incoming))
    if after_read is not None:
        await after_read(session_id)
    return decide(stored, incoming, overwrite=overwrite)


# -- the whole import -------------------------------------------------------------------------


async def _scan_keys(client: Any, prefix: str) -> list[bytes]:
    keys: list[bytes] = []
    with translated_redis("scanning Redis"):
        async for key in client.scan_iter(match=f"{prefix}:*", count=1000):
            keys.append(key)
    return keys


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


async def _read_key(client: Any, key: bytes) -> tuple[str, Any, int]:
    """The key's Redis type, value and PTTL."""
    # One MULTI: the value and its TTL belong to the same moment.
    with translated_redis("reading Redis"):
        async with client.pipeline(transaction=True) as pipe:
            pipe.type(key)
            pipe.get(key)
            pipe.pttl(key)
            kind, raw, pttl = await pipe.execute(raise_on_error=False)
    return _text(kind), raw, pttl


def _not_a_session(kind: str, raw: Any) -> str | None:
    """Why the key read holds no session to import; None when it holds one.  Raises the
    error Redis answered the GET of a string with."""
    if kind == "none" or raw is None:  # expired between SCAN and GET
        return "expired before it was read"
    if kind != "string":
        return f"a Redis {kind}, not a session's JSON string"
    if isinstance(raw, Exception):
        raise raw
    return None


async def _import_one(
    client: Any,
    storage: VersionedStorage,
    prefix: str,
    key: bytes,
    report: ImportReport,
    *,
    overwrite: bool,
    carry_ttl: bool,
    after_read: AfterRead | None,
) -> KeyResult:
    name = key.decode("utf-8", "surrogateescape")
    session_id = name[len(prefix) + 1 :]
    try:
        check_session_id(session_id)
    except CtxStoreError as error:
        return KeyResult(name, Outcome.SKIPPED, reason=str(error))
    try:
        kind, raw, pttl = await _read_key(client, key)
        read_at = time.monotonic()
        unusable = _not_a_session(kind, raw)
        if unusable is not None:
            return KeyResult(name, Outcome.SKIPPED, session_id, unusable)
        messages = parse_session_value(raw, session_id)

        def expiry() -> timedelta | None:
            # PTTL -1: the key never expires.  The time since the read has passed in
            # Redis too, so the session ends when the key would have.
            if pttl < 0:
                return None
            left = pttl / 1000 - (time.monotonic() - read_at)
            return timedelta(seconds=max(left, 0.0))

        decision = await import_session(
            storage,
            session_id,
            messages,
            overwrite=overwrite,
            expiry=expiry if carry_ttl else None,
            after_read=after_read,
            report=report,
        )
    except CtxStoreError as error:
        return KeyResult(name, Outcome.FAILED, session_id, str(error))
    except Exception as error:  # one session's surprise never stops the rest
        return KeyResult(
            name, Outcome.FAILED, session_id, f"unexpected {type(error).__name__}: {error}"
        )
    stored = decision.stored
    parted = decision.outcome in (Outcome.DIVERGED, Outcome.REPLACED)
    return KeyResult(
        name,
        decision.outcome,
        session_id,
        str(Parting(session_id, stored.count, len(messages), decision.common)) if parted else None,
        redis_messages=len(messages),
        postgres_messages=stored.count,
        common=decision.common if parted else None,
    )


async def import_redis(
    client: Any,
    storage: VersionedStorage,
    *,
    prefix: str,
    concurrency: int = 8,
    show: bool = True,
    overwrite: bool = False,
    carry_ttl: bool = False,
    after_read: AfterRead | None = None,
    on_result: OnResult | None = None,
) -> ImportReport:
    """Import every session under ``prefix`` from Redis ``client`` into ``storage``.

    ``overwrite``: Redis's list replaces a diverged session's messages in PostgreSQL.
    ``carry_ttl``: a session this import writes expires when its Redis key would (a key
    without a TTL: never); needs a PostgresStorage.  ``after_read``: see AfterRead.
    ``on_result``: each key's KeyResult, as it is known (see OnResult).
    """
    if carry_ttl and not isinstance(storage, PostgresStorage):
        raise ConfigurationError("carrying Redis TTLs needs a PostgresStorage")
    report = ImportReport()
    started = time.monotonic()
    keys = await _scan_keys(client, prefix)
    progress = Progress("importing sessions", len(keys), shown=show)
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for key in keys:
        queue.put_nowait(key)

    async def worker() -> None:
        while not queue.empty():
            key = queue.get_nowait()
            result = await _import_one(
                client,
                storage,
                prefix,
                key,
                report,
                overwrite=overwrite,
                carry_ttl=carry_ttl,
                after_read=after_read,
            )
            report.add(result)
            if on_result is not None:
                on_result(result)
            progress.advance()

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    progress.finish()
    report.seconds = time.monotonic() - started
    return report
