"""A user's sessions in one index, newest first: the listing reads a page in its order.

Issue 51, item 1: ``list_sessions`` pages through a user's sessions newest first with a
keyset cursor, one index scan whatever the page's depth and however many sessions the
user and the database hold.  ``ix_sessions_user_id_created_at`` is that order: the user,
then the creation time and the session id, descending.

On ``created_at``, not ``updated_at``: every append updates the session row, and a column
a write changes in any index of the table makes the update non-HOT (a new entry in every
index of ``sessions``).  ``updated_at`` moves every turn; ``created_at`` never moves.
Measured with ``benchmarks/bench_append_costs.py --only g,h,i`` (2026-12-06, 4 runs of 10
rounds of 25 turns): an index on ``updated_at`` took the HOT share of the append's update
from 100% to 0%, and each turn wrote three more index entries, 233 B more WAL (1,386 ->
1,619 B without full-page images, +17%) and cost 14 µs more backend CPU (paired median;
40 µs on a busier run), besides the dead index entries vacuum must then clear.  One on
``created_at`` cost nothing measurable (-1 µs, the same WAL, 100% HOT).  What the
listing gives up for it: ``updated_since`` is a filter within the creation order, so a
page of it reads the user's sessions until it is full (benchmarks/bench_list_sessions.py).

``ix_sessions_user_id`` goes: the new index starts with ``user_id``, so the lookups by
user (erasure's) use its prefix, and one index fewer is written per new session.

Both built ``CONCURRENTLY``, outside any transaction, so writers never wait: the new
index first, checked valid, and only then the old one dropped.  A run that failed half
way leaves an INVALID index of that name: it is dropped and built again.

Downgrade: the reverse, ``ix_sessions_user_id`` built again before the new one goes.

Revision ID: 1005
Revises: 1004
Create Date: 2026-12-08
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "1005"
down_revision: str | Sequence[str] | None = "1004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LISTING = "ix_sessions_user_id_created_at"
LISTING_COLUMNS = "user_id, created_at DESC, session_id DESC"
BY_USER = "ix_sessions_user_id"
BY_USER_COLUMNS = "user_id"


def upgrade() -> None:
    with op.get_context().autocommit_block():
        _build(LISTING, LISTING_COLUMNS)
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {BY_USER}")


def downgrade() -> None:
    with op.get_context().autocommit_block():
        _build(BY_USER, BY_USER_COLUMNS)
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {LISTING}")


def _build(name: str, columns: str) -> None:
    """``name`` on sessions, built concurrently, valid when this returns."""
    if _valid(name) is False:  # left INVALID by a failed run: IF NOT EXISTS would keep it
        op.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
    op.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON sessions ({columns})")
    if not _valid(name):
        error = op.get_context().config.attributes.get("migration_error", RuntimeError)
        raise error(f"index {name} was built but is not valid: run the migration again")


def _valid(name: str) -> bool | None:
    """Whether the index ``name`` is valid (None: there is none)."""
    found = op.get_bind().execute(
        sa.text("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(:name)"),
        {"name": name},
    )
    return found.scalar()
