"""Writes of summaries, consultation states and user profiles: one function call each.

Every version check is in the statement's WHERE clause or a key constraint; when a
statement returns nothing, a ``*_FACTS`` read only explains why, through the errors
storage/rules.py builds.

A sealed document is bound to the version it is stored at (encryption.document_aad), so
the write must know that version before it seals: the caller's expected version, else
the current one read first.  When a writer got in between, the write is refused (nothing
written) and done again in a transaction that first locks what the function would (the
session row; for a profile, the user's lock and its row): writers take turns there, so a
write without an expected version is never refused for a race.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ctxstore.encryption import DataKey, OpenedKeys
from ctxstore.errors import SessionNotFoundError
from ctxstore.models import SUMMARY_FORMAT, ConsultationState, Summary, UserProfile
from ctxstore.storage import rules
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import SummaryDraft

#: The locked tries of a sealed write without an expected version: only writers creating
#: the same profile meanwhile can refuse one (the next try then locks the row they made).
LOCKED_ATTEMPTS = 3

_Written = TypeVar("_Written")


async def _versioned(
    driver: Driver,
    sealed: bool,
    expected: int | None,
    current: Callable[[], Awaitable[int]],
    write: Callable[[int | None], Awaitable[_Written | None]],
    lock: Callable[[], Awaitable[None]],
) -> _Written | None:
    """``write(base)`` stores at ``base`` only (None: refused; a sealed write seals for
    version base + 1).  Plaintext, or with ``expected``: one try; else at the current
    version, then locked."""
    if not sealed or expected is not None:
        return await write(expected)
    done = await write(await current())
    for _attempt in range(LOCKED_ATTEMPTS):
        if done is not None:
            return done
        async with driver.transaction():
            await lock()
            done = await write(await current())
    return done


def _session_lock(driver: Driver, session_id: str) -> Callable[[], Awaitable[None]]:
    """The live session row, locked as the summary and state functions lock it."""

    async def lock() -> None:
        await sql.LOCK_LIVE_SESSION.execute(driver, sid=session_id)

    return lock


async def insert_summary(
    driver: Driver,
    session_id: str,
    draft: SummaryDraft,
    expected: int | None,
    key: DataKey | None = None,
) -> Summary:
    async def write(base: int | None) -> Any:
        row = await sql.INSERT_SUMMARY.fetchval(
            driver,
            sid=session_id,
            covers_until=draft.covers_until,
            token_count=draft.token_count,
            expected=base,
            format_version=SUMMARY_FORMAT,
            **rows.summary_values(draft.text, key, session_id, (base or 0) + 1),
        )
        return row if row[0] is not None else None

    async def latest_version() -> int:
        facts = await sql.SUMMARY_FACTS.fetchrow(driver, sid=session_id)
        return int(facts["latest"]) if facts is not None else 0

    lock = _session_lock(driver, session_id)
    row = await _versioned(driver, key is not None, expected, latest_version, write, lock)
    if row is None:
        facts = await sql.SUMMARY_FACTS.fetchrow(driver, sid=session_id)
        if expected is None and _unexplained(facts, draft.covers_until):
            # Refused, yet the session now takes it: a save shortened the session and an
            # append grew it again between the write and this read.  Without an expected
            # version that is no conflict: write again with the session locked, and read
            # why not (if not) in the same transaction.
            async with driver.transaction():
                await lock()
                row = await write(await latest_version() if key is not None else None)
                if row is None:
                    facts = await sql.SUMMARY_FACTS.fetchrow(driver, sid=session_id)
    if row is not None:
        keys = None
        if key is not None:  # the row just written, sealed under ``key``
            keys = OpenedKeys(accept_plaintext=False)
            keys[key.key_id] = key
        return rows.summary_from_row(
            dict(zip(sql.SUMMARY_COLUMNS, row, strict=True)), session_id, keys
        )
    latest = int(facts["latest"]) if facts is not None else 0
    rules.refuse_summary(
        session_id,
        message_count=facts["message_count"] if facts is not None else None,
        latest=latest,
        covers_until=draft.covers_until,
        expected=expected,
    )
    raise rules.stale_summary(session_id, latest, expected)  # moved on meanwhile


def _unexplained(facts: Any, covers_until: int) -> bool:
    """The session is live and its messages cover ``covers_until``: nothing refuses a
    summary now."""
    return (
        facts is not None
        and facts["message_count"] is not None
        and (covers_until < int(facts["message_count"]))
    )


async def write_state(
    driver: Driver,
    session_id: str,
    state: ConsultationState,
    expected: int | None,
    key: DataKey | None = None,
) -> int:

    async def write(base: int | None) -> int | None:
        values = rows.state_values(state, key, session_id, (base or 0) + 1)
        version, _ = await sql.WRITE_STATE.fetchval(driver, sid=session_id, expected=base, **values)
        return None if version is None else int(version)

    async def stored_version() -> int:
        facts = await sql.STATE_FACTS.fetchrow(driver, sid=session_id)
        return int(facts["version"] or 0) if facts is not None else 0

    lock = _session_lock(driver, session_id)
    written = await _versioned(driver, key is not None, expected, stored_version, write, lock)
    if written is not None:
        return written
    facts = await sql.STATE_FACTS.fetchrow(driver, sid=session_id)
    current = int(facts["version"] or 0) if facts is not None else None
    # The statement writes whenever the session is live and the version is as expected
    # (always, without one): when it is as expected now, the session was missing when the
    # statement ran, and was created again since.
    if current is None or expected is None or current == expected:
        raise SessionNotFoundError(session_id=session_id)
    raise rules.stale_state(session_id, current, expected)


async def write_profile(
    driver: Driver,
    user_id: str,
    profile: UserProfile,
    expected: int | None,
    key: DataKey | None = None,
) -> int:

    async def write(base: int | None) -> int | None:
        values = rows.profile_values(profile, key, user_id, (base or 0) + 1)
        version = await sql.WRITE_PROFILE.fetchval(driver, user_id=user_id, expected=base, **values)
        return None if version is None else int(version)

    async def current() -> int:
        return int(await sql.PROFILE_VERSION.fetchval(driver, user_id=user_id) or 0)

    async def lock() -> None:
        await sql.SHARE_USER_LOCK.execute(driver, user_id=user_id)
        await sql.LOCK_PROFILE.execute(driver, user_id=user_id)

    written = await _versioned(driver, key is not None, expected, current, write, lock)
    if written is not None:
        return written
    raise rules.stale_profile(user_id, await current(), expected)
