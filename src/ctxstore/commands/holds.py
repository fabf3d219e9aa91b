"""``ctxstore hold``: legal holds on a user or a session, placed, listed and lifted by the
owner (revision 1006).

While a hold is in force, what it covers stays: ``erase_user`` of a held user and
``delete`` of a held session raise LegalHoldError naming the hold, and ``purge-expired``
keeps held sessions (and says how many).  The database enforces it, in the functions every
process deletes through.  Placing a hold is ordered with those deletions: it takes the
user's lock an erasure takes alone, then locks the held sessions' rows, which a purge
locks before it checks the holds (alembic/frozen/1006-legal-holds.sql).  A hold may name
a user or session that holds nothing yet: it covers what is written later.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from ctxstore.errors import InvalidInputError
from ctxstore.storage.postgres import PostgresStorage, sql
from ctxstore.storage.postgres.statement import Driver
from ctxstore.storage.rules import DEFAULT_LIMITS, check_session_id, check_user_id

Subject = Literal["user", "session"]
REASON_LIMIT = 1000


@dataclass(frozen=True)
class Hold:
    hold_id: UUID
    subject: Subject
    subject_id: str
    reason: str
    placed_by: str
    placed_at: datetime
    lifted_by: str | None = None
    lifted_at: datetime | None = None
    #: What it covers now: the sessions and their messages.
    sessions: int = 0
    messages: int = 0

    def line(self) -> str:
        state = (
            f"lifted by {self.lifted_by} at {_when(self.lifted_at)}"
            if self.lifted_at is not None
            else f"covers {self.sessions:,} sessions, {self.messages:,} messages"
        )
        return (
            f"{self.hold_id}  {self.subject} {self.subject_id}: placed by {self.placed_by} at "
            f"{_when(self.placed_at)} ({self.reason}); {state}"
        )


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC") if moment is not None else "-"


def check_reason(reason: object, what: str = "reason") -> str:
    if not isinstance(reason, str) or not reason.strip() or len(reason) > REASON_LIMIT:
        raise InvalidInputError(f"{what} must be 1 to {REASON_LIMIT} characters, not {reason!r}")
    return reason


async def place_hold(
    storage: PostgresStorage, subject: Subject, subject_id: str, *, reason: str, placed_by: str
) -> Hold:
    """Place a hold on the user or session ``subject_id``, recorded with who and why."""
    check_subject(subject, subject_id)
    check_reason(reason)
    check_reason(placed_by, "placed_by")
    async with storage.maintenance("hold add") as driver, driver.transaction():
        if subject == "user":
            await _lock_user(driver, subject_id)
        else:
            await _lock_session(driver, subject_id)
        await sql.LOCK_HELD_CHAINS.execute(
            driver,
            user_id=subject_id if subject == "user" else None,
            session_id=subject_id if subject == "session" else None,
        )
        row = await sql.PLACE_HOLD.fetchrow(
            driver,
            user_id=subject_id if subject == "user" else None,
            session_id=subject_id if subject == "session" else None,
            reason=reason,
            placed_by=placed_by,
        )
        return await _with_coverage(driver, row)


async def _lock_user(driver: Driver, user_id: str) -> None:
    # Shared, as writers take it: an erasure (which takes it alone) runs before or after.
    await sql.HOLD_USER_LOCK.fetchval(driver, user_id=user_id)
    await sql.LOCK_HELD_USER_SESSIONS.execute(driver, user_id=user_id)
    await sql.LOCK_HELD_PROFILE.execute(driver, user_id=user_id)


async def _lock_session(driver: Driver, session_id: str) -> None:
    # The user's lock before the row's, in an erasure's order (no deadlock with one).
    user_id = await sql.SESSION_USER_ID.fetchval(driver, session_id=session_id)
    if user_id is not None:
        await sql.HOLD_USER_LOCK.fetchval(driver, user_id=user_id)
    await sql.LOCK_SESSIONS.execute(driver, session_ids=[session_id])


async def lift_hold(storage: PostgresStorage, hold_id: str, *, lifted_by: str) -> Hold:
    """Lift the hold ``hold_id`` (it stays listed, with who lifted it and when)."""
    held = _hold_id(hold_id)
    check_reason(lifted_by, "lifted_by")
    async with storage.maintenance("hold lift") as driver:
        row = await sql.LIFT_HOLD.fetchrow(driver, hold_id=held, lifted_by=lifted_by)
        if row is None:
            raise InvalidInputError(f"no hold {hold_id} in force (ctxstore hold list --all)")
        return await _with_coverage(driver, row)


async def list_holds(storage: PostgresStorage, *, lifted_too: bool = False) -> list[Hold]:
    """The holds in force, oldest first (``lifted_too``: every hold ever placed)."""
    async with storage.maintenance("hold list") as driver:
        rows = await sql.LIST_HOLDS.fetch(driver, lifted_too=lifted_too)
        return [await _with_coverage(driver, row) for row in rows]


async def _with_coverage(driver: Driver, row: Any) -> Hold:
    subject: Subject = "user" if row["user_id"] is not None else "session"
    covered = await sql.HELD_COVERAGE.fetchrow(
        driver, user_id=row["user_id"], session_id=row["session_id"]
    )
    return Hold(
        hold_id=row["hold_id"],
        subject=subject,
        subject_id=row["user_id"] or row["session_id"],
        reason=row["reason"],
        placed_by=row["placed_by"],
        placed_at=row["placed_at"],
        lifted_by=row["lifted_by"],
        lifted_at=row["lifted_at"],
        sessions=int(covered["sessions"]),
        messages=int(covered["messages"]),
    )


def check_subject(subject: object, subject_id: object) -> None:
    if subject == "user":
        check_user_id(subject_id, DEFAULT_LIMITS)
    elif subject == "session":
        check_session_id(subject_id, DEFAULT_LIMITS)
    else:
        raise InvalidInputError(f"a hold is on a 'user' or a 'session', not {subject!r}")


def _hold_id(hold_id: str) -> UUID:
    try:
        return UUID(hold_id)
    except ValueError:
        raise InvalidInputError(f"{hold_id!r} is not a hold id (ctxstore hold list)") from None
