"""``ctxstore rotate-keys``: re-wrap data keys under the current master key, online.

Re-wrapping touches ``data_keys`` only: batches of keys wrapped under another master key,
locked with SKIP LOCKED (a concurrent run takes other rows), unwrapped with their master
key and wrapped again under the current one.  A rerun continues with what is left.

``--reencrypt`` also replaces the data keys themselves.  A rotation starts by retiring
every current key (writers then create fresh ones; a writer still holding a retired key in
its cache seals under it for up to ``Encryption.cache_seconds``).  Then, session by
session (SKIP LOCKED: sessions being written wait for the next run), every row sealed
under a retired key, or still in plaintext, is sealed again under the owner's current
key; then the profiles; last, retired keys no row refers to are deleted (locked first: a
writer whose cache still seals under one either committed before, and the key stays, or
finds it gone at commit and seals again).  While retired keys remain, a rerun continues
that rotation instead of starting another.

Writers never notice it: the versions don't move (no content changes), and an append that
extends the content hash it knew, rewritten here since, is refused by the database and
resumed from the stored one (revision 0026).  A session holding a row under a key it may
not hold (moved to another user in SQL) is listed, not sealed again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.encryption import (
    DataKey,
    Encryption,
    KeyProvider,
    document_aad,
    message_aad_prefix,
    opening_aad,
    pack_message,
)
from ctxstore.errors import CorruptDataError
from ctxstore.models import full_digest
from ctxstore.progress import Progress
from ctxstore.storage.postgres import PostgresStorage, rows, sql
from ctxstore.storage.postgres.keys import DataKeys, SessionOwners, session_owner, user_owner
from ctxstore.storage.postgres.statement import Driver


@dataclass
class RotationReport:
    rewrapped: int = 0
    sessions: int = 0
    profiles: int = 0
    rows: int = 0
    keys_deleted: int = 0
    keys_left: int = 0
    batches: int = 0
    seconds: float = 0.0
    reencrypt: bool = False
    #: Sessions and profiles left as they are: they hold plaintext rows the encryption
    #: refuses (sealing them would make a forged row look genuine), or fail to open.
    refused: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = f"re-wrapped {self.rewrapped:,} data keys under the current master key"
        if self.reencrypt:
            text += (
                f"; re-encrypted {self.rows:,} rows of {self.sessions:,} sessions and "
                f"{self.profiles:,} profiles under fresh data keys; deleted "
                f"{self.keys_deleted:,} retired keys"
            )
            if self.keys_left:
                text += f" ({self.keys_left:,} still in use: run again)"
            if self.refused:
                shown = ", ".join(self.refused[:5]) + (", ..." if len(self.refused) > 5 else "")
                text += (
                    f"; left {len(self.refused):,} unsealed or corrupt as they are ({shown}): "
                    "plaintext rows are sealed only with --seal-plaintext"
                )
        return f"{text}, {self.batches:,} batches, {self.seconds:.1f} s"


@dataclass
class MasterKeyStatus:
    """Which master keys wrap data keys: the check of an erasure epoch's step 2 and 3
    (docs/threat-model.md, "Erasure epochs")."""

    current: str
    wrapped: dict[str, int]  # master key id: data keys wrapped under it
    idle: list[str]  # the provider's keys that wrap none (a Keyring's; a KMS lists none)

    def summary(self) -> str:
        lines = []
        for master_key_id, count in sorted(self.wrapped.items()):
            role = " (current)" if master_key_id == self.current else ""
            lines.append(f"master key {master_key_id!r}{role} wraps {count:,} data keys")
        stale = sorted(set(self.wrapped) - {self.current})
        if stale:
            lines.append(
                f"not done: {', '.join(map(repr, stale))} still wrap data keys; run "
                "`ctxstore rotate-keys` until only the current key does"
            )
        else:
            lines.append(
                f"done: only the current master key {self.current!r} wraps data keys; note "
                "today's date"
            )
        for key_id in self.idle:
            lines.append(
                f"master key {key_id!r} wraps no data key: once every backup taken before "
                "the rotate-keys run that emptied it has expired (CTXSTORE_BACKUP_RETENTION_"
                "DAYS after that run), remove it from the keyring and destroy every copy"
            )
        return "\n".join(lines)


async def master_key_status(driver: Driver, encryption: Encryption) -> MasterKeyStatus:
    """What each master key wraps now; nothing is changed."""
    with translated("rotate-keys --status"):
        found = await sql.DATA_KEYS_BY_MASTER_KEY.fetch(driver)
    wrapped = {row["master_key_id"]: int(row["data_keys"]) for row in found}
    current = encryption.provider.current_key_id
    known = getattr(encryption.provider, "key_ids", ())
    idle = [key_id for key_id in known if key_id not in wrapped and key_id != current]
    return MasterKeyStatus(current, wrapped, idle)


async def rotate_keys(
    driver: Driver,
    encryption: Encryption,
    *,
    batch_size: int = 100,
    reencrypt: bool = False,
    show: bool = True,
) -> RotationReport:
    report = RotationReport(reencrypt=reencrypt)
    started = time.monotonic()
    keys = DataKeys(
        Encryption(
            encryption.provider,
            cache_seconds=0.0,
            accept_plaintext=encryption.accept_plaintext,
        )
    )
    with translated("rotate-keys"):
        await _rewrap(driver, encryption.provider, batch_size, report, show)
        if reencrypt:
            if not await sql.ANY_RETIRED.fetchval(driver):
                await sql.RETIRE_ALL.execute(driver)
            await _reencrypt_sessions(driver, keys, batch_size, report, show)
            await _reencrypt_profiles(driver, keys, batch_size, report)
            report.keys_deleted = len(await sql.DELETE_UNUSED_RETIRED.fetch(driver))
            report.keys_left = int(await sql.COUNT_RETIRED.fetchval(driver))
    report.seconds = time.monotonic() - started
    return report


async def _rewrap(
    driver: Driver, provider: KeyProvider, batch_size: int, report: RotationReport, show: bool
) -> None:
    current = provider.current_key_id
    total = int(await sql.COUNT_TO_REWRAP.fetchval(driver, current=current))
    progress = Progress("re-wrapping data keys", total, shown=show)
    while True:
        async with driver.transaction():
            found = await sql.REWRAP_BATCH.fetch(driver, current=current, batch_size=batch_size)
            for row in found:
                material = await provider.unwrap(row["master_key_id"], row["wrapped"], row["owner"])
                master_key_id, wrapped = await provider.wrap(material, row["owner"])
                await sql.REWRAP.execute(
                    driver, id=row["key_id"], master_key_id=master_key_id, wrapped=wrapped
                )
        if not found:
            break
        report.batches += 1
        report.rewrapped += len(found)
        progress.advance(len(found))
    progress.finish()


async def _reencrypt_sessions(
    driver: Driver, keys: DataKeys, batch_size: int, report: RotationReport, show: bool
) -> None:
    total = int(await sql.COUNT_SESSIONS.fetchval(driver))
    progress = Progress("re-encrypting sessions", total, shown=show)
    after = ""
    while True:
        async with driver.transaction():
            batch = await sql.SESSIONS_BATCH.fetch(driver, after=after, batch_size=batch_size)
            for session in batch:
                sid = session["session_id"]
                owner = user_owner(session["user_id"]) if session["user_id"] else session_owner(sid)
                key = await keys.current(driver, owner)
                owners = SessionOwners(sid, session["user_id"])
                try:
                    report.rows += await _reseal_session(driver, keys, key, owners)
                except CorruptDataError:
                    report.refused.append(f"session {sid!r}")
        if not batch:
            break
        after = batch[-1]["session_id"]
        report.batches += 1
        report.sessions += len(batch)
        progress.advance(len(batch))
    progress.finish()


async def _reseal_session(
    driver: Driver, keys: DataKeys, key: DataKey, owners: SessionOwners
) -> int:
    """Seal every message, summary and state row of the session under ``key``; rows
    resealed.  Everything is opened (CorruptDataError: a row the encryption refuses, or
    one under a key the session may not hold, which sealing again would launder) before
    the first row is written."""
    sid = owners.session_id
    found = await sql.SESSION_MESSAGES.fetch(driver, sid=sid)
    keyed = await keys.load(driver, rows.sealed_key_ids(found), owners)
    opened = rows.open_messages(found, keyed, sid)
    summaries = await sql.SESSION_SUMMARIES.fetch(driver, sid=sid)
    summary_keys = {r["key_id"] for r in summaries if r["key_id"] is not None}
    loaded = await keys.load(driver, summary_keys, owners)
    texts = [(row, rows.summary_from_row(row, sid, loaded).text) for row in summaries]
    states = [
        (write, row, await _document(driver, keys, row, "state", sid, owners))
        for read, write in sql.STATE_STATEMENTS.values()
        for row in await read.fetch(driver, sid=sid)
    ]
    count = await _reseal_messages(driver, key, sid, opened)
    for row, text in texts:
        aad = document_aad("summary", sid, row["summary_version"])
        value = key.seal(text.encode("utf-8", "surrogatepass"), aad)
        await sql.RESEAL_SUMMARY.execute(
            driver, sid=sid, version=row["summary_version"], key_id=key.key_id, sealed=value
        )
        count += 1
    for write, row, document in states:
        value = key.seal(document, document_aad("state", sid, row["version"]))
        await write.execute(
            driver, sid=sid, version=row["version"], key_id=key.key_id, sealed=value
        )
        count += 1
    return count


async def _reseal_messages(driver: Driver, key: DataKey, sid: str, opened: Sequence[Any]) -> int:
    """Seal the session's opened message rows under ``key`` (the content hash too, when
    every row is current); rows resealed."""
    prefix, seqs, digests, sealed, full = message_aad_prefix(sid), [], [], [], []
    for row in opened:
        seq, name, content, metadata, core = row[0], row[7], row[2], row[8], row[9]
        if row[10] != 2 or (metadata is not None and not isinstance(metadata, dict)):
            continue  # a legacy row: upgrade-data first, this leaves it as it is
        whole = full_digest(core, metadata)
        full.append(whole)
        seqs.append(seq)
        digests.append(key.mac(whole))
        aad = rows.bound_aad_of_row(prefix, row, sid)
        sealed.append(key.seal(pack_message(content, metadata, core, name), aad))
    if seqs:
        await sql.RESEAL_MESSAGES.execute(
            driver, sid=sid, key_id=key.key_id, seqs=seqs, digests=digests, sealed=sealed
        )
        if len(seqs) == len(opened):
            await sql.SET_CONTENT_HASH.execute(
                driver, sid=sid, hash=key.hasher(b"".join(full)).digest()
            )
    return len(seqs)


async def _document(
    driver: Driver,
    keys: DataKeys,
    row: Any,
    kind: str,
    owner_id: str,
    owners: SessionOwners | None = None,
) -> bytes:
    if row["key_id"] is None:
        rows.refuse_plaintext(keys.loaded, kind, owner_id)
        return json.dumps(row["document"], ensure_ascii=False).encode("utf-8")
    old = (await keys.load(driver, {row["key_id"]}, owners))[row["key_id"]]
    session_id = owner_id if kind != "profile" else None
    aad = opening_aad(row["sealed"], kind, owner_id, row["version"])
    return old.open(row["sealed"], aad, session_id=session_id)


async def _reencrypt_profiles(
    driver: Driver, keys: DataKeys, batch_size: int, report: RotationReport
) -> None:
    after = ""
    while True:
        async with driver.transaction():
            batch = await sql.PROFILES_BATCH.fetch(driver, after=after, batch_size=batch_size)
            for row in batch:
                user_id = row["user_id"]
                key = await keys.current(driver, user_owner(user_id))
                try:
                    document = await _document(driver, keys, row, "profile", user_id)
                except CorruptDataError:
                    report.refused.append(f"profile of {user_id!r}")
                    continue
                value = key.seal(document, document_aad("profile", user_id, row["version"]))
                await sql.RESEAL_PROFILE.execute(
                    driver, user_id=user_id, key_id=key.key_id, sealed=value
                )
        if not batch:
            break
        after = batch[-1]["user_id"]
        report.batches += 1
        report.profiles += len(batch)
        report.rows += len(batch)


async def rotate_store_keys(
    storage: PostgresStorage,
    encryption: Encryption,
    *,
    batch_size: int = 100,
    reencrypt: bool = False,
    show: bool = True,
) -> RotationReport:
    """:func:`rotate_keys` on ``storage``'s database."""
    async with storage.maintenance("rotate-keys") as driver:
        return await rotate_keys(
            driver, encryption, batch_size=batch_size, reencrypt=reencrypt, show=show
        )
