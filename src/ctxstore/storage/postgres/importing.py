"""``PostgresStorage.import_user``: a user's bundle (storage/bundle/) written row by row,
with the versions and times it holds, in the caller's transaction.

Row-level INSERTs with explicit values, because the write functions number versions and
stamp times themselves; the application role may insert into every table it writes (no
owner privilege needed).  Message rows are built as a save builds them (rows.batch:
digests, token counts, sealing under the user's data key when encryption is on), and the
session's content hash is the one a save of the same list leaves, so the next save or
append recognises what is stored.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ctxstore.encryption import DataKey
from ctxstore.errors import ConflictError
from ctxstore.models import SUMMARY_FORMAT, UserProfile, Versioned
from ctxstore.storage.bundle import (
    Bundled,
    BundledMessages,
    BundledSession,
    BundledState,
    BundledStateChange,
    BundledSummary,
)
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import Limits
from ctxstore.timestamps import activity_time
from ctxstore.tokens import TokenCounter


@dataclass(frozen=True)
class Importer:
    """What writing a bundle's rows needs from the store."""

    driver: Driver
    user_id: str
    key: DataKey | None
    token_counter: TokenCounter
    limits: Limits
    ttl: timedelta | None


@dataclass
class _Open:
    """The session whose messages are being written: what its row gets once they are."""

    session_id: str
    hasher: Any
    count: int = 0
    turns: int = 0
    first_ts: datetime | None = None
    last_ts: datetime | None = None


async def write_bundle(importer: Importer, records: AsyncIterator[Bundled]) -> list[str]:
    """Every record written (ConflictError when the user or a session is here already);
    the ids of the sessions written."""
    driver, user_id = importer.driver, importer.user_id
    await sql.LOCK_USER_FOR_IMPORT.execute(driver, user_id=user_id)
    has_profile = await sql.USER_HAS_PROFILE.fetchval(driver, user_id=user_id)
    if has_profile or await sql.USER_HAS_LIVE_SESSION.fetchval(driver, user_id=user_id):
        raise ConflictError(f"import: user {user_id!r} already exists; nothing was imported")
    written: list[str] = []
    current: _Open | None = None
    async for record in records:
        if isinstance(record, BundledMessages):
            assert current is not None  # the reader checked the order
            await _insert_messages(importer, current, record)
            continue
        if isinstance(record, BundledSession):
            if current is not None:
                await _finish(driver, current)
            current = await _insert_session(importer, record)
            written.append(record.session_id)
        else:
            await _insert_document(importer, record)
    if current is not None:
        await _finish(driver, current)
    return written


async def _insert_session(importer: Importer, session: BundledSession) -> _Open:
    driver, session_id = importer.driver, session.session_id
    await sql.PURGE_IF_EXPIRED.fetchval(driver, sid=session_id)  # an expired one is missing
    inserted = await sql.IMPORT_SESSION.fetchval(
        driver,
        sid=session_id,
        user_id=importer.user_id,
        version=session.version,
        created_at=session.created_at,
        updated_at=session.updated_at,
        ttl=importer.ttl,
    )
    if inserted is None:
        raise ConflictError(
            f"import: session {session_id!r} already exists; nothing was imported",
            session_id=session_id,
        )
    return _Open(session_id, rows.hasher(importer.key))


async def _insert_messages(importer: Importer, current: _Open, batch: BundledMessages) -> None:
    messages = batch.messages
    new = rows.batch(
        messages, importer.token_counter, importer.limits, importer.key, current.session_id
    )
    await sql.INSERT_MESSAGES.execute(
        importer.driver,
        sid=current.session_id,
        start=batch.start,
        new_rows=rows.new_message_rows(new),
    )
    current.hasher.update(b"".join(new.digests))
    current.count += len(messages)
    current.turns += sum(1 for message in messages if message.role == "user")
    if current.count == len(messages):
        current.first_ts = activity_time(messages[0].timestamp)
    current.last_ts = activity_time(messages[-1].timestamp)


async def _finish(driver: Driver, current: _Open) -> None:
    await sql.FINISH_IMPORT_SESSION.execute(
        driver,
        sid=current.session_id,
        count=current.count,
        hash=current.hasher.digest(),
        turns=current.turns,
        first_ts=current.first_ts,
        last_ts=current.last_ts,
    )


async def _insert_document(importer: Importer, record: Bundled) -> None:
    driver, key = importer.driver, importer.key
    if isinstance(record, Versioned):
        await _insert_profile(importer, record)
    elif isinstance(record, BundledSummary):
        summary, sid = record.summary, record.session_id
        await sql.IMPORT_SUMMARY.execute(
            driver,
            sid=sid,
            summary_version=summary.summary_version,
            covers_until=summary.covers_until,
            token_count=summary.token_count,
            format_version=SUMMARY_FORMAT,
            created_at=summary.created_at,
            **rows.summary_values(summary.text, key, sid, summary.summary_version),
        )
    elif isinstance(record, BundledState):
        state, sid = record.state, record.session_id
        await sql.IMPORT_STATE.execute(
            driver,
            sid=sid,
            version=state.version,
            at=state.updated_at,
            **rows.state_values(state.value, key, sid, state.version),
        )
    elif isinstance(record, BundledStateChange):
        change, sid = record.change, record.session_id
        await sql.IMPORT_STATE_CHANGE.execute(
            driver,
            sid=sid,
            version=change.version,
            at=change.created_at,
            **rows.state_values(change.state, key, sid, change.version),
        )


async def _insert_profile(importer: Importer, profile: Versioned[UserProfile]) -> None:
    user_id = importer.user_id
    inserted = await sql.IMPORT_PROFILE.fetchval(
        importer.driver,
        user_id=user_id,
        version=profile.version,
        updated_at=profile.updated_at,
        **rows.profile_values(profile.value, importer.key, user_id, profile.version),
    )
    if inserted is None:
        raise ConflictError(f"import: user {user_id!r} already exists; nothing was imported")
