"""Checks on text and JSON values that PostgreSQL (and UTF-8) cannot store.

PostgreSQL ``text`` and ``jsonb`` reject U+0000, and a lone surrogate has no UTF-8
encoding.  We reject both up front with a ctxstore error instead of letting the driver
fail half-way through a transaction.  Literal backslash-u-0000 text (six characters) is
fine and round-trips unchanged.
"""

from __future__ import annotations

import math
import re
from typing import Any

_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")

MAX_JSON_DEPTH = 32


def text_problem(value: str) -> str | None:
    """Return why ``value`` cannot be stored, or None when it can."""
    found = _FORBIDDEN.search(value)
    if found is None:
        return None
    char = found.group()
    where = found.start()
    if char == "\x00":
        return f"contains a NUL character (U+0000) at index {where}"
    return f"contains a lone surrogate (U+{ord(char):04X}) at index {where}"


def utf8_size_exceeds(value: str, limit: int) -> bool:
    """True when ``value`` encodes to more than ``limit`` UTF-8 bytes.

    Skips the encode when even four bytes per character would fit.
    """
    if len(value) * 4 <= limit:
        return False
    return len(value.encode("utf-8", "surrogatepass")) > limit


#: JSON numbers every peer reads exactly (Go's int64, PostgreSQL's jsonb; int64 is what
#: the Go service writes).
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def json_problem(
    value: Any, max_depth: int = MAX_JSON_DEPTH, depth: int = 0, path: str = "$"
) -> str | None:
    """Why ``value`` is not a JSON value every backend stores and returns unchanged.

    Only JSON's own types: dict with string keys, list, str, bool, None, ints within
    signed 64 bits and finite floats.  Tuples, sets, ranges and bytes would come back as
    something else (or not at all), so they are refused everywhere.
    """
    if depth > max_depth:
        return f"{path}: nested deeper than {max_depth} levels"
    kind = type(value)
    if kind is str:
        problem = text_problem(value)
        return f"{path}: {problem}" if problem else None
    if value is None or kind is bool:
        return None
    if kind is int:
        if not _INT_MIN <= value <= _INT_MAX:
            return f"{path}: integer outside signed 64 bits"
        return None
    if kind is float:
        return None if math.isfinite(value) else f"{path}: NaN and infinity are not JSON"
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                return f"{path}: key {key!r} is not a string"
            problem = text_problem(key)
            if problem:
                return f"{path}: key {problem}"
            problem = json_problem(item, max_depth, depth + 1, f"{path}.{key}")
            if problem:
                return problem
        return None
    if kind is list:
        for index, item in enumerate(value):
            problem = json_problem(item, max_depth, depth + 1, f"{path}[{index}]")
            if problem:
                return problem
        return None
    return f"{path}: {kind.__name__} is not a JSON value"
