"""The pieces of ``PostgresStorage.save`` that need no storage: a list recognised as an
extension of what is stored (the conditional append's inputs), and the locked save that
compares hashes in one transaction and rewrites only from where the lists part."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ctxstore.encryption import DataKey
from ctxstore.errors import DataKeyDestroyedError
from ctxstore.models import Message, full_digest
from ctxstore.storage import rules
from ctxstore.storage.knowledge import Known, StoredList
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.keys import SessionOwners, user_owner
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import NEW_SESSION, Limits
from ctxstore.storage.write_ids import carried
from ctxstore.tokens import TokenCounter

Hasher = Any  # hashlib's HASH object
#: The unwrapped data keys of these key ids, read on ``driver`` (None: encryption off).
KeysFor = Callable[[set[int], Driver], Awaitable[rows.Keys | None]]


def prefix_and_total_hash(
    digests: Sequence[bytes], prefix: int, key: DataKey | None
) -> tuple[bytes, Hasher]:
    """Content hash of ``digests[:prefix]``, and a hasher that has taken all of them."""
    hasher = rows.hasher(key, b"".join(digests[:prefix]))
    prefix_hash = hasher.digest()
    hasher.update(b"".join(digests[prefix:]))
    return prefix_hash, hasher


@dataclass(frozen=True)
class Extension:
    """A save believed to extend what is stored: the conditional append's inputs."""

    #: What this process believes is stored.
    known: Known
    added: Sequence[Message]
    digests: list[bytes]  # of ``added``
    hasher: Hasher  # has taken every digest of the whole list
    activity: dict[str, Any]
    #: The knowledge once it is stored at a version.
    after: Callable[[int], Known]


def recognised(
    known: Known,
    located: StoredList,
    added: Sequence[Message],
    activity: dict[str, Any],
    limits: Limits,
) -> tuple[Extension, list[bytes]]:
    """A list that starts with the very objects stored: O(new messages).  (The
    extension, the digests of ``added``.)"""
    assert known.hasher is not None  # checked by the caller
    digests = rows.digests_of(added, limits)
    hasher = known.hasher.copy()
    hasher.update(b"".join(digests))
    return Extension(
        known,
        added,
        digests,
        hasher,
        activity,
        lambda version: known.extended(version, located, added, digests, hasher),
    ), digests


def hashed(
    entry: Known | None,
    whole: list[Message],
    located: StoredList,
    key: DataKey | None,
    expected: int | None,
    limits: Limits,
) -> tuple[Extension | None, list[bytes]]:
    """(``whole`` as an extension of what this process knew was stored (``entry``), when
    the hash of its first messages is the known content hash, else None; every digest of
    ``whole``)."""
    digests = rows.digests_of(whole, limits)
    if (
        entry is None
        or entry.count is None
        or entry.content_hash is None
        or entry.count > len(whole)
        or expected == NEW_SESSION
    ):
        return None, digests
    prefix_hash, hasher = prefix_and_total_hash(digests, entry.count, key)
    if prefix_hash != entry.content_hash:
        return None, digests
    added = whole[entry.count :]
    return Extension(
        entry,
        added,
        digests[entry.count :],
        hasher,
        rows.activity(added, whole),
        lambda version: rows.known_after_write(version, whole, digests, hasher, located),
    ), digests


async def append_if_unchanged(
    driver: Driver,
    session_id: str,
    extension: Extension,
    new: rows.Batch,
    expected: int | None,
    user_id: str | None,
    ttl: timedelta | None,
) -> int | None:
    """The new version, or None if the session moved on since ``extension.known``."""
    known = extension.known
    version = await sql.APPEND_IF_UNCHANGED.fetchval(
        driver,
        sid=session_id,
        known_count=known.count,
        known_hash=known.content_hash,
        new_count=(known.count or 0) + len(new.messages),
        new_hash=extension.hasher.digest(),
        user_id=user_id,
        expected=expected,
        ttl=ttl,
        write_ids=list(carried()),  # recorded by the same call
        **extension.activity,
        new_rows=rows.new_message_rows(new),
    )
    return int(version) if version is not None else None


class PurgeFirst(Exception):
    """The save found its session expired, and its key may have been that session's (its
    own key, destroyed by the purge, or its user's): purge it on its own, choose the key
    again, then save (nothing was written)."""


@dataclass(frozen=True)
class LockedSave:
    """One save in ``driver``'s transaction, with the storage's rules."""

    driver: Driver
    limits: Limits
    token_counter: TokenCounter
    ttl: timedelta | None
    keys_for: KeysFor

    async def run(
        self,
        session_id: str,
        messages: list[Message],
        digests: list[bytes],
        expected: int | None,
        user_id: str | None,
        key: DataKey | None,
    ) -> tuple[int, Hasher]:
        """Write ``messages``; returns (version, hasher)."""
        driver = self.driver
        if user_id is not None:  # before any row lock: the erasure's lock order
            await sql.SHARE_USER_LOCK.execute(driver, user_id=user_id)
        await self._purge_if_expired(session_id, user_id, key)
        stored = await self._locked_row(session_id, expected, user_id, key)
        _check_holder(session_id, stored, user_id, key)
        stored_count, target = stored["message_count"], len(messages)
        prefix_hash, hasher = prefix_and_total_hash(digests, min(stored_count, target), key)
        same_prefix = stored_count <= target and prefix_hash == stored["content_hash"]
        # Saving the very list stored again (in a session that exists) is no change.
        changed = not same_prefix or stored_count < target or stored["version"] == 0
        if same_prefix:
            start = stored_count  # same prefix, messages appended
        else:
            start = await self._first_difference(session_id, digests, stored_count)
            await sql.DELETE_FROM_POSITION.execute(driver, sid=session_id, start=start)
        if start < target:
            new = rows.batch(
                messages[start:], self.token_counter, self.limits, key, session_id,
                digests=digests[start:],
            )  # fmt: skip
            await sql.INSERT_MESSAGES.execute(
                driver, sid=session_id, start=start, new_rows=rows.new_message_rows(new)
            )
        version = await sql.FINISH_SAVE.fetchval(
            driver,
            sid=session_id,
            old=stored["version"],
            changed=changed,
            count=target,
            hash=hasher.digest(),
            user_id=user_id,
            ttl=self.ttl,
            **rows.activity(messages, messages),
        )
        return int(version), hasher

    async def _purge_if_expired(
        self, session_id: str, user_id: str | None, key: DataKey | None
    ) -> None:
        """An expired session is a missing one: its old content goes first (PurgeFirst
        when ``key`` was chosen for what the purge removed)."""
        purged = await sql.PURGE_IF_EXPIRED.fetchval(self.driver, sid=session_id)
        if purged and key is not None and (user_id is None or key.owner != user_owner(user_id)):
            raise PurgeFirst(session_id)

    async def _locked_row(
        self, session_id: str, expected: int | None, user_id: str | None, key: DataKey | None
    ) -> Any:
        """The session's row, locked, or created.  Neither may find it: created
        concurrently (then wait for its lock like any other save) and deleted again before
        that: once more."""
        driver = self.driver
        while True:
            if expected != NEW_SESSION:
                stored = await sql.LOCK_SESSION.fetchrow(driver, sid=session_id, expected=expected)
                if stored is not None:
                    return stored
                if expected is not None:
                    raise rules.stale_session(
                        session_id, await current_version(driver, session_id), expected
                    )
            if user_id is not None:
                await sql.CLAIM_SESSION_ID.execute(driver, sid=session_id)
            stored = await sql.CREATE_SESSION.fetchrow(
                driver,
                sid=session_id,
                user_id=user_id,
                empty_hash=rows.hasher(key).digest(),
                ttl=self.ttl,
            )
            if stored is not None:
                return stored
            if expected == NEW_SESSION:
                raise rules.stale_session(
                    session_id, await current_version(driver, session_id), expected
                )

    async def _first_difference(
        self, session_id: str, digests: list[bytes], stored_count: int
    ) -> int:
        """Where the stored list and ``digests`` part: a sealed row's digest is the HMAC
        of the full digest under its own key."""
        limit = min(stored_count, len(digests))
        found = await sql.STORED_DIGESTS.fetch(self.driver, sid=session_id)
        key_ids = {row["key_id"] for row in found if row["key_id"] is not None}
        keys = await self.keys_for(key_ids, self.driver) if key_ids else None
        for row in found:
            seq = row["seq"]
            if seq >= limit:
                return int(limit)
            key_id = row["key_id"]
            if key_id is None:
                if full_digest(row["digest"], row["metadata"]) != digests[seq]:
                    return int(seq)
            elif keys is None or keys[key_id].mac(digests[seq]) != row["digest"]:
                return int(seq)
        return limit


def _check_holder(session_id: str, stored: Any, user_id: str | None, key: DataKey | None) -> None:
    """The locked row is the caller's user's, and holds the key the save sealed under."""
    rules.check_owner(session_id, stored["user_id"], user_id)
    if key is not None and not SessionOwners(session_id, stored["user_id"]).hold(key.owner):
        # This process's cache named the owner of a session that has since expired or
        # been deleted and started afresh: sealed again under the right key.
        raise DataKeyDestroyedError(
            f"save to {session_id!r}: sealed under a key the session does not hold "
            "(it was started afresh for another owner); nothing was written"
        )


async def current_version(driver: Driver, session_id: str) -> int:
    """The session's version whether or not it has expired (0: no session)."""
    return int(await sql.ANY_SESSION_VERSION.fetchval(driver, sid=session_id) or 0)
