"""Least-privilege database roles: their names, what each may do, and when an existing
role may be taken over.

- owner: owns every ctxstore table, view and function (the migrating user is granted it,
  so a deploy's migrator login can run later DDL);
- app: the service; exactly the DML it needs on the tables, no DDL, no TRUNCATE;
- analytics: SELECT on the ``analytics_*`` views and EXECUTE on the report functions
  (``analytics_value_frequencies_v2`` and ``analytics_*_v2``, revision 0016;
  ``analytics_min_group_size_v1``, 0012) only: pseudonymous, structured per-consultation
  rows (times to the day) and free text aggregated with small-cell and complement
  suppression per day; nothing on the tables, the pseudonym key, the settings or
  ``analytics_consultation_details`` (exact times, the reports' own).

The roles are NOLOGIN: a deploy grants them to its login users.  Roles are cluster-wide
while the data is per database, so the names belong to one database:
``{prefix}_{database}_{owner|app|analytics}`` with ``CTXSTORE_ROLE_PREFIX`` (default
``ctxstore``) and the database's name, made a plain lower-case name and cut, with a short
hash of the exact name, when it is not one already or would not fit in 63 characters.
``CTXSTORE_OWNER_ROLE``, ``CTXSTORE_APP_ROLE`` and ``CTXSTORE_ANALYTICS_ROLE`` name a role
outright.  The baseline revision records the names in ``ctxstore_roles``; from then on the
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
import re
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import Connection, text

from ctxstore.errors import ConfigurationError, MigrationError
from ctxstore.settings import MAX_NAME_LENGTH, Settings, validate_role_name

PREFIX_ENV = "CTXSTORE_ROLE_PREFIX"
OWNER_ENV = "CTXSTORE_OWNER_ROLE"
APP_ENV = "CTXSTORE_APP_ROLE"
ANALYTICS_ENV = "CTXSTORE_ANALYTICS_ROLE"
ADOPT_ENV = "CTXSTORE_ADOPT_EXISTING_ROLES"

KINDS = ("owner", "app", "analytics")
_ENV_OF = {"owner": OWNER_ENV, "app": APP_ENV, "analytics": ANALYTICS_ENV}
# The longest suffix sets the room every name leaves for the database part, so the three
# names of one database share the same middle.
_LONGEST_SUFFIX = max(len(f"_{kind}") for kind in KINDS)
_HASH_LENGTH = 8

_PLAIN_DATABASE = re.compile(r"[a-z0-9_]+")
_NOT_PLAIN = re.compile(r"[^a-z0-9_]+")

#: Small-cell suppression: a free-text value shows in the analytics views only when at least
#: this many consultations have it.  The baseline records the setting's value; later the
#: owner changes it with ``ctxstore db min-group-size K``.
MIN_GROUP_SIZE_ENV = "CTXSTORE_ANALYTICS_MIN_GROUP_SIZE"


@dataclass(frozen=True)
class RoleNames:
    owner: str
    app: str
    analytics: str

    def all(self) -> tuple[str, str, str]:
        return (self.owner, self.app, self.analytics)

    def of(self, kind: str) -> str:
        return {"owner": self.owner, "app": self.app, "analytics": self.analytics}[kind]


def _prefix(settings: Settings) -> str:
    prefix = settings.role_prefix
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


def _explicit(settings: Settings, kind: str) -> str | None:
    """The role ``CTXSTORE_{KIND}_ROLE`` names outright, if any."""
    named = {
        "owner": settings.owner_role,
        "app": settings.app_role,
        "analytics": settings.analytics_role,
    }
    return named[kind]


def derived_role_names(database: str, settings: Settings) -> RoleNames:
    """The role names ``settings`` give database ``database``."""
    if not database:
        raise ConfigurationError("role names: the database has no name")
    names: dict[str, str] = {}
    prefix: str | None = None
    for kind in KINDS:
        explicit = _explicit(settings, kind)
        if explicit is not None:
            names[kind] = explicit
            continue
        if prefix is None:
            prefix = _prefix(settings)
        names[kind] = f"{prefix}_{database_part(database, _room(prefix))}_{kind}"
    result = RoleNames(**names)
    if len(set(result.all())) != len(KINDS):
        raise ConfigurationError(
            f"the owner, app and analytics roles must be three different roles, not "
            f"{result.owner!r}, {result.app!r} and {result.analytics!r}: "
            f"check {OWNER_ENV}, {APP_ENV} and {ANALYTICS_ENV}"
        )
    return result


def migration_role_names(
    database: str, recorded: RoleNames | None, settings: Settings
) -> RoleNames:
    """The roles a migration of ``database`` uses: the ones the baseline recorded, else
    the ones ``settings`` derive.

    Once recorded, the recorded names are the database's roles: an explicit
    ``CTXSTORE_*_ROLE`` naming another role is an error, not a silent switch.
    """
    if recorded is None:
        return derived_role_names(database, settings)
    for kind in KINDS:
        explicit = _explicit(settings, kind)
        if explicit is not None and explicit != recorded.of(kind):
            raise ConfigurationError(
                f"{_ENV_OF[kind]}={explicit!r}, but database {database!r} already "
                f"has its {kind} role {recorded.of(kind)!r} (recorded in "
                f"ctxstore_roles by the baseline revision): unset {_ENV_OF[kind]}, or set it to "
                f"{recorded.of(kind)!r}"
            )
    return recorded


@dataclass(frozen=True)
class MigrationRoles:
    """What the role revisions read while they run (handed to them through Alembic's
    configuration by ctxstore.db.migrations): the database's role names (worked out when a
    revision asks, as before), the threshold the baseline records, the adoption switch."""

    database: str
    recorded: RoleNames | None
    settings: Settings

    @property
    def names(self) -> RoleNames:
        return migration_role_names(self.database, self.recorded, self.settings)

    @property
    def min_group_size(self) -> int:
        return self.settings.analytics_min_group_size

    @property
    def adopt_existing(self) -> bool:
        return self.settings.adopt_existing_roles


def recorded_role_names(connection: Connection) -> RoleNames | None:
    """The roles baseline revision recorded in this database (None without the schema)."""
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


def check_adoptable(connection: Connection, names: Iterable[str], *, adopt_anyway: bool) -> None:
    """MigrationError when a role in ``names`` exists and may not be taken over (unless
    ``adopt_anyway``: ``CTXSTORE_ADOPT_EXISTING_ROLES=1``)."""
    if adopt_anyway:
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
