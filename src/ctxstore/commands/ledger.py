"""``ctxstore ledger verify``: every chain of the ledger of contracts checked, each
tampering named (storage/ledger.py says how an entry is chained).

A batch of chains at a time: their entries, pieces and responses read in three
statements on two connections at once, the next batch read on two others while this one
is checked.  Plain pieces are checked against their digests by PostgreSQL, where they are
(their texts are not sent); a sealed piece's digest is an HMAC under its session's key,
so its tag, which binds it to that digest, checks it when it is read.  An erased chain's
pieces are gone: its links are checked, not its bodies.

The summary's ``root`` is a digest of every chain's last entry: kept somewhere the
database's owner can't write, it shows a later rewrite of whole chains, which no check
inside the database can (docs/ledger.md).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections import defaultdict
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from ctxstore.progress import Progress
from ctxstore.storage.ledger import ChainRow, Finding, StoredEntry, verify_chain
from ctxstore.storage.postgres import PostgresStorage, sql
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import check_batch_size, check_session_id

_LOW = ""  # every session id sorts after it


@dataclass
class LedgerVerification:
    """What ``verify_ledger`` checked and found."""

    chains: int = 0
    entries: int = 0
    erased_chains: int = 0
    plain_pieces: int = 0
    sealed_pieces: int = 0
    responses: int = 0
    findings: list[Finding] = field(default_factory=list)
    #: SHA-256 over every chain's session id and last digest, in session order (hex).
    root: str = ""

    @property
    def intact(self) -> bool:
        return not self.findings

    def summary(self) -> str:
        verdict = "intact" if self.intact else f"{len(self.findings):,} tampering(s) found"
        return (
            f"ledger {verdict}: {self.entries:,} entries in {self.chains:,} chains "
            f"({self.erased_chains:,} erased: links only), {self.plain_pieces:,} plain pieces "
            f"checked, {self.sealed_pieces:,} sealed (checked when read), "
            f"{self.responses:,} responses; root {self.root}"
        )


@dataclass
class _Batch:
    chains: list[Any]
    entries: dict[str, list[StoredEntry]]
    #: By chain: its pieces' row (numbers, digests end to end, counts, the altered).
    pieces: dict[str, Any]
    responses: dict[str, list[Any]]


async def verify_ledger(
    storage: PostgresStorage,
    *,
    session_id: str | None = None,
    batch_size: int = 200,
    progress: Callable[[int], object] | None = None,
    show_progress: bool = False,
) -> LedgerVerification:
    """Check the ledger's chains (one session's, or all), naming each tampering found:
    an entry edited, removed, reordered, swapped with another, re-inserted, or the tail
    truncated; a piece or response edited.  ``progress`` is told each batch's entries."""
    if session_id is not None:
        check_session_id(session_id)
    check_batch_size(batch_size)
    result = LedgerVerification()
    root = hashlib.sha256(b"ctxstore ledger root v1\x00")
    async with AsyncExitStack() as stack:
        drivers = [
            await stack.enter_async_context(storage.maintenance("ledger verify")) for _ in range(4)
        ]
        pairs = [(drivers[0], drivers[1]), (drivers[2], drivers[3])]
        total = await sql.LEDGER_ENTRY_COUNT.fetchval(drivers[0], session_id=session_id)
        bar = Progress("verifying the ledger", int(total), shown=show_progress)
        batch = await _read(pairs[0], _LOW, session_id, batch_size)
        while batch.chains:
            # The next batch read on the other pair while this one is checked (in a thread,
            # so the loop sends the queries and the server works meanwhile).
            after = batch.chains[-1]["session_id"]
            pairs.reverse()
            following = asyncio.create_task(_read(pairs[0], after, session_id, batch_size))
            try:
                checked = await asyncio.to_thread(_check, batch, result, root)
            except BaseException:
                following.cancel()
                raise
            bar.advance(checked)
            if progress is not None:
                progress(checked)
            batch = await following
        bar.finish()
    result.root = root.hexdigest()
    return result


async def _read(
    drivers: tuple[Driver, Driver], after: str, session_id: str | None, size: int
) -> _Batch:
    """The batch of chains after ``after``: their entries and responses on one connection,
    their pieces (the heavier read: PostgreSQL hashes them) on the other, at once."""
    chains = await sql.LEDGER_CHAINS.fetch(
        drivers[0], after=after, session_id=session_id, batch_size=size
    )
    ids = [chain["session_id"] for chain in chains]
    batch = _Batch(list(chains), defaultdict(list), {}, defaultdict(list))
    if ids:
        await asyncio.gather(
            _read_entries(drivers[0], ids, batch), _read_pieces(drivers[1], ids, batch)
        )
    return batch


async def _read_entries(driver: Driver, ids: list[str], batch: _Batch) -> None:
    for row in await sql.LEDGER_CHAIN_ENTRIES.fetch(driver, session_ids=ids):
        batch.entries[row["session_id"]].append(_stored(row))
    for row in await sql.LEDGER_RESPONSES.fetch(driver, session_ids=ids):
        batch.responses[row["session_id"]].append(row)


async def _read_pieces(driver: Driver, ids: list[str], batch: _Batch) -> None:
    for row in await sql.LEDGER_CHAIN_PIECES.fetch(driver, session_ids=ids):
        batch.pieces[row["session_id"]] = row


def _stored(row: Any) -> StoredEntry:
    return StoredEntry(
        row["entry_seq"],
        row["micros"],
        row["provenance"],
        row["frame"],
        row["body"],
        row["prev"],
        row["digest"],
    )


def _check(batch: _Batch, result: LedgerVerification, root: Any) -> int:
    checked = 0
    for chain in batch.chains:
        session_id = chain["session_id"]
        entries = batch.entries.get(session_id, [])
        erased = chain["erased_at"] is not None
        links = None if erased else _links(session_id, batch, result, entries)
        row = ChainRow(session_id, chain["entries"], chain["first_entry"], chain["last_digest"])
        responses = batch.responses.get(session_id, [])
        result.findings += verify_chain(row, entries, links)
        result.findings += _responses(session_id, entries, responses)
        result.responses += len(responses)
        result.chains += 1
        result.erased_chains += erased
        result.entries += len(entries)
        checked += len(entries)
        root.update(session_id.encode("utf-8", "surrogatepass") + b"\x00")
        root.update(chain["last_digest"] or b"")
    return checked


def _links(
    session_id: str, batch: _Batch, result: LedgerVerification, entries: list[StoredEntry]
) -> dict[int, bytes]:
    """What each of the chain's frame elements adds to a body (verify_chain); a plain
    piece whose text no longer gives its digest is named in each entry that uses it."""
    row = batch.pieces.get(session_id)
    if row is None:
        return {}
    result.sealed_pieces += row["sealed"]
    result.plain_pieces += row["plain"]
    blob = row["digests"]
    links: dict[int, bytes] = {}
    for index, number in enumerate(row["numbers"]):
        digest = blob[index * 32 : index * 32 + 32]
        links[number] = b"." + digest
        links[-number] = b"," + digest
    altered = set(row["altered"] or ())
    for entry in entries if altered else ():
        used = sorted(altered & {abs(n) for n in entry.frame})
        if used:
            pieces = ", ".join(map(str, used))
            result.findings.append(
                Finding(session_id, entry.entry_seq, "altered", f"its piece(s) {pieces} edited")
            )
    return links


def _responses(session_id: str, entries: list[StoredEntry], responses: list[Any]) -> list[Finding]:
    """Responses no longer bound to their entry.  One whose entry moved or went is not
    named again: the entry's finding says what happened."""
    by_seq = {entry.entry_seq: entry for entry in entries}
    found = []
    for response in responses:
        text = response["response_id"].encode("utf-8", "surrogatepass")
        entry = by_seq.get(response["entry_seq"])
        if entry is None or _binds(entry.digest, text, response["digest"]):
            continue
        if any(_binds(other.digest, text, response["digest"]) for other in entries):
            continue
        detail = f"response {response['response_id']!r} is not the one attached to it"
        found.append(Finding(session_id, response["entry_seq"], "response altered", detail))
    return found


def _binds(entry_digest: bytes, response_id: bytes, digest: bytes) -> bool:
    return hashlib.sha256(entry_digest + response_id).digest() == digest
