"""Least-privilege roles: owner (DDL), app (DML only), analytics (views only).

Role names come from ctxstore.db.roles (CTXSTORE_ROLE_PREFIX).  Roles are cluster-wide:
the downgrade revokes what this database granted and hands ownership back to the
migrating user, but leaves the roles (other databases may use them).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file
from sqlalchemy import text

# What it used of ctxstore, frozen beside it: a revision imports no ctxstore module.
_frozen = load_python_file(Path(__file__).parents[1] / "frozen", "roles.py")
APP_TABLES, role_names = _frozen.APP_TABLES, _frozen.role_names

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ANALYTICS_VIEWS = (
    "analytics_consultations",
    "analytics_stage_history",
    "analytics_stage_reached",
    "analytics_stage_funnel",
    "analytics_stage_changes",
    "analytics_stage_transitions",
    "analytics_complaint_mentions",
    "analytics_body_part_mentions",
    "analytics_symptom_mentions",
    "analytics_complaint_frequencies",
    "analytics_body_part_frequencies",
    "analytics_symptom_frequencies",
    "analytics_red_flags_daily",
    "analytics_red_flags_weekly",
)


def _create_role(name: str) -> None:
    # CREATE ROLE has no IF NOT EXISTS; another database's migration may have made it.
    op.execute(
        f"""
        DO $$ BEGIN
          CREATE ROLE {name} NOLOGIN;
        EXCEPTION WHEN duplicate_object THEN NULL;
        END $$
        """
    )


def upgrade() -> None:
    roles = role_names()
    for name in (roles.owner, roles.app, roles.analytics):
        _create_role(name)
    # The migrating user must be able to hand objects to the owner and act as it.
    op.execute(f"GRANT {roles.owner} TO CURRENT_USER")
    op.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {roles.owner}")
    op.execute(f"GRANT USAGE ON SCHEMA public TO {roles.app}, {roles.analytics}")
    for table in (*APP_TABLES, "alembic_version", *ANALYTICS_VIEWS):
        op.execute(f"ALTER TABLE {table} OWNER TO {roles.owner}")
    tables = ", ".join(APP_TABLES)
    op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {roles.app}")
    op.execute(f"GRANT SELECT ON {', '.join(ANALYTICS_VIEWS)} TO {roles.analytics}")


def downgrade() -> None:
    roles = role_names()
    migrator = op.get_bind().execute(text("SELECT session_user")).scalar_one()
    op.execute(f"REVOKE ALL ON {', '.join(ANALYTICS_VIEWS)} FROM {roles.analytics}")
    op.execute(f"REVOKE ALL ON {', '.join(APP_TABLES)} FROM {roles.app}")
    for table in (*APP_TABLES, "alembic_version", *ANALYTICS_VIEWS):
        op.execute(f'ALTER TABLE {table} OWNER TO "{migrator}"')
    op.execute(f"REVOKE ALL ON SCHEMA public FROM {roles.app}, {roles.analytics}, {roles.owner}")
