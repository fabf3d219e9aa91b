"""Writes of summaries, consultation states and user profiles: one function call each.

Every version check is in the statement's WHERE clause or a key constraint; when a
statement returns nothing, a ``*_FACTS`` read only explains why, through the errors
storage/rules.py builds.
"""

from __future__ import annotations

from ctxstore.encryption import DataKey, OpenedKeys
from ctxstore.errors import SessionNotFoundError
from ctxstore.models import SUMMARY_FORMAT, ConsultationState, Summary, UserProfile
from ctxstore.storage import rules
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.statement import Driver


async def insert_summary(
    driver: Driver,
    session_id: str,
    text: str,
    covers_until: int,
    token_count: int | None,
    expected: int | None,
    key: DataKey | None = None,
) -> Summary:
    row = await sql.INSERT_SUMMARY.fetchval(
        driver,
        sid=session_id,
        covers_until=covers_until,
        token_count=token_count,
        expected=expected,
        format_version=SUMMARY_FORMAT,
        **rows.summary_values(text, key, session_id),
    )
    if row[0] is not None:
        keys = None
        if key is not None:  # the row just written, sealed under ``key``
            keys = OpenedKeys(accept_plaintext=False)
            keys[key.key_id] = key
        return rows.summary_from_row(
            dict(zip(sql.SUMMARY_COLUMNS, row, strict=True)), session_id, keys
        )
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
    version, _ = await sql.WRITE_STATE.fetchval(driver, sid=session_id, expected=expected, **values)
    if version is not None:
        return int(version)
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
    version = await sql.WRITE_PROFILE.fetchval(driver, user_id=user_id, expected=expected, **values)
    if version is not None:
        return int(version)
    current = await sql.PROFILE_VERSION.fetchval(driver, user_id=user_id)
    raise rules.stale_profile(user_id, int(current or 0), expected)
