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
_FLOAT_LIMIT = float(2**63)


def json_problem(
    value: Any, max_depth: int = MAX_JSON_DEPTH, depth: int = 0, path: str = "$"
) -> str | None:
    """Why ``value`` is not a JSON value every backend stores and returns unchanged.

    Only JSON's own types: dict with string keys, list, str, bool, None, ints within
    signed 64 bits and finite floats below 2^63 in magnitude.  Tuples, sets, ranges and
    bytes would come back as something else (or not at all), so they are refused
    everywhere.  Walked with a stack,
    not recursion, so no nesting can exhaust Python's; reports the first problem in
    document order.
    """
    pending: list[tuple[Any, int, str]] = [(value, depth, path)]
    while pending:
        item, level, where = pending.pop()
        if level > max_depth:
            return f"{where}: nested deeper than {max_depth} levels"
        kind = type(item)
        if kind is dict:
            for key in item:
                problem = _key_problem(key)
                if problem:
                    return f"{where}: {problem}"
            pending.extend((item[key], level + 1, f"{where}.{key}") for key in reversed(item))
        elif kind is list:
            pending.extend(
                (child, level + 1, f"{where}[{index}]")
                for index, child in reversed(list(enumerate(item)))
            )
        else:
            problem = _scalar_problem(item, kind)
            if problem:
                return f"{where}: {problem}"
    return None


def _key_problem(key: Any) -> str | None:
    if type(key) is not str:
        return f"key {key!r} is not a string"
    problem = text_problem(key)
    return f"key {problem}" if problem else None


def _scalar_problem(item: Any, kind: type) -> str | None:
    if kind is str:
        return text_problem(item)
    if kind is int:
        return None if _INT_MIN <= item <= _INT_MAX else "integer outside signed 64 bits"
    if kind is float:
        if not math.isfinite(item):
            return "NaN and infinity are not JSON"
        if not -_FLOAT_LIMIT < item < _FLOAT_LIMIT:
            # jsonb keeps numbers as numeric and returns an integral one as an int:
            # from 2^63 on, an int outside 64 bits, which no reader accepts.
            return "a number of magnitude 2^63 or more can't be stored exactly"
        return None
    if item is None or kind is bool:
        return None
    return f"{kind.__name__} is not a JSON value"
