"""An append to a sealed session, its content hash carried on as a chain.

A sealed session's content hash is a keyed chain over its message digests
(encryption.ChainHasher), which every load verifies.  An append must therefore extend
the very chain stored, never leave it unknown as a plaintext append may.

- A process that knows the session (it loaded or wrote it last) extends its chain and
  calls the append with that version expected: one statement, as for plaintext.
- Otherwise it reads the session's version, count and hash, resumes the chain from the
  stored hash and appends at that version: two statements.  When a call is refused
  because another writer got in between (nothing written), the refusal carries the same
  three (``ctxstore_append_v5``), so the next try needs no read.
- Refused again, it reads them in a transaction that locks the session row first:
  writers of one session take turns there instead of retrying.  The user's lock comes
  first, as in every write naming a user (lock order: user, session row, keys).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from ctxstore.encryption import DataKey, chain_key_id
from ctxstore.errors import ConflictError, DataKeyDestroyedError
from ctxstore.storage import rules
from ctxstore.storage.knowledge import Known
from ctxstore.storage.postgres import sql
from ctxstore.storage.postgres.keys import session_owner
from ctxstore.storage.postgres.saving import Hasher, KeysFor
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import NEW_SESSION, Limits

#: Tries after the first: one unlocked, then locked ones, which only writers creating
#: the same new session meanwhile can make fail (nothing written; the next try then locks
#: the row they made).
ATTEMPTS = 5


@dataclass(frozen=True)
class Base:
    """The stored session an append extends (version 0: none yet)."""

    version: int
    count: int
    content_hash: bytes | None
    hasher: Hasher | None  # has taken every stored digest (None: can't be extended)
    expired: bool = False  # stored, but expired: to be purged before the append


async def read_base(driver: Driver, session_id: str, keys_for: KeysFor, *, locked: bool) -> Base:
    """The session as stored (``locked``: its row locked, in the caller's transaction),
    its chain resumed from the stored hash."""
    facts = await (sql.LOCK_SESSION_FACTS if locked else sql.SESSION_FACTS).fetchrow(
        driver, sid=session_id
    )
    if facts is None:
        return Base(NEW_SESSION, 0, None, None)
    return await _base(
        driver,
        keys_for,
        int(facts["version"]),
        int(facts["message_count"]),
        facts["content_hash"],
        expired=facts["expired"],
    )


async def _base(
    driver: Driver,
    keys_for: KeysFor,
    version: int,
    count: int,
    stored: bytes | None,
    *,
    expired: bool,
) -> Base:
    """A stored session as a base, its chain resumed from ``stored``."""
    if expired:
        return Base(NEW_SESSION, 0, None, None, expired=True)
    hasher, hash_key_id = None, chain_key_id(stored)
    if hash_key_id is not None and stored is not None:
        keys = await keys_for({hash_key_id}, driver)
        hash_key = keys.get(hash_key_id) if keys is not None else None
        hasher = hash_key.resume(stored) if hash_key is not None else None
    return Base(version, count, stored, hasher)


async def append(
    driver: Driver,
    session_id: str,
    *,
    expected: int | None,
    known: Known | None,
    key: DataKey,
    user_id: str | None,
    added_digests: bytes,
    values: dict[str, Any],
    keys_for: KeysFor,
    limits: Limits,
) -> tuple[int, int, Hasher]:
    """(start, version, hasher having taken every digest) of the appended messages;
    ``values``: the append's parameters but the base's."""
    refused: Base | None = None  # where the last refused call saw the session
    if known is not None and known.hasher is not None and known.version is not None:
        base = Base(known.version, known.count or 0, known.content_hash, known.hasher)
        if expected is None or expected == base.version:
            done, refused = await _append_at(driver, base, key, added_digests, values, keys_for)
            if done is not None:
                return done
    for attempt in range(ATTEMPTS):
        locked = attempt > 0
        async with driver.transaction() if locked else nullcontext():
            if locked and user_id is not None:
                await sql.SHARE_USER_LOCK.execute(driver, user_id=user_id)
            if refused is not None and not locked:
                base = refused
            else:
                base = await read_base(driver, session_id, keys_for, locked=locked)
            done = refused = None
            if not base.expired:
                if expected is not None and base.version != expected:
                    raise rules.stale_session(session_id, base.version, expected)
                if base.version != NEW_SESSION:
                    rules.check_message_count(len(values["new_rows"]), limits, base.count)
                done, refused = await _append_at(driver, base, key, added_digests, values, keys_for)
        if done is not None:
            return done
        if base.expired:  # an expired session is a new one: purged first, committed
            await sql.PURGE_IF_EXPIRED.execute(driver, sid=session_id)
            if key.owner == session_owner(session_id):
                # the purge destroyed the key these messages were sealed under: the
                # storage seals them again under a fresh one (keys.resealed_if_key_destroyed)
                raise DataKeyDestroyedError(
                    f"append to {session_id!r}: the expired session's own data key was "
                    "destroyed with it; nothing was written"
                )
            continue
        # refused: a writer got in between (next: locked), or created the session
    raise ConflictError(
        f"append to {session_id!r}: other writers kept creating it during {ATTEMPTS} "
        "tries; nothing was written, try again",
        session_id=session_id,
    )


async def _append_at(
    driver: Driver,
    base: Base,
    key: DataKey,
    added_digests: bytes,
    values: dict[str, Any],
    keys_for: KeysFor,
) -> tuple[tuple[int, int, Hasher] | None, Base | None]:
    """The append at ``base``: (start, version, hasher), or, refused (nothing written),
    the session as the refusing call saw it."""
    extended = None
    if base.hasher is not None:
        extended = base.hasher.copy()
        extended.update(added_digests)
    start, version, now_version, now_count, now_hash, expired = await sql.APPEND.fetchval(
        driver,
        **values,
        expected=base.version,
        known_count=base.count,
        known_hash=base.content_hash,
        extended_hash=extended.digest() if extended is not None else None,
    )
    if version is None:
        if now_version is None:
            return None, Base(NEW_SESSION, 0, None, None)
        stored = await _base(
            driver, keys_for, int(now_version), int(now_count), now_hash, expired=expired
        )
        return None, stored
    if int(start) == 0:  # the append stored the chain of the added digests alone
        extended = key.hasher(added_digests)
    return (int(start), int(version), extended), None
