"""The fallback journal's write ids, recorded with the writes they applied.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-03

Issue 25: a write whose reply was lost (the connection broke after PostgreSQL committed,
before the client heard) is journaled by FallbackStorage as *uncertain* and replayed
later.  Replay had to guess whether PostgreSQL already applied it: by content for an
append, not at all for a save, a state, a summary, a profile or a delete, which were
applied again over whatever other processes wrote meanwhile.

From this revision a write that carries journal write ids (FallbackStorage sends one with
each write, replay sends those of the entries it applies) records them here in the same
transaction as the write: replay asks, and applies only what PostgreSQL has not.

- ``applied_session_writes``: writes to a session; it has a ``session_id`` column, so on
  Citus it is distributed beside ``sessions`` and the record goes to the session's shard;
- ``applied_profile_writes``: writes to a user's profile; on Citus a reference table, like
  ``user_profiles``.

No foreign key: the record of a delete outlives the row it deleted.  Rows hold ids and
times only, and go after a week (``ctxstore purge-expired``) or with an erasure.  The app
role reads, inserts and deletes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
TABLES = {"applied_session_writes": "session_id", "applied_profile_writes": "user_id"}

_TABLE = """
CREATE TABLE {table} (
    {subject} text NOT NULL,
    write_id uuid NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pk_{table} PRIMARY KEY ({subject}, write_id)
)"""

_ROLES = """
DO $$
DECLARE
    v_owner text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'owner'));
    v_app text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'app'));
BEGIN
    IF v_owner IS NOT NULL THEN
        EXECUTE 'ALTER TABLE {table} OWNER TO ' || v_owner;
    END IF;
    IF v_app IS NOT NULL THEN
        EXECUTE 'GRANT SELECT, INSERT, DELETE ON {table} TO ' || v_app;
    END IF;
END
$$"""


def upgrade() -> None:
    for table, subject in TABLES.items():
        op.execute(_TABLE.format(table=table, subject=subject))
        op.execute(f"CREATE INDEX ix_{table}_applied_at ON {table} (applied_at)")
        op.execute(_ROLES.format(table=table))


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TABLE {table}")
