"""Frozen for the 1.0 baseline (as for the pre-release revisions 0004, 0008 and 0009 it
replaced): what it uses of ctxstore.db.roles, ctxstore.db.admin and ctxstore.errors.

A landed revision must do years later what it did on release, so it imports no ctxstore
module and reads no environment variable: this copy is theirs, never edited (a later
revision that needs other code freezes its own copy beside it).  From Alembic's
configuration (``config.attributes["revision_settings"]``, filled by ctxstore's env.py,
ctxstore.db.migrations, from ctxstore's settings or ``alembic -x`` arguments):

- ``role_names``: the database's owner, app and analytics roles;
- ``adopt_existing_roles``: take over existing roles that fail the check anyway;
- ``analytics_min_group_size``: the small-cell suppression threshold the baseline records;

and from ``config.attributes["migration_error"]`` the exception class a refusal raises
(ctxstore's MigrationError).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple

from alembic import op
from sqlalchemy import Connection, text
from sqlalchemy.dialects import postgresql

KINDS = ("owner", "app", "analytics")
PREFIX_ENV = "CTXSTORE_ROLE_PREFIX"
OWNER_ENV = "CTXSTORE_OWNER_ROLE"
APP_ENV = "CTXSTORE_APP_ROLE"
ANALYTICS_ENV = "CTXSTORE_ANALYTICS_ROLE"
ADOPT_ENV = "CTXSTORE_ADOPT_EXISTING_ROLES"
_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

#: The tables the service reads and writes.
APP_TABLES = (
    "sessions",
    "messages",
    "summaries",
    "consultation_states",
    "consultation_state_history",
    "user_profiles",
)

_PREPARER = postgresql.dialect().identifier_preparer  # type: ignore[no-untyped-call]


def quote_identifier(name: str) -> str:
    return _PREPARER.quote_identifier(name)


def _setting(name: str) -> Any:
    """``config.attributes["revision_settings"][name]``: what ctxstore's settings say."""
    settings = op.get_context().config.attributes.get("revision_settings")
    if settings is None:
        raise RuntimeError(
            "the baseline revision reads its settings from config.attributes"
            "['revision_settings']: run the migrations through ctxstore (ctxstore db "
            "upgrade, or alembic with ctxstore's env.py)"
        )
    return settings[name]


def MigrationError(message: str) -> Exception:
    """The exception a revision raises to refuse: the configuration's class."""
    error: type[Exception] = op.get_context().config.attributes.get("migration_error", RuntimeError)
    return error(message)


class RoleNames(NamedTuple):
    owner: str
    app: str
    analytics: str

    def all(self) -> tuple[str, str, str]:
        return (self.owner, self.app, self.analytics)

    def of(self, kind: str) -> str:
        return {"owner": self.owner, "app": self.app, "analytics": self.analytics}[kind]


def role_names() -> RoleNames:
    """The roles of the database being migrated, as the migration's configuration names
    them."""
    return RoleNames(**_setting("role_names"))


def min_group_size_from_environment() -> int:
    """The small-cell suppression threshold the configuration gives (ctxstore's default
    is 5)."""
    return int(_setting("analytics_min_group_size"))


def validate_role_name(name: str, source: str) -> str:
    if not _NAME.fullmatch(name) or name.startswith("pg_"):
        raise MigrationError(f"role name {name!r} ({source}): not a name ctxstore may use")
    return name


_ROLE_FACTS = text(
    """
    WITH here AS (SELECT oid FROM pg_database WHERE datname = current_database())
    SELECT r.rolsuper, r.rolcanlogin, r.rolcreaterole, r.rolcreatedb, r.rolreplication,
           r.rolbypassrls,
           ARRAY(SELECT g.rolname FROM pg_auth_members AS m
                   JOIN pg_roles AS g ON g.oid = m.roleid
                  WHERE m.member = r.oid ORDER BY 1) AS member_of,
           ARRAY(SELECT DISTINCT coalesce(
                          (SELECT 'database ' || quote_ident(d.datname)
                             FROM pg_database AS d
                            WHERE d.oid = CASE WHEN s.dbid = 0
                                                AND s.classid = 'pg_database'::regclass
                                               THEN s.objid ELSE s.dbid END),
                          'a cluster-wide object (tablespace or parameter)')
                   FROM pg_shdepend AS s
                  WHERE s.refclassid = 'pg_authid'::regclass AND s.refobjid = r.oid
                    AND s.classid <> 'pg_auth_members'::regclass
                    AND NOT (s.dbid = (SELECT oid FROM here))
                    AND NOT (s.dbid = 0 AND s.classid = 'pg_database'::regclass
                             AND s.objid = (SELECT oid FROM here))
                  ORDER BY 1) AS elsewhere
      FROM pg_roles AS r WHERE r.rolname = :name
    """
)

_ATTRIBUTES = (
    "is a superuser",
    "can log in",
    "has CREATEROLE",
    "has CREATEDB",
    "has REPLICATION",
    "has BYPASSRLS",
)


def role_exists(connection: Connection, name: str) -> bool:
    found = connection.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :n"), {"n": name})
    return found.scalar() is not None


def adoption_problems(connection: Connection, name: str) -> list[str]:
    """Why the existing role ``name`` must not be taken over by this database (empty: it
    may, or it does not exist)."""
    row = connection.execute(_ROLE_FACTS, {"name": name}).first()
    if row is None:
        return []
    problems = [reason for reason, flag in zip(_ATTRIBUTES, row[:6], strict=True) if flag]
    if row.member_of:
        problems.append(f"is a member of {', '.join(row.member_of)}")
    if row.elsewhere:
        problems.append(f"holds privileges or owns objects in {', '.join(row.elsewhere)}")
    return problems


def check_adoptable(connection: Connection, names: tuple[str, ...]) -> None:
    """A refusal when a role in ``names`` exists and may not be taken over (unless the
    configuration says to adopt existing roles)."""
    if _setting("adopt_existing_roles"):
        return
    database = connection.execute(text("SELECT current_database()")).scalar_one()
    refused = {name: adoption_problems(connection, name) for name in names}
    refused = {name: problems for name, problems in refused.items() if problems}
    if not refused:
        return
    described = "; ".join(f"{name!r} {', '.join(why)}" for name, why in refused.items())
    raise MigrationError(
        f"ctxstore will not take over existing roles for database {database!r}: {described}. "
        f"Its roles must belong to this database alone: choose other names "
        f"({PREFIX_ENV}, or {OWNER_ENV}/{APP_ENV}/{ANALYTICS_ENV}), or remove what the "
        f"role holds elsewhere; to adopt the role(s) anyway, set {ADOPT_ENV}=1"
    )


def ensure_roles(connection: Connection, names: RoleNames) -> list[str]:
    """Create the roles that are missing (NOLOGIN) after checking the ones that exist;
    return the names created."""
    check_adoptable(connection, names.all())
    created = []
    for name in names.all():
        if not role_exists(connection, name):
            connection.execute(text(f"CREATE ROLE {validate_role_name(name, 'role')} NOLOGIN"))
            created.append(name)
    return created


def adopt(execute: Callable[[str], object], table: str, *, app: bool = True) -> None:
    """Give a new table (or view) to the owner and, for tables the service uses, its DML
    to the app role.  ``execute`` is ``op.execute``."""
    roles = role_names()
    execute(f"ALTER TABLE {table} OWNER TO {roles.owner}")
    if app:
        execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {roles.app}")
