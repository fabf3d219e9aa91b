"""Reports as text safe to print to a terminal and to open in a spreadsheet.

A report's values come from free text patients typed, so every rendering escapes what a
terminal or a spreadsheet would act on: control characters (ANSI sequences, bidi
overrides, line breaks) and CSV fields that would start a formula.
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

Format = Literal["table", "json", "csv"]


@dataclass(frozen=True)
class Report:
    name: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    #: A monthly frequency report's months: what each holds and withholds.
    periods: Report | None = None
    #: What a reader must know to read the rows right (suppression, when months appear).
    notes: tuple[str, ...] = ()
    #: What the table says when there are no rows.
    empty: str = "(no consultations in this window)"

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def render(self, output: Format = "table") -> str:
        """The report as text safe to print to a terminal and to open in a spreadsheet.

        table: every control character written as its escape (\\x1b, \\u202e), then the
        months and the notes; json: the same data (an object with rows, periods and notes
        for a monthly report, else the list of rows), with the controls JSON leaves raw
        (DEL, C1, bidi) escaped as \\uXXXX; csv: the rows only, controls escaped but tab
        and newline (CSV quotes them), and a text field that a spreadsheet would read as
        a formula prefixed with ' (see _csv_cell).
        """
        if output == "json":
            data: Any = self.as_dicts()
            if self.notes:
                periods = self.periods.as_dicts() if self.periods else None
                data = {"rows": data, "periods": periods, "notes": list(self.notes)}
            text = json.dumps(data, ensure_ascii=False, indent=2, default=_plain)
            # Only inside strings (JSON's own syntax is ASCII): same data once decoded.
            return _BEYOND_C0.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
        if output == "csv":
            buffer = io.StringIO()
            writer = csv.writer(buffer)
            writer.writerow([_csv_cell(column) for column in self.columns])
            writer.writerows([[_csv_cell(value) for value in row] for row in self.rows])
            return buffer.getvalue()
        parts = [render_table(self.columns, self.rows, self.empty)]
        if self.periods is not None:
            parts.append(self.periods.render("table"))
        return "\n\n".join(parts + ["\n".join(self.notes)] * bool(self.notes))


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


def render_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    empty: str = "(no consultations in this window)",
) -> str:
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
        out.append(empty)
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
