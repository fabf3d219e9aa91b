"""Reports over consultations, for product and clinical teams.

Every query reads the ``analytics_*`` views only, so the reports run under the analytics
role, which cannot read message content, summary text or profiles.  ``since`` and
``until`` select consultations by their first activity (the first message's time, else
the session's creation): ``since <= first_activity < until``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from ctxstore.db.errors import translated
from ctxstore.errors import InvalidInputError

#: The consultation stages in funnel order; stages not listed follow, by name.
STAGE_ORDER = ("greeting", "collecting_details", "assessing", "advising", "completed")

_WINDOW = """(CAST(:since AS timestamptz) IS NULL OR c.first_activity >= :since)
         AND (CAST(:until AS timestamptz) IS NULL OR c.first_activity < :until)"""

REPORT_SQL: dict[str, str] = {
    "overview": f"""
        SELECT count(*) AS consultations,
               coalesce(sum(c.message_count), 0) AS messages,
               round(avg(c.turn_count), 2) AS avg_turns,
               round(avg(c.has_red_flags::int), 4) AS red_flag_rate,
               round(avg((c.summary_version > 0)::int), 4) AS summarized_share,
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY extract(epoch FROM c.duration)) / 60)::numeric, 1)
                 AS median_minutes,
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY extract(epoch FROM c.duration)) / 60)::numeric, 1)
                 AS p90_minutes
          FROM analytics_consultations AS c
         WHERE {_WINDOW}""",
    "funnel": f"""
        SELECT h.stage,
               count(DISTINCT h.session_id) AS reached,
               count(DISTINCT h.session_id) FILTER (WHERE c.stage = h.stage) AS ended_here
          FROM analytics_stage_history AS h
          JOIN analytics_consultations AS c ON c.session_id = h.session_id
         WHERE {_WINDOW}
         GROUP BY h.stage""",
    "transitions": f"""
        SELECT from_stage, to_stage, count(*) AS transitions
          FROM (SELECT lag(h.stage) OVER (PARTITION BY h.session_id ORDER BY h.version)
                         AS from_stage,
                       h.stage AS to_stage
                  FROM analytics_stage_history AS h
                  JOIN analytics_consultations AS c ON c.session_id = h.session_id
                 WHERE {_WINDOW}) AS steps
         WHERE from_stage IS DISTINCT FROM to_stage
         GROUP BY from_stage, to_stage
         ORDER BY transitions DESC, from_stage NULLS FIRST, to_stage""",
    "durations": f"""
        SELECT c.stage AS final_stage,
               count(*) AS consultations,
               round((percentile_cont(0.5) WITHIN GROUP
                      (ORDER BY extract(epoch FROM c.duration)) / 60)::numeric, 1)
                 AS median_minutes,
               round((percentile_cont(0.9) WITHIN GROUP
                      (ORDER BY extract(epoch FROM c.duration)) / 60)::numeric, 1)
                 AS p90_minutes,
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

_FREQUENCY_VIEWS = {
    "complaints": ("analytics_complaint_mentions", "chief_complaint"),
    "body-parts": ("analytics_body_part_mentions", "body_part"),
    "symptoms": ("analytics_symptom_mentions", "symptom"),
}
for _report, (_view, _column) in _FREQUENCY_VIEWS.items():
    REPORT_SQL[_report] = f"""
        SELECT m.value AS {_column}, count(*) AS consultations
          FROM {_view} AS m
          JOIN analytics_consultations AS c ON c.session_id = m.session_id
         WHERE {_WINDOW}
         GROUP BY m.value
         ORDER BY consultations DESC, m.value
         LIMIT :limit"""

# Without --since/--until the aggregate views answer directly: no join to filter by.
ALL_TIME_SQL: dict[str, str] = {
    "funnel": "SELECT stage, reached, ended_here FROM analytics_stage_funnel",
    "transitions": """
        SELECT from_stage, to_stage, transitions FROM analytics_stage_transitions
         ORDER BY transitions DESC, from_stage NULLS FIRST, to_stage""",
    "complaints": """
        SELECT chief_complaint, consultations FROM analytics_complaint_frequencies
         ORDER BY consultations DESC, chief_complaint LIMIT :limit""",
    "body-parts": """
        SELECT body_part, consultations FROM analytics_body_part_frequencies
         ORDER BY consultations DESC, body_part LIMIT :limit""",
    "symptoms": """
        SELECT symptom, consultations FROM analytics_symptom_frequencies
         ORDER BY consultations DESC, symptom LIMIT :limit""",
}

REPORTS = tuple(REPORT_SQL)
#: Rows a frequency report may list: far more than anyone reads, so a mistyped limit fails
#: with a clear error instead of PostgreSQL's (LIMIT is a signed 64-bit integer).
MAX_LIMIT = 1_000_000
Format = Literal["table", "json", "csv"]


@dataclass(frozen=True)
class Report:
    name: str
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def render(self, output: Format = "table") -> str:
        if output == "json":
            return json.dumps(self.as_dicts(), ensure_ascii=False, indent=2, default=_plain)
        if output == "csv":
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow(self.columns)
            writer.writerows([[_cell(value) for value in row] for row in self.rows])
            return buffer.getvalue()
        return render_table(self.columns, self.rows)


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return str(value)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime):
        return (
            value.date().isoformat() if value.time() == datetime.min.time() else value.isoformat()
        )
    if isinstance(value, float | Decimal):
        return f"{value:,.4f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _width(value: str) -> int:
    # East Asian characters take two terminal columns.
    return sum(2 if ord(char) > 0x2E80 else 1 for char in value)


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns aligned for a terminal: numbers right, text left, CJK counted double."""
    cells = [[_cell(value) for value in row] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float | Decimal) or row[i] is None for row in rows)
        for i in range(len(columns))
    ]
    widths = [
        max([_width(column)] + [_width(row[i]) for row in cells])
        for i, column in enumerate(columns)
    ]

    def line(values: Sequence[str]) -> str:
        parts = []
        for i, value in enumerate(values):
            pad = " " * (widths[i] - _width(value))
            parts.append(pad + value if numeric[i] else value + pad)
        return "  ".join(parts).rstrip()

    out = [line(list(columns)), "  ".join("-" * width for width in widths)]
    out += [line(row) for row in cells]
    if not rows:
        out.append("(no consultations in this window)")
    return "\n".join(out)


def _order_funnel(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    rank = {stage: index for index, stage in enumerate(STAGE_ORDER)}
    ordered = sorted(rows, key=lambda row: (rank.get(row[0], len(rank)), row[0]))
    first = ordered[0][1] if ordered else 0
    return [
        (
            *row,
            round(row[1] / first, 4) if first else None,
            round(row[2] / row[1], 4) if row[1] else None,
        )
        for row in ordered
    ]


async def run_report(
    engine: AsyncEngine,
    name: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    per: Literal["day", "week"] = "day",
    limit: int = 20,
) -> Report:
    """Run one of REPORTS."""
    if name not in REPORT_SQL:
        raise InvalidInputError(f"unknown report {name!r}; choose from {', '.join(REPORTS)}")
    if per not in ("day", "week"):
        raise InvalidInputError("per must be 'day' or 'week'")
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(
            f"limit must be an integer from 1 to {MAX_LIMIT:,} (rows of a frequency report), "
            f"not {limit!r}"
        )
    parameters: dict[str, Any] = {"since": since, "until": until}
    if name == "red-flags":
        parameters["bucket"] = per
    if name in _FREQUENCY_VIEWS:
        parameters["limit"] = limit
    with translated(f"analytics report {name}"):
        async with engine.connect() as conn:
            windowed = since is not None or until is not None
            sql = REPORT_SQL[name] if windowed else ALL_TIME_SQL.get(name, REPORT_SQL[name])
            result = await conn.execute(text(sql), parameters)
            columns = list(result.keys())
            rows = [tuple(row) for row in result]
    if name == "funnel":
        columns += ["share_of_first", "drop_off_rate"]
        rows = _order_funnel(rows)
    if name == "red-flags":
        columns[0] = per
    return Report(name, columns, rows)
