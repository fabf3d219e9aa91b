"""Writes of summaries, consultation states and user profiles: one statement each.

Every version check is in the statement's WHERE clause or a key constraint; when a
statement returns nothing, a ``*_FACTS`` read only explains why, through the errors
storage/rules.py builds.
"""

from __future__ import annotations

from ctxstore.encryption import DataKey
from ctxstore.errors import SessionNotFoundError
from ctxstore.models import SUMMARY_FORMAT, ConsultationState, Summary, UserProfile
from ctxstore.storage import rules
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import NEW_SESSION


async def insert_summary(
    driver: Driver,
    session_id: str,
    text: str,
    covers_until: int,
    token_count: int | None,
    expected: int | None,
    key: DataKey | None = None,
) -> Summary:
    row = await sql.INSERT_SUMMARY.fetchrow(
        driver,
        sid=session_id,
        covers_until=covers_until,
        token_count=token_count,
        expected=expected,
        format_version=SUMMARY_FORMAT,
        **rows.summary_values(text, key, session_id),
    )
    if row is not None:
        keys = {key.key_id: key} if key is not None else None
        return rows.summary_from_row(row, session_id, keys)
    facts = await sql.SUMMARY_FACTS.fetchrow(driver, sid=session_id)
    latest = int(facts["latest"]) if facts is not None else 0
    rules.refuse_summary(
        session_id,
        message_count=facts["message_count"] if facts is not None else None,
        latest=latest,
        covers_until=covers_until,
        expected=expected,
    )
    raise rules.stale_summary(session_id, latest, expected)  # moved on meanwhile


async def write_state(
    driver: Driver,
    session_id: str,
    state: ConsultationState,
    expected: int | None,
    key: DataKey | None = None,
) -> int:
    values = rows.state_values(state, key, session_id)
    if expected is None:
        row = await sql.UPSERT_STATE.fetchrow(driver, sid=session_id, **values)
    elif expected == NEW_SESSION:
        row = await sql.INSERT_FIRST_STATE.fetchrow(driver, sid=session_id, **values)
    else:
        row = await sql.UPDATE_STATE_AT.fetchrow(
            driver, sid=session_id, expected=expected, **values
        )
    if row is not None:
        return int(row["version"])
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
    values = rows.profile_values(profile, key, user_id)
    if expected is None:
        version = await sql.UPSERT_PROFILE.fetchval(driver, user_id=user_id, **values)
    elif expected == NEW_SESSION:
        version = await sql.INSERT_FIRST_PROFILE.fetchval(driver, user_id=user_id, **values)
    else:
        version = await sql.UPDATE_PROFILE_AT.fetchval(
            driver, user_id=user_id, expected=expected, **values
        )
    if version is not None:
        return int(version)
    current = await sql.PROFILE_VERSION.fetchval(driver, user_id=user_id)
    raise rules.stale_profile(user_id, int(current or 0), expected)
