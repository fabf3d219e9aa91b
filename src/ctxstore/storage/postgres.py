"""PostgreSQL storage: one row per message, delta writes, one transaction per save."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from sqlalchemy import URL, and_, bindparam, delete, func, insert, literal_column, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ctxstore.db.engine import EngineSettings, create_engine
from ctxstore.db.errors import translated
from ctxstore.db.tables import messages, sessions
from ctxstore.errors import CorruptDataError
from ctxstore.formats.messages import row_to_message
from ctxstore.models import MESSAGE_FORMAT, Message, full_digest
from ctxstore.storage.base import (
    DEFAULT_LIMITS,
    Limits,
    MessageInput,
    check_new_message,
    check_session_id,
    coerce_messages,
)

EMPTY_HASH = hashlib.sha256(b"").digest()

# The columns row_to_message expects, in order.
MESSAGE_COLUMNS = (
    messages.c.seq,
    messages.c.role,
    messages.c.content,
    messages.c.turn_id,
    messages.c.ts,
    messages.c.ts_offset,
    messages.c.name,
    messages.c.metadata,
    messages.c.digest,
    messages.c.format_version,
)

_LOCK_SESSION = (
    select(sessions.c.message_count, sessions.c.content_hash, sessions.c.version)
    .where(sessions.c.session_id == bindparam("sid"))
    .with_for_update()
)

_LOAD = (
    select(sessions.c.message_count, *MESSAGE_COLUMNS)
    .select_from(
        sessions.outerjoin(messages, messages.c.session_id == sessions.c.session_id)
    )
    .where(sessions.c.session_id == bindparam("sid"))
    .order_by(messages.c.seq)
)


def content_hash(digests: Sequence[bytes]) -> bytes:
    """Hash of a whole message list: SHA-256 over the concatenated message digests."""
    return hashlib.sha256(b"".join(digests)).digest()


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


class PostgresStorage:
    """ContextStorage on PostgreSQL through SQLAlchemy Core and asyncpg.

    ``save`` keeps full-overwrite semantics but writes only the difference: the sessions
    row holds a hash of the stored list, so appending a turn costs one locked read of that
    row, an INSERT of the new messages and an UPDATE, whatever the session's length.
    An edited or truncated history reads back the stored 32-byte digests (never the
    messages) to find where the lists part, then rewrites from there.
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

    async def save(self, session_id: str, messages_in: Sequence[MessageInput]) -> None:
        check_session_id(session_id, self._limits)
        new_list = coerce_messages(messages_in, self._limits)
        digests = [message.digest() for message in new_list]
        with translated("save"):
            async with self._engine.begin() as conn:
                await self._save_in(conn, session_id, new_list, digests)

    async def _save_in(
        self,
        conn: AsyncConnection,
        session_id: str,
        new_list: list[Message],
        digests: list[bytes],
    ) -> int:
        """Write ``new_list`` as the session's messages inside ``conn``'s transaction.

        Returns the new session version.
        """
        target = len(new_list)
        stored = (await conn.execute(_LOCK_SESSION, {"sid": session_id})).first()
        if stored is None:
            stored = await self._create_session(conn, session_id)
        stored_count, stored_hash, version = stored
        if stored_count <= target and content_hash(digests[:stored_count]) == stored_hash:
            start = stored_count  # the common case: same prefix, messages appended
        else:
            start = await self._first_difference(conn, session_id, digests, stored_count)
            await conn.execute(
                delete(messages).where(
                    and_(messages.c.session_id == session_id, messages.c.seq >= start)
                )
            )
        for position in range(start, target):
            check_new_message(new_list[position], position, self._limits)
        if start < target:
            await conn.execute(
                insert(messages),
                [
                    _message_row(session_id, seq, new_list[seq])
                    for seq in range(start, target)
                ],
            )
        new_version: int = version + 1
        await conn.execute(
            update(sessions)
            .where(sessions.c.session_id == session_id)
            .values(
                message_count=target,
                content_hash=content_hash(digests),
                version=new_version,
                updated_at=func.now(),
            )
        )
        return new_version

    async def _create_session(self, conn: AsyncConnection, session_id: str) -> Any:
        created = (
            await conn.execute(
                pg_insert(sessions)
                .values(session_id=session_id, content_hash=EMPTY_HASH)
                .on_conflict_do_nothing(index_elements=[sessions.c.session_id])
                .returning(sessions.c.message_count, sessions.c.content_hash, sessions.c.version)
            )
        ).first()
        if created is not None:
            return created
        # Another transaction created it first: wait for its lock like any other save.
        return (await conn.execute(_LOCK_SESSION, {"sid": session_id})).one()

    async def _first_difference(
        self, conn: AsyncConnection, session_id: str, digests: list[bytes], stored_count: int
    ) -> int:
        rows = await conn.execute(
            select(messages.c.seq, messages.c.digest, messages.c.metadata)
            .where(messages.c.session_id == session_id)
            .order_by(messages.c.seq)
        )
        limit = min(stored_count, len(digests))
        for seq, core, metadata in rows:
            if seq >= limit or full_digest(core, metadata) != digests[seq]:
                return int(min(seq, limit))
        return limit

    async def load(self, session_id: str) -> list[Message]:
        check_session_id(session_id, self._limits)
        with translated("load"):
            async with self._engine.connect() as conn:
                rows = (await conn.execute(_LOAD, {"sid": session_id})).all()
        if not rows:
            return []
        expected = rows[0][0]
        if rows[0][1] is None:  # the outer join found a session without messages
            if expected:
                raise CorruptDataError(
                    f"session records {expected} messages but none are stored",
                    session_id=session_id,
                )
            return []
        if len(rows) != expected or rows[-1][1] != expected - 1:
            raise CorruptDataError(
                f"session records {expected} messages but {len(rows)} are stored "
                "or their positions have gaps",
                session_id=session_id,
            )
        return [
            row_to_message(row[1:], session_id=session_id, position=position)
            for position, row in enumerate(rows)
        ]

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id, self._limits)
        with translated("delete"):
            async with self._engine.begin() as conn:
                # messages go with it (ON DELETE CASCADE)
                await conn.execute(delete(sessions).where(sessions.c.session_id == session_id))

    async def exists(self, session_id: str) -> bool:
        check_session_id(session_id, self._limits)
        with translated("exists"):
            async with self._engine.connect() as conn:
                found = await conn.scalar(
                    select(literal_column("1")).where(sessions.c.session_id == session_id)
                )
        return found is not None
