"""Reports over consultations, for product and clinical teams.

Every query reads the ``analytics_*`` views (and ``analytics_value_frequencies``) only, so
the reports run under the analytics role, which reads no message content, summary text,
profile, user id or session id (revision 0008): consultations are pseudonymous, and a
free-text value (complaint, body part, symptom, red flag, symptom duration) is counted, and
shown only when at least ``min_group_size`` consultations have it (default 5; see
:func:`set_min_group_size`).  ``since`` and ``until`` select consultations by their first
activity (the first message's time, else the session's creation):
``since <= first_activity < until``.
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from ctxstore.db.errors import translated
from ctxstore.errors import ConfigurationError, CtxStoreError, InvalidInputError
from ctxstore.settings import MIN_GROUP_SIZE_RANGE

#: The consultation stages in funnel order; stages not listed follow, by name.
STAGE_ORDER = ("greeting", "collecting_details", "assessing", "advising", "completed")


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

REPORTS = tuple(REPORT_SQL)
#: The reports that list free-text values (small counts suppressed).
FREQUENCY_REPORTS = tuple(_FREQUENCY_VIEWS)
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
        """The report as text safe to print to a terminal and to open in a spreadsheet.

        table: every control character written as its escape (\\x1b, \\u202e); json: the
        same data, with the controls JSON leaves raw (DEL, C1, bidi) escaped as \\uXXXX;
        csv: controls escaped but tab and newline (CSV quotes them), and a text field that
        a spreadsheet would read as a formula prefixed with ' (see _csv_cell).
        """
        if output == "json":
            text = json.dumps(self.as_dicts(), ensure_ascii=False, indent=2, default=_plain)
            # Only inside strings (JSON's own syntax is ASCII): same data once decoded.
            return _BEYOND_C0.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
        if output == "csv":
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow([_csv_cell(column) for column in self.columns])
            writer.writerows([[_csv_cell(value) for value in row] for row in self.rows])
            return buffer.getvalue()
        return render_table(self.columns, self.rows)


# Characters a terminal acts on instead of showing: C0 (tab and line breaks included: they
# would split a table's row), DEL, C1 (8-bit CSI and the like), the line and paragraph
# separators, and the bidi embeddings, overrides and isolates (Trojan Source).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_BEYOND_C0 = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
#: A field starting with one of these is a formula to a spreadsheet (OWASP, CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _printable(text: str, keep: str = "") -> str:
    """``text`` with each control character but those in ``keep`` written as its escape."""

    def escape(found: re.Match[str]) -> str:
        char = found.group()
        if char in keep:
            return char
        code = ord(char)
        return _NAMED_ESCAPES.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")

    return _CONTROL.sub(escape, text)


def _csv_cell(value: Any) -> str:
    """A CSV field: text that would start a formula gets a leading ', as OWASP advises.

    A number stays as it is, a minus sign included: it is a value, which a spreadsheet
    reads as a number and never evaluates; text such as "-5" or "=1+1" is escaped, and
    so is " =1+1" (an import that trims spaces would see a formula).
    """
    text = _cell(value)
    if isinstance(value, int | float | Decimal):
        return text
    text = _printable(text, keep="\t\n")
    risky = text.startswith(_FORMULA_START) or text.lstrip().startswith(_FORMULA_START)
    return "'" + text if risky else text


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
    # Terminal columns: East Asian wide characters take two, combining marks and zero-width
    # format characters (ZWJ, variation selectors) none; the soft hyphen shows as one.
    return sum(
        0
        if unicodedata.category(char) in {"Mn", "Me", "Cf"} and char != "\u00ad"
        else 2
        if unicodedata.east_asian_width(char) in {"W", "F"}
        else 1
        for char in value
    )


def render_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns aligned for a terminal: numbers right, text left, CJK counted double.

    Every control character is written as its escape, so a value can neither drive the
    terminal (ANSI sequences, bidi overrides) nor split or fake a row (line breaks).
    """
    columns = [_printable(column) for column in columns]
    cells = [[_printable(_cell(value)) for value in row] for row in rows]
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


async def min_group_size(engine: AsyncEngine) -> int:
    """The fewest consultations a free-text value must have to show (analytics role or
    owner may read it)."""
    with translated("reading the analytics min group size"):
        async with engine.connect() as conn:
            value = await conn.execute(text("SELECT min_group_size FROM analytics_suppression"))
            return int(value.scalar_one())


async def set_min_group_size(engine: AsyncEngine, size: int) -> int:
    """Set the small-cell threshold of every analytics view and report; needs the owner
    role (the migrating login).  Returns the previous value."""
    low, high = MIN_GROUP_SIZE_RANGE
    if type(size) is not int or not low <= size <= high:
        raise InvalidInputError(
            f"min group size must be a whole number from {low} to {high:,} (consultations a "
            f"free-text value needs to show; 1 would show every value), not {size!r}"
        )
    try:
        with translated("setting the analytics min group size"):
            async with engine.begin() as conn:
                previous = await conn.execute(
                    text("SELECT min_group_size FROM ctxstore_analytics_settings FOR UPDATE")
                )
                before = int(previous.scalar_one())
                await conn.execute(
                    text("UPDATE ctxstore_analytics_settings SET min_group_size = :k"),
                    {"k": size},
                )
    except CtxStoreError as error:
        if error.details.get("sqlstate") != "42501":
            raise
        raise ConfigurationError(
            "setting the analytics min group size needs the database's owner role (the "
            "login that runs `ctxstore db upgrade`): the analytics and app roles may not "
            "change it"
        ) from error
    return before
