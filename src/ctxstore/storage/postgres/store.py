"""PostgreSQL backend: one row per message, delta writes, versions checked by PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AsyncExitStack,
    asynccontextmanager,
    contextmanager,
)
from datetime import datetime, timedelta
from typing import Any, Self

from sqlalchemy import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from ctxstore.db import compat
from ctxstore.db.engine import EngineSettings, create_engine, normalize_url
from ctxstore.db.errors import translated
from ctxstore.encryption import DataKey, Encryption, chain_key_id
from ctxstore.errors import (
    ConflictError,
    CorruptDataError,
    CtxStoreError,
    DataKeyDestroyedError,
    EncryptionKeyError,
    StorageUnavailableError,
)
from ctxstore.formats.messages import rows_to_messages
from ctxstore.models import (
    MESSAGE_FORMAT,
    ConsultationState,
    Message,
    SessionPage,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.retry import Retry, jittered
from ctxstore.storage.base import Backups, Erased, Vacuumed
from ctxstore.storage.bundle import Bundled
from ctxstore.storage.history import History
from ctxstore.storage.knowledge import Known, SessionKnowledge, StoredList
from ctxstore.storage.ledger import ContractRecord, LedgerEntry, RecordedContract
from ctxstore.storage.listing import ListingQuery, page_of
from ctxstore.storage.postgres import appending, contracts, documents, rows, saving, sql
from ctxstore.storage.postgres.connection import Connections, Undo
from ctxstore.storage.postgres.erasure import backups_after_erasure, vacuum_after_erasure
from ctxstore.storage.postgres.importing import Importer, write_bundle
from ctxstore.storage.postgres.keys import (
    DataKeys,
    SessionOwners,
    resealed_if_key_destroyed,
    session_owner,
    user_owner,
)
from ctxstore.storage.postgres.reader import PostgresSessionReader
from ctxstore.storage.postgres.replica import WrittenMarks, head_of, recorded
from ctxstore.storage.postgres.rewrite import write_back_messages
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import DEFAULT_LIMITS, NEW_SESSION, Limits, SummaryDraft
from ctxstore.storage.store import Store
from ctxstore.storage.write_ids import carried
from ctxstore.tokens import TokenCounter

#: An erasure meets a write that committed under the user's key after its snapshot:
#: that commit refused to leave its row keyless and nothing was erased; erase again,
#: after a random pause that grows, so a user opening sessions every few milliseconds
#: can't keep the erasure from completing (up to 16 tries, about 10 s in all at worst).
ERASE_RACE = Retry(DataKeyDestroyedError, attempts=16, wait=jittered(0.05, 1.0))
#: A load reads the rows, then (another statement) their keys: a key rotation may seal the
#: rows again and delete the old key in between.  Read once more: a key gone for good (an
#: erasure) fails the second time too.
RESEALED_MEANWHILE = Retry(EncryptionKeyError, attempts=2)


class PostgresStorage(Store):
    """The storage contract on PostgreSQL, on a pool of asyncpg connections.

    ``save`` keeps full-overwrite semantics but writes only the difference.  The sessions
    row holds a hash of the stored list, so "same messages plus a new turn" is recognised
    without reading the stored messages back:

    - when this process knows the session (storage/knowledge.py) and the list starts with
      what is stored, the new messages are appended by one conditional statement;
    - otherwise (or when another writer got there first) one transaction locks the
      session row, compares hashes, and inserts the delta.  An edited or truncated
      history reads the stored 32-byte digests (never the messages) to find where the
      lists part, then rewrites from there.

    Every accepted write bumps the session's version; ``expected_version`` is checked by
    PostgreSQL in the WHERE of the statement that locks or updates the row.

    With ``encryption``, new rows are sealed (docs/design.md, "Encryption at rest"): the
    digests and content hash above become HMACs under the session's data key, so the
    same comparisons work without decrypting anything.
    """

    def __init__(
        self,
        url: str | URL,
        *,
        settings: EngineSettings | None = None,
        read_url: str | URL | None = None,
        limits: Limits = DEFAULT_LIMITS,
        ttl: timedelta | None = None,
        token_counter: TokenCounter | None = None,
        upgrade_on_load: bool = False,
        operation_timeout: float = 30.0,
        encryption: Encryption | None = None,
        backup_retention: timedelta | None = None,
    ) -> None:
        """The storage's calls run on one pool of its own (db/pool.py), opened on first use
        from ``url`` with ``settings`` (ctxstore.EngineSettings) and closed by
        ``close()``.  ``read_url``: a streaming replica that context windows and contract
        assembly read from, except where it is behind what this process wrote (then the
        primary; storage/postgres/replica.py).  ``upgrade_on_load``: rows found in an old
        format are written back upgraded (only if the session is still at the version
        that was read).  ``backup_retention``: how long the database's backups are kept
        (CTXSTORE_BACKUP_RETENTION_DAYS), for erasure receipts to say until when backups
        hold an erased user."""
        super().__init__(limits=limits, ttl=ttl, token_counter=token_counter)
        self._settings = settings or EngineSettings()
        self._connections = Connections(normalize_url(url), self._settings, operation_timeout)
        self._replica = (
            Connections(normalize_url(read_url), self._settings, operation_timeout)
            if read_url is not None
            else None
        )
        self._engine: AsyncEngine | None = None
        #: What this process wrote, so its context reads never see the replica behind it.
        self.written = WrittenMarks()
        self._upgrade_on_load = upgrade_on_load
        self._keys = DataKeys(encryption) if encryption is not None else None
        #: What this process last knew of each session (storage/knowledge.py).
        self.knowledge = SessionKnowledge()
        #: The ledger's pieces this process knows stored (contracts.py).
        self._ledger_pieces = contracts.KnownPieces()
        self._recognised: tuple[str, object, Known] | None = None
        self.backup_retention = backup_retention

    @property
    def data_keys(self) -> DataKeys | None:
        """The data key cache (None: encryption off)."""
        return self._keys

    async def _session_key(self, session_id: str, user_id: str | None) -> DataKey | None:
        """The data key new rows of the session are sealed with (None: encryption off)."""
        if self._keys is None:
            return None
        cached = self._keys.peek(session_id, user_id)
        if cached is not None:
            return cached
        async with self._connections.call("data key") as driver:
            return await self._keys.for_session(driver, session_id, user_id)

    async def _key_after_purge(self, session_id: str, user_id: str | None) -> DataKey | None:
        """The key for a session id whose expired session was just purged: its own key
        went with it, and the owner this process knew was the old session's."""
        if self._keys is None:
            return None
        self._keys.forget([], [session_owner(session_id)])
        self._keys.forget_session(session_id)
        return await self._session_key(session_id, user_id)

    async def _user_key(self, user_id: str) -> DataKey | None:
        if self._keys is None:
            return None
        async with self._connections.call("data key") as driver:
            return await self._keys.current(driver, user_owner(user_id))

    async def _keys_for(
        self, key_ids: set[int], driver: Driver | None = None, owners: SessionOwners | None = None
    ) -> rows.Keys | None:
        """Every key a read needs, unwrapped (None: encryption off; sealed rows then fail
        with EncryptionKeyError when opened); with ``owners``, each one they may hold."""
        if self._keys is None:
            return None
        loaded = self._keys.loaded
        if key_ids <= loaded.keys():
            if owners is not None:
                self._keys.check_owners(key_ids, owners)
            return loaded
        if driver is not None:
            return await self._keys.load(driver, key_ids, owners)
        async with self._connections.call("data keys") as own:
            return await self._keys.load(own, key_ids, owners)

    @classmethod
    def from_url(cls, url: str | URL, **options: Any) -> PostgresStorage:
        """A storage on ``url`` with its own pool (closed by ``close()``); options as the
        constructor.  The main door."""
        return cls(url, **options)

    @property
    def url(self) -> URL:
        """The database's URL (``str()`` hides the password)."""
        return self._connections.url

    @property
    def engine(self) -> AsyncEngine:
        """An SQLAlchemy engine on the same database for reports and admin code, made on
        first use with the storage's settings and disposed by ``close()``: the storage's
        own calls never use it."""
        if self._engine is None:
            self._engine = create_engine(self._connections.url, self._settings)
        return self._engine

    @property
    def pool_name(self) -> str:
        """``host:port/database``: how telemetry names this storage's database."""
        return self._connections.pool_name

    @property
    def pools(self) -> dict[str, Connections]:
        """The storage's connection pools by role: "primary", and "replica" with a read_url."""
        if self._replica is None:
            return {"primary": self._connections}
        return {"primary": self._connections, "replica": self._replica}

    @property
    def operation_timeout(self) -> float:
        return self._connections.operation_timeout

    @operation_timeout.setter
    def operation_timeout(self, seconds: float) -> None:
        self._connections.operation_timeout = seconds
        if self._replica is not None:
            self._replica.operation_timeout = seconds

    @property
    def read_retries(self) -> int:
        """Reads retried after their connection died (observable)."""
        return self._connections.read_retries

    async def close(self) -> None:
        """Close the storage's pools, and its engine if one was made."""
        with translated("close"):
            await self._connections.close()
            if self._replica is not None:
                await self._replica.close()
            if self._engine is not None:
                await self._engine.dispose()
                self._engine = None

    async def __aenter__(self) -> Self:
        """Open the store: its schema is checked here, so code on a schema it can't run
        on (missing, behind, a pre-release's) fails now with SchemaMissingError, naming the
        revision and what to run, not at its first write.  A schema ahead of this code
        (a later release's additive revisions) is fine, and logged.  A database that can't
        be reached yet is the first call's error, as before."""
        try:
            found = await self.check_schema()
        except CtxStoreError:
            return self
        if not found.runnable:
            await self.close()
            raise found.error("opening the store")
        compat.report(found)  # the error says the rest: logged, it would be said twice
        return self

    async def check_schema(self) -> compat.SchemaCheck:
        """Whether this code can run on the database's schema (ctxstore.db.compat; logged
        by ``compat.report``, not here); raises the ctxstore error of a database that can't
        be reached."""
        code = compat.code_revisions()  # read from disk once, before a connection is held
        async with self._connections.call("schema check") as driver:
            return await compat.check(driver, code)

    async def watch_connections(
        self, watcher: Callable[[Driver], Undo | None], *, at_every_checkout: bool = False
    ) -> None:
        """Call ``watcher`` with each asyncpg connection the storage opens from now on
        (diagnostics, e.g. ``connection.add_query_logger``); with ``at_every_checkout``,
        each time one is lent, and what it returns, if anything, when the connection comes
        back (e.g. a lambda removing the log listener it added)."""
        await self._connections.watch(watcher, at_every_checkout=at_every_checkout)

    def driver(self) -> AbstractAsyncContextManager[Driver]:
        """The raw asyncpg connection of a pooled connection, for maintenance commands."""
        return self._connections.driver()

    @asynccontextmanager
    async def maintenance(self, action: str) -> AsyncIterator[Driver]:
        """:meth:`driver` for a maintenance job (ctxstore.commands: expiry, upgrade, rotate_keys),
        its checkout translated too: a missing database or a refused login is a ctxstore
        error, as in the store's own calls."""
        with translated(action):
            async with self._connections.driver() as driver:
                yield driver

    # -- save ---------------------------------------------------------------------------------

    def _stored_prefix(self, session_id: str, messages: object) -> int:
        known = self.knowledge.stored_prefix(session_id, messages)
        # Kept for the _save this save() calls next, so the list is compared once; a
        # save that finds another list here (the rules converted it) takes no shortcut.
        self._recognised = (session_id, messages, known) if known is not None else None
        return (known.count or 0) if known is not None else 0

    def _recognition(self, session_id: str, messages: list[Message]) -> Known | None:
        """What _stored_prefix found for this very list, if anything."""
        found, self._recognised = self._recognised, None
        if found is None or found[0] != session_id or found[1] is not messages:
            return None
        return found[2]

    @recorded("messages")
    @resealed_if_key_destroyed
    async def _save(
        self, session_id: str, messages: list[Message], expected: int | None, user_id: str | None
    ) -> int:
        """One path: a list believed to extend what is stored (it starts with the very
        objects stored, or with messages whose hash is the known one) is appended after
        it by one conditional statement; if nothing is believed, or the session moved
        on, one transaction locks the session row and compares there."""
        with self._forgetting_on_conflict(session_id):
            known = self._recognition(session_id, messages)
            # What is about to be stored, taken before anything awaits: the caller's list
            # may change while this save waits for the database.
            whole: list[Message] | None = None
            if (
                known is not None
                and known.stored is not None
                and known.hasher is not None
                and expected != NEW_SESSION
            ):
                located = known.stored.extended_by(messages)
                added = messages[known.count or 0 :]
                activity = rows.activity(added, messages)
            else:
                known, located = None, StoredList.of(messages)
                whole = messages[:] if located.edits is not None else located.base
            key = await self._session_key(session_id, user_id)
            extension: saving.Extension | None
            if whole is None:  # recognised: the stored part is hashed already
                assert known is not None
                extension, digests = saving.recognised(known, located, added, activity, self.limits)
            else:
                extension, digests = saving.hashed(
                    self.knowledge.get(session_id), whole, located, key, expected, self.limits
                )
            if extension is not None and extension.added:  # else the locked save decides
                new = rows.batch(
                    extension.added, self.token_counter, self.limits, key, session_id,
                    digests=extension.digests,
                )  # fmt: skip
                async with self._connections.call("save") as driver:
                    version = await saving.append_if_unchanged(
                        driver, session_id, extension, new, expected, user_id, self.ttl
                    )
                if version is not None:
                    self.knowledge.after_write(session_id, extension.after(version))
                    return version
            self.knowledge.forget(session_id)
            if whole is None:
                whole = located.messages()
                digests = rows.digests_of(whole, self.limits)
            try:
                version, hasher = await self._locked_save(
                    session_id, whole, digests, expected, user_id, key
                )
            except saving.PurgeFirst:
                async with self._connections.call("save") as driver:
                    await sql.PURGE_IF_EXPIRED.execute(driver, sid=session_id)
                key = await self._key_after_purge(session_id, user_id)
                version, hasher = await self._locked_save(
                    session_id, whole, digests, expected, user_id, key
                )
            self.knowledge.after_write(
                session_id, rows.known_after_write(version, whole, digests, hasher, located)
            )
            return version

    async def _locked_save(
        self,
        session_id: str,
        whole: list[Message],
        digests: list[bytes],
        expected: int | None,
        user_id: str | None,
        key: DataKey | None,
    ) -> tuple[int, saving.Hasher]:
        async with self._connections.call("save") as driver, driver.transaction():
            locked = saving.LockedSave(
                driver, self.limits, self.token_counter, self.ttl, self._keys_for
            )
            found = await locked.run(session_id, whole, digests, expected, user_id, key)
            await self._record_writes(driver, session_id)
        return found

    # -- journal write ids (storage/write_ids.py) ---------------------------------------------

    @asynccontextmanager
    async def _writing(
        self,
        action: str,
        subject: str,
        *,
        profile: bool = False,
        conflict_on_duplicate: bool = False,
    ) -> AsyncIterator[Driver]:
        """A connection for one write to ``subject``; when the write carries journal write
        ids, a transaction that records them after the write (a write that raises records
        nothing).  Appends (and save's fast path) pass the ids to their function instead:
        no round trip more."""  # fmt: skip
        async with self._connections.call(
            action, conflict_on_duplicate=conflict_on_duplicate
        ) as driver:
            if not carried():
                yield driver
                return
            async with driver.transaction():
                yield driver
                await self._record_writes(driver, subject, profile=profile)

    @staticmethod
    async def _record_writes(driver: Driver, subject: str, *, profile: bool = False) -> None:
        """Within the write's transaction: the write ids it carries, as applied."""
        write_ids = list(carried())
        if not write_ids:
            return
        if profile:
            await sql.RECORD_PROFILE_WRITES.execute(driver, user_id=subject, write_ids=write_ids)
        else:
            await sql.RECORD_SESSION_WRITES.execute(driver, sid=subject, write_ids=write_ids)

    async def _applied(
        self, subject: str, write_ids: Sequence[str], *, profile: bool
    ) -> frozenset[str]:
        if profile:
            found = await self._connections.read(
                "applied writes", "fetch", sql.APPLIED_PROFILE_WRITES,
                user_id=subject, write_ids=list(write_ids),
            )  # fmt: skip
        else:
            found = await self._connections.read(
                "applied writes", "fetch", sql.APPLIED_SESSION_WRITES,
                sid=subject, write_ids=list(write_ids),
            )  # fmt: skip
        return frozenset(row["write_id"].hex for row in found)

    @contextmanager
    def _forgetting_on_conflict(self, session_id: str) -> Iterator[None]:
        try:
            yield
        except ConflictError:
            self.knowledge.forget(session_id)
            raise

    # -- append ---------------------------------------------------------------------------------

    @recorded("messages")
    @resealed_if_key_destroyed
    async def _append(
        self, session_id: str, messages: list[Message], expected: int | None, user_id: str | None
    ) -> int:
        """One statement (appending.py): the session row hands out the positions, so
        concurrent appends never collide, and nothing stored is read."""
        with self._forgetting_on_conflict(session_id):
            key = await self._session_key(session_id, user_id)
            new = rows.batch(messages, self.token_counter, self.limits, key, session_id)
            added = b"".join(new.digests)
            turn = appending.Turn(session_id, key, user_id, expected, added, {
                "sid": session_id,
                "user_id": user_id,
                "added_hash": rows.hasher(key, added).digest(),
                "ttl": self.ttl,
                "max_messages": self.limits.max_messages,
                "write_ids": list(carried()),  # recorded by the same call
                **rows.activity(messages, messages),
                "new_rows": rows.new_message_rows(new),
            })  # fmt: skip
            known = self.knowledge.get(session_id)
            async with self._connections.call("append") as driver:
                done = await appending.append(driver, turn, known, self._keys_for, self.limits)
            if done.hasher is None:
                self.knowledge.forget(session_id)
            else:
                # count and hash carry on; the messages stay with whoever holds them
                self.knowledge.after_write(
                    session_id,
                    Known(
                        done.version, done.start + len(messages), done.hasher.digest(), done.hasher
                    ),
                )
            return done.version

    # -- load, version, delete, exists ----------------------------------------------------------

    async def _load(self, session_id: str) -> list[Message]:
        return await RESEALED_MEANWHILE.run(lambda: self._load_once(session_id))

    async def _load_once(self, session_id: str) -> list[Message]:
        found = await self._connections.read(
            "load", "fetch", sql.LOAD_SESSION, sid=session_id, current=MESSAGE_FORMAT
        )
        stored = rows.stored_session(found)
        keys = None
        if stored is not None:
            needed = rows.needed_key_ids(stored.rows, stored.content_hash)
            keys = await self._keys_for(needed, owners=SessionOwners(session_id, stored.user_id))
        messages = self._messages_from(stored, session_id, keys)
        if self._upgrade_on_load and messages:
            assert stored is not None
            await self._write_back(session_id, stored, messages)
        return messages

    async def _write_back(
        self, session_id: str, stored: rows.StoredSession, loaded: list[Message]
    ) -> None:
        legacy = [
            (position, loaded[position])
            for position, row in enumerate(stored.rows)
            if row["format_version"] != rows.LOADED_CURRENT
        ]
        if not legacy:
            return
        key = await self._session_key(session_id, stored.user_id)
        async with self._connections.call("load (writing upgraded rows back)") as driver:
            await write_back_messages(
                driver, session_id, stored.version, legacy, self.token_counter, key
            )
        self.knowledge.forget(session_id)

    def _messages_from(
        self, stored: rows.StoredSession | None, session_id: str, keys: rows.Keys | None
    ) -> History:
        if stored is None:
            self.knowledge.forget(session_id)
            if self._keys is not None:
                self._keys.forget_session(session_id)
            return History()
        if self._keys is not None:
            self._keys.saw_session(session_id, stored.user_id)
        found, expected, version = stored.rows, stored.message_count, stored.version
        if not found:
            if expected:
                raise CorruptDataError(
                    f"session records {expected} messages but none are stored",
                    session_id=session_id,
                )
        elif len(found) != expected or found[-1]["seq"] != expected - 1:
            raise CorruptDataError(
                f"session records {expected} messages but {len(found)} are stored "
                "or their positions have gaps",
                session_id=session_id,
            )
        opened = rows.open_messages(found, keys, session_id)
        loaded = History(
            rows_to_messages(opened, session_id=session_id, current=rows.LOADED_CURRENT)
        )
        if self._keys is None:
            known = rows.known_after_load(
                version, opened, loaded, stored.content_hash, current=rows.LOADED_CURRENT
            )
        elif found and found[-1][rows.KEY_ID] is not None and keys is not None:
            stored_hash = stored.content_hash
            chained = rows.sealed_chain(found)
            hash_key = keys.get(chain_key_id(stored_hash))  # type: ignore[arg-type]
            known = rows.known_after_load(
                version,
                opened,
                loaded,
                stored_hash if hash_key is not None or chained else None,
                hash_key,
                chained=chained,
                session_id=session_id,
                current=rows.LOADED_CURRENT,
            )
        else:  # plaintext rows, encryption on: the next save checks them one by one
            known = Known(version, len(found), stored.content_hash)
        self.knowledge.after_load(session_id, known)
        return loaded

    async def _newest(self, session_id: str, limit: int) -> list[Message]:
        found = await self._connections.read(
            "newest", "fetch", sql.NEWEST_OF_SESSION, sid=session_id, limit=limit
        )
        keys = None
        if found:
            keys = await self._keys_for(
                rows.sealed_key_ids(found), owners=_owners(session_id, found[0])
            )
        opened = rows.open_messages(found[::-1], keys, session_id)
        return rows_to_messages(opened, session_id=session_id)

    async def _version(self, session_id: str) -> int:
        current = await self._connections.read(
            "version", "fetchval", sql.SESSION_VERSION, sid=session_id
        )
        return int(current or 0)

    async def _delete(self, session_id: str) -> None:
        self.knowledge.forget(session_id)
        async with self._writing("delete", session_id) as driver:
            await sql.DELETE_SESSION.execute(driver, sid=session_id)
        self.written.deleted(session_id)

    async def _exists(self, session_id: str) -> bool:
        found = await self._connections.read(
            "exists", "fetchval", sql.SESSION_VERSION, sid=session_id
        )
        return found is not None

    # -- summaries ------------------------------------------------------------------------------

    @recorded("summary")
    @resealed_if_key_destroyed
    async def _save_summary(
        self, session_id: str, draft: SummaryDraft, expected: int | None
    ) -> Summary:
        key = await self._session_key(session_id, None)
        async with self._writing("save_summary", session_id, conflict_on_duplicate=True) as driver:
            return await documents.insert_summary(driver, session_id, draft, expected, key)

    async def _load_summary(self, session_id: str, summary_version: int | None) -> Summary | None:
        if summary_version is None:
            row = await self._connections.read(
                "load_summary", "fetchrow", sql.LATEST_SUMMARY, sid=session_id
            )
        else:
            row = await self._connections.read(
                "load_summary",
                "fetchrow",
                sql.SUMMARY_AT,
                sid=session_id,
                summary_version=summary_version,
            )
        if row is None:
            return None
        keys = await self._keys_for({row["key_id"]} - {None}, owners=_owners(session_id, row))
        return rows.summary_from_row(row, session_id, keys)

    # -- consultation state -------------------------------------------------------------------

    @recorded("state")
    @resealed_if_key_destroyed
    async def _save_state(
        self, session_id: str, state: ConsultationState, expected: int | None
    ) -> int:
        key = await self._session_key(session_id, None)
        async with self._writing("save_state", session_id, conflict_on_duplicate=True) as driver:
            return await documents.write_state(driver, session_id, state, expected, key)

    async def _load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        row = await self._connections.read(
            "load_state", "fetchrow", sql.CURRENT_STATE, sid=session_id
        )
        if row is None:
            return None
        keys = await self._keys_for({row["key_id"]} - {None}, owners=_owners(session_id, row))
        return rows.state_from_row(row, session_id, keys)

    async def _state_history(self, session_id: str) -> list[StateChange]:
        found = await self._connections.read(
            "state_history", "fetch", sql.STATE_HISTORY, sid=session_id
        )
        needed = {row["key_id"] for row in found} - {None}
        keys = await self._keys_for(needed, owners=_owners(session_id, found[0])) if found else None
        return [rows.state_change_from_row(row, session_id, keys) for row in found]

    # -- user profiles --------------------------------------------------------------------------

    @recorded("profile")
    @resealed_if_key_destroyed
    async def _save_profile(self, user_id: str, profile: UserProfile, expected: int | None) -> int:
        key = await self._user_key(user_id)
        async with self._writing(
            "save_profile", user_id, profile=True, conflict_on_duplicate=True
        ) as driver:
            return await documents.write_profile(driver, user_id, profile, expected, key)

    async def _load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        row = await self._connections.read(
            "load_profile", "fetchrow", sql.CURRENT_PROFILE, user_id=user_id
        )
        if row is None:
            return None
        return rows.profile_from_row(row, user_id, await self._keys_for({row["key_id"]} - {None}))

    async def _erase_user(self, user_id: str) -> Erased:
        return await ERASE_RACE.run(
            lambda: self._erase_user_once(user_id),
            exhausted=lambda _error: ConflictError(
                f"erase user: writes for the user kept arriving during {ERASE_RACE.attempts} "
                "attempts; nothing was erased, try again once they stop"
            ),
        )

    async def _erase_user_once(self, user_id: str) -> Erased:
        async with self._connections.call("erase user") as driver, driver.transaction():
            # Rows first, then the keys (the lock order of every writer, whose commit
            # checks its key).  Destroying the keys (crypto-shredding) makes copies of the
            # rows (lagging replicas, dumps) unreadable too.
            row = await sql.ERASE_USER_SESSIONS.fetchrow(driver, user_id=user_id)
            profile = await sql.ERASE_USER_PROFILE.execute(driver, user_id=user_id)
            shredded = await sql.ERASE_USER_KEYS.fetch(
                driver, user_id=user_id, session_ids=list(row["session_ids"])
            )
            await sql.ERASE_SESSION_WRITE_IDS.execute(driver, session_ids=list(row["session_ids"]))
            await sql.ERASE_SUMMARY_JOBS.execute(driver, session_ids=list(row["session_ids"]))
            await sql.ERASE_PROFILE_WRITE_IDS.execute(driver, user_id=user_id)
        async with self._connections.call("erase user's ledger") as driver:
            # After the transaction, a chain a call (contracts.py); on every try, so a
            # retry completes it.
            await contracts.erase_chains(driver, user_id, list(row["session_ids"]))
        if self._keys is not None:
            self._keys.forget([k["key_id"] for k in shredded], [k["owner"] for k in shredded])
        for session_id in row["session_ids"]:
            self.knowledge.forget(session_id)
            self.written.deleted(session_id)
        self.written.deleted_profile(user_id)
        return Erased(
            session_ids=tuple(row["session_ids"]),
            messages=int(row["messages"]),
            summaries=int(row["summaries"]),
            states=int(row["states"]),
            state_changes=int(row["state_changes"]),
            profile=profile.endswith(" 1"),
            data_keys=len(shredded),
            master_key_ids=tuple(sorted({k["master_key_id"] for k in shredded})),
        )

    async def _vacuum_after_erasure(self, run: bool) -> Vacuumed:
        return await vacuum_after_erasure(self._connections, run)

    def _backups_after_erasure(self, erased: Erased, erased_at: datetime) -> Backups:
        return backups_after_erasure(erased, erased_at, self.backup_retention)

    async def _delete_profile(self, user_id: str) -> None:
        async with self._writing("delete profile", user_id, profile=True) as driver:
            await sql.DELETE_PROFILE.execute(driver, user_id=user_id)
        self.written.deleted_profile(user_id)

    # -- a user's sessions ----------------------------------------------------------------------

    async def _list_sessions(self, query: ListingQuery) -> SessionPage:
        after = query.after
        found = await self._connections.read(
            "list_sessions",
            "fetch",
            sql.LIST_SESSIONS,
            user_id=query.user_id,
            after_created_at=after.created_at if after is not None else None,
            after_session_id=after.session_id if after is not None else None,
            updated_since=query.updated_since,
            stage=query.stage,
            with_summaries=query.with_summaries,
            limit=query.limit + 1,  # one more: is there a next page
        )
        shown = found[: query.limit]
        keys = (
            await self._listed_summary_keys(shown, query.user_id) if query.with_summaries else None
        )
        items = [rows.listing_from_row(row, keys, with_text=query.with_summaries) for row in shown]
        return page_of(query, items, more=len(found) > query.limit)

    async def _listed_summary_keys(self, found: list[Any], user_id: str) -> rows.Keys | None:
        """The keys the listed summaries (of ``user_id``'s sessions) are sealed under
        (None: encryption off), each checked to be one its session may hold."""
        needed = {row["summary_key_id"] for row in found if row["summary_sealed"] is not None}
        keys = await self._keys_for(needed)
        if self._keys is not None:
            for row in found:
                if row["summary_sealed"] is not None:
                    owners = SessionOwners(row["session_id"], user_id)
                    self._keys.check_owners([row["summary_key_id"]], owners)
        return keys

    # -- the ledger of contracts (contracts.py) -------------------------------------------------

    async def _record_contract(self, record: ContractRecord) -> LedgerEntry:
        session_id = record.provenance.session_id
        key = await self._session_key(session_id, record.user_id)
        async with self._connections.call("record contract") as driver:
            return await contracts.record(driver, record, key, self._ledger_pieces)

    async def _read_contract(
        self, session_id: str, turn_id: str, entry_seq: int | None
    ) -> RecordedContract | None:
        async def keys(key_ids: set[int], user_id: str | None) -> rows.Keys | None:
            return await self._keys_for(key_ids, owners=SessionOwners(session_id, user_id))

        async with self._connections.call("read contract") as driver:
            return await contracts.read(driver, session_id, turn_id, entry_seq, keys)

    async def _list_contracts(self, session_id: str) -> list[LedgerEntry]:
        async with self._connections.call("list contracts") as driver:
            return await contracts.entries(driver, session_id)

    async def _attach_response(self, session_id: str, turn_id: str, response_id: str) -> int | None:
        async with self._connections.call("attach response") as driver:
            entry_seq, attached = await sql.ATTACH_RESPONSE.fetchval(
                driver, session_id=session_id, turn_id=turn_id, response_id=response_id
            )
        if entry_seq is None:
            return None
        if attached != response_id:
            raise ConflictError(
                f"turn {turn_id!r} of session {session_id} has response {attached!r} "
                "attached already"
            )
        seq: int = entry_seq
        return seq

    # -- a user's bundle ------------------------------------------------------------------------

    async def _import_user(self, user_id: str, records: AsyncIterator[Bundled]) -> None:
        """One transaction (importing.py); the user's data key is made first, in its own:
        if the import then fails, that key remains, sealing nothing."""
        key = await self._user_key(user_id)
        async with self._connections.call("import user") as driver, driver.transaction():
            importer = Importer(driver, user_id, key, self.token_counter, self.limits, self.ttl)
            written = await write_bundle(importer, records)
        for session_id in written:
            self.knowledge.forget(session_id)
            self.written.deleted(session_id)  # gone, then new: never read from a lagging replica
        self.written.deleted_profile(user_id)

    # -- context assembly and snapshots ------------------------------------------------------------

    @asynccontextmanager
    async def _reader(self, session_id: str) -> AsyncIterator[PostgresSessionReader]:
        """Reads on one snapshot (a REPEATABLE READ, read-only transaction the reader
        begins, see reader.py); on the replica when one is configured and holds
        everything this process wrote to the session."""
        if self._replica is not None and self.written.replica_usable():
            async with self._replica_reader(session_id) as on_replica:
                if on_replica is not None:
                    yield on_replica
                    return
        async with (
            self._connections.call("reading the session") as driver,
            AsyncExitStack() as transaction,
        ):

            async def begin() -> None:  # by the reader, before the read that needs it
                await transaction.enter_async_context(
                    driver.transaction(isolation="repeatable_read", readonly=True)
                )

            yield PostgresSessionReader(
                driver, session_id, self.token_counter.count_label, self._keys_for, begin=begin
            )

    @asynccontextmanager
    async def _replica_reader(self, session_id: str) -> AsyncIterator[PostgresSessionReader | None]:
        """A reader on the replica, or None when it is behind this process's writes or
        can't be reached (the primary serves the read then).  Only the opening falls
        back: an error while the caller reads is the caller's."""
        assert self._replica is not None
        opened = AsyncExitStack()
        try:
            driver = await opened.enter_async_context(
                self._replica.call("reading the session (replica)")
            )
            await opened.enter_async_context(
                driver.transaction(isolation="repeatable_read", readonly=True)
            )
            found = await sql.REPLICA_FRESHNESS.fetchrow(driver, sid=session_id)
        except BaseException as error:
            try:  # the contexts translate the error and drop a broken connection
                await opened.__aexit__(type(error), error, error.__traceback__)
                raise
            except StorageUnavailableError:
                self.written.replica_failed()
                yield None
                return
        if not self.written.caught_up(session_id, found):
            await opened.aclose()
            self.written.behind += 1
            yield None
            return
        async with opened:
            yield PostgresSessionReader(
                driver,
                session_id,
                self.token_counter.count_label,
                self._keys_for,
                head=head_of(found),
            )

    async def _snapshot(self, session_id: str) -> SessionSnapshot:
        """Everything of the session from one REPEATABLE READ, read-only transaction."""
        return await self._connections.retried_read(lambda: self._snapshot_once(session_id))

    async def _snapshot_once(self, session_id: str) -> SessionSnapshot:
        async with (
            self._connections.call("snapshot") as driver,
            driver.transaction(isolation="repeatable_read", readonly=True),
        ):
            found = await sql.LOAD_SESSION.fetch(driver, sid=session_id, current=MESSAGE_FORMAT)
            stored = rows.stored_session(found)
            if stored is None:
                return SessionSnapshot(session_id, False, 0, None, [], None, None, 0, None, 0)
            summary = await sql.LATEST_SUMMARY.fetchrow(driver, sid=session_id)
            state = await sql.CURRENT_STATE.fetchrow(driver, sid=session_id)
            user_id = stored.user_id
            profile = (
                await sql.CURRENT_PROFILE.fetchrow(driver, user_id=user_id)
                if user_id is not None
                else None
            )
            needed = rows.sealed_key_ids(stored.rows) | {
                key_id
                for row in (summary, state, profile)
                if (key_id := rows.document_key_id(row)) is not None
            }
            keys = await self._keys_for(needed, driver, SessionOwners(session_id, user_id))
        versioned_state = rows.state_from_row(state, session_id, keys) if state else None
        versioned_profile = (
            rows.profile_from_row(profile, user_id, keys)
            if profile and user_id is not None
            else None
        )
        return SessionSnapshot(
            session_id=session_id,
            exists=True,
            version=stored.version,
            user_id=user_id,
            messages=self._messages_from(stored, session_id, keys),
            summary=rows.summary_from_row(summary, session_id, keys) if summary else None,
            state=versioned_state.value if versioned_state else None,
            state_version=versioned_state.version if versioned_state else 0,
            profile=versioned_profile.value if versioned_profile else None,
            profile_version=versioned_profile.version if versioned_profile else 0,
        )


def _owners(session_id: str, row: Any) -> SessionOwners:
    """The owners a session's row may be sealed for, by the user the read found."""
    return SessionOwners(session_id, row["user_id"])
