"""What the last pre-release (0.x, schema revision 0026) wrote into the fixture dump.

``golden/prerelease-0026.sql`` is ``pg_dump`` of a database that ctxstore 0.x upgraded to
its last revision, 0026, and then wrote through its own public API
(``prerelease_fixture.py``): plain and sealed sessions, states with their history,
summaries, profiles, a summary job, a graph checkpoint, applied write ids and refreshed
analytics cells.  The 1.0 tests restore the dump, upgrade it and read back exactly this.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta
from typing import Any

from ctxstore import Message

#: The role names the fixture's database was given (replaced by a test's own on restore).
DUMP_ROLES = {
    "owner": "prerelease_fixture_owner",
    "app": "prerelease_fixture_app",
    "analytics": "prerelease_fixture_analytics",
}
#: The master key that sealed the fixture's encrypted rows (a test key, never a real one).
MASTER_KEY = base64.b64decode("q1Hm3b0u1YkTQk0S8oQ0mC3vJbq9h8sXWm1z3kq2a7o=")
MASTER_KEY_ID = "prerelease"
#: The UTC day the consultations happened (before the refresh's "today").
DAY = datetime(2026, 11, 30, 1, 0, tzinfo=UTC)
CONSULTATIONS = 12
WRITE_ID = "5f0c3e8a9b2d4c61a7e0f1b2c3d4e5f6"


def turn(number: int) -> list[Message]:
    start = DAY + timedelta(minutes=40 * number)
    return [
        Message(
            role="user",
            content=f"我膝盖有下坠感，第{number}天",
            turn_id=f"t{number}",
            timestamp="2026-11-30T09:15:02.123456789+08:00" if number == 0 else start,
            metadata={"channel": "app"} if number % 2 else {},
        ),
        Message(
            role="assistant",
            content="是否伴随疼痛或肿胀？",
            turn_id=f"t{number}",
            name="助手",
            timestamp=start + timedelta(minutes=3 + number),
        ),
    ]


def session_id(number: int, *, sealed: bool) -> str:
    return f"{'sealed' if sealed else 'plain'}-{number:02d}"


def user_id(number: int) -> str:
    return f"user-{number:02d}"


def states(number: int) -> list[dict[str, Any]]:
    """The states written in order: the last is current, all are the history."""
    return [
        {"stage": "greeting"},
        {
            "stage": "assessing",
            "chief_complaint": "膝盖下坠感",
            "body_parts": ["knee"],
            "symptoms": ["swelling"] if number % 3 else ["pain"],
            "red_flags": ["night pain"] if number % 4 == 0 else [],
            "pain_level": str(number % 10),
            "duration": "2 weeks",
        },
    ]


def profile(number: int) -> dict[str, Any]:
    return {"age": 30 + number, "gender": "female", "known_limitations": ["膝伤"]}


def summary(number: int) -> str:
    return f"患者膝盖不适，第{number}次咨询"


def graph_thread() -> str:
    return session_id(0, sealed=False)
