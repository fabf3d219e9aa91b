"""The app role reads the schema revision: readiness under the least-privileged role.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03

Issue 27: ``GET /readyz`` compares ``alembic_version`` with the server's head revision.
The service runs as the app role (docs/production.md), which could not read that table:
readiness answered 500 exactly where it matters.  SELECT on it is all the app role needs
(the table holds one revision id, nothing of anyone's).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | Sequence[str] | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_FOR_APP = """
DO $$
DECLARE
    v_app text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'app'));
BEGIN
    IF v_app IS NOT NULL THEN
        EXECUTE '{statement} ' || v_app;
    END IF;
END
$$"""


def upgrade() -> None:
    op.execute(_FOR_APP.format(statement="GRANT SELECT ON alembic_version TO"))


def downgrade() -> None:
    op.execute(_FOR_APP.format(statement="REVOKE SELECT ON alembic_version FROM"))
