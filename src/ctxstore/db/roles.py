"""Least-privilege database roles: their names, and what each may do.

- owner: owns every ctxstore table and view (revision 0004 hands them over and grants
  the role to the migrating user, so a deploy's migrator login can run later DDL);
- app: the service; exactly the DML it needs on the tables, no DDL, no TRUNCATE;
- analytics: SELECT on the ``analytics_*`` views only, which expose no message content,
  summary text or profile, and nothing on the tables themselves.

The roles are NOLOGIN: a deploy grants them to its login users.  Roles are cluster-wide,
so their names are configurable: ``CTXSTORE_ROLE_PREFIX`` (default ``ctxstore``) gives
``{prefix}_owner``, ``{prefix}_app`` and ``{prefix}_analytics``; each can also be set on
its own (``CTXSTORE_OWNER_ROLE``, ``CTXSTORE_APP_ROLE``, ``CTXSTORE_ANALYTICS_ROLE``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from ctxstore.errors import ConfigurationError

PREFIX_ENV = "CTXSTORE_ROLE_PREFIX"
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")

#: The tables the service reads and writes.
APP_TABLES = (
    "sessions",
    "messages",
    "summaries",
    "consultation_states",
    "consultation_state_history",
    "user_profiles",
)


@dataclass(frozen=True)
class RoleNames:
    owner: str
    app: str
    analytics: str


def role_names() -> RoleNames:
    prefix = os.environ.get(PREFIX_ENV, "ctxstore")
    names = RoleNames(
        owner=os.environ.get("CTXSTORE_OWNER_ROLE", f"{prefix}_owner"),
        app=os.environ.get("CTXSTORE_APP_ROLE", f"{prefix}_app"),
        analytics=os.environ.get("CTXSTORE_ANALYTICS_ROLE", f"{prefix}_analytics"),
    )
    for name in (names.owner, names.app, names.analytics):
        if not _NAME.match(name):
            raise ConfigurationError(
                f"role name {name!r}: use lower-case letters, digits and _ (at most 63)"
            )
    return names


def adopt(execute: Callable[[str], object], table: str, *, app: bool = True) -> None:
    """For later revisions: give a new table (or view) to the owner and, for tables the
    service uses, its DML to the app role.  ``execute`` is ``op.execute``."""
    roles = role_names()
    execute(f"ALTER TABLE {table} OWNER TO {roles.owner}")
    if app:
        execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {roles.app}")
