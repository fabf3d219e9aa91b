"""Least-privilege database roles: their names, what each may do, and when an existing
role may be taken over.

- owner: owns every ctxstore table, view and function (the migrating user is granted it,
  so a deploy's migrator login can run later DDL);
- app: the service; exactly the DML it needs on the tables, no DDL, no TRUNCATE;
- analytics: SELECT on the ``analytics_*`` views (and EXECUTE on
  ``analytics_value_frequencies``) only: pseudonymous, structured per-consultation rows
  and free text aggregated with small-cell suppression (revision 0008); nothing on the
  tables, the pseudonym key or the settings.

The roles are NOLOGIN: a deploy grants them to its login users.  Roles are cluster-wide
while the data is per database, so the names belong to one database:
``{prefix}_{database}_{owner|app|analytics}`` with ``CTXSTORE_ROLE_PREFIX`` (default
``ctxstore``) and the database's name, made a plain lower-case name and cut, with a short
hash of the exact name, when it is not one already or would not fit in 63 characters.
``CTXSTORE_OWNER_ROLE``, ``CTXSTORE_APP_ROLE`` and ``CTXSTORE_ANALYTICS_ROLE`` name a role
outright.  Revision 0008 records the names in ``ctxstore_roles``; from then on the
recorded names are the database's roles (a database renamed or copied from a template
keeps its roles).

A migration takes over ("adopts") a role that already exists only when it is harmless:
not a superuser, no LOGIN or other role attribute, a member of no role, and no privilege
in any other database or on any cluster-wide object (CONNECT, ownership, a tablespace...).
``CTXSTORE_ADOPT_EXISTING_ROLES=1`` adopts such a role anyway (for example roles shared on
purpose between databases).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from sqlalchemy import Connection, text

from ctxstore.errors import ConfigurationError, MigrationError

PREFIX_ENV = "CTXSTORE_ROLE_PREFIX"
OWNER_ENV = "CTXSTORE_OWNER_ROLE"
APP_ENV = "CTXSTORE_APP_ROLE"
ANALYTICS_ENV = "CTXSTORE_ANALYTICS_ROLE"
ADOPT_ENV = "CTXSTORE_ADOPT_EXISTING_ROLES"
DEFAULT_PREFIX = "ctxstore"
#: PostgreSQL's identifier limit (NAMEDATALEN - 1).
MAX_NAME_LENGTH = 63

KINDS = ("owner", "app", "analytics")
_ENV_OF = {"owner": OWNER_ENV, "app": APP_ENV, "analytics": ANALYTICS_ENV}
# The longest suffix sets the room every name leaves for the database part, so the three
# names of one database share the same middle.
_LONGEST_SUFFIX = max(len(f"_{kind}") for kind in KINDS)
_HASH_LENGTH = 8

_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
_PLAIN_DATABASE = re.compile(r"[a-z0-9_]+")
_NOT_PLAIN = re.compile(r"[^a-z0-9_]+")

#: Small-cell suppression: a free-text value shows in the analytics views only when at least
#: this many consultations have it.  Revision 0008 reads the environment once; later the
#: owner changes it with ``ctxstore db min-group-size K``.
MIN_GROUP_SIZE_ENV = "CTXSTORE_ANALYTICS_MIN_GROUP_SIZE"
DEFAULT_MIN_GROUP_SIZE = 5
MIN_GROUP_SIZE_RANGE = (2, 1_000_000)

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

    def all(self) -> tuple[str, str, str]:
        return (self.owner, self.app, self.analytics)

    def of(self, kind: str) -> str:
        return {"owner": self.owner, "app": self.app, "analytics": self.analytics}[kind]


_overrides: ContextVar[Mapping[str, str] | None] = ContextVar(
    "ctxstore_role_settings", default=None
)


def _setting(name: str) -> str | None:
    """Setting ``name`` (a ``CTXSTORE_*`` variable): overridden, or from the environment."""
    overrides = _overrides.get() or {}
    return overrides[name] if name in overrides else os.environ.get(name)


@contextmanager
def overridden(settings: Mapping[str, str]) -> Iterator[None]:
    """Within: the settings in ``settings`` (by variable name) replace the environment's
    (``alembic -x`` arguments, ctxstore.db.migrations)."""
    token = _overrides.set({**(_overrides.get() or {}), **settings})
    try:
        yield
    finally:
        _overrides.reset(token)


def validate_role_name(name: str, source: str) -> str:
    """``name`` if it is a plain role name ctxstore may use, else ConfigurationError."""
    if not _NAME.fullmatch(name):
        raise ConfigurationError(
            f"role name {name!r} ({source}): use lower-case letters, digits and _, "
            f"starting with a letter or _, at most {MAX_NAME_LENGTH} characters"
        )
    if name.startswith("pg_"):
        raise ConfigurationError(
            f"role name {name!r} ({source}): names starting with pg_ are PostgreSQL's own "
            "(predefined roles such as pg_read_all_data); choose another"
        )
    return name


def _prefix() -> str:
    configured = _setting(PREFIX_ENV)
    prefix = validate_role_name(DEFAULT_PREFIX if configured is None else configured, PREFIX_ENV)
    if _room(prefix) < _HASH_LENGTH:
        longest = MAX_NAME_LENGTH - 1 - _LONGEST_SUFFIX - _HASH_LENGTH
        raise ConfigurationError(
            f"{PREFIX_ENV}={prefix!r} leaves no room for the database's part of the role "
            f"names: use at most {longest} characters"
        )
    return prefix


def _room(prefix: str) -> int:
    return MAX_NAME_LENGTH - len(prefix) - 1 - _LONGEST_SUFFIX


def database_part(database: str, room: int) -> str:
    """The database's name as it reads inside a role name, at most ``room`` characters.

    A plain lower-case name that fits is itself; any other is made plain (lower case,
    other characters as _) and cut to fit, followed by 8 hex digits of its SHA-256, so two
    databases whose plain forms meet ("my-db", "My_DB", "my_db") get different names.
    """
    if _PLAIN_DATABASE.fullmatch(database) and len(database) <= room:
        return database
    digest = hashlib.sha256(database.encode("utf-8")).hexdigest()[:_HASH_LENGTH]
    plain = _NOT_PLAIN.sub("_", database.lower()).strip("_")
    plain = plain[: max(room - _HASH_LENGTH - 1, 0)].rstrip("_")
    return f"{plain}_{digest}" if plain else digest


def derived_role_names(database: str) -> RoleNames:
    """The role names this configuration gives database ``database``."""
    if not database:
        raise ConfigurationError("role names: the database has no name")
    names: dict[str, str] = {}
    prefix: str | None = None
    for kind in KINDS:
        explicit = _setting(_ENV_OF[kind])
        if explicit is not None:
            names[kind] = validate_role_name(explicit, _ENV_OF[kind])
            continue
        if prefix is None:
            prefix = _prefix()
        names[kind] = f"{prefix}_{database_part(database, _room(prefix))}_{kind}"
    result = RoleNames(**names)
    if len(set(result.all())) != len(KINDS):
        raise ConfigurationError(
            f"the owner, app and analytics roles must be three different roles, not "
            f"{result.owner!r}, {result.app!r} and {result.analytics!r}: "
            f"check {OWNER_ENV}, {APP_ENV} and {ANALYTICS_ENV}"
        )
    return result


@dataclass(frozen=True)
class _Binding:
    database: str
    recorded: RoleNames | None


_binding: ContextVar[_Binding | None] = ContextVar("ctxstore_role_binding", default=None)


@contextmanager
def bound(database: str, recorded: RoleNames | None = None) -> Iterator[None]:
    """Within: :func:`role_names` without an argument names ``database``'s roles (the
    recorded ones when given).  The migrations run inside this (ctxstore.db.migrations)."""
    token = _binding.set(_Binding(database, recorded))
    try:
        yield
    finally:
        _binding.reset(token)


def role_names(database: str | None = None) -> RoleNames:
    """The roles of ``database``; without it, of the database being migrated.

    Once revision 0008 has recorded the database's roles, the recorded names are its roles:
    an explicit ``CTXSTORE_*_ROLE`` naming another role is an error, not a silent switch.
    """
    if database is not None:
        return derived_role_names(database)
    binding = _binding.get()
    if binding is None:
        raise ConfigurationError(
            "ctxstore's role names depend on the database: call role_names(database), "
            "read a migrated database's roles with recorded_role_names(connection), or run "
            "the migrations through ctxstore (ctxstore db upgrade, or alembic with "
            "ctxstore's env.py)"
        )
    if binding.recorded is None:
        return derived_role_names(binding.database)
    for kind in KINDS:
        explicit = _setting(_ENV_OF[kind])
        if explicit is not None and explicit != binding.recorded.of(kind):
            raise ConfigurationError(
                f"{_ENV_OF[kind]}={explicit!r}, but database {binding.database!r} already "
                f"has its {kind} role {binding.recorded.of(kind)!r} (recorded in "
                f"ctxstore_roles by revision 0008): unset {_ENV_OF[kind]}, or set it to "
                f"{binding.recorded.of(kind)!r}"
            )
    return binding.recorded


def recorded_role_names(connection: Connection) -> RoleNames | None:
    """The roles revision 0008 recorded in this database (None below 0008)."""
    if connection.execute(text("SELECT to_regclass('ctxstore_roles')")).scalar() is None:
        return None
    rows = {
        str(kind): name
        for kind, name in connection.execute(text("SELECT kind, role_name FROM ctxstore_roles"))
    }
    if set(rows) != set(KINDS):
        raise MigrationError(
            f"ctxstore_roles should name the {', '.join(KINDS)} roles, it names "
            f"{sorted(rows) or 'none'}: restore its rows (see docs/design.md, roles)"
        )
    return RoleNames(
        **{kind: validate_role_name(str(rows[kind]), "ctxstore_roles") for kind in KINDS}
    )


def min_group_size_from_environment() -> int:
    """``CTXSTORE_ANALYTICS_MIN_GROUP_SIZE``, or the default 5."""
    raw = (_setting(MIN_GROUP_SIZE_ENV) or "").strip()
    if not raw:
        return DEFAULT_MIN_GROUP_SIZE
    low, high = MIN_GROUP_SIZE_RANGE
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not low <= value <= high:
        raise ConfigurationError(
            f"{MIN_GROUP_SIZE_ENV}={raw!r}: use a whole number from {low} to {high:,} (the "
            f"fewest consultations a free-text value must have to show; default "
            f"{DEFAULT_MIN_GROUP_SIZE})"
        )
    return value


def adopt_existing_roles() -> bool:
    """Whether ``CTXSTORE_ADOPT_EXISTING_ROLES`` says to take over roles that fail the check."""
    value = (_setting(ADOPT_ENV) or "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return False
    if value in ("1", "true", "yes", "on"):
        return True
    raise ConfigurationError(f"{ADOPT_ENV}={value!r}: use 1 (adopt existing roles) or 0")


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


def check_adoptable(connection: Connection, names: Iterable[str]) -> None:
    """MigrationError when a role in ``names`` exists and may not be taken over (unless
    ``CTXSTORE_ADOPT_EXISTING_ROLES=1``)."""
    if adopt_existing_roles():
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
    """For later revisions: give a new table (or view) to the owner and, for tables the
    service uses, its DML to the app role.  ``execute`` is ``op.execute``."""
    roles = role_names()
    execute(f"ALTER TABLE {table} OWNER TO {roles.owner}")
    if app:
        execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {table} TO {roles.app}")
