"""Aggregates over fewer than k consultations are suppressed in every report; red flags
counted from the column sealed states keep.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-03

Issue 24: besides free-text counts, the analytics role read exact aggregates over any
group, however small: the median and 90th percentile of durations over a window or a
final stage of one consultation (its exact duration), and red-flag counts per day or week
("1 of 2 that day").  From this revision, in the reports the analytics role runs (new
functions ``analytics_overview_v3``, ``analytics_durations_v3``, ``analytics_red_flags_v3``)
and in the views ``analytics_red_flags_daily`` and ``_weekly``:

- an average, a median or a percentile over fewer than k consultations is NULL;
- a count of consultations with red flags (and its rate) is shown only where at least k
  of the group have red flags and at least k don't, as for free text (revision 0016).

The red-flag views also read ``red_flag_count`` (revision 0018): a sealed state keeps no
red-flag text in plaintext, so ``cardinality(red_flags)`` counted none of them.

The analytics role loses EXECUTE on the v2 functions of those three reports.  The
downgrade restores the views of 0008 and the grants, and drops the v3 functions.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
_DEFINER = "LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"
# k, passed to each query as its last parameter (read into a variable first: Citus can't
# push down a subquery that comes after aggregates).
_K = "$K"
_WINDOW = """($1 IS NULL OR c.first_activity >= $1)
           AND ($2 IS NULL OR c.first_activity < $2)"""


def _whole_days(function: str) -> str:
    return "".join(
        f"""
    IF {end} <> date_trunc('day', {end}, 'UTC') THEN
        RAISE EXCEPTION '{function}: {end} must be a whole day (UTC midnight), not %', {end}
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;"""
        for end in ("since", "until")
    )


def _over_k(expression: str) -> str:
    """``expression`` where the group holds k consultations or more, else NULL."""
    return f"CASE WHEN count(*) >= {_K} THEN {expression} END"


def _flagged(expression: str) -> str:
    """``expression`` where k or more of the group have red flags and k or more don't."""
    flagged = "count(*) FILTER (WHERE c.has_red_flags)"
    return f"CASE WHEN {flagged} >= {_K} AND count(*) - {flagged} >= {_K} THEN {expression} END"


_FLAGGED = "count(*) FILTER (WHERE c.has_red_flags)"
_MINUTES = "(percentile_cont({q}) WITHIN GROUP (ORDER BY c.duration_seconds) / 60)::numeric"

# name: (arguments, result columns, the query over analytics_consultation_details as c)
REPORTS: dict[str, tuple[str, str, str]] = {
    "analytics_overview_v3": (
        "since timestamptz, until timestamptz",
        "consultations bigint, messages bigint, avg_turns numeric, red_flag_rate numeric, "
        "summarized_share numeric, median_minutes numeric, p90_minutes numeric",
        f"""
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               {_over_k("round(avg(c.turn_count), 2)")},
               {_flagged(f"round({_FLAGGED}::numeric / count(*), 4)")},
               {_over_k("round(avg((c.summary_version > 0)::int), 4)")},
               {_over_k(f"round({_MINUTES.format(q=0.5)}, 1)")},
               {_over_k(f"round({_MINUTES.format(q=0.9)}, 1)")}
          FROM analytics_consultation_details AS c
         WHERE {_WINDOW}""",
    ),
    "analytics_durations_v3": (
        "since timestamptz, until timestamptz",
        "final_stage text, consultations bigint, median_minutes numeric, p90_minutes numeric, "
        "avg_turns numeric",
        f"""
        SELECT c.stage,
               count(*),
               {_over_k(f"round({_MINUTES.format(q=0.5)}, 1)")},
               {_over_k(f"round({_MINUTES.format(q=0.9)}, 1)")},
               {_over_k("round(avg(c.turn_count), 2)")}
          FROM analytics_consultation_details AS c
         WHERE {_WINDOW}
         GROUP BY c.stage
         ORDER BY count(*) DESC, c.stage NULLS LAST""",
    ),
    "analytics_red_flags_v3": (
        "bucket text, since timestamptz, until timestamptz",
        "period timestamptz, consultations bigint, with_red_flags bigint, rate numeric",
        f"""
        SELECT date_trunc($3, c.first_activity, 'UTC'),
               count(*),
               {_flagged(_FLAGGED)},
               {_flagged(f"round({_FLAGGED}::numeric / count(*), 4)")}
          FROM analytics_consultation_details AS c
         WHERE {_WINDOW}
         GROUP BY 1 ORDER BY 1""",
    ),
}
_BUCKET_CHECK = """
    IF bucket IS NULL OR bucket NOT IN ('day', 'week') THEN
        RAISE EXCEPTION 'analytics_red_flags_v3: bucket must be day or week, not %', bucket
            USING ERRCODE = '22023';
    END IF;"""


def _report_sql(name: str) -> str:
    arguments, columns, query = REPORTS[name]
    check = _BUCKET_CHECK if "bucket" in arguments else ""
    using = "since, until, bucket" if "bucket" in arguments else "since, until"
    k = "$4" if "bucket" in arguments else "$3"
    return f"""
CREATE FUNCTION {name}({arguments}) RETURNS TABLE ({columns})
{_DEFINER}
AS $function$
DECLARE
    v_k integer := (SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st);
BEGIN{_whole_days(name)}{check}
    RETURN QUERY EXECUTE $q${query.replace(_K, k)}
    $q$ USING {using}, v_k;
END
$function$"""


SIGNATURES = {
    "analytics_overview_v3": "analytics_overview_v3(timestamptz, timestamptz)",
    "analytics_durations_v3": "analytics_durations_v3(timestamptz, timestamptz)",
    "analytics_red_flags_v3": "analytics_red_flags_v3(text, timestamptz, timestamptz)",
}
PREVIOUS = tuple(signature.replace("_v3(", "_v2(") for signature in SIGNATURES.values())

# -- the red-flag views -----------------------------------------------------------------------


def red_flag_view(period: str, counted: bool) -> str:
    """0008's view (``counted``: False), or over red_flag_count with k suppression."""
    flagged = (
        "count(*) FILTER (WHERE c.red_flag_count > 0)"
        if counted
        else "count(*) FILTER (WHERE cardinality(c.red_flags) > 0)"
    )
    with_flags, rate = flagged, f"round({flagged}::numeric / count(*)::numeric, 4)"
    # k from the one-row settings (a reference table on Citus), joined and grouped by:
    # Citus can't push down a subquery that comes after aggregates.
    settings, grouped = "", ""
    if counted:
        shown = f"{flagged} >= st.min_group_size AND count(*) - {flagged} >= st.min_group_size"
        with_flags, rate = (f"CASE WHEN {shown} THEN {x} END" for x in (with_flags, rate))
        settings = "\n         CROSS JOIN ctxstore_analytics_settings AS st"
        grouped = ", st.min_group_size"
    return f"""
        SELECT date_trunc('{period}', s.first_activity_at, 'UTC') AS {period},
               count(*) AS consultations,
               {with_flags} AS with_red_flags,
               {rate} AS rate
          FROM sessions AS s
          LEFT JOIN consultation_states AS c ON c.session_id = s.session_id{settings}
         GROUP BY date_trunc('{period}', s.first_activity_at, 'UTC'){grouped}
        """


_ROLES = """
DO $$
DECLARE
    v_owner text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'owner'));
    v_analytics text :=
        quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'analytics'));
BEGIN
{body}
END
$$"""


def _as_roles(*grants: tuple[str, str]) -> str:
    """Each (statement, role variable): the statement ending in the recorded role's
    name, run when that role is recorded."""
    return _ROLES.format(
        body="\n".join(
            f"    IF {role} IS NOT NULL THEN\n"
            f"        EXECUTE '{statement} ' || {role};\n"
            "    END IF;"
            for statement, role in grants
        )
    )


def _views(counted: bool) -> None:
    for period in ("day", "week"):
        op.execute(
            f"CREATE OR REPLACE VIEW analytics_red_flags_{period}ly WITH (security_barrier) "
            f"AS {red_flag_view(period, counted)}".replace("dayly", "daily")
        )


def upgrade() -> None:
    for name in REPORTS:
        op.execute(_report_sql(name))
        op.execute(f"REVOKE ALL ON FUNCTION {SIGNATURES[name]} FROM PUBLIC")
    _views(counted=True)
    op.execute(
        _as_roles(
            *((f"ALTER FUNCTION {s} OWNER TO", "v_owner") for s in SIGNATURES.values()),
            *((f"GRANT EXECUTE ON FUNCTION {s} TO", "v_analytics") for s in SIGNATURES.values()),
            *((f"REVOKE EXECUTE ON FUNCTION {s} FROM", "v_analytics") for s in PREVIOUS),
        )
    )


def downgrade() -> None:
    op.execute(_as_roles(*((f"GRANT EXECUTE ON FUNCTION {s} TO", "v_analytics") for s in PREVIOUS)))
    _views(counted=False)
    for signature in reversed(SIGNATURES.values()):
        op.execute(f"DROP FUNCTION {signature}")
