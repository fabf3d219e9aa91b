"""The 1.0 baseline: the schema of ``alembic/schema.sql`` on an empty database.

ctxstore 1.0 squashed the pre-release revisions 0001-0026 into this one.  On an empty
database it creates this database's roles (NOLOGIN, checked before they are taken over)
and applies the schema file with their names; a database at the last pre-release
revision, 0026, already holds that schema plus the function versions nothing calls any
more: ``ctxstore.db.migrations`` runs :func:`upgrade_from_prerelease` on it instead, in one
transaction, before any later revision.

The schema file it reads is the one it was written with: ``alembic/schema.sql`` until a later
revision changes that file, which first copies it to ``alembic/frozen/schema-baseline.sql``
(docs/design.md, "Changing the schema"); a test holds the two to that.

The downgrade drops everything the baseline made (every object this database's roles
own, their grants here) and gives the database back to PUBLIC: the roles own nothing
afterwards and can be dropped.

Revision ID: 1000
Revises:
Create Date: 2026-12-05
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import op
from alembic.util import load_python_file
from sqlalchemy import Connection

revision: str = "1000"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ALEMBIC = Path(__file__).resolve().parents[1]
_roles = load_python_file(str(_ALEMBIC / "frozen"), "roles.py")
_sqlscript = load_python_file(str(_ALEMBIC / "frozen"), "sqlscript.py")
_FROZEN_SCHEMA = _ALEMBIC / "frozen" / "schema-baseline.sql"
SCHEMA_FILE = _FROZEN_SCHEMA if _FROZEN_SCHEMA.is_file() else _ALEMBIC / "schema.sql"

#: What the pre-release revisions left that nothing calls: the retirement rule's list for
#: 1.0 (docs/design.md, "One live version of each function").
RETIRED_AT_1_0 = (
    "analytics_durations_v1",
    "analytics_durations_v2",
    "analytics_frequencies_v1",
    "analytics_frequencies_v2",
    "analytics_funnel_v1",
    "analytics_overview_v1",
    "analytics_overview_v2",
    "analytics_red_flags_v1",
    "analytics_red_flags_v2",
    "analytics_transitions_v1",
    "analytics_value_frequencies",
    "analytics_value_frequencies_v2",
    "ctxstore_append_if_unchanged_v1",
    "ctxstore_append_if_unchanged_v2",
    "ctxstore_append_v1",
    "ctxstore_append_v3",
    "ctxstore_append_v4",
    "ctxstore_append_v5",
    "ctxstore_erase_user_sessions_v1",
    "ctxstore_write_state_v1",
)


def schema_statements(roles: Any, min_group_size: int) -> list[str]:
    """The schema file's statements for these role names (frozen/roles.py's RoleNames)
    and group size."""
    variables: dict[str, str | int] = {f"{kind}_role": roles.of(kind) for kind in _roles.KINDS}
    variables["min_group_size"] = min_group_size
    return list(_sqlscript.statements(SCHEMA_FILE.read_text(encoding="utf-8"), variables))


def upgrade() -> None:
    roles = _roles.role_names()
    _roles.ensure_roles(op.get_bind(), roles)
    for statement in schema_statements(roles, _roles.min_group_size_from_environment()):
        # The driver's own SQL: no bind parameters parsed out of a function body.
        op.get_bind().exec_driver_sql(statement)


def upgrade_from_prerelease(connection: Connection) -> None:
    """A database at 0026 to this revision: the retired functions dropped, the revision
    recorded (the caller commits both at once)."""
    found = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar_one()
    if found != "0026":
        raise RuntimeError(f"expected a database at revision 0026, not {found}")
    for name in RETIRED_AT_1_0:
        connection.execute(sa.text(f"DROP FUNCTION IF EXISTS {name}"))
    connection.execute(sa.text("UPDATE alembic_version SET version_num = :r"), {"r": revision})


def downgrade() -> None:
    roles = _roles.role_names()
    owner, app, analytics = (_roles.quote_identifier(name) for name in roles.all())
    database = _roles.quote_identifier(
        op.get_bind().execute(sa.text("SELECT current_database()")).scalar_one()
    )
    # Alembic deletes its row after this: its table goes back to the migrating user.
    op.execute("ALTER TABLE alembic_version OWNER TO CURRENT_USER")
    # Everything the roles own here, and every grant to them here (the database's too).
    op.execute(f"DROP OWNED BY {owner}, {app}, {analytics}")
    op.execute(f"GRANT CONNECT, TEMPORARY ON DATABASE {database} TO PUBLIC")
