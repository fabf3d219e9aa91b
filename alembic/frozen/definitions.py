"""The SQL files of alembic/frozen/ as statements to run, and function definitions from them.

A revision after the baseline ships what it creates as a SQL file here, and its downgrade
takes back the definitions it replaced from the file they came from (the baseline's is
``schema-baseline.sql``).  The files never change once landed, so neither does what a
revision runs.  Role names fill the files' psql variables, as for the baseline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from alembic import op
from alembic.util import load_python_file

FROZEN = Path(__file__).resolve().parent
_roles = load_python_file(str(FROZEN), "roles.py")
_sqlscript = load_python_file(str(FROZEN), "sqlscript.py")


def statements(file: str) -> list[str]:
    """The statements of ``alembic/frozen/<file>``, this database's role names filled in."""
    roles = _roles.role_names()
    variables: dict[str, str | int] = {f"{kind}_role": roles.of(kind) for kind in _roles.KINDS}
    return list(_sqlscript.statements((FROZEN / file).read_text(encoding="utf-8"), variables))


def replacing_definitions(file: str, names: Iterable[str]) -> list[str]:
    """``file``'s definitions of the functions ``names``, as CREATE OR REPLACE: a
    downgrade puts them back in place, keeping their owners and grants."""
    defines = re.compile(r"CREATE FUNCTION (" + "|".join(map(re.escape, names)) + r")\(")
    return [
        statement.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1)
        for statement in statements(file)
        if defines.match(statement)
    ]


def execute(sql: Iterable[str]) -> None:
    for statement in sql:
        # The driver's own SQL: no bind parameters parsed out of a function body.
        op.get_bind().exec_driver_sql(statement)
