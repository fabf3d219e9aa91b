"""Data keys of the PostgreSQL backend: created on first use, unwrapped once, cached.

An owner's current key is cached for ``Encryption.cache_seconds`` (so a key replaced by
``rotate-keys --reencrypt`` elsewhere is picked up); a key by id for the process's life,
until this process erases it.  Another process may hold an erased key: it can only open
rows it still reads from the database, and those are gone with the key.  A write it seals
under such a key fails at commit (each sealed row references its key, revision 0010):
:func:`resealed_if_key_destroyed` then empties the cache and writes once more.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from ctxstore import telemetry
from ctxstore.encryption import DataKey, Encryption, KeyProvider, OpenedKeys, new_data_key
from ctxstore.errors import CorruptDataError, DataKeyDestroyedError, EncryptionKeyError
from ctxstore.retry import Retry
from ctxstore.storage.postgres import sql
from ctxstore.storage.postgres.statement import Driver


def user_owner(user_id: str) -> str:
    return f"u:{user_id}"


def session_owner(session_id: str) -> str:
    return f"s:{session_id}"


@dataclass(frozen=True)
class SessionOwners:
    """Whose data keys a session's rows may be sealed under: the session's own, and its
    user's once it has one (a session saved without a user may be given one later).

    A key's owner is bound to it by its wrapping (the master key's associated data), so
    a session whose user was changed in SQL, or a key given to another owner, shows here
    as a row under a key the session may not hold."""

    session_id: str
    user_id: str | None

    def hold(self, owner: str) -> bool:
        return owner == session_owner(self.session_id) or (
            self.user_id is not None and owner == user_owner(self.user_id)
        )

    def check(self, key_id: int, owner: str) -> None:
        if self.hold(owner):
            return
        whose = "its user's" if self.user_id is not None else "its own (it has no user)"
        raise CorruptDataError(
            f"a row is sealed under data key {key_id}, which is not {whose}: the session "
            "was moved to another user, or the key to another owner, outside ctxstore",
            session_id=self.session_id,
        )


class DataKeys:
    def __init__(self, encryption: Encryption) -> None:
        self.provider: KeyProvider = encryption.provider
        self._ttl = encryption.cache_seconds
        self._by_id = OpenedKeys(encryption.accept_plaintext)
        self._current: dict[str, tuple[float, DataKey]] = {}
        #: The owner of a session's new rows when a write does not name its user.
        self._session_owners: dict[str, str] = {}

    @property
    def loaded(self) -> OpenedKeys:
        return self._by_id

    async def unwrap(self, row: Any) -> DataKey:
        key_id = int(row["key_id"])
        found = self._by_id.get(key_id)
        if found is None:
            material = await self.provider.unwrap(
                row["master_key_id"], row["wrapped"], row["owner"]
            )
            found = self._by_id[key_id] = DataKey(key_id, row["owner"], material)
        return found

    async def current(self, driver: Driver, owner: str) -> DataKey:
        """The owner's current key, created (wrapped under the current master key) if none."""
        cached = self._current.get(owner)
        now = time.monotonic()
        if cached is not None and now - cached[0] < self._ttl:
            return cached[1]
        row = await sql.CURRENT_DATA_KEY.fetchrow(driver, owner=owner)
        if row is None:
            master_key_id, wrapped = await self.provider.wrap(new_data_key(), owner)
            row = await sql.CREATE_DATA_KEY.fetchrow(
                driver, owner=owner, master_key_id=master_key_id, wrapped=wrapped
            )
            if row is None:
                row = await sql.CURRENT_DATA_KEY.fetchrow(driver, owner=owner)
        key = await self.unwrap(row)
        self._current[owner] = (now, key)
        return key

    def cached_owner(self, session_id: str, user_id: str | None) -> str | None:
        if user_id is not None:
            return user_owner(user_id)
        return self._session_owners.get(session_id)

    def saw_session(self, session_id: str, user_id: str | None) -> None:
        self._session_owners[session_id] = (
            user_owner(user_id) if user_id is not None else session_owner(session_id)
        )

    async def for_session(self, driver: Driver, session_id: str, user_id: str | None) -> DataKey:
        """The key a write to the session seals with: its user's, else the session's own."""
        owner = self.cached_owner(session_id, user_id)
        if owner is None:
            stored_user = await sql.SESSION_USER.fetchval(driver, sid=session_id)
            self.saw_session(session_id, stored_user)
            owner = self._session_owners[session_id]
        elif user_id is not None:
            self._session_owners[session_id] = owner
        return await self.current(driver, owner)

    async def load(
        self, driver: Driver, key_ids: Collection[int], owners: SessionOwners | None = None
    ) -> OpenedKeys:
        """Every key of ``key_ids`` unwrapped; EncryptionKeyError naming any that is gone,
        CorruptDataError for one ``owners`` may not hold (checked before unwrapping)."""
        missing = [key_id for key_id in key_ids if key_id not in self._by_id]
        if missing:
            for row in await sql.DATA_KEYS_BY_ID.fetch(driver, ids=missing):
                if owners is not None:
                    owners.check(int(row["key_id"]), row["owner"])
                await self.unwrap(row)
            gone = sorted(key_id for key_id in missing if key_id not in self._by_id)
            if gone:
                raise EncryptionKeyError(
                    f"data key(s) {', '.join(map(str, gone))} no longer exist: what was "
                    "sealed under them was erased (crypto-shredded) and can't be read"
                )
        if owners is not None:
            self.check_owners(key_ids, owners)
        return self._by_id

    def check_owners(self, key_ids: Iterable[int], owners: SessionOwners) -> None:
        """CorruptDataError if a loaded key of ``key_ids`` is not one ``owners`` may hold."""
        for key_id in key_ids:
            owners.check(key_id, self._by_id[key_id].owner)

    def forget_session(self, session_id: str) -> None:
        """The session is gone (expired, deleted): a new one of that id may be another's."""
        self._session_owners.pop(session_id, None)

    def peek(self, session_id: str, user_id: str | None) -> DataKey | None:
        """The session's key from the cache alone (None: ask ``for_session``)."""
        owner = self.cached_owner(session_id, user_id)
        cached = self._current.get(owner) if owner is not None else None
        if cached is None or time.monotonic() - cached[0] >= self._ttl:
            return None
        return cached[1]

    def forget(self, key_ids: Iterable[int], owners: Iterable[str]) -> None:
        for key_id in key_ids:
            self._by_id.pop(key_id, None)
        gone = set(owners)
        for owner in gone:
            self._current.pop(owner, None)
        for session_id, owner in list(self._session_owners.items()):
            if owner in gone:
                del self._session_owners[session_id]

    def clear(self) -> None:
        """Forget every key and owner: after a write met a key destroyed elsewhere."""
        self._by_id.clear()
        self._current.clear()
        self._session_owners.clear()


class _HoldsKeys(Protocol):
    @property
    def data_keys(self) -> DataKeys | None: ...


_Store = TypeVar("_Store", bound=_HoldsKeys)
#: A fresh key is destroyed again only if the user is erased again meanwhile: rare, and
#: then the caller hears DataKeyDestroyedError (nothing written) rather than waiting on.
DESTROYED_KEY = Retry(DataKeyDestroyedError, attempts=3)
_Args = ParamSpec("_Args")
_Result = TypeVar("_Result")


def resealed_if_key_destroyed(
    write: Callable[Concatenate[_Store, _Args], Coroutine[Any, Any, _Result]],
) -> Callable[Concatenate[_Store, _Args], Coroutine[Any, Any, _Result]]:
    """A sealing write, run again (with an empty key cache, see DESTROYED_KEY) if a key
    it sealed under was destroyed by another process's erasure before it committed.  The
    failed attempt kept nothing (its transaction rolled back), so writing again is safe."""

    @functools.wraps(write)
    async def sealing(store: _Store, /, *args: _Args.args, **kwargs: _Args.kwargs) -> _Result:
        def forget_keys(error: DataKeyDestroyedError) -> None:
            keys = store.data_keys
            if keys is None:
                raise error
            keys.clear()
            telemetry.retried("destroyed_key")

        return await DESTROYED_KEY.run(lambda: write(store, *args, **kwargs), retrying=forget_keys)

    return sealing
