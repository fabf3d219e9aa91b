"""PostgreSQL storage: one row per message, delta writes, versions checked by PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import Any

from sqlalchemy import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.util.concurrency import greenlet_spawn

from ctxstore.db.engine import EngineSettings, create_engine
from ctxstore.db.errors import translated
from ctxstore.errors import (
    ConflictError,
    CorruptDataError,
    StorageTimeoutError,
    StorageUnavailableError,
)
from ctxstore.formats.messages import rows_to_messages
from ctxstore.models import (
    MESSAGE_FORMAT,
    ConsultationState,
    Message,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
    full_digest,
)
from ctxstore.storage import pg_documents as docs
from ctxstore.storage import pg_rows, pg_sql
from ctxstore.storage.base import (
    DEFAULT_LIMITS,
    NEW_SESSION,
    AsyncClosing,
    Limits,
    MessageInput,
    check_expected_version,
    check_new_message,
    check_session_id,
    check_summary_input,
    check_user_id,
    check_write,
    coerce_messages,
    message_digests,
)
from ctxstore.storage.history import History, Origin
from ctxstore.storage.pg_reader import PostgresSessionReader
from ctxstore.tokens import TokenCounter
from ctxstore.upgrade import write_back_messages


def _stale(session_id: str, current: int, expected: int | None) -> ConflictError:
    return ConflictError.stale(f"session {session_id!r}", current, expected, session_id=session_id)


class PostgresStorage(AsyncClosing):
    """ContextStorage (and VersionedStorage) on PostgreSQL via SQLAlchemy Core and asyncpg.

    ``save`` keeps full-overwrite semantics but writes only the difference.  The sessions
    row holds a hash of the stored list, so "same messages plus a new turn" is recognised
    without reading the stored messages back:

    - when this process knows the session's (count, hash) from its last load or save,
      the new messages are appended by one conditional statement;
    - otherwise (or when another writer got there first) one transaction locks the
      session row, compares hashes, and inserts the delta.  An edited or truncated
      history reads the stored 32-byte digests (never the messages) to find where the
      lists part, then rewrites from there.

    Versions: every accepted save or append bumps the session's version.  With
    ``expected_version`` the write happens only if PostgreSQL finds the row at that
    version (in the WHERE of the statement that locks or updates it).
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        limits: Limits = DEFAULT_LIMITS,
        owns_engine: bool = False,
        upgrade_on_load: bool = False,
        token_counter: TokenCounter | None = None,
        ttl: timedelta | None = None,
        operation_timeout: float = 30.0,
    ) -> None:
        """``upgrade_on_load``: rows found in an old format are written back upgraded
        (only if the session is still at the version that was read)."""
        self._engine = engine
        self._limits = limits
        self._owns_engine = owns_engine
        self._upgrade_on_load = upgrade_on_load
        #: No call takes longer than this (seconds): StorageTimeoutError instead.
        self.operation_timeout = operation_timeout
        #: Reads that were retried after their connection died (observable).
        self.read_retries = 0
        #: Sessions expire this long after their last write (None: never).
        self.ttl = ttl
        # Each message's contract cost is counted once, when it is written.
        self.token_counter = token_counter or TokenCounter()
        self._known = pg_sql.KnownSessions()

    @classmethod
    def from_url(
        cls,
        url: str | URL,
        *,
        settings: EngineSettings | None = None,
        limits: Limits = DEFAULT_LIMITS,
        upgrade_on_load: bool = False,
        token_counter: TokenCounter | None = None,
        ttl: timedelta | None = None,
        operation_timeout: float = 30.0,
    ) -> PostgresStorage:
        """A storage with its own engine (closed by ``close()``)."""
        return cls(
            create_engine(url, settings),
            limits=limits,
            owns_engine=True,
            upgrade_on_load=upgrade_on_load,
            token_counter=token_counter,
            ttl=ttl,
            operation_timeout=operation_timeout,
        )

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def close(self) -> None:
        """Dispose of the engine when this storage created it; a shared one stays open."""
        if self._owns_engine:
            with translated("close"):
                await self._engine.dispose()

    def driver(self) -> AbstractAsyncContextManager[Any]:
        """The raw asyncpg connection of a pooled connection, for maintenance commands."""
        return self._driver()

    @asynccontextmanager
    async def _driver(self) -> AsyncIterator[Any]:
        """The asyncpg connection of a pooled connection (checked out with pre-ping).

        Taken from the pool directly rather than through an AsyncConnection: half the
        overhead on every one-statement call.  Single statements sent here are their own
        transactions.  A connection that broke, timed out or was cancelled mid-call is
        invalidated, so the pool never hands it out again.
        """
        fairy = await greenlet_spawn(self._engine.sync_engine.raw_connection)
        try:
            driver = fairy.driver_connection
            try:
                yield driver
            except BaseException as error:
                if (
                    driver is None
                    or driver.is_closed()
                    or isinstance(error, asyncio.CancelledError | TimeoutError)
                ):
                    await greenlet_spawn(fairy.invalidate)
                raise
        finally:
            await greenlet_spawn(fairy.close)

    @asynccontextmanager
    async def _guard(
        self, action: str, *, conflict_on_duplicate: bool = False
    ) -> AsyncIterator[None]:
        """Every call ends within ``operation_timeout`` and raises only ctxstore errors."""
        with translated(action, conflict_on_duplicate=conflict_on_duplicate):
            async with asyncio.timeout(self.operation_timeout):
                yield

    async def _read(self, action: str, method: str, sql: str, *args: Any) -> Any:
        """A one-statement read, retried once when its connection turned out dead.

        Reads change nothing, so a second try is safe; a timeout is not retried (the
        caller's time is spent), and writes are never replayed.
        """
        for attempt in (1, 2):
            try:
                async with self._guard(action), self._driver() as driver:
                    return await getattr(driver, method)(sql, *args)
            except StorageTimeoutError:
                raise
            except StorageUnavailableError:
                if attempt == 2:
                    raise
                self.read_retries += 1
        raise AssertionError("unreachable")

    async def _fetch(self, action: str, sql: str, *args: Any) -> list[Any]:
        return list(await self._read(action, "fetch", sql, *args))

    async def _fetchrow(self, action: str, sql: str, *args: Any) -> Any:
        return await self._read(action, "fetchrow", sql, *args)

    async def _fetchval(self, action: str, sql: str, *args: Any) -> Any:
        return await self._read(action, "fetchval", sql, *args)

    # -- save ---------------------------------------------------------------------------------

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        expected = check_write(session_id, expected_version, user_id, self._limits)
        if isinstance(messages, History) and expected != NEW_SESSION:
            origin = messages.origin
            if origin is not None and origin.session_id == session_id:
                version = await self._save_extended(session_id, messages, origin, expected, user_id)
                if version is not None:
                    return version
        new_list = coerce_messages(messages, self._limits)
        digests = message_digests(new_list, self._limits)
        async with self._guard("save"):
            known = self._known.get(session_id)
            if known is not None and expected != NEW_SESSION:
                version = await self._try_append(
                    session_id, new_list, digests, known, expected, user_id
                )
                if version is not None:
                    pg_rows.track(messages, session_id, new_list, digests, self._known)
                    return version
            self._known.forget(session_id)
            async with self._engine.begin() as conn:
                version, hasher = await self._save_locked(
                    conn, session_id, new_list, digests, expected, user_id
                )
            self._known.remember(session_id, len(new_list), hasher.digest(), hasher)
            pg_rows.track(messages, session_id, new_list, digests, self._known)
            return version

    async def _save_extended(
        self,
        session_id: str,
        history: History,
        origin: Origin,
        expected: int | None,
        user_id: str | None,
    ) -> int | None:
        """A History that only grew since it was loaded or saved: O(new messages).

        None when the general path must decide (the prefix changed, or the session did).
        """
        if not origin.prefix_intact(history):
            return None
        added = coerce_messages(history[origin.count :], self._limits)
        digests = message_digests(added, self._limits)
        for offset, message in enumerate(added):
            check_new_message(message, origin.count + offset, self._limits)
        hasher = origin.hasher.copy()
        hasher.update(b"".join(digests))
        async with self._guard("save"):
            version = await self._conditional_append(
                session_id,
                origin.count,
                origin.content_hash,
                history,
                added,
                hasher,
                expected,
                user_id,
            )
        if version is None:
            return None
        history.origin = Origin(
            session_id,
            len(history),
            hasher.digest(),
            hasher,
            # Added messages may hold the caller's mutable (even empty) dicts: all checked.
            origin.metadata_digests
            + tuple((origin.count + offset, digest) for offset, digest in enumerate(digests)),
        )
        self._known.remember(session_id, len(history), hasher.digest(), hasher)
        return version

    async def _conditional_append(
        self,
        session_id: str,
        known_count: int,
        known_hash: bytes,
        whole: Sequence[Message],
        added: Sequence[Message],
        hasher: Any,
        expected: int | None,
        user_id: str | None,
    ) -> int | None:
        """APPEND_IF_UNCHANGED: the new version, or None if the session moved on."""
        async with self._driver() as driver:
            version = await driver.fetchval(
                pg_sql.APPEND_IF_UNCHANGED,
                session_id,
                known_count,
                known_hash,
                len(whole),
                hasher.digest(),
                *pg_rows.append_arrays(known_count, added),
                MESSAGE_FORMAT,
                user_id,
                expected,
                self._costs(added),
                self.ttl,
                *pg_rows.activity(added, whole),
            )
        return int(version) if version is not None else None

    async def _try_append(
        self,
        session_id: str,
        new_list: list[Message],
        digests: list[bytes],
        known: pg_sql.Known,
        expected: int | None,
        user_id: str | None,
    ) -> int | None:
        """The one-statement path; None when the locked path is needed."""
        if known.count > len(new_list):
            return None
        prefix_hash, hasher = pg_sql.prefix_and_total_hash(digests, known.count)
        if prefix_hash != known.content_hash:
            return None
        for position in range(known.count, len(new_list)):
            check_new_message(new_list[position], position, self._limits)
        version = await self._conditional_append(
            session_id,
            known.count,
            known.content_hash,
            new_list,
            new_list[known.count :],
            hasher,
            expected,
            user_id,
        )
        if version is None:
            return None
        self._known.remember(session_id, len(new_list), hasher.digest(), hasher)
        return version

    async def _save_locked(
        self,
        conn: AsyncConnection,
        session_id: str,
        new_list: list[Message],
        digests: list[bytes],
        expected: int | None,
        user_id: str | None,
    ) -> tuple[int, Any]:
        """Write ``new_list`` in ``conn``'s transaction; returns (version, hasher)."""
        target = len(new_list)
        # An expired session is a missing one: its old content goes first.
        await conn.execute(pg_sql.PURGE_LOCKED_IF_EXPIRED, {"sid": session_id})
        stored = None
        if expected != NEW_SESSION:
            stored = (
                await conn.execute(pg_sql.LOCK_SESSION, {"sid": session_id, "expected": expected})
            ).first()
        if stored is None:
            if expected is not None and expected != NEW_SESSION:
                raise _stale(session_id, await self._current(conn, session_id), expected)
            stored = (
                await conn.execute(pg_sql.CREATE_SESSION, {"sid": session_id, "ttl": self.ttl})
            ).first()
            if stored is None and expected == NEW_SESSION:
                raise _stale(session_id, await self._current(conn, session_id), expected)
        if stored is None:  # created concurrently: wait for its lock like any other save
            stored = (
                await conn.execute(pg_sql.LOCK_SESSION, {"sid": session_id, "expected": None})
            ).one()
        stored_count, stored_hash, version = stored
        prefix_hash, hasher = pg_sql.prefix_and_total_hash(digests, min(stored_count, target))
        if stored_count <= target and prefix_hash == stored_hash:
            start = stored_count  # same prefix, messages appended
        else:
            start = await self._first_difference(conn, session_id, digests, stored_count)
            await conn.execute(pg_sql.DELETE_FROM_POSITION, {"sid": session_id, "start": start})
        for position in range(start, target):
            check_new_message(new_list[position], position, self._limits)
        if start < target:
            await conn.execute(
                pg_sql.INSERT_MESSAGES,
                [
                    pg_rows.message_row(session_id, seq, message, cost)
                    for seq, message, cost in zip(
                        range(start, target),
                        new_list[start:],
                        self._costs(new_list[start:]),
                        strict=True,
                    )
                ],
            )
        new_version = await conn.scalar(
            pg_sql.FINISH_SAVE,
            {
                "sid": session_id,
                "old": version,
                "count": target,
                "hash": hasher.digest(),
                "user_id": user_id,
                "ttl": self.ttl,
                "turns": pg_rows.user_messages(new_list),
                "first_ts": new_list[0].timestamp if new_list else None,
                "last_ts": new_list[-1].timestamp if new_list else None,
            },
        )
        return int(new_version), hasher

    def _costs(self, messages: Sequence[Message]) -> list[int | None]:
        return [self.token_counter.message_cost(message) for message in messages]

    @staticmethod
    async def _current(conn: AsyncConnection, session_id: str) -> int:
        current = await conn.scalar(pg_sql.SESSION_EXISTS, {"sid": session_id})
        return int(current or 0)

    async def _first_difference(
        self, conn: AsyncConnection, session_id: str, digests: list[bytes], stored_count: int
    ) -> int:
        limit = min(stored_count, len(digests))
        rows = await conn.execute(pg_sql.STORED_DIGESTS, {"sid": session_id})
        for seq, core, metadata in rows:
            if seq >= limit or full_digest(core, metadata) != digests[seq]:
                return int(min(seq, limit))
        return limit

    # -- append ---------------------------------------------------------------------------------

    async def append(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        """Add messages after the stored ones, creating the session; the new version.

        One statement: the session row hands out the positions, so concurrent appends
        never collide, and nothing stored is read.
        """
        expected = check_write(session_id, expected_version, user_id, self._limits)
        added = coerce_messages(messages, self._limits)
        digests = message_digests(added, self._limits)
        for position, message in enumerate(added):
            check_new_message(message, position, self._limits)
        known = self._known.get(session_id)
        extended = None
        if known is not None and known.hasher is not None:
            extended = known.hasher.copy()
            extended.update(b"".join(digests))
        shared = [
            session_id,
            user_id,
            len(added),
            hashlib.sha256(b"".join(digests)).digest(),
            *pg_rows.append_arrays(0, added),
            MESSAGE_FORMAT,
            self._costs(added),
        ]
        activity = pg_rows.activity(added, added)
        knowledge = [
            known.count if known else None,
            known.content_hash if known else None,
            extended.digest() if extended is not None else None,
        ]
        async with self._guard("append"), self._driver() as driver:
            for _attempt in range(2):
                if expected is None:
                    row = await driver.fetchrow(
                        pg_sql.APPEND, *shared, *knowledge, self.ttl, *activity
                    )
                elif expected == NEW_SESSION:
                    row = await driver.fetchrow(pg_sql.APPEND_TO_NEW, *shared, self.ttl, *activity)
                else:
                    row = await driver.fetchrow(
                        pg_sql.APPEND_AT_VERSION, *shared, *knowledge, expected, self.ttl, *activity
                    )
                # No row: an expired session (purge it, then it is new) or a conflict.
                if row is not None or not await driver.fetchval(
                    pg_sql.PURGE_IF_EXPIRED, session_id
                ):
                    break
            if row is None:
                current = await driver.fetchval(pg_sql.SESSION_VERSION, session_id)
                self._known.forget(session_id)
                raise _stale(session_id, int(current or 0), expected)
        start, version = row
        if known is not None and extended is not None and start == known.count:
            self._known.remember(session_id, start + len(added), extended.digest(), extended)
        elif start == 0:
            fresh = hashlib.sha256(b"".join(digests))
            self._known.remember(session_id, len(added), fresh.digest(), fresh)
        else:
            self._known.forget(session_id)
        return int(version)

    # -- load, version, delete, exists ----------------------------------------------------------

    async def load(self, session_id: str) -> list[Message]:
        check_session_id(session_id, self._limits)
        rows = await self._fetch("load", pg_sql.LOAD_SESSION, session_id)
        messages = self._messages_from(rows, session_id)
        if self._upgrade_on_load and messages:
            await self._write_back(session_id, rows, messages)
        return messages

    async def _write_back(
        self, session_id: str, rows: Sequence[Any], loaded: list[Message]
    ) -> None:
        legacy = [
            (position, row[pg_rows.FORMAT], loaded[position])
            for position, row in enumerate(rows)
            if row[pg_rows.FORMAT] != MESSAGE_FORMAT
        ]
        if not legacy:
            return
        async with self._guard("load (writing upgraded rows back)"), self._driver() as driver:
            await write_back_messages(driver, session_id, rows[0][pg_rows.VERSION], legacy)
        self._known.forget(session_id)

    def _messages_from(self, rows: Sequence[Any], session_id: str) -> History:
        if not rows:
            self._known.forget(session_id)
            return History()
        expected, stored_hash = rows[0][pg_rows.COUNT], rows[0][pg_rows.HASH]
        if rows[0][0] is None:  # the outer join found a session without messages
            if expected:
                raise CorruptDataError(
                    f"session records {expected} messages but none are stored",
                    session_id=session_id,
                )
            self._remember_loaded(session_id, 0, stored_hash)
            empty = pg_rows.origin_of(session_id, [], stored_hash)
            return History((), empty)
        if len(rows) != expected or rows[-1][0] != expected - 1:
            raise CorruptDataError(
                f"session records {expected} messages but {len(rows)} are stored "
                "or their positions have gaps",
                session_id=session_id,
            )
        loaded = History(rows_to_messages(rows, session_id=session_id))
        origin = pg_rows.origin_of(session_id, rows, stored_hash)
        loaded.origin = origin
        if origin is not None:
            self._known.remember(session_id, expected, stored_hash, origin.hasher.copy())
        else:
            self._remember_loaded(session_id, expected, stored_hash)
        return loaded

    def _remember_loaded(self, session_id: str, count: int, stored_hash: bytes | None) -> None:
        if stored_hash is None:  # left unknown by an append: the next save recomputes it
            self._known.forget(session_id)
        else:
            self._known.remember(session_id, count, stored_hash)

    async def version(self, session_id: str) -> int:
        check_session_id(session_id, self._limits)
        current = await self._fetchval("version", pg_sql.SESSION_VERSION, session_id)
        return int(current or 0)

    async def delete(self, session_id: str) -> None:
        """Delete the session: messages, summaries, state and its history (the profile stays)."""
        check_session_id(session_id, self._limits)
        self._known.forget(session_id)
        async with self._guard("delete"), self._engine.begin() as conn:
            # everything session-scoped goes with the row (ON DELETE CASCADE)
            await conn.execute(pg_sql.DELETE_SESSION, {"sid": session_id})

    async def exists(self, session_id: str) -> bool:
        check_session_id(session_id, self._limits)
        found = await self._fetchval("exists", pg_sql.SESSION_VERSION, session_id)
        return found is not None

    # -- summaries ------------------------------------------------------------------------------

    async def save_summary(
        self,
        session_id: str,
        text: str,
        *,
        covers_until: int,
        token_count: int | None = None,
        expected_version: int | None = None,
    ) -> Summary:
        check_session_id(session_id, self._limits)
        check_summary_input(text, covers_until, token_count)
        expected = check_expected_version(expected_version)
        async with (
            self._guard("save_summary", conflict_on_duplicate=True),
            self._driver() as driver,
        ):
            return await docs.insert_summary(
                driver, session_id, text, covers_until, token_count, expected
            )

    async def load_summary(
        self, session_id: str, summary_version: int | None = None
    ) -> Summary | None:
        check_session_id(session_id, self._limits)
        if summary_version is None:
            row = await self._fetchrow("load_summary", docs.LATEST_SUMMARY, session_id)
        else:
            row = await self._fetchrow("load_summary", docs.SUMMARY_AT, session_id, summary_version)
        return docs.summary_from_row(row) if row is not None else None

    # -- consultation state -------------------------------------------------------------------

    async def save_state(
        self,
        session_id: str,
        state: ConsultationState | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        check_session_id(session_id, self._limits)
        parsed: ConsultationState = ConsultationState.parse(state)
        expected = check_expected_version(expected_version)
        async with self._guard("save_state", conflict_on_duplicate=True), self._driver() as driver:
            return await docs.write_state(driver, session_id, parsed, expected)

    async def load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        check_session_id(session_id, self._limits)
        row = await self._fetchrow("load_state", docs.CURRENT_STATE, session_id)
        return docs.state_from_row(row, session_id) if row is not None else None

    async def state_history(self, session_id: str) -> list[StateChange]:
        check_session_id(session_id, self._limits)
        rows = await self._fetch("state_history", docs.STATE_HISTORY, session_id)
        return [docs.state_change_from_row(row, session_id) for row in rows]

    # -- user profiles --------------------------------------------------------------------------

    async def save_profile(
        self,
        user_id: str,
        profile: UserProfile | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        check_user_id(user_id, self._limits)
        parsed: UserProfile = UserProfile.parse(profile)
        expected = check_expected_version(expected_version)
        async with (
            self._guard("save_profile", conflict_on_duplicate=True),
            self._driver() as driver,
        ):
            return await docs.write_profile(driver, user_id, parsed, expected)

    async def load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        check_user_id(user_id, self._limits)
        row = await self._fetchrow("load_profile", docs.CURRENT_PROFILE, user_id)
        return docs.profile_from_row(row, user_id) if row is not None else None

    # -- context assembly ------------------------------------------------------------------

    @asynccontextmanager
    async def reader(self, session_id: str) -> AsyncIterator[PostgresSessionReader]:
        """Reads on one snapshot: a REPEATABLE READ, read-only transaction."""
        check_session_id(session_id, self._limits)
        async with (
            self._guard("reading the session"),
            self._driver() as driver,
            driver.transaction(isolation="repeatable_read", readonly=True),
        ):
            yield PostgresSessionReader(driver, session_id)

    # -- snapshot -------------------------------------------------------------------------------

    async def snapshot(self, session_id: str) -> SessionSnapshot:
        """Messages, latest summary, state, profile and every version, from one snapshot.

        One REPEATABLE READ, read-only transaction: every statement sees the database as
        of its first one, whatever commits in between.
        """
        check_session_id(session_id, self._limits)
        try:
            return await self._snapshot_once(session_id)
        except StorageTimeoutError:
            raise
        except StorageUnavailableError:
            self.read_retries += 1  # a read: one more try on a fresh connection
            return await self._snapshot_once(session_id)

    async def _snapshot_once(self, session_id: str) -> SessionSnapshot:
        async with (
            self._guard("snapshot"),
            self._driver() as driver,
            driver.transaction(isolation="repeatable_read", readonly=True),
        ):
            session = await driver.fetchrow(docs.SESSION_HEAD, session_id)
            if session is None:
                return SessionSnapshot(session_id, False, 0, None, [], None, None, 0, None, 0)
            rows = await driver.fetch(pg_sql.LOAD_SESSION, session_id)
            summary = await driver.fetchrow(docs.LATEST_SUMMARY, session_id)
            state = await driver.fetchrow(docs.CURRENT_STATE, session_id)
            user_id = session[1]
            profile = (
                await driver.fetchrow(docs.CURRENT_PROFILE, user_id)
                if user_id is not None
                else None
            )
        versioned_state = docs.state_from_row(state, session_id) if state else None
        versioned_profile = docs.profile_from_row(profile, user_id) if profile and user_id else None
        return SessionSnapshot(
            session_id=session_id,
            exists=True,
            version=int(session[0]),
            user_id=user_id,
            messages=self._messages_from(rows, session_id),
            summary=docs.summary_from_row(summary) if summary else None,
            state=versioned_state.value if versioned_state else None,
            state_version=versioned_state.version if versioned_state else 0,
            profile=versioned_profile.value if versioned_profile else None,
            profile_version=versioned_profile.version if versioned_profile else 0,
        )
