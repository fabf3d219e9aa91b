"""Named SQL statements sent straight to asyncpg.

Statements are written with ``:name`` parameters and compiled once, at import, to
asyncpg's ``$n``; a call passes keyword arguments, so no call site depends on parameter
order, and a missing or unexpected name fails loudly.  They go to a connection of the
storage's pool: a one-statement call is its own transaction, with neither an
explicit BEGIN/COMMIT nor any row processing beyond asyncpg's.
"""

from __future__ import annotations

import re
from typing import Any

Driver = Any  # an asyncpg connection (asyncpg ships no type stubs)

# ``:name``, but not the second colon of a ``::type`` cast.
_PARAMETER = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


class Statement:
    """One SQL statement with named parameters."""

    __slots__ = ("description", "name", "parameters", "sql", "text")

    def __init__(self, name: str, text: str, description: str = "") -> None:
        order: list[str] = []

        def number(match: re.Match[str]) -> str:
            parameter = match.group(1)
            if parameter not in order:
                order.append(parameter)
            return f"${order.index(parameter) + 1}"

        self.name = name
        self.description = description
        self.text = text  # as written, with ``:name`` parameters
        self.sql = _PARAMETER.sub(number, text)
        self.parameters = tuple(order)

    def arguments(self, values: dict[str, Any]) -> list[Any]:
        if len(values) != len(self.parameters):
            unknown = sorted(set(values) - set(self.parameters))
            missing = sorted(set(self.parameters) - set(values))
            raise TypeError(f"{self.name}: unknown {unknown}, missing {missing}")
        return [values[parameter] for parameter in self.parameters]

    async def fetch(self, driver: Driver, **values: Any) -> list[Any]:
        return list(await driver.fetch(self.sql, *self.arguments(values)))

    async def fetchrow(self, driver: Driver, **values: Any) -> Any:
        return await driver.fetchrow(self.sql, *self.arguments(values))

    async def fetchval(self, driver: Driver, **values: Any) -> Any:
        return await driver.fetchval(self.sql, *self.arguments(values))

    async def execute(self, driver: Driver, **values: Any) -> str:
        status: str = await driver.execute(self.sql, *self.arguments(values))
        return status

    def __repr__(self) -> str:
        return f"Statement({self.name!r})"
