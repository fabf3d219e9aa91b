"""A turn's append, plaintext or sealed, through one statement: ``ctxstore_append_v7``.

The session row hands out the positions, so concurrent appends never collide and nothing
stored is read. What the kinds differ in is the session's content hash:

- plaintext, a SHA-256 over the message digests: the call sends the caller's expected
  version (None: wherever the session stands), and the hash is extended when this
  process knows the one stored, else left unknown for the next load to recompute;
- sealed, a keyed chain every load verifies (encryption.ChainHasher): the call must
  extend the very chain stored, so it names the version it extends, and a process that
  doesn't know the session reads its version, count and hash first.

A refused call wrote nothing and returns where the session stood (its version, count, hash
and expiry), so the next try needs no read: an expired session is purged and appended to
as a new one, a version other than the caller's expected one is a conflict, a session that
can't take the messages is refused. Sealed writers refused twice read the session in a
transaction that locks its row: writers of one session take turns there instead of
retrying. The user's lock comes first, as in every write naming a user (lock order: user,
session row, keys).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from ctxstore.encryption import DataKey, chain_key_id
from ctxstore.errors import ConflictError, DataKeyDestroyedError
from ctxstore.storage import rules
from ctxstore.storage.knowledge import Known
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.keys import session_owner
from ctxstore.storage.postgres.saving import Hasher, KeysFor
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import NEW_SESSION, Limits

#: Tries in all: the first, one more from where the refusal saw the session, then (sealed)
#: locked ones, which only writers creating the same new session meanwhile can make fail.
ATTEMPTS = 5
#: The try from which a sealed append reads the session with its row locked.
LOCKED_FROM = 2


@dataclass(frozen=True)
class Base:
    """The stored session an append extends (version NEW_SESSION: none yet; None: not
    known, a plaintext append then goes wherever the session stands)."""

    version: int | None
    count: int | None
    content_hash: bytes | None
    hasher: Hasher | None  # has taken every stored digest (None: can't be extended)
    expired: bool = False  # stored, but expired: to be purged before the append


UNKNOWN = Base(None, None, None, None)
NEW = Base(NEW_SESSION, 0, None, None)


@dataclass(frozen=True)
class Turn:
    """An append's own parameters: ``values`` are the statement's but the base's."""

    session_id: str
    key: DataKey | None
    user_id: str | None
    expected: int | None
    added_digests: bytes
    values: dict[str, Any]

    @property
    def added(self) -> int:
        return len(self.values["new_rows"])


@dataclass(frozen=True)
class Appended:
    start: int
    version: int
    hasher: Hasher | None  # has taken every digest now stored (None: the hash is unknown)


async def append(
    driver: Driver, turn: Turn, known: Known | None, keys_for: KeysFor, limits: Limits
) -> Appended:
    """The turn appended; the base it starts from is this process's knowledge, when it
    has what the kind needs."""
    base = _known_base(turn, known)
    for attempt in range(ATTEMPTS):
        locked = turn.key is not None and attempt >= LOCKED_FROM
        async with driver.transaction() if locked else nullcontext():
            if base is None or locked:
                if locked and turn.user_id is not None:
                    await sql.SHARE_USER_LOCK.execute(driver, user_id=turn.user_id)
                base = await read_base(driver, turn.session_id, keys_for, locked=locked)
                _check(turn, base, limits)
            outcome = await _append_at(driver, turn, base, keys_for)
        if isinstance(outcome, Appended):
            return outcome
        base = await _after_refusal(driver, turn, outcome, limits)
    raise ConflictError(
        f"append to {turn.session_id!r}: other writers kept creating it during {ATTEMPTS} "
        "tries; nothing was written, try again",
        session_id=turn.session_id,
    )


def _known_base(turn: Turn, known: Known | None) -> Base | None:
    """What this process knows of the session as a base; None: a sealed append reads it."""
    if turn.key is None:
        if known is None:
            return UNKNOWN
        return Base(known.version, known.count, known.content_hash, known.hasher)
    if known is None or known.hasher is None or known.version is None:
        return None
    if turn.expected is not None and turn.expected != known.version:
        return None  # what this process knows is not what the caller expects: read
    return Base(known.version, known.count or 0, known.content_hash, known.hasher)


def _check(turn: Turn, base: Base, limits: Limits) -> None:
    """The caller's expected version and the message limit, against a stored base."""
    if base.expired or base.version is None:
        return
    if turn.expected is not None and base.version != turn.expected:
        raise rules.stale_session(turn.session_id, base.version, turn.expected)
    if base.version != NEW_SESSION:
        rules.check_message_count(turn.added, limits, base.count or 0)


async def read_base(driver: Driver, session_id: str, keys_for: KeysFor, *, locked: bool) -> Base:
    """The session as stored (``locked``: its row locked, in the caller's transaction),
    its chain resumed from the stored hash."""
    facts = await (sql.LOCK_SESSION_FACTS if locked else sql.SESSION_FACTS).fetchrow(
        driver, sid=session_id
    )
    if facts is None:
        return NEW
    return await _stored_base(
        driver,
        keys_for,
        int(facts["version"]),
        int(facts["message_count"]),
        facts["content_hash"],
        expired=facts["expired"],
    )


async def _stored_base(
    driver: Driver,
    keys_for: KeysFor,
    version: int,
    count: int,
    stored: bytes | None,
    *,
    expired: bool,
) -> Base:
    """A stored session as a base, a sealed chain resumed from ``stored``."""
    if expired:
        return Base(NEW_SESSION, 0, None, None, expired=True)
    hasher, hash_key_id = None, chain_key_id(stored)
    if hash_key_id is not None and stored is not None:
        keys = await keys_for({hash_key_id}, driver)
        hash_key = keys.get(hash_key_id) if keys is not None else None
        hasher = hash_key.resume(stored) if hash_key is not None else None
    return Base(version, count, stored, hasher)


async def _append_at(driver: Driver, turn: Turn, base: Base, keys_for: KeysFor) -> Appended | Base:
    """The append at ``base``, or, refused (nothing written), the session as the refusing
    call saw it."""
    extended = None
    if base.hasher is not None:
        extended = base.hasher.copy()
        extended.update(turn.added_digests)
    start, version, now_version, now_count, now_hash, expired = await sql.APPEND.fetchval(
        driver,
        **turn.values,
        expected=turn.expected if turn.key is None else base.version,
        known_count=base.count,
        known_hash=base.content_hash,
        extended_hash=extended.digest() if extended is not None else None,
    )
    if version is None:
        if now_version is None:
            return NEW
        return await _stored_base(
            driver, keys_for, int(now_version), int(now_count), now_hash, expired=expired
        )
    if int(start) == 0:  # the append stored the hash of the added digests alone
        extended = rows.hasher(turn.key, turn.added_digests)
    elif int(start) != base.count:
        extended = None  # plaintext, appended after messages this process never saw
    return Appended(int(start), int(version), extended)


async def _after_refusal(driver: Driver, turn: Turn, refused: Base, limits: Limits) -> Base:
    """The base of the next try, from where the refusal saw the session."""
    if not refused.expired:
        _check(turn, refused, limits)
        return refused
    # An expired session is a new one: purged first, committed.
    await sql.PURGE_IF_EXPIRED.execute(driver, sid=turn.session_id)
    if turn.key is not None and turn.key.owner == session_owner(turn.session_id):
        # the purge destroyed the key these messages were sealed under: the storage seals
        # them again under a fresh one (keys.resealed_if_key_destroyed)
        raise DataKeyDestroyedError(
            f"append to {turn.session_id!r}: the expired session's own data key was "
            "destroyed with it; nothing was written"
        )
    return NEW
