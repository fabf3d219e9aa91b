"""Analytics that differencing can't re-identify: whole-day windows, times coarsened to
the day, durations bucketed, a count shown only when its complement is k or more too.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03

Issue 24: with k = 5, comparing ``analytics_value_frequencies`` over windows that differ
by 1 us attributed the shared complaint to 14 of 14 pseudonyms, 0 wrong; and
``analytics_consultations.first_activity`` was exact to the microsecond (the first
message's time), so a pseudonym linked to service logs.  From this revision:

- Every report takes whole days only: ``since`` and ``until`` must be UTC midnights
  (NULL: open), checked inside each SECURITY DEFINER function (SQLSTATE 22023).  The
  reports are new functions (``analytics_*_v2``, ``analytics_value_frequencies_v2``).
  The analytics role loses EXECUTE on the previous ones (``analytics_*_v1`` but the min
  group size, ``analytics_value_frequencies``): they take any window, so as long as the
  role may call them the hole stays open.  They stay for the owner (a process of the
  previous release running as the analytics role gets "permission denied" and has to be
  upgraded); the three that read the exact columns (overview, durations, red flags) are
  replaced by the same SQL over the view those columns moved to.
- A free-text count is built from day cells: a value counts on a day only when at least
  k of that day's consultations have it and at least k don't; a window's count is the
  sum of its days' shown cells.  Two whole-day windows then differ only by cells that
  passed both tests themselves: a day of fewer than 2k consultations shows nothing, and
  "all but a few" shows nothing either.  The all-time frequency views read the same
  function, so they difference with a window to nothing more.
- ``analytics_consultations`` (per consultation, readable by the analytics role) holds
  the UTC day of the first activity (``first_day``) and a duration bucket
  (``duration_bucket``: under 5 min, 5-15 min, 15-60 min, 1-24 h, over 1 day) instead of
  the exact time and seconds; ``analytics_stage_history.first_activity`` is the UTC day.
  The exact columns move to ``analytics_consultation_details``, which only the owner
  reads (the reports run as the owner and read it).

The downgrade restores the views and the grants of 0008/0012 and drops the v2 functions.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Written out, not imported: a landed revision must not change when the code does.
_DEFINER = "LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp"
_K = "(SELECT st.min_group_size FROM public.ctxstore_analytics_settings AS st)"
_WINDOW = """($1 IS NULL OR {alias}.first_activity >= $1)
                 AND ($2 IS NULL OR {alias}.first_activity < $2)"""


def _whole_days(function: str) -> str:
    """Refuses a window end that is not a UTC midnight (NULL: open)."""
    return "".join(
        f"""
    IF {end} <> date_trunc('day', {end}, 'UTC') THEN
        RAISE EXCEPTION '{function}: {end} must be a whole day (UTC midnight), not %', {end}
            USING ERRCODE = '22023',
                  HINT = 'analytics windows are whole days, so no two differ by one consultation';
    END IF;"""
        for end in ("since", "until")
    )


def _pseudonym(column: str) -> str:
    """HMAC-SHA256(key, session id) as hex, as revision 0008 computes it."""
    return (
        f"encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to({column}, 'UTF8'))), 'hex')"
    )


# -- views ----------------------------------------------------------------------------------

_STRUCTURED = """c.stage,
               coalesce(cardinality(c.red_flags), 0) > 0 AS has_red_flags,
               coalesce(cardinality(c.red_flags), 0) AS red_flag_count,
               coalesce(cardinality(c.symptoms), 0) AS symptom_count,
               coalesce(cardinality(c.body_parts), 0) AS body_part_count,
               c.chief_complaint IS NOT NULL AS has_chief_complaint,
               c.duration IS NOT NULL AS has_symptom_duration,
               c.pain_level,
               s.message_count,
               s.turn_count,"""
_VERSIONS = """coalesce((SELECT max(summary_version) FROM summaries AS su
                          WHERE su.session_id = s.session_id), 0) AS summary_version,
               coalesce(c.version, 0) AS state_version
          FROM sessions AS s
         CROSS JOIN ctxstore_pseudonym_key AS k
          LEFT JOIN consultation_states AS c ON c.session_id = s.session_id"""

# Revision 0008's analytics_consultations, exact times included: the owner's only (the
# reports read it), under a new name.
DETAILS_SQL = f"""
        SELECT {_pseudonym("s.session_id")} AS consultation,
               {_STRUCTURED}
               s.first_activity_at AS first_activity,
               extract(epoch FROM s.last_activity_at - s.first_activity_at) AS duration_seconds,
               {_VERSIONS}
        """

CONSULTATIONS_SQL = f"""
        SELECT {_pseudonym("s.session_id")} AS consultation,
               {_STRUCTURED}
               (s.first_activity_at AT TIME ZONE 'UTC')::date AS first_day,
               CASE WHEN s.last_activity_at - s.first_activity_at < interval '5 minutes'
                    THEN 'under 5 min'
                    WHEN s.last_activity_at - s.first_activity_at < interval '15 minutes'
                    THEN '5-15 min'
                    WHEN s.last_activity_at - s.first_activity_at < interval '1 hour'
                    THEN '15-60 min'
                    WHEN s.last_activity_at - s.first_activity_at < interval '1 day'
                    THEN '1-24 h'
                    WHEN s.last_activity_at - s.first_activity_at >= interval '1 day'
                    THEN 'over 1 day'
               END AS duration_bucket,
               {_VERSIONS}
        """

OLD_CONSULTATIONS_SQL = DETAILS_SQL  # 0008's analytics_consultations, the same columns


def _stage_history(first_activity: str) -> str:
    return f"""
        SELECT {_pseudonym("h.session_id")} AS consultation,
               h.version,
               h.stage,
               h.version = c.version AS is_current,
               {first_activity} AS first_activity
          FROM consultation_state_history AS h
          JOIN sessions AS s ON s.session_id = h.session_id
          LEFT JOIN consultation_states AS c ON c.session_id = h.session_id
         CROSS JOIN ctxstore_pseudonym_key AS k
        """


STAGE_HISTORY_SQL = _stage_history("date_trunc('day', s.first_activity_at, 'UTC')")
OLD_STAGE_HISTORY_SQL = _stage_history("s.first_activity_at")

# view: (its value column, the kind analytics_value_frequencies_v2 counts)
FREQUENCY_VIEWS = {
    "analytics_complaint_frequencies": ("chief_complaint", "chief_complaint"),
    "analytics_body_part_frequencies": ("body_part", "body_part"),
    "analytics_symptom_frequencies": ("symptom", "symptom"),
    "analytics_red_flag_frequencies": ("red_flag", "red_flag"),
    "analytics_symptom_duration_frequencies": ("symptom_duration", "symptom_duration"),
}

# Revision 0008's frequency views: a value of k consultations or more, all time.
_OLD_K = "(SELECT min_group_size FROM ctxstore_analytics_settings)"
OLD_MENTIONS = {
    "analytics_complaint_frequencies": (
        "SELECT session_id, chief_complaint AS value FROM consultation_states"
    ),
    "analytics_body_part_frequencies": (
        "SELECT session_id, unnest(body_parts) AS value FROM consultation_states"
    ),
    "analytics_symptom_frequencies": (
        "SELECT session_id, unnest(symptoms) AS value FROM consultation_states"
    ),
    "analytics_red_flag_frequencies": (
        "SELECT session_id, unnest(red_flags) AS value FROM consultation_states"
    ),
    "analytics_symptom_duration_frequencies": (
        "SELECT session_id, duration AS value FROM consultation_states"
    ),
}


def _old_frequencies(view: str) -> str:
    column = FREQUENCY_VIEWS[view][0]
    return f"""
        SELECT value AS {column}, count(DISTINCT session_id) AS consultations
          FROM ({OLD_MENTIONS[view]}) AS mentions
         WHERE value IS NOT NULL
         GROUP BY value
        HAVING count(DISTINCT session_id) >= {_OLD_K}
        """


def _frequencies(view: str) -> str:
    column, kind = FREQUENCY_VIEWS[view]
    return f"""
        SELECT f.value AS {column}, f.consultations
          FROM analytics_value_frequencies_v2('{kind}', NULL, NULL) AS f
        """


# -- functions ------------------------------------------------------------------------------

VALUE_KINDS = {
    "chief_complaint": "ARRAY[c.chief_complaint]",
    "body_part": "c.body_parts",
    "symptom": "c.symptoms",
    "red_flag": "c.red_flags",
    "symptom_duration": "ARRAY[c.duration]",
}
_CASES = "\n".join(
    f"                   WHEN '{kind}' THEN {array}" for kind, array in VALUE_KINDS.items()
)
_IN_WINDOW = """(since IS NULL OR s.first_activity_at >= since)
                   AND (until IS NULL OR s.first_activity_at < until)"""

VALUE_FREQUENCIES = "analytics_value_frequencies_v2"
VALUE_FREQUENCIES_SQL = f"""
CREATE FUNCTION analytics_value_frequencies_v2(
    kind text, since timestamptz DEFAULT NULL, until timestamptz DEFAULT NULL
) RETURNS TABLE (value text, consultations bigint)
{_DEFINER}
AS $function$
BEGIN
    IF kind IS NULL OR kind NOT IN ({", ".join(f"'{kind}'" for kind in VALUE_KINDS)}) THEN
        RAISE EXCEPTION 'analytics_value_frequencies_v2: unknown kind %', kind
            USING ERRCODE = '22023',
                  HINT = 'use one of {", ".join(VALUE_KINDS)}';
    END IF;{_whole_days(VALUE_FREQUENCIES)}
    -- A day's cell shows when k or more of the day's consultations have the value and k
    -- or more don't; a window counts the sum of its days' shown cells.
    RETURN QUERY
    SELECT cell.v, sum(cell.n)::bigint
      FROM (SELECT m.day, m.v, count(DISTINCT m.sid) AS n
              FROM (SELECT c.session_id AS sid,
                           date_trunc('day', s.first_activity_at, 'UTC') AS day,
                           unnest(CASE kind
{_CASES}
                                  END) AS v
                      FROM public.consultation_states AS c
                      JOIN public.sessions AS s ON s.session_id = c.session_id
                     WHERE {_IN_WINDOW}) AS m
             WHERE m.v IS NOT NULL
             GROUP BY m.day, m.v) AS cell
      JOIN (SELECT date_trunc('day', s.first_activity_at, 'UTC') AS day, count(*) AS size
              FROM public.sessions AS s
             WHERE {_IN_WINDOW}
             GROUP BY 1) AS days ON days.day = cell.day
     WHERE cell.n >= {_K} AND days.size - cell.n >= {_K}
     GROUP BY cell.v;
END
$function$
"""

# name: (arguments, result columns, body): 0012's reports over the exact view, whole days.
REPORTS: dict[str, tuple[str, str, str]] = {
    "analytics_overview_v2": (
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
          FROM analytics_consultation_details AS c
         WHERE {_WINDOW.format(alias="c")}
    $q$ USING since, until;""",
    ),
    "analytics_funnel_v2": (
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
    "analytics_transitions_v2": (
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
    "analytics_durations_v2": (
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
          FROM analytics_consultation_details AS c
         WHERE {_WINDOW.format(alias="c")}
         GROUP BY c.stage
         ORDER BY count(*) DESC, c.stage NULLS LAST
    $q$ USING since, until;""",
    ),
    "analytics_red_flags_v2": (
        "bucket text, since timestamptz, until timestamptz",
        "period timestamptz, consultations bigint, with_red_flags bigint, rate numeric",
        f"""
    IF bucket IS NULL OR bucket NOT IN ('day', 'week') THEN
        RAISE EXCEPTION '{{name}}: bucket must be day or week, not %', bucket
            USING ERRCODE = '22023';
    END IF;
    RETURN QUERY EXECUTE $q$
        SELECT date_trunc($3, c.first_activity, 'UTC'),
               count(*),
               count(*) FILTER (WHERE c.has_red_flags),
               round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4)
          FROM analytics_consultation_details AS c
         WHERE {_WINDOW.format(alias="c")}
         GROUP BY 1 ORDER BY 1
    $q$ USING since, until, bucket;""",
    ),
    "analytics_frequencies_v2": (
        "kind text, since timestamptz, until timestamptz",
        "value text, consultations bigint",
        """
    RETURN QUERY SELECT f.value, f.consultations
                   FROM analytics_value_frequencies_v2(kind, since, until) AS f;""",
    ),
}


def _report_sql(name: str) -> str:
    arguments, columns, body = REPORTS[name]
    return (
        f"CREATE FUNCTION {name}({arguments}) RETURNS TABLE ({columns})\n{_DEFINER}\n"
        f"AS $function$\nBEGIN{_whole_days(name)}{body.replace('{name}', name)}\nEND\n$function$"
    )


# 0012's reports that read the exact columns (moved to analytics_consultation_details):
# the same SQL over the view they now are in, so they keep answering the owner.
MOVED_V1 = ("analytics_overview_v1", "analytics_durations_v1", "analytics_red_flags_v1")


def _v1_sql(name: str, view: str) -> str:
    arguments, columns, body = REPORTS[name.replace("_v1", "_v2")]
    body = body.replace("{name}", name).replace("analytics_consultation_details", view)
    return (
        f"CREATE OR REPLACE FUNCTION {name}({arguments}) RETURNS TABLE ({columns})\n"
        f"{_DEFINER}\nAS $function$\nBEGIN{body}\nEND\n$function$"
    )


_WINDOW_TYPES = "timestamptz, timestamptz"
NEW_FUNCTIONS = (
    f"{VALUE_FREQUENCIES}(text, {_WINDOW_TYPES})",
    f"analytics_overview_v2({_WINDOW_TYPES})",
    f"analytics_funnel_v2({_WINDOW_TYPES})",
    f"analytics_transitions_v2({_WINDOW_TYPES})",
    f"analytics_durations_v2({_WINDOW_TYPES})",
    f"analytics_red_flags_v2(text, {_WINDOW_TYPES})",
    f"analytics_frequencies_v2(text, {_WINDOW_TYPES})",
)
# The analytics role's previous reports: any window, so no longer the role's.
OLD_FUNCTIONS = tuple(
    name.replace(VALUE_FREQUENCIES, "analytics_value_frequencies").replace("_v2", "_v1")
    for name in NEW_FUNCTIONS
)


def _as_roles(statements: Sequence[str]) -> str:
    """``statements`` run with the owner's and the analytics role's names (0008 recorded
    them) in ``v_owner`` and ``v_analytics``, quoted."""
    body = "\n".join(f"    EXECUTE {statement};" for statement in statements)
    return f"""
DO $$
DECLARE
    v_owner text := quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'owner'));
    v_analytics text :=
        quote_ident((SELECT role_name FROM ctxstore_roles WHERE kind = 'analytics'));
BEGIN
{body}
END
$$"""


def _create_view(name: str, definition: str, *, replace: bool = False) -> None:
    verb = "CREATE OR REPLACE VIEW" if replace else "CREATE VIEW"
    op.execute(f"{verb} {name} WITH (security_barrier) AS {definition}")


def upgrade() -> None:
    op.execute(VALUE_FREQUENCIES_SQL)
    for name in REPORTS:
        op.execute(_report_sql(name))
    for name in MOVED_V1:
        op.execute(_v1_sql(name, "analytics_consultation_details"))

    op.execute("DROP VIEW analytics_consultations")
    _create_view("analytics_consultation_details", DETAILS_SQL)
    _create_view("analytics_consultations", CONSULTATIONS_SQL)
    _create_view("analytics_stage_history", STAGE_HISTORY_SQL, replace=True)
    for view in FREQUENCY_VIEWS:
        _create_view(view, _frequencies(view), replace=True)

    op.execute(
        _as_roles(
            [
                "'ALTER VIEW analytics_consultation_details OWNER TO ' || v_owner",
                "'ALTER VIEW analytics_consultations OWNER TO ' || v_owner",
                "'GRANT SELECT ON analytics_consultations TO ' || v_analytics",
                *(f"'REVOKE ALL ON FUNCTION {f} FROM PUBLIC'" for f in NEW_FUNCTIONS),
                *(f"'ALTER FUNCTION {f} OWNER TO ' || v_owner" for f in NEW_FUNCTIONS),
                *(f"'GRANT EXECUTE ON FUNCTION {f} TO ' || v_analytics" for f in NEW_FUNCTIONS),
                *(f"'REVOKE EXECUTE ON FUNCTION {f} FROM ' || v_analytics" for f in OLD_FUNCTIONS),
            ]
        )
    )


def downgrade() -> None:
    for view in FREQUENCY_VIEWS:
        _create_view(view, _old_frequencies(view), replace=True)
    _create_view("analytics_stage_history", OLD_STAGE_HISTORY_SQL, replace=True)
    op.execute("DROP VIEW analytics_consultations")
    op.execute("DROP VIEW analytics_consultation_details")
    _create_view("analytics_consultations", OLD_CONSULTATIONS_SQL)
    for name in MOVED_V1:
        op.execute(_v1_sql(name, "analytics_consultations"))
    op.execute(
        _as_roles(
            [
                "'ALTER VIEW analytics_consultations OWNER TO ' || v_owner",
                "'GRANT SELECT ON analytics_consultations TO ' || v_analytics",
                *(f"'GRANT EXECUTE ON FUNCTION {f} TO ' || v_analytics" for f in OLD_FUNCTIONS),
            ]
        )
    )
    for function in reversed(NEW_FUNCTIONS):
        op.execute(f"DROP FUNCTION {function}")
