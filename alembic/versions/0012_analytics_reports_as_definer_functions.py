"""The analytics reports as SECURITY DEFINER functions, so an analytics login runs them on
Citus too.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01

PostgreSQL checks a view's underlying tables against the view's owner, so the analytics
role reads the de-identified views and nothing under them.  Citus checks them against the
user running the query (citusdata/citus#6161): there an analytics login got SQLSTATE 42501
from every report.  Each report that read the views is now a function owned by the
database's owner and run as it (SECURITY DEFINER, a search_path nobody can put objects in
front of), reading the same views with the same SQL; the analytics role gets EXECUTE,
PUBLIC nothing.  A report's window (``since <= first_activity < until``, either end NULL)
is planned with its values (``EXECUTE ... USING``), so the index on
``sessions.first_activity_at`` still picks the consultations, and the view's columns a
report doesn't use (the pseudonym, the summary version) are never computed.  Without a
window the funnel, the transitions and the frequency reports read their aggregate views;
a windowed frequency report goes through ``analytics_value_frequencies`` (revision 0008).
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
_DEFINER = "LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"
_WINDOW = """($1 IS NULL OR {alias}.first_activity >= $1)
                 AND ($2 IS NULL OR {alias}.first_activity < $2)"""

# name: (arguments, result columns, body)
REPORTS: dict[str, tuple[str, str, str]] = {
    "analytics_overview_v1": (
        "since timestamptz, until timestamptz",
        "consultations bigint, messages bigint, avg_turns numeric, red_flag_rate numeric, "
        "summarized_share numeric, median_minutes numeric, p90_minutes numeric",
        f"""
    RETURN QUERY EXECUTE $q$
        SELECT count(*),
               coalesce(sum(c.message_count), 0)::bigint,
               round(avg(c.turn_count), 2),
               round(avg(c.has_red_flags::int), 4),
               round(avg((c.summary_version > 0)::int), 4),
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1)
          FROM analytics_consultations AS c
         WHERE {_WINDOW.format(alias="c")}
    $q$ USING since, until;""",
    ),
    # The history rows carry the consultation's first activity and whether they are its
    # current version: no join on pseudonyms.
    "analytics_funnel_v1": (
        "since timestamptz, until timestamptz",
        "stage text, reached bigint, ended_here bigint",
        f"""
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT f.stage, f.reached, f.ended_here FROM analytics_stage_funnel AS f;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT h.stage,
               count(DISTINCT h.consultation),
               count(DISTINCT h.consultation) FILTER (WHERE h.is_current)
          FROM analytics_stage_history AS h
         WHERE {_WINDOW.format(alias="h")}
         GROUP BY h.stage
    $q$ USING since, until;""",
    ),
    "analytics_transitions_v1": (
        "since timestamptz, until timestamptz",
        "from_stage text, to_stage text, transitions bigint",
        f"""
    IF since IS NULL AND until IS NULL THEN
        RETURN QUERY SELECT t.from_stage, t.to_stage, t.transitions
                       FROM analytics_stage_transitions AS t
                      ORDER BY t.transitions DESC, t.from_stage NULLS FIRST, t.to_stage;
        RETURN;
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT steps.from_stage, steps.to_stage, count(*)
          FROM (SELECT lag(h.stage) OVER (PARTITION BY h.consultation ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM analytics_stage_history AS h
                 WHERE {_WINDOW.format(alias="h")}) AS steps
         WHERE steps.from_stage IS DISTINCT FROM steps.to_stage
         GROUP BY steps.from_stage, steps.to_stage
         ORDER BY count(*) DESC, steps.from_stage NULLS FIRST, steps.to_stage
    $q$ USING since, until;""",
    ),
    "analytics_durations_v1": (
        "since timestamptz, until timestamptz",
        "final_stage text, consultations bigint, median_minutes numeric, p90_minutes numeric, "
        "avg_turns numeric",
        f"""
    RETURN QUERY EXECUTE $q$
        SELECT c.stage,
               count(*),
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1),
               round(avg(c.turn_count), 2)
          FROM analytics_consultations AS c
         WHERE {_WINDOW.format(alias="c")}
         GROUP BY c.stage
         ORDER BY count(*) DESC, c.stage NULLS LAST
    $q$ USING since, until;""",
    ),
    "analytics_red_flags_v1": (
        "bucket text, since timestamptz, until timestamptz",
        "period timestamptz, consultations bigint, with_red_flags bigint, rate numeric",
        f"""
    IF bucket IS NULL OR bucket NOT IN ('day', 'week') THEN
        RAISE EXCEPTION 'analytics_red_flags_v1: bucket must be day or week, not %', bucket
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT date_trunc($3, c.first_activity, 'UTC'),
               count(*),
               count(*) FILTER (WHERE c.has_red_flags),
               round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4)
          FROM analytics_consultations AS c
         WHERE {_WINDOW.format(alias="c")}
         GROUP BY 1 ORDER BY 1
    $q$ USING since, until, bucket;""",
    ),
    # A frequency report: all time from its view (no join to the sessions), a window
    # through analytics_value_frequencies (0008); both suppress small counts alike.
    "analytics_frequencies_v1": (
        "kind text, since timestamptz, until timestamptz",
        "value text, consultations bigint",
        """
    IF since IS NULL AND until IS NULL THEN
        IF kind IN ('chief_complaint', 'body_part', 'symptom', 'red_flag',
                    'symptom_duration') THEN
            RETURN QUERY EXECUTE format(
                'SELECT v.%I, v.consultations FROM %I AS v', kind,
                CASE kind WHEN 'chief_complaint' THEN 'analytics_complaint_frequencies'
                          ELSE 'analytics_' || kind || '_frequencies' END);
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT f.value, f.consultations
                   FROM analytics_value_frequencies(kind, since, until) AS f;""",
    ),
    # k, which the frequency reports print beside their values
    "analytics_min_group_size_v1": (
        "",
        "min_group_size integer",
        """
    RETURN QUERY SELECT st.min_group_size FROM ctxstore_analytics_settings AS st;""",
    ),
}

# The owner and the analytics role, as revision 0008 recorded them.
_PRIVILEGES = """
DO $$
DECLARE
    v_owner text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'owner');
    v_analytics text := (SELECT role_name FROM ctxstore_roles WHERE kind = 'analytics');
    v_function text;
BEGIN
    FOR v_function IN SELECT p.oid::regprocedure::text FROM pg_proc AS p
                       WHERE p.proname = ANY(string_to_array('{names}', ' '))
                         AND p.pronamespace = 'public'::regnamespace LOOP
        EXECUTE 'REVOKE ALL ON FUNCTION ' || v_function || ' FROM PUBLIC';
        EXECUTE 'ALTER FUNCTION ' || v_function || ' OWNER TO ' || quote_ident(v_owner);
        EXECUTE 'GRANT EXECUTE ON FUNCTION ' || v_function || ' TO ' || quote_ident(v_analytics);
    END LOOP;
END
$$"""


def upgrade() -> None:
    for name, (arguments, columns, body) in REPORTS.items():
        op.execute(
            f"CREATE FUNCTION {name}({arguments}) RETURNS TABLE ({columns})\n{_DEFINER}\n"
            f"AS $function$\nBEGIN{body}\nEND\n$function$"
        )
    op.execute(_PRIVILEGES.format(names=" ".join(REPORTS)))


def downgrade() -> None:
    for name, (arguments, _, _) in reversed(REPORTS.items()):
        types = ", ".join(argument.split()[1] for argument in arguments.split(", ") if argument)
        op.execute(f"DROP FUNCTION {name}({types})")
