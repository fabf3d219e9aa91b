"""Reports over consultations, for product and clinical teams.

Every report is a SECURITY DEFINER function over the ``analytics_*`` views (revision
0012), so the reports run under the analytics role, on
PostgreSQL and on Citus alike.  That role reads no message content, summary text,
profile, user id or session id (revision 0008): consultations are pseudonymous, and a
free-text value (complaint, body part, symptom, red flag, symptom duration) is counted, and
shown only when at least ``min_group_size`` (k; default 5, see :func:`set_min_group_size`)
of a day's consultations have it and at least k of them don't; a window counts the sum
of its days' shown counts (revision 0016, so no two windows difference to a consultation).
Those counts are the cells ``ctxstore analytics refresh`` stores
(ctxstore.commands.aggregates, revision 0018): free-text reports show the days refreshed,
never the current one.  An average, median or percentile over fewer than k consultations
is NULL, and a red-flag count (and rate) shows only where k have red flags and k don't
(revision 0019).
``since`` and ``until`` select consultations by their first activity (the first
message's time, else the session's creation): ``since <= first_activity < until``; each
is a whole day, a :class:`~datetime.date` or a UTC midnight, or None (open).
"""

from __future__ import annotations

import csv
import io
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from ctxstore.errors import ConfigurationError, CtxStoreError, InvalidInputError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

# SQLAlchemy, the driver errors and the settings are imported by the functions that query:
# `ctxstore analytics`'s parser needs REPORTS only (ctxstore.cli builds every command's
# parser for `ctxstore --help`).

#: The consultation stages in funnel order; stages not listed follow, by name.
STAGE_ORDER = ("greeting", "collecting_details", "assessing", "advising", "completed")


# Each report is a SECURITY DEFINER function (revision 0016, whole days only):
# it runs as the owner, so the analytics role needs no privilege on the tables, on
# PostgreSQL and on Citus alike.
_WINDOW = "CAST(:since AS timestamptz), CAST(:until AS timestamptz)"

REPORT_SQL: dict[str, str] = {
    "overview": f"SELECT * FROM analytics_overview_v3({_WINDOW})",
    "funnel": f"SELECT * FROM analytics_funnel_v2({_WINDOW})",
    "transitions": f"SELECT * FROM analytics_transitions_v2({_WINDOW})",
    "durations": f"SELECT * FROM analytics_durations_v3({_WINDOW})",
    "red-flags": f"SELECT * FROM analytics_red_flags_v3(:bucket, {_WINDOW})",
}

#: report: the kind of value it counts (also its value column).  Each counts consultations
#: per value and shows a value only for min_group_size or more.
_FREQUENCIES = {
    "complaints": "chief_complaint",
    "body-parts": "body_part",
    "symptoms": "symptom",
    "red-flag-types": "red_flag",
    "symptom-durations": "symptom_duration",
}
for _report, _kind in _FREQUENCIES.items():
    REPORT_SQL[_report] = f"""
        SELECT f.value AS {_kind}, f.consultations
          FROM analytics_frequencies_v3('{_kind}', {_WINDOW}) AS f
         ORDER BY f.consultations DESC, f.value
         LIMIT :limit"""

REPORTS = tuple(REPORT_SQL)
#: The reports that list free-text values (small counts suppressed).
FREQUENCY_REPORTS = tuple(_FREQUENCIES)
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
    numeric = [_numeric(rows, i) for i in range(len(columns))]
    widths = [
        max([_width(column)] + [_width(row[i]) for row in cells])
        for i, column in enumerate(columns)
    ]

    out = [_aligned(columns, widths, numeric), "  ".join("-" * width for width in widths)]
    out += [_aligned(row, widths, numeric) for row in cells]
    if not rows:
        out.append("(no consultations in this window)")
    return "\n".join(out)


def _numeric(rows: Sequence[Sequence[Any]], column: int) -> bool:
    """Whether the column holds numbers only (right-aligned)."""
    return all(
        isinstance(row[column], int | float | Decimal) or row[column] is None for row in rows
    )


def _aligned(values: Sequence[str], widths: Sequence[int], numeric: Sequence[bool]) -> str:
    parts = []
    for value, width, right in zip(values, widths, numeric, strict=False):
        pad = " " * (width - _width(value))
        parts.append(pad + value if right else value + pad)
    return "  ".join(parts).rstrip()


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


def whole_day(name: str, value: date | datetime | None) -> datetime | None:
    """``value`` as the UTC midnight it is: a window of whole days only, so no two
    windows differ by one consultation (issue 24).  A naive datetime is taken as UTC."""
    if value is None:
        return None
    if not isinstance(value, date):
        raise InvalidInputError(
            f"{name} must be a date or a datetime at UTC midnight, not {type(value).__name__}"
        )
    if not isinstance(value, datetime):
        return datetime.combine(value, time(), tzinfo=UTC)
    try:
        moment = (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidInputError(
            f"{name} {value.isoformat()} is outside years 1-9999 in UTC"
        ) from None
    if moment.time() != time():
        raise InvalidInputError(
            f"{name} must be a whole day (UTC midnight), such as {moment.date().isoformat()}, "
            f"not {value.isoformat()}: analytics windows are whole days, so that no two "
            "windows differ by a single consultation"
        )
    return moment


async def run_report(
    engine: AsyncEngine,
    name: str,
    *,
    since: date | datetime | None = None,
    until: date | datetime | None = None,
    per: Literal["day", "week"] = "day",
    limit: int = 20,
) -> Report:
    """Run one of REPORTS over the whole days from ``since`` to ``until`` (see the module)."""
    if name not in REPORT_SQL:
        raise InvalidInputError(f"unknown report {name!r}; choose from {', '.join(REPORTS)}")
    start, end = whole_day("since", since), whole_day("until", until)
    if per not in ("day", "week"):
        raise InvalidInputError("per must be 'day' or 'week'")
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInputError(
            f"limit must be an integer from 1 to {MAX_LIMIT:,} (rows of a frequency report), "
            f"not {limit!r}"
        )
    parameters: dict[str, Any] = {"since": start, "until": end}
    if name == "red-flags":
        parameters["bucket"] = per
    if name in _FREQUENCIES:
        parameters["limit"] = limit
    from sqlalchemy import text  # noqa: PLC0415 - see the imports

    from ctxstore.db.errors import translated  # noqa: PLC0415

    with translated(f"analytics report {name}"):
        async with engine.connect() as conn:
            result = await conn.execute(text(REPORT_SQL[name]), parameters)
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
    from sqlalchemy import text  # noqa: PLC0415 - see the imports

    from ctxstore.db.errors import translated  # noqa: PLC0415

    with translated("reading the analytics min group size"):
        async with engine.connect() as conn:
            value = await conn.execute(
                text("SELECT min_group_size FROM analytics_min_group_size_v1()")
            )
            return int(value.scalar_one())


async def set_min_group_size(engine: AsyncEngine, size: int) -> int:
    """Set the small-cell threshold of every analytics view and report; needs the owner
    role (the migrating login).  Returns the previous value."""
    from sqlalchemy import text  # noqa: PLC0415 - see the imports

    from ctxstore.db.errors import translated  # noqa: PLC0415
    from ctxstore.settings import MIN_GROUP_SIZE_RANGE  # noqa: PLC0415

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
