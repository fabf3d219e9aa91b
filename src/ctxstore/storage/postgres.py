"""PostgreSQL storage: one row per message, delta writes, one transaction per save."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Any

from sqlalchemy import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ctxstore.db.engine import EngineSettings, create_engine
from ctxstore.db.errors import translated
from ctxstore.errors import CorruptDataError
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER, rows_to_messages
from ctxstore.models import MESSAGE_FORMAT, Message, full_digest
from ctxstore.storage import pg_sql
from ctxstore.storage.base import (
    DEFAULT_LIMITS,
    Limits,
    MessageInput,
    check_new_message,
    check_session_id,
    coerce_messages,
    message_digests,
)

# LOAD_SESSION's trailing session columns.
_COUNT = len(MESSAGE_COLUMN_ORDER)
_HASH = _COUNT + 1


def _message_row(session_id: str, seq: int, message: Message) -> dict[str, Any]:
    stamp = message.timestamp
    offset = stamp.utcoffset() if stamp is not None else None
    return {
        "session_id": session_id,
        "seq": seq,
        "role": message.role,
        "content": message.content,
        "turn_id": message.turn_id,
        "ts": stamp,
        "ts_offset": int(offset.total_seconds()) if offset is not None else None,
        "name": message.name,
        "metadata": message.metadata or None,
        "digest": message.core_digest(),
        "token_count": None,
        "format_version": MESSAGE_FORMAT,
    }


def _append_arrays(start: int, new: Sequence[Message]) -> list[list[Any]]:
    """Column arrays for APPEND_IF_UNCHANGED's unnest(), in its parameter order."""
    rows = [_message_row("", start + index, message) for index, message in enumerate(new)]
    return [
        [row["seq"] for row in rows],
        [row["role"] for row in rows],
        [row["content"] for row in rows],
        [row["turn_id"] for row in rows],
        [row["ts"] for row in rows],
        [row["ts_offset"] for row in rows],
        [row["name"] for row in rows],
        # SQLAlchemy's jsonb codec on the connection takes JSON text.
        [json.dumps(row["metadata"]) if row["metadata"] else None for row in rows],
        [row["digest"] for row in rows],
    ]


class PostgresStorage:
    """ContextStorage on PostgreSQL through SQLAlchemy Core and asyncpg.

    ``save`` keeps full-overwrite semantics but writes only the difference.  The sessions
    row holds a hash of the stored list, so "same messages plus a new turn" is recognised
    without reading the stored messages back:

    - when this process knows the session's (count, hash) from its last load or save,
      the new messages are appended by one conditional statement;
    - otherwise (or when another writer got there first) one transaction locks the
      session row, compares hashes, and inserts the delta.  An edited or truncated
      history reads the stored 32-byte digests (never the messages) to find where the
      lists part, then rewrites from there.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        limits: Limits = DEFAULT_LIMITS,
        owns_engine: bool = False,
    ) -> None:
        self._engine = engine
        self._limits = limits
        self._owns_engine = owns_engine
        self._known = pg_sql.KnownSessions()

    @classmethod
    def from_url(
        cls,
        url: str | URL,
        *,
        settings: EngineSettings | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> PostgresStorage:
        """A storage with its own engine (closed by ``close()``)."""
        return cls(create_engine(url, settings), limits=limits, owns_engine=True)

    @property
    def engine(self) -> AsyncEngine:
        return self._engine

    async def __aenter__(self) -> PostgresStorage:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Dispose of the engine when this storage created it; a shared one stays open."""
        if self._owns_engine:
            with translated("close"):
                await self._engine.dispose()

    @asynccontextmanager
    async def _driver(self) -> AsyncIterator[Any]:
        """The asyncpg connection under a pooled SQLAlchemy connection.

        A connection that broke while we used it directly is invalidated, so the pool
        does not hand it out again.
        """
        async with self._engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            try:
                yield driver
            except BaseException:
                if driver is None or driver.is_closed():
                    await conn.invalidate()
                raise

    # -- save -----------------------------------------------------------------------

    async def save(self, session_id: str, messages_in: Sequence[MessageInput]) -> None:
        check_session_id(session_id, self._limits)
        new_list = coerce_messages(messages_in, self._limits)
        digests = message_digests(new_list, self._limits)
        with translated("save"):
            known = self._known.get(session_id)
            if known is not None:
                count, total = await self._try_append(session_id, new_list, digests, known)
                if count >= 0:
                    self._known.remember(session_id, count, total)
                    return
            self._known.forget(session_id)
            async with self._engine.begin() as conn:
                total = await self._save_locked(conn, session_id, new_list, digests)
            self._known.remember(session_id, len(new_list), total)

    async def _try_append(
        self,
        session_id: str,
        new_list: list[Message],
        digests: list[bytes],
        known: tuple[int, bytes],
    ) -> tuple[int, bytes]:
        """The one-statement append; returns (-1, b"") when the locked path is needed."""
        stored_count, stored_hash = known
        if stored_count > len(new_list):
            return -1, b""
        prefix_hash, total = pg_sql.prefix_and_total_hash(digests, stored_count)
        if prefix_hash != stored_hash:
            return -1, b""
        for position in range(stored_count, len(new_list)):
            check_new_message(new_list[position], position, self._limits)
        async with self._driver() as driver:
            version = await driver.fetchval(
                pg_sql.APPEND_IF_UNCHANGED,
                session_id,
                stored_count,
                stored_hash,
                len(new_list),
                total,
                *_append_arrays(stored_count, new_list[stored_count:]),
                MESSAGE_FORMAT,
            )
        return (len(new_list), total) if version is not None else (-1, b"")

    async def _save_locked(
        self,
        conn: AsyncConnection,
        session_id: str,
        new_list: list[Message],
        digests: list[bytes],
    ) -> bytes:
        """Write ``new_list`` as the session's messages in ``conn``'s transaction.

        Returns the new content hash.
        """
        target = len(new_list)
        stored = (await conn.execute(pg_sql.LOCK_SESSION, {"sid": session_id})).first()
        if stored is None:
            stored = (await conn.execute(pg_sql.CREATE_SESSION, {"sid": session_id})).first()
        if stored is None:  # created concurrently: wait for its lock like any other save
            stored = (await conn.execute(pg_sql.LOCK_SESSION, {"sid": session_id})).one()
        stored_count, stored_hash, version = stored
        prefix_hash, total = pg_sql.prefix_and_total_hash(digests, min(stored_count, target))
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
                [_message_row(session_id, seq, new_list[seq]) for seq in range(start, target)],
            )
        await conn.execute(
            pg_sql.FINISH_SAVE,
            {"sid": session_id, "count": target, "hash": total, "new_version": version + 1},
        )
        return total

    async def _first_difference(
        self, conn: AsyncConnection, session_id: str, digests: list[bytes], stored_count: int
    ) -> int:
        limit = min(stored_count, len(digests))
        rows = await conn.execute(pg_sql.STORED_DIGESTS, {"sid": session_id})
        for seq, core, metadata in rows:
            if seq >= limit or full_digest(core, metadata) != digests[seq]:
                return int(min(seq, limit))
        return limit

    # -- load, delete, exists -----------------------------------------------------------

    async def load(self, session_id: str) -> list[Message]:
        check_session_id(session_id, self._limits)
        with translated("load"):
            async with self._driver() as driver:
                rows = await driver.fetch(pg_sql.LOAD_SESSION, session_id)
        if not rows:
            self._known.forget(session_id)
            return []
        expected, stored_hash = rows[0][_COUNT], rows[0][_HASH]
        if rows[0][0] is None:  # the outer join found a session without messages
            if expected:
                raise CorruptDataError(
                    f"session records {expected} messages but none are stored",
                    session_id=session_id,
                )
            self._known.remember(session_id, 0, stored_hash)
            return []
        if len(rows) != expected or rows[-1][0] != expected - 1:
            raise CorruptDataError(
                f"session records {expected} messages but {len(rows)} are stored "
                "or their positions have gaps",
                session_id=session_id,
            )
        loaded = rows_to_messages(rows, session_id=session_id)
        self._known.remember(session_id, expected, stored_hash)
        return loaded

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id, self._limits)
        self._known.forget(session_id)
        with translated("delete"):
            async with self._engine.begin() as conn:
                # messages go with it (ON DELETE CASCADE)
                await conn.execute(pg_sql.DELETE_SESSION, {"sid": session_id})

    async def exists(self, session_id: str) -> bool:
        check_session_id(session_id, self._limits)
        with translated("exists"):
            async with self._driver() as driver:
                found = await driver.fetchval(
                    "SELECT 1 FROM sessions WHERE session_id = $1", session_id
                )
        return found is not None
