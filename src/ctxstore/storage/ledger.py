"""The ledger of Context Contracts: what a recorded call received, cut into pieces, put
back byte for byte, and chained per session (revision 1008).

**Pieces.**  A contract's canonical text has one array element a line (contract.py), so
consecutive contracts of a consultation share most of their lines.  ``cut`` splits the
text after every newline, and a line that closes an array again before each context
part that changes apart (summary, state, profile, knowledge, meta); a piece that starts
with a comma is kept without it and its frame element says so.  Pieces are stored once
per session, addressed by their digest: SHA-256 of the text, or, sealed, its HMAC under
the session's data key (so a digest tells nothing of a text without the key).  ``join``
puts the exact bytes back from any text's pieces: exactness depends on no JSON rule.

**The chain.**  An entry's ``body`` is SHA-256 of its provenance (``Provenance``) and its
frame's (comma, piece digest) list; its ``digest`` is SHA-256 of the previous entry's
digest, its number, its time in microseconds and its body, computed by PostgreSQL as it
links the entry (``ctxstore_record_contract_v1``) and again here by ``verify_chain``.
"""

from __future__ import annotations

import hashlib
import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

#: What the first entry of a chain links to.
ZERO_DIGEST = bytes(32)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_LINK = struct.Struct(">qq")

#: Cuts after each newline, and before each context part that changes on its own.
#: Where a line that closes an array is cut again: before each context part.
_PARTS = re.compile(
    r'(?=,"(?:conversation_summary|consultation_state|user_profile|retrieved_knowledge|meta)":)'
)


@dataclass(frozen=True)
class Provenance:
    """What a contract was built from and for: bound into its entry's body."""

    session_id: str
    turn_id: str
    model: str | None
    token_encoding: str
    token_count: int
    session_version: int
    summary_version: int
    #: 0: the session had no state stored (the builder's initial state went in).
    state_version: int
    #: None: no profile went in.
    profile_version: int | None

    def encoded(self) -> bytes:
        """Its fields as a body binds them: each text its UTF-8 length (4 bytes, all ones
        for None) and bytes, then the numbers, 8 bytes each (-1: no profile)."""
        profile = -1 if self.profile_version is None else self.profile_version
        return b"".join(
            (
                _text(self.session_id),
                _text(self.turn_id),
                _text(self.model),
                _text(self.token_encoding),
                _NUMBERS.pack(
                    self.token_count,
                    self.session_version,
                    self.summary_version,
                    self.state_version,
                    profile,
                ),
            )
        )


_NUMBERS = struct.Struct(">qqqqq")
_NONE = b"\xff\xff\xff\xff"


def _text(value: str | None) -> bytes:
    if value is None:
        return _NONE
    data = value.encode("utf-8", "surrogatepass")
    return len(data).to_bytes(4, "big") + data


@dataclass(frozen=True)
class ContractRecord:
    """A contract to record: its exact text, its provenance, and the user whose erasure
    erases it."""

    text: str
    provenance: Provenance
    user_id: str | None


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded contract's entry, as listed (the text apart)."""

    entry_seq: int
    recorded_at: datetime
    provenance: Provenance
    #: The entry's place in the chain, hex.
    digest: str
    response_id: str | None = None


@dataclass(frozen=True)
class RecordedContract:
    """A recorded contract: its entry and the exact text the call received."""

    entry: LedgerEntry
    text: str


@dataclass(frozen=True)
class Cut:
    """A contract cut: ``frame`` its elements in order, (comma, digest); ``pieces`` each
    distinct piece's text by digest, in first use order."""

    frame: list[tuple[bool, bytes]]
    pieces: dict[bytes, str]


def cut(text: str, digest: Callable[[bytes], bytes]) -> Cut:
    """``text`` in pieces; ``digest``: a piece's digest from its UTF-8 bytes."""
    frame: list[tuple[bool, bytes]] = []
    pieces: dict[bytes, str] = {}
    for part in _parts(text):
        comma = part[0] == ","
        piece = part[1:] if comma else part
        key = digest(piece.encode("utf-8", "surrogatepass"))
        pieces.setdefault(key, piece)
        frame.append((comma, key))
    return Cut(frame, pieces)


def _parts(text: str) -> list[str]:
    """``text`` cut after each newline, and a line that closes an array (``]``: the
    context parts follow it) cut again before each part; none empty."""
    lines = text.split("\n")
    parts = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        parts.append(lines[-1])
    cut_again: list[str] = []
    for part in parts:
        if part[0] == "]":
            cut_again += [piece for piece in _PARTS.split(part) if piece]
        else:
            cut_again.append(part)
    return cut_again


def plain_digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def join(frame: Sequence[int], pieces: Mapping[int, str]) -> str:
    """The text of a stored frame: piece numbers, negative where a comma comes first."""
    return "".join(pieces[n] if n > 0 else "," + pieces[-n] for n in frame)


def body_digest(provenance: Provenance, frame: Iterable[tuple[bool, bytes]]) -> bytes:
    """SHA-256 of the provenance and of each frame element's comma flag and digest."""
    links = b"".join((b"," if comma else b".") + digest for comma, digest in frame)
    return _body(provenance.encoded(), links)


def _body(provenance: bytes, links: bytes) -> bytes:
    return hashlib.sha256(b"ctxstore contract v1\x00" + provenance + b"\x00" + links).digest()


def link_digest(prev: bytes, entry_seq: int, recorded_at: datetime, body: bytes) -> bytes:
    """The digest ``ctxstore_record_contract_v1`` gives an entry."""
    return _link(prev, entry_seq, (recorded_at - _EPOCH) // _MICROSECOND, body)


def _link(prev: bytes, entry_seq: int, micros: int, body: bytes) -> bytes:
    return hashlib.sha256(prev + _LINK.pack(entry_seq, micros) + body).digest()


# -- verification ---------------------------------------------------------------------------


class StoredEntry(NamedTuple):
    """An entry's columns, as verification reads them: its time in microseconds since
    the epoch, and its provenance as ``Provenance.encoded`` (a million are read at once)."""

    entry_seq: int
    micros: int
    provenance: bytes
    frame: Sequence[int]
    body: bytes
    prev: bytes
    digest: bytes


@dataclass(frozen=True)
class Finding:
    """One tampering found: the session, the entry it names and what was done to it."""

    session_id: str
    entry_seq: int
    kind: str
    detail: str

    def line(self) -> str:
        return f"session {self.session_id}, entry {self.entry_seq}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class ChainRow:
    """A chain's own row: the entries recorded, the first kept (a retention purge removes
    the oldest), and the last one's digest."""

    session_id: str
    recorded: int
    first_entry: int
    last_digest: bytes | None


def verify_chain(
    chain: ChainRow, entries: Sequence[StoredEntry], links: Mapping[int, bytes] | None
) -> list[Finding]:
    """Every tampering of one chain, named: ``entries`` in entry_seq order; ``links``
    what each frame element adds to a body (a piece number: b"." and its digest; its
    negative: b"," and the digest; None: the pieces were erased, so bodies can't be
    recomputed, only the links).  The first entry kept links to a purged one: its link is
    where the chain begins."""
    session_id = chain.session_id
    findings: list[Finding] = []
    found = findings.append
    by_digest = {entry.digest: entry for entry in entries}
    expected, expected_prev, previous_wrong = chain.first_entry, ZERO_DIGEST, False
    if chain.first_entry > 1 and entries and entries[0].entry_seq == chain.first_entry:
        expected_prev = entries[0].prev
    wrong: list[StoredEntry] = []
    for entry in entries:
        seq = entry.entry_seq
        if seq < chain.first_entry:
            detail = f"the chain keeps entries from {chain.first_entry} on: it was purged"
            found(Finding(session_id, seq, "added", detail))
            continue
        if seq > expected:
            span = (
                f"entry {expected} is"
                if seq == expected + 1
                else f"entries {expected} to {seq - 1} are"
            )
            found(Finding(session_id, expected, "removed", f"{span} missing"))
        own = _link(entry.prev, seq, entry.micros, entry.body)
        if own != entry.digest:
            wrong.append(entry)
        elif entry.prev != expected_prev and seq == expected and not previous_wrong:
            # (after an entry found wrong, that entry is what is named)
            found(Finding(session_id, seq, "broken link", _link_detail(entry, by_digest)))
        elif links is not None and not _body_holds(entry, links):
            found(Finding(session_id, seq, "altered", _BODY_ALTERED))
        expected, expected_prev, previous_wrong = seq + 1, entry.digest, own != entry.digest
    findings += _misplaced(session_id, wrong, entries, by_digest)
    findings += _tail(chain, entries, wrong)
    findings.sort(key=lambda f: (f.entry_seq, f.kind))
    return findings


_BODY_ALTERED = "its provenance, frame or pieces no longer give its body digest"


def _tail(
    chain: ChainRow, entries: Sequence[StoredEntry], wrong: list[StoredEntry]
) -> list[Finding]:
    """The chain's end against its row: entries gone from the tail, or added past it."""
    session_id, recorded, last_digest = chain.session_id, chain.recorded, chain.last_digest
    findings = []
    last_seq = max((entry.entry_seq for entry in entries), default=chain.first_entry - 1)
    if recorded > last_seq:
        detail = f"the chain recorded {recorded} entries; from {last_seq + 1} on they are gone"
        findings.append(Finding(session_id, last_seq + 1, "truncated", detail))
    named = {entry.entry_seq for entry in wrong}
    for entry in entries:
        if entry.entry_seq > recorded and entry.entry_seq not in named:
            detail = f"the chain recorded {recorded} entries, not this one"
            findings.append(Finding(session_id, entry.entry_seq, "added", detail))
        elif entry.entry_seq == recorded and entry.digest != last_digest and not named:
            detail = "it is not the entry recorded last"
            findings.append(Finding(session_id, recorded, "altered", detail))
    return findings


def _body_holds(entry: StoredEntry, links: Mapping[int, bytes]) -> bool:
    try:
        joined = b"".join(map(links.__getitem__, entry.frame))
    except KeyError:
        return False
    return _body(entry.provenance, joined) == entry.body


def _link_detail(entry: StoredEntry, by_digest: Mapping[bytes, StoredEntry]) -> str:
    origin = by_digest.get(entry.prev)
    if origin is not None:
        return f"it follows entry {origin.entry_seq}, not the entry before it"
    return "it follows no entry of this chain"


def _misplaced(
    session_id: str,
    wrong: list[StoredEntry],
    entries: Sequence[StoredEntry],
    by_digest: Mapping[bytes, StoredEntry],
) -> list[Finding]:
    """Entries whose digest no longer matches their columns, named: moved to another
    number (reordered), a copy of another (re-inserted), their contents exchanged with
    another's (swapped), or otherwise altered."""
    findings: list[Finding] = []
    at = {entry.entry_seq: entry for entry in entries}
    for entry in wrong:
        origin = by_digest.get(entry.prev)
        place = 1 if entry.prev == ZERO_DIGEST else (origin.entry_seq + 1 if origin else None)
        seq = entry.entry_seq
        if (
            place is not None
            and place != seq
            and _link(entry.prev, place, entry.micros, entry.body) == entry.digest
        ):
            original = at.get(place)
            if original is not None and original.digest == entry.digest:
                kind, detail = "re-inserted", f"a copy of entry {place}"
            else:
                kind, detail = "reordered", f"recorded as entry {place}"
            findings.append(Finding(session_id, seq, kind, detail))
            continue
        partner = next(
            (
                other.entry_seq
                for other in wrong
                if other is not entry
                and _link(entry.prev, seq, entry.micros, other.body) == entry.digest
            ),
            None,
        )
        if partner is not None:
            findings.append(
                Finding(session_id, seq, "swapped", f"it holds the contract of entry {partner}")
            )
        else:
            findings.append(
                Finding(session_id, seq, "altered", "its digest no longer matches its columns")
            )
    return findings
