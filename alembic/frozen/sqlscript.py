"""A SQL file as the statements to execute: psql variables filled in, split at semicolons.

``alembic/schema.sql`` is written so that psql applies it as it stands (``psql -v
owner_role=... -f schema.sql``); a revision applies it through Alembic, one statement at
a time, with the same variables: ``:"name"`` an identifier, ``:'name'`` a literal,
``:name`` the value as it is (numbers).  As in psql, nothing inside a string, a quoted
identifier, a comment or a dollar-quoted body is touched or split.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_TOKEN = re.compile(
    r"""
    (?P<dollar>\$(?P<tag>[A-Za-z_]*)\$.*?\$(?P=tag)\$)
    | (?P<string>'(?:[^']|'')*')
    | (?P<identifier>"(?:[^"]|"")*")
    | (?P<comment>--[^\n]*)
    | (?P<variable>(?<!:):(?:"(?P<ident>[a-z_]+)"|'(?P<literal>[a-z_]+)'|(?P<raw>[a-z_]+)\b))
    | (?P<end>;)
    """,
    re.DOTALL | re.VERBOSE,
)


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def statements(script: str, variables: Mapping[str, str | int]) -> list[str]:
    """The statements of ``script`` with ``variables`` filled in (KeyError for a quoted
    one that is missing), without comments between them."""
    found: list[str] = []
    current: list[str] = []
    position = 0
    for token in _TOKEN.finditer(script):
        current.append(script[position : token.start()])
        position = token.end()
        if token["end"]:
            _close(current, found)
        elif token["comment"]:
            continue
        elif token["variable"]:
            current.append(_filled(token, variables))
        else:
            current.append(token.group(0))
    current.append(script[position:])
    _close(current, found)
    return found


def _filled(token: re.Match[str], variables: Mapping[str, str | int]) -> str:
    if token["ident"]:
        return quote_identifier(str(variables[token["ident"]]))
    if token["literal"]:
        return quote_literal(str(variables[token["literal"]]))
    if token["raw"] not in variables:
        return token.group(0)  # as psql leaves a variable it doesn't know
    value = variables[token["raw"]]
    if not isinstance(value, int):
        raise ValueError(f":{token['raw']} must be a number, not {value!r}")
    return str(value)


def _close(current: list[str], found: list[str]) -> None:
    statement = "".join(current).strip()
    current.clear()
    if statement:
        found.append(statement)
