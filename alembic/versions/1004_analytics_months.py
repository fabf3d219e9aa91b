"""Analytics by calendar month: counts that accumulate, published once, never differenced.

Issue 50: per-day suppression showed nothing at a clinic's volume (5 consultations a day),
and any whole-day window could be asked for.  From this revision free-text counts and the
red-flag share are published per UTC calendar month by ``ctxstore analytics refresh``
(``frozen/1004-analytics-months.sql``), in three new tables, read through new SECURITY
DEFINER functions and views.  What the analytics role read that would difference against
the months is taken from it: ``analytics_frequencies_v3``, ``analytics_red_flags_v3``,
``analytics_overview_v3`` (its red-flag rate; ``analytics_overview_v4`` has none), the
daily and weekly red-flag views, and the red-flag columns of ``analytics_consultations``
(the view is made again without them: a catalog change on a view, no table locked).  The
previous release's app processes call none of these; its `ctxstore analytics` commands,
run as the analytics role, have to be upgraded, as after revision 0016.

Downgrade: the view and grants back, the new objects dropped, with the months published.

Revision ID: 1004
Revises: 1003
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

revision: str = "1004"
down_revision: str | Sequence[str] | None = "1003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_definitions = load_python_file(
    str(Path(__file__).resolve().parents[1] / "frozen"), "definitions.py"
)
_roles = load_python_file(str(Path(__file__).resolve().parents[1] / "frozen"), "roles.py")

FREQUENCY_VIEWS = (
    "analytics_body_part_frequencies",
    "analytics_complaint_frequencies",
    "analytics_red_flag_frequencies",
    "analytics_symptom_duration_frequencies",
    "analytics_symptom_frequencies",
)
WINDOW = "since timestamp with time zone, until timestamp with time zone"
REGRANTED = (
    f"EXECUTE ON FUNCTION analytics_frequencies_v3(kind text, {WINDOW})",
    f"EXECUTE ON FUNCTION analytics_red_flags_v3(bucket text, {WINDOW})",
    f"EXECUTE ON FUNCTION analytics_overview_v3({WINDOW})",
    "SELECT ON TABLE analytics_red_flags_daily",
    "SELECT ON TABLE analytics_red_flags_weekly",
)


def upgrade() -> None:
    _definitions.execute(_definitions.statements("1004-analytics-months.sql"))


def downgrade() -> None:
    analytics = _roles.role_names().of("analytics")
    baseline = _definitions.statements("schema-baseline.sql")
    for view in FREQUENCY_VIEWS:
        # The baseline's definitions, over analytics_frequencies_v3 again.
        op.get_bind().exec_driver_sql(_defining(baseline, f"CREATE VIEW {view} "))
    op.execute("DROP VIEW analytics_consultations")
    _definitions.execute(
        [
            _defining(baseline, "CREATE VIEW analytics_consultations "),
            _defining(baseline, "ALTER TABLE analytics_consultations OWNER"),
            f'GRANT SELECT ON TABLE analytics_consultations TO "{analytics}"',
            *(f'GRANT {granted} TO "{analytics}"' for granted in REGRANTED),
        ]
    )
    op.execute(
        "DROP VIEW analytics_monthly_values, analytics_monthly_withheld, "
        "analytics_monthly_red_flags"
    )
    op.execute(f"DROP FUNCTION analytics_overview_v4({WINDOW})")
    for function in ("month_values", "month_withheld", "red_flag_months"):
        op.execute(f"DROP FUNCTION analytics_{function}_v1(date, date)")
    op.execute("DROP FUNCTION analytics_check_months_v1(text, date, date)")
    op.execute("DROP TABLE analytics_month_cells, analytics_month_kinds, analytics_months")


def _defining(statements: list[str], start: str) -> str:
    """The one statement of ``statements`` that starts with ``start``, CREATE as CREATE OR
    REPLACE (a view keeps its grants)."""
    (found,) = [statement for statement in statements if statement.startswith(start)]
    return found.replace("CREATE VIEW", "CREATE OR REPLACE VIEW", 1)
