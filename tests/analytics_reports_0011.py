"""The reports' SQL as it was before revision 0012 made each report a SECURITY DEFINER
function: the views read directly, the window a WHERE.  benchmarks/bench_analytics.py
prints their plans (a plan of the function call itself would show only a function scan)."""

from __future__ import annotations


def _window(alias: str) -> str:
    return f"""(CAST(:since AS timestamptz) IS NULL OR {alias}.first_activity >= :since)
         AND (CAST(:until AS timestamptz) IS NULL OR {alias}.first_activity < :until)"""


_WINDOW = _window("c")

REPORT_SQL: dict[str, str] = {
    "overview": f"""
        SELECT count(*) AS consultations,
               coalesce(sum(c.message_count), 0) AS messages,
               round(avg(c.turn_count), 2) AS avg_turns,
               round(avg(c.has_red_flags::int), 4) AS red_flag_rate,
               round(avg((c.summary_version > 0)::int), 4) AS summarized_share,
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1) AS median_minutes,
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1) AS p90_minutes
          FROM analytics_consultations AS c
         WHERE {_WINDOW}""",
    # The history rows carry the consultation's first activity and whether they are its
    # current version: no join on pseudonyms.
    "funnel": f"""
        SELECT h.stage,
               count(DISTINCT h.consultation) AS reached,
               count(DISTINCT h.consultation) FILTER (WHERE h.is_current) AS ended_here
          FROM analytics_stage_history AS h
         WHERE {_window("h")}
         GROUP BY h.stage""",
    "transitions": f"""
        SELECT from_stage, to_stage, count(*) AS transitions
          FROM (SELECT lag(h.stage) OVER (PARTITION BY h.consultation ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM analytics_stage_history AS h
                 WHERE {_window("h")}) AS steps
         WHERE from_stage IS DISTINCT FROM to_stage
         GROUP BY from_stage, to_stage
         ORDER BY transitions DESC, from_stage NULLS FIRST, to_stage""",
    "durations": f"""
        SELECT c.stage AS final_stage,
               count(*) AS consultations,
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1) AS median_minutes,
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY c.duration_seconds) / 60)::numeric, 1) AS p90_minutes,
               round(avg(c.turn_count), 2) AS avg_turns
          FROM analytics_consultations AS c
         WHERE {_WINDOW}
         GROUP BY c.stage
         ORDER BY consultations DESC, c.stage NULLS LAST""",
    "red-flags": f"""
        SELECT date_trunc(:bucket, c.first_activity, 'UTC') AS period,
               count(*) AS consultations,
               count(*) FILTER (WHERE c.has_red_flags) AS with_red_flags,
               round(count(*) FILTER (WHERE c.has_red_flags)::numeric / count(*), 4) AS rate
          FROM analytics_consultations AS c
         WHERE {_WINDOW}
         GROUP BY 1 ORDER BY 1""",
}

#: report: (all-time view, its value column, kind for analytics_value_frequencies).  Each
#: counts consultations per value and shows a value only for min_group_size or more.
_FREQUENCY_VIEWS = {
    "complaints": ("analytics_complaint_frequencies", "chief_complaint", "chief_complaint"),
    "body-parts": ("analytics_body_part_frequencies", "body_part", "body_part"),
    "symptoms": ("analytics_symptom_frequencies", "symptom", "symptom"),
    "red-flag-types": ("analytics_red_flag_frequencies", "red_flag", "red_flag"),
    "symptom-durations": (
        "analytics_symptom_duration_frequencies",
        "symptom_duration",
        "symptom_duration",
    ),
}
# A window needs the consultations' free text, which no view shows: the SECURITY DEFINER
# function counts it for the window and suppresses small counts the same way.
for _report, (_view, _column, _kind) in _FREQUENCY_VIEWS.items():
    REPORT_SQL[_report] = f"""
        SELECT f.value AS {_column}, f.consultations
          FROM analytics_value_frequencies('{_kind}', CAST(:since AS timestamptz),
                                           CAST(:until AS timestamptz)) AS f
         ORDER BY f.consultations DESC, f.value
         LIMIT :limit"""

# Without --since/--until the aggregate views answer directly.
ALL_TIME_SQL: dict[str, str] = {
    "funnel": "SELECT stage, reached, ended_here FROM analytics_stage_funnel",
    "transitions": """
        SELECT from_stage, to_stage, transitions FROM analytics_stage_transitions
         ORDER BY transitions DESC, from_stage NULLS FIRST, to_stage""",
}
for _report, (_view, _column, _kind) in _FREQUENCY_VIEWS.items():
    ALL_TIME_SQL[_report] = f"""
        SELECT {_column}, consultations FROM {_view}
         ORDER BY consultations DESC, {_column} LIMIT :limit"""
