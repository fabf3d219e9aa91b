"""A database's schema as comparable data: what two databases must share to be "the same".

Tables, columns (type, default, nullability, identity, generation, order), constraints
(definition, validated), indexes, sequences, composite types, functions (definition,
security, settings, owner, grants), views, triggers, owners and grants on every relation,
the schema and the database, and the three roles' attributes.  Role names differ between
databases (each has its own roles): they are replaced by their kind (``<owner>``,
``<app>``, ``<analytics>``) and the migrating user by ``<migrator>``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg
from sqlalchemy import URL

from tests.migrations.prerelease import plain

QUERIES: dict[str, str] = {
    "relations": """
        SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner), c.reloptions::text
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v', 'S', 'c', 'p', 'm')""",
    "columns": """
        SELECT c.relname,
               row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum),
               a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated
          FROM pg_attribute a
          JOIN pg_class c ON c.oid = a.attrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
           AND c.relkind IN ('r', 'v', 'c', 'p')""",
    "constraints": """
        SELECT conrelid::regclass::text, contypid::regtype::text, conname,
               pg_get_constraintdef(oid), convalidated
          FROM pg_constraint WHERE connamespace = 'public'::regnamespace""",
    "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public'",
    "functions": """
        SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid),
               p.prosecdef, p.proconfig::text, pg_get_userbyid(p.proowner)
          FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace""",
    "views": """
        SELECT viewname, definition FROM pg_views WHERE schemaname = 'public'""",
    "triggers": """
        SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid)
          FROM pg_trigger WHERE NOT tgisinternal""",
    "relation_grants": """
        SELECT c.relname, pg_get_userbyid(a.grantor), pg_get_userbyid(a.grantee),
               a.privilege_type, a.is_grantable
          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace,
               aclexplode(coalesce(c.relacl, acldefault('r', c.relowner))) a
         WHERE n.nspname = 'public'""",
    "function_grants": """
        SELECT p.proname, pg_get_userbyid(a.grantor), pg_get_userbyid(a.grantee),
               a.privilege_type, a.is_grantable
          FROM pg_proc p, aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
         WHERE p.pronamespace = 'public'::regnamespace""",
    "type_grants": """
        SELECT t.typname, pg_get_userbyid(t.typowner), t.typacl::text
          FROM pg_type t
         WHERE t.typnamespace = 'public'::regnamespace AND t.typtype = 'c'
           AND NOT EXISTS (SELECT 1 FROM pg_class c
                            WHERE c.oid = t.typrelid AND c.relkind <> 'c')""",
    "schema_grants": """
        SELECT pg_get_userbyid(a.grantee), a.privilege_type
          FROM pg_namespace n, aclexplode(n.nspacl) a WHERE n.nspname = 'public'""",
    "database_grants": """
        SELECT pg_get_userbyid(a.grantee), a.privilege_type
          FROM pg_database d, aclexplode(d.datacl) a WHERE d.datname = current_database()""",
    "roles": """
        SELECT r.kind, a.rolcanlogin, a.rolsuper, a.rolinherit, a.rolcreaterole,
               a.rolcreatedb, a.rolreplication, a.rolbypassrls
          FROM ctxstore_roles r JOIN pg_roles a ON a.rolname = r.role_name""",
    "memberships": """
        SELECT pg_get_userbyid(m.roleid), pg_get_userbyid(m.member)
          FROM pg_auth_members m
         WHERE m.roleid IN (SELECT oid FROM pg_roles
                             WHERE rolname IN (SELECT role_name FROM ctxstore_roles))""",
}


async def snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every query's rows, sorted, with role names replaced by their kind."""
    connection = await asyncpg.connect(url)
    try:
        names = {
            row["role_name"]: f"<{row['kind']}>"
            for row in await connection.fetch("SELECT kind, role_name FROM ctxstore_roles")
        }
        names[await connection.fetchval("SELECT current_user")] = "<migrator>"
        taken = {}
        for name, query in QUERIES.items():
            found = await connection.fetch(query)
            rows = [tuple(_named(value, names) for value in row) for row in found]
            taken[name] = sorted(rows, key=repr)
        return taken
    finally:
        await connection.close()


def _named(value: Any, names: dict[str, str]) -> Any:
    if not isinstance(value, str):
        return value
    for name in sorted(names, key=len, reverse=True):
        value = value.replace(name, names[name])
    return value


def databases_differ(left: URL, right: URL) -> list[str]:
    """:func:`differences` of the two databases' snapshots."""
    return differences(*(asyncio.run(snapshot(plain(url))) for url in (left, right)))


def differences(left: dict[str, list[Any]], right: dict[str, list[Any]]) -> list[str]:
    """What one snapshot has that the other hasn't, per query (empty: the same)."""
    found = []
    for name in QUERIES:
        only_left = [row for row in left[name] if row not in right[name]]
        only_right = [row for row in right[name] if row not in left[name]]
        found += [f"{name}: only in the first: {row}" for row in only_left]
        found += [f"{name}: only in the second: {row}" for row in only_right]
    return found
