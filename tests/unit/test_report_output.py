"""Analytics output with hostile values: a report is printed to terminals and opened in
spreadsheets, and its text (complaints, body parts, symptoms, stages) comes from users.

- csv: a text field a spreadsheet would evaluate (=, +, -, @, tab, CR first) is prefixed
  with ' (OWASP); numbers are values and stay as they are, negative ones included;
- table: every control character (C0, DEL, C1, the bidi embeddings/overrides/isolates,
  the line and paragraph separators) is written as its escape (\\x1b, \\u202e);
- json: the same data back after json.loads, with no raw control character in the text.
"""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from ctxstore.commands.report_text import Report, _width, render_table

CONTROLS = (
    [chr(code) for code in range(0x20)]
    + ["\x7f"]
    + [chr(code) for code in range(0x80, 0xA0)]
    + ["\u2028", "\u2029"]
    + [chr(code) for code in range(0x202A, 0x202F)]
    + [chr(code) for code in range(0x2066, 0x206A)]
)
RAW_CONTROL = re.compile("[" + "".join(re.escape(char) for char in CONTROLS) + "]")
ANSI = "\x1b[2J\x1b[31mred\x1b]0;title\x07\x1b[0m"
TROJAN = "\u202eevil\u202c \u2066isolate\u2069"
FORMULAS = [
    '=HYPERLINK("http://evil.example","click")',
    "+1+1",
    "-2+3",
    "-5",
    "@SUM(A1:A2)",
    "\tleading tab",
    " =1+1",  # spaces first: an import that trims them would see a formula
    "\n@x",
    "=cmd|' /C calc'!A0",
]


def report(*rows: tuple[Any, ...], columns: tuple[str, ...] = ("value", "count")) -> Report:
    return Report("complaints", list(columns), list(rows))


def csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


# -- csv --------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", FORMULAS)
def test_csv_text_that_starts_a_formula_is_prefixed_with_a_quote(value: str) -> None:
    rows = csv_rows(report((value, 1)).render("csv"))
    assert rows[1] == ["'" + value, "1"]


def test_csv_carriage_return_first_can_not_start_a_formula() -> None:
    # CR is escaped (it would rewrite the terminal's line), so the field starts with "\".
    (field, _count) = csv_rows(report(("\r=1+1", 1)).render("csv"))[1]
    assert field == "\\r=1+1"


@pytest.mark.parametrize("value", ["knee pain", "膝盖下坠感", "a=b", "x-ray", "1e5", "", " a=1"])
def test_csv_text_that_starts_no_formula_is_unchanged(value: str) -> None:
    assert csv_rows(report((value, 1)).render("csv"))[1] == [value, "1"]


@pytest.mark.parametrize(
    ("number", "shown"),
    [(-3, "-3"), (Decimal("-1.5"), "-1.5"), (-0.25, "-0.25"), (-1234567, "-1,234,567")],
)
def test_csv_negative_numbers_stay_numbers(number: Any, shown: str) -> None:
    # A number is a value, not text a spreadsheet evaluates: no quote, or it becomes text.
    assert csv_rows(report(("knee", number)).render("csv"))[1] == ["knee", shown]


def test_csv_separators_quotes_and_newlines_stay_inside_their_field() -> None:
    value = 'a,b;"c"\nd\te'
    rows = csv_rows(report((value, 1), ("=x,y", 2)).render("csv"))
    assert rows[1:] == [[value, "1"], ["'=x,y", "2"]]


def test_csv_escapes_terminal_controls_but_keeps_tab_and_newline() -> None:
    text = report((ANSI + TROJAN + "\x00\x7f\x9b" + "\t\n", 1)).render("csv")
    raw = {char for char in RAW_CONTROL.findall(text)}
    assert raw <= {"\t", "\n", "\r"}  # the csv module ends every record with \r\n
    field = csv_rows(text)[1][0]
    assert field.startswith("\\x1b[2J\\x1b[31mred")
    assert "\\u202eevil\\u202c \\u2066isolate\\u2069" in field
    assert field.endswith("\\x00\\x7f\\x9b\t\n")


def test_csv_header_is_escaped_too() -> None:
    rows = csv_rows(report(columns=("=evil", "-count")).render("csv"))
    assert rows[0] == ["'=evil", "'-count"]


# -- table ------------------------------------------------------------------------------------


@pytest.mark.parametrize("char", CONTROLS, ids=lambda char: f"U+{ord(char):04X}")
def test_table_writes_every_control_character_as_its_escape(char: str) -> None:
    text = render_table(["value", "count"], [(f"a{char}b", 1), ("c", 2)])
    assert not RAW_CONTROL.search(text.replace("\n", ""))
    assert len(text.splitlines()) == 4  # header, rule, two rows: no row split or faked
    escaped = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"
    )
    assert f"a{escaped}b" in text


def test_table_with_ansi_and_bidi_shows_them_as_text() -> None:
    text = report((ANSI, 1), (TROJAN, 2), (None, None)).render("table")
    assert "\x1b" not in text and "\u202e" not in text and "\u2066" not in text
    assert "\\x1b[2J\\x1b[31mred\\x1b]0;title\\x07\\x1b[0m" in text
    assert "\\u202eevil\\u202c \\u2066isolate\\u2069" in text


def test_table_header_is_escaped_too() -> None:
    text = render_table(["val\x1b[8mue", "n"], [("x", 1)])
    assert "\x1b" not in text and text.splitlines()[0].startswith("val\\x1b[8mue")


@pytest.mark.parametrize(
    "value",
    ["膝盖下坠感", "e\u0301te\u0301", "👍 ok", "a\u200db", "ｆｕｌｌ", "plain"],
)
def test_table_columns_stay_aligned(value: str) -> None:
    text = render_table(["what", "n"], [(value, 1), ("x", 22), ("longer text here", 333)])
    # The numbers are right-aligned: every line ends at the same terminal column.
    assert len({_width(line) for line in text.splitlines()}) == 1


def test_width_counts_terminal_columns() -> None:
    assert _width("膝盖") == 4
    assert _width("e\u0301") == 1  # a combining accent takes no column
    assert _width("a\u200db") == 2  # nor a zero-width joiner
    assert _width("ｆ") == 2  # full-width Latin takes two
    assert _width("ﬁ") == 1  # a ligature above U+2E80 takes one


# -- json -------------------------------------------------------------------------------------


def test_json_has_no_raw_control_character_and_reads_back_exactly() -> None:
    hostile = "".join(CONTROLS) + ANSI + TROJAN + "=1+1"
    when = datetime(2026, 1, 2, tzinfo=UTC)
    text = report((hostile, Decimal("-1.5")), ("膝盖", when)).render("json")
    assert not RAW_CONTROL.search(text.replace("\n", ""))  # the newlines of indent=2 only
    assert "膝盖" in text  # the rest stays readable (ensure_ascii=False)
    assert json.loads(text) == [
        {"value": hostile, "count": -1.5},
        {"value": "膝盖", "count": when.isoformat()},
    ]


# -- a monthly report: its months and notes go with its rows ----------------------------------

NOTES = (
    "A figure shows when at least 5 of its month's consultations have it and at least 5 don't.",
    "A month appears once `ctxstore analytics refresh` runs 7 days after it ends.",
)


def monthly(*rows: tuple[Any, ...], months: list[tuple[Any, ...]] | None = None) -> Report:
    periods = Report(
        "months",
        ["month", "consultations", "shown_values", "withheld_values", "withheld_consultations"],
        months if months is not None else [("2026-11", 150, 1, None, 7)],
    )
    empty = "(every value of these months is withheld: see their counts below)"
    return Report(
        "complaints",
        ["month", "chief_complaint", "consultations", "share"],
        list(rows),
        periods,
        NOTES,
        empty,
    )


def test_monthly_json_is_an_object_of_rows_months_and_notes() -> None:
    data = json.loads(monthly(("2026-11", "=knee", 12, Decimal("0.08"))).render("json"))
    assert data == {
        "rows": [
            {"month": "2026-11", "chief_complaint": "=knee", "consultations": 12, "share": 0.08}
        ],
        "periods": [
            {
                "month": "2026-11",
                "consultations": 150,
                "shown_values": 1,
                "withheld_values": None,
                "withheld_consultations": 7,
            }
        ],
        "notes": list(NOTES),
    }
    # a report without notes (overview, funnel) stays a list of rows
    assert json.loads(report(("knee", 1)).render("json")) == [{"value": "knee", "count": 1}]


def test_monthly_table_shows_the_rows_then_the_months_then_the_notes() -> None:
    text = monthly(("2026-11", "knee\x1b[2J", 12, Decimal("0.08"))).render("table")
    rows, months, notes = text.split("\n\n")
    assert rows.splitlines()[0].split() == ["month", "chief_complaint", "consultations", "share"]
    assert "knee\\x1b[2J" in rows and "\x1b" not in text
    assert months.splitlines()[0].split()[:2] == ["month", "consultations"]
    assert months.splitlines()[2].split() == ["2026-11", "150", "1", "7"]  # blank: withheld
    assert notes.splitlines() == list(NOTES)


def test_monthly_csv_is_the_rows_alone() -> None:
    rows = csv_rows(monthly(("2026-11", "-knee", 12, Decimal("0.08"))).render("csv"))
    assert rows == [
        ["month", "chief_complaint", "consultations", "share"],
        ["2026-11", "'-knee", "12", "0.08"],
    ]


def test_a_monthly_table_without_rows_says_why() -> None:
    text = monthly().render("table")
    assert "(every value of these months is withheld: see their counts below)" in text
    assert "no consultations" not in text
    assert "2026-11" in text  # the months it withholds
