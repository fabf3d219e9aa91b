"""The ledger of contracts on PostgreSQL: record, read back, list, attach a response.

A contract is cut into pieces (storage/ledger.py) and sent whole to
``ctxstore_record_contract_v1``, which stores the pieces the session's ledger lacks and
links the entry, in one statement.  With encryption on, each piece is sealed under the
session's data key, its digest an HMAC under the same key, and its associated data binds
it to its session and digest: a piece moved or altered fails to open.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import asyncpg

from ctxstore.encryption import DataKey
from ctxstore.errors import CorruptDataError, DataKeyDestroyedError
from ctxstore.storage.ledger import (
    ContractRecord,
    Cut,
    LedgerEntry,
    Provenance,
    RecordedContract,
    body_digest,
    cut,
    join,
    plain_digest,
)
from ctxstore.storage.postgres import sql
from ctxstore.storage.postgres.statement import Driver

Keys = Mapping[int, DataKey]


def piece_aad(session_id: str, digest: bytes) -> bytes:
    return b"ctxstore contract piece\x00" + session_id.encode("utf-8", "surrogatepass") + digest


#: Raised by ctxstore_record_contract_v1: the frame names a piece neither stored nor sent.
PIECES_MISSING = "CX004"


class KnownPieces:
    """The pieces this process knows its sessions' ledgers hold, by digest, for the
    sessions it recorded last (a bound number): a record sends (and seals) only the
    others.  A piece it wrongly believes stored (another process purged it) is refused,
    and the record sent again whole."""

    def __init__(self, sessions: int = 1024) -> None:
        self._sessions = sessions
        self._known: OrderedDict[str, set[bytes]] = OrderedDict()

    def of(self, session_id: str) -> set[bytes]:
        known = self._known.get(session_id)
        if known is None:
            return set()
        self._known.move_to_end(session_id)
        return known

    def add(self, session_id: str, digests: Iterable[bytes]) -> None:
        self._known.setdefault(session_id, set()).update(digests)
        self._known.move_to_end(session_id)
        while len(self._known) > self._sessions:
            self._known.popitem(last=False)

    def forget(self, session_id: str) -> None:
        self._known.pop(session_id, None)


async def record(
    driver: Driver, contract: ContractRecord, key: DataKey | None, known: KnownPieces
) -> LedgerEntry:
    provenance = contract.provenance
    session_id = provenance.session_id
    digest = plain_digest if key is None else (lambda data: key.mac(plain_digest(data)))
    pieces = cut(contract.text, digest)
    stored = known.of(session_id)
    try:
        row = await _record(driver, contract, pieces, key, stored)
    except asyncpg.PostgresError as error:
        if error.sqlstate != PIECES_MISSING:
            raise
        known.forget(session_id)
        row = await _record(driver, contract, pieces, key, set())
    known.add(session_id, pieces.pieces)
    entry_seq, recorded_at, digest_of_entry, _new_pieces = row
    return LedgerEntry(entry_seq, recorded_at, provenance, digest_of_entry.hex())


async def _record(
    driver: Driver, contract: ContractRecord, pieces: Cut, key: DataKey | None, stored: set[bytes]
) -> Any:
    provenance = contract.provenance
    session_id = provenance.session_id
    sent = {digest: text for digest, text in pieces.pieces.items() if digest not in stored}
    if key is None:
        contents: list[str | None] = list(sent.values())
        sealed: list[bytes | None] = [None] * len(sent)
    else:
        contents = [None] * len(sent)
        sealed = [
            key.seal(text.encode("utf-8", "surrogatepass"), piece_aad(session_id, digest))
            for digest, text in sent.items()
        ]
    return await sql.RECORD_CONTRACT.fetchval(
        driver,
        session_id=session_id,
        user_id=contract.user_id,
        turn_id=provenance.turn_id,
        model=provenance.model,
        token_encoding=provenance.token_encoding,
        token_count=provenance.token_count,
        session_version=provenance.session_version,
        summary_version=provenance.summary_version,
        state_version=provenance.state_version,
        profile_version=provenance.profile_version,
        frame=[digest for _, digest in pieces.frame],
        commas=[comma for comma, _ in pieces.frame],
        digests=list(sent),
        contents=contents,
        key_ids=[None if key is None else key.key_id] * len(sent),
        sealed=sealed,
        body=body_digest(provenance, pieces.frame),
    )


async def erase_chains(driver: Driver, user_id: str, session_ids: list[str]) -> int:
    """An erasure's part in the ledger, once the user's sessions are erased: each chain of
    the user (and of the sessions erased with them) in a call of its own, which Citus runs
    on the chain's worker (revision 1008).  How many chains were erased."""
    chains = await sql.USER_CHAINS.fetch(driver, user_id=user_id, session_ids=session_ids)
    erased = 0
    for chain in chains:
        erased += bool(
            await sql.ERASE_CHAIN.fetchval(driver, session_id=chain["session_id"], user_id=user_id)
        )
    return erased


async def read(
    driver: Driver, session_id: str, turn_id: str, entry_seq: int | None, keys: Any
) -> RecordedContract | None:
    """The entry and its text; ``keys``: an async callable giving the keys of a set of key
    ids for the chain's user (None: encryption off)."""
    row = await sql.CONTRACT_ENTRY.fetchrow(
        driver, session_id=session_id, turn_id=turn_id, entry_seq=entry_seq
    )
    if row is None:
        return None
    if row["erased_at"] is not None:
        raise DataKeyDestroyedError(
            f"the contracts of session {session_id} were erased with their user "
            f"at {row['erased_at']:%Y-%m-%d %H:%M:%S UTC}: only their entries remain"
        )
    frame: list[int] = row["frame"]
    found = await sql.CONTRACT_PIECES.fetch(
        driver, session_id=session_id, piece_nos=sorted({abs(n) for n in frame})
    )
    sealed_keys = {piece["key_id"] for piece in found if piece["sealed"] is not None}
    opened = await keys(sealed_keys, row["user_id"]) if sealed_keys else {}
    texts = {piece["piece_no"]: _text(session_id, piece, opened) for piece in found}
    missing = {abs(n) for n in frame} - texts.keys()
    if missing:
        raise CorruptDataError(
            f"contract entry {row['entry_seq']} names pieces that are gone: {sorted(missing)}",
            session_id=session_id,
        )
    return RecordedContract(entry_of(session_id, row), join(frame, texts))


def _text(session_id: str, piece: Any, keys: Keys | None) -> str:
    if piece["sealed"] is None:
        text: str = piece["content"]
        return text
    key = keys.get(piece["key_id"]) if keys is not None else None
    if key is None:
        raise DataKeyDestroyedError(
            f"contract piece {piece['piece_no']} of session {session_id} is sealed under "
            f"data key {piece['key_id']}, which this store can't open"
        )
    plain = key.open(piece["sealed"], piece_aad(session_id, piece["digest"]), session_id=session_id)
    return plain.decode("utf-8", "surrogatepass")


async def entries(driver: Driver, session_id: str) -> list[LedgerEntry]:
    rows = await sql.CONTRACT_ENTRIES.fetch(driver, session_id=session_id)
    return [entry_of(session_id, row) for row in rows]


def entry_of(session_id: str, row: Any) -> LedgerEntry:
    return LedgerEntry(
        row["entry_seq"],
        row["recorded_at"],
        provenance_of(session_id, row),
        row["digest"].hex(),
        row["response_id"],
    )


def provenance_of(session_id: str, row: Any) -> Provenance:
    return Provenance(
        session_id,
        row["turn_id"],
        row["model"],
        row["token_encoding"],
        row["token_count"],
        row["session_version"],
        row["summary_version"],
        row["state_version"],
        row["profile_version"],
    )
