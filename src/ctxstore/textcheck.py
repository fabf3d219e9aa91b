"""Checks on text and JSON values that PostgreSQL (and UTF-8) cannot store.

PostgreSQL ``text`` and ``jsonb`` reject U+0000, and a lone surrogate has no UTF-8
encoding.  We reject both up front with a ctxstore error instead of letting the driver
fail half-way through a transaction.  Literal backslash-u-0000 text (six characters) is
fine and round-trips unchanged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
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


def json_problem(value: Any, depth: int = 0, path: str = "$") -> str | None:
    """Return why a JSON-like value cannot be stored as jsonb, or None when it can."""
    if depth > MAX_JSON_DEPTH:
        return f"{path}: nested deeper than {MAX_JSON_DEPTH} levels"
    if isinstance(value, str):
        problem = text_problem(value)
        return f"{path}: {problem}" if problem else None
    if value is None or isinstance(value, bool | int):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"{path}: NaN and infinity are not JSON"
        return None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path}: key {key!r} is not a string"
            problem = text_problem(key)
            if problem:
                return f"{path}: key {problem}"
            problem = json_problem(item, depth + 1, f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        for index, item in enumerate(value):
            problem = json_problem(item, depth + 1, f"{path}[{index}]")
            if problem:
                return problem
        return None
    return f"{path}: {type(value).__name__} is not a JSON value"
