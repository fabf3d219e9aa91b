"""PostgreSQL SQL and row mapping for summaries, consultation state and user profiles.

Every write is one statement, and every version check is in its WHERE clause or a key
constraint, so PostgreSQL enforces it: a conditional UPDATE ... RETURNING, an INSERT
... ON CONFLICT, or the primary key of a version history.  When a statement returns
nothing, a follow-up read only explains why (missing session or stale version).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from ctxstore.errors import ConflictError, InvalidInputError, SessionNotFoundError
from ctxstore.formats.documents import load_profile, load_state
from ctxstore.models import (
    PROFILE_FORMAT,
    STATE_FORMAT,
    SUMMARY_FORMAT,
    ConsultationState,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage.pg_sql import LIVE

Driver = Any  # an asyncpg connection (typed loosely: asyncpg ships no stubs)

# A session past its expires_at behaves as missing (pg_sql.LIVE).
_LIVE_SESSION = f"EXISTS (SELECT FROM sessions AS s WHERE s.session_id = $1 AND {LIVE})"

SESSION_HEAD = f"""
SELECT version, user_id FROM sessions AS s
 WHERE session_id = $1 AND {LIVE}
"""

# -- summaries ------------------------------------------------------------------------------

_SUMMARY_COLUMNS = "summary_version, text, covers_until, created_at, token_count, format_version"

# The next version is max + 1, computed by the INSERT; two concurrent writers collide on
# the primary key (session_id, summary_version), and the loser gets ConflictError.
INSERT_SUMMARY = f"""
INSERT INTO summaries (session_id, summary_version, text, covers_until, token_count,
                       format_version)
SELECT s.session_id, latest.version + 1, $2, $3, $4, {SUMMARY_FORMAT}
  FROM sessions AS s,
       LATERAL (SELECT coalesce(max(summary_version), 0) AS version
                  FROM summaries WHERE session_id = $1) AS latest
 WHERE s.session_id = $1
   AND {LIVE}
   AND s.message_count > $3
   AND ($5::int IS NULL OR latest.version = $5)
RETURNING {_SUMMARY_COLUMNS}
"""

SUMMARY_PRECONDITIONS = f"""
SELECT s.message_count,
       (SELECT coalesce(max(summary_version), 0) FROM summaries WHERE session_id = $1)
  FROM sessions AS s WHERE s.session_id = $1 AND {LIVE}
"""

LATEST_SUMMARY = f"""
SELECT {_SUMMARY_COLUMNS} FROM summaries
 WHERE session_id = $1 AND {_LIVE_SESSION} ORDER BY summary_version DESC LIMIT 1
"""

SUMMARY_AT = f"""
SELECT {_SUMMARY_COLUMNS} FROM summaries
 WHERE session_id = $1 AND summary_version = $2 AND {_LIVE_SESSION}
"""


def summary_from_row(row: Any) -> Summary:
    version, text, covers_until, created_at, token_count, _format = row
    return Summary(
        summary_version=version,
        text=text,
        covers_until=covers_until,
        created_at=created_at,
        token_count=token_count,
    )


async def insert_summary(
    driver: Driver,
    session_id: str,
    text: str,
    covers_until: int,
    token_count: int | None,
    expected_version: int | None,
) -> Summary:
    row = await driver.fetchrow(
        INSERT_SUMMARY, session_id, text, covers_until, token_count, expected_version
    )
    if row is not None:
        return summary_from_row(row)
    facts = await driver.fetchrow(SUMMARY_PRECONDITIONS, session_id)
    if facts is None:
        raise SessionNotFoundError(session_id=session_id)
    message_count, latest = facts
    if covers_until >= message_count:
        raise InvalidInputError(
            f"covers_until {covers_until} is past the session's {message_count} messages"
        )
    raise ConflictError.stale(
        f"summary of {session_id!r}", latest, expected_version, session_id=session_id
    )


# -- consultation state ----------------------------------------------------------------------

_STATE_FIELDS = (
    "stage, chief_complaint, body_parts, symptoms, red_flags, pain_level, duration, "
    "document, format_version"
)
_STATE_VALUES = "$2, $3, $4, $5, $6, $7, $8, $9, $10"
_STATE_UPDATE = ", ".join(f"{name} = EXCLUDED.{name}" for name in _STATE_FIELDS.split(", "))


def _state_statement(target: str) -> str:
    """The write of a state version: ``target`` (a CTE) plus the history row, one statement."""
    return f"""
WITH target AS ({target}),
history AS (
    INSERT INTO consultation_state_history (session_id, version, {_STATE_FIELDS}, created_at)
    SELECT $1, t.version, {_STATE_VALUES}, t.updated_at FROM target AS t
)
SELECT version, updated_at FROM target
"""


# Any version wins; the first write of a session's state inserts version 1.
UPSERT_STATE = _state_statement(f"""
    INSERT INTO consultation_states AS c (session_id, version, {_STATE_FIELDS})
    SELECT s.session_id, 1, {_STATE_VALUES} FROM sessions AS s
     WHERE s.session_id = $1 AND {LIVE}
    ON CONFLICT (session_id) DO UPDATE
       SET version = c.version + 1, {_STATE_UPDATE}, updated_at = now()
    RETURNING c.version, c.updated_at""")

# expected_version = 0: only when no state exists yet.
INSERT_FIRST_STATE = _state_statement(f"""
    INSERT INTO consultation_states (session_id, version, {_STATE_FIELDS})
    SELECT s.session_id, 1, {_STATE_VALUES} FROM sessions AS s
     WHERE s.session_id = $1 AND {LIVE}
    ON CONFLICT (session_id) DO NOTHING
    RETURNING version, updated_at""")

# expected_version = N: only when the current state is at N.
UPDATE_STATE_AT = _state_statement(f"""
    UPDATE consultation_states
       SET version = version + 1,
           ({_STATE_FIELDS}) = ({_STATE_VALUES}),
           updated_at = now()
     WHERE session_id = $1 AND version = $11 AND {_LIVE_SESSION}
    RETURNING version, updated_at""")

STATE_PRECONDITIONS = f"""
SELECT (SELECT version FROM consultation_states WHERE session_id = $1)
  FROM sessions AS s WHERE session_id = $1 AND {LIVE}
"""

CURRENT_STATE = f"""
SELECT document, format_version, version, updated_at
  FROM consultation_states WHERE session_id = $1 AND {_LIVE_SESSION}
"""

STATE_HISTORY = f"""
SELECT document, format_version, version, created_at
  FROM consultation_state_history WHERE session_id = $1 AND {_LIVE_SESSION} ORDER BY version
"""


def state_arguments(state: ConsultationState) -> list[Any]:
    """The state's typed columns and document, in _STATE_FIELDS order."""
    return [
        state.stage,
        state.chief_complaint,
        list(state.body_parts),
        list(state.symptoms),
        list(state.red_flags),
        state.pain_level,
        state.duration,
        json.dumps(state.document(), ensure_ascii=False),
        STATE_FORMAT,
    ]


async def write_state(
    driver: Driver, session_id: str, state: ConsultationState, expected_version: int | None
) -> int:
    arguments = [session_id, *state_arguments(state)]
    if expected_version is None:
        row = await driver.fetchrow(UPSERT_STATE, *arguments)
    elif expected_version == 0:
        row = await driver.fetchrow(INSERT_FIRST_STATE, *arguments)
    else:
        row = await driver.fetchrow(UPDATE_STATE_AT, *arguments, expected_version)
    if row is not None:
        return int(row[0])
    facts = await driver.fetchrow(STATE_PRECONDITIONS, session_id)
    if facts is None:
        raise SessionNotFoundError(session_id=session_id)
    current = facts[0] or 0
    raise ConflictError.stale(
        f"state of {session_id!r}", current, expected_version, session_id=session_id
    )


def state_from_row(row: Any, session_id: str) -> Versioned[ConsultationState]:
    document, format_version, version, stamp = row
    return Versioned(load_state(document, format_version, session_id=session_id), version, stamp)


def state_change_from_row(row: Any, session_id: str) -> StateChange:
    document, format_version, version, stamp = row
    return StateChange(version, load_state(document, format_version, session_id=session_id), stamp)


# -- user profiles ---------------------------------------------------------------------------

_PROFILE_FIELDS = "age, gender, exercise_habit, known_limitations, document, format_version"
_PROFILE_VALUES = "$2, $3, $4, $5, $6, $7"
_PROFILE_UPDATE = ", ".join(f"{name} = EXCLUDED.{name}" for name in _PROFILE_FIELDS.split(", "))

UPSERT_PROFILE = f"""
INSERT INTO user_profiles AS p (user_id, version, {_PROFILE_FIELDS})
VALUES ($1, 1, {_PROFILE_VALUES})
ON CONFLICT (user_id) DO UPDATE
   SET version = p.version + 1, {_PROFILE_UPDATE}, updated_at = now()
RETURNING version
"""

INSERT_FIRST_PROFILE = f"""
INSERT INTO user_profiles (user_id, version, {_PROFILE_FIELDS})
VALUES ($1, 1, {_PROFILE_VALUES})
ON CONFLICT (user_id) DO NOTHING
RETURNING version
"""

UPDATE_PROFILE_AT = f"""
UPDATE user_profiles
   SET version = version + 1, ({_PROFILE_FIELDS}) = ({_PROFILE_VALUES}), updated_at = now()
 WHERE user_id = $1 AND version = $8
RETURNING version
"""

PROFILE_VERSION = "SELECT version FROM user_profiles WHERE user_id = $1"

CURRENT_PROFILE = """
SELECT document, format_version, version, updated_at FROM user_profiles WHERE user_id = $1
"""


async def write_profile(
    driver: Driver, user_id: str, profile: UserProfile, expected_version: int | None
) -> int:
    arguments = [
        user_id,
        profile.age,
        profile.gender,
        profile.exercise_habit,
        list(profile.known_limitations),
        json.dumps(profile.document(), ensure_ascii=False),
        PROFILE_FORMAT,
    ]
    if expected_version is None:
        version = await driver.fetchval(UPSERT_PROFILE, *arguments)
    elif expected_version == 0:
        version = await driver.fetchval(INSERT_FIRST_PROFILE, *arguments)
    else:
        version = await driver.fetchval(UPDATE_PROFILE_AT, *arguments, expected_version)
    if version is not None:
        return int(version)
    current = await driver.fetchval(PROFILE_VERSION, user_id) or 0
    raise ConflictError.stale(f"profile of {user_id!r}", current, expected_version)


def profile_from_row(row: Any, user_id: str) -> Versioned[UserProfile]:
    document, format_version, version, stamp = row
    profile = load_profile(document, format_version, user_id=user_id)
    updated: datetime = stamp
    return Versioned(profile, version, updated)
