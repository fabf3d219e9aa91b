"""Citus: ctxstore's tables distributed by session, and kept so by later revisions.

On a Citus coordinator, :func:`distribute` (``ctxstore db distribute``) makes

- every table with a ``session_id`` column (``sessions`` and the tables cascading from it)
  hash-distributed by ``session_id`` and colocated with ``sessions``: a session's rows
  share one shard, so each of its reads and writes runs on one worker;
- ``REFERENCE_TABLES`` and any other table a session table's foreign key points at
  reference tables (a copy on every node): those keys are checked on the shard's node;
- ``COORDINATOR_TABLES`` (the revision, the role names, the analytics cells) plain tables
  on the coordinator, never converted;
- the database's roles present on every node, and its owner role able to log in on the
  workers (:func:`roles_on_every_node`);
- every ``ctxstore_*`` SQL function (revision 0011 and later) known on every node, and
  those with a ``p_session_id`` argument distributed by it beside ``sessions``
  (:func:`distribute_functions`): a call outside a transaction block runs on the
  session's worker.

Citus converts a table only when no foreign key ties it to a table of another kind: the
keys to the tables about to be replicated are dropped, every table is converted in one
transaction (reads go on, writes wait for the copy), and the keys come back and are
validated without blocking anyone (docs/scaling.md).

Migrations on a distributed database (:class:`KeptDistributed`): a table a revision creates
with a ``session_id`` column is created without its foreign keys, distributed beside
``sessions``, then given its keys; after each revision, any session table still on the
coordinator (created by raw SQL) is distributed too, and a table that should be a
reference table (re-created by an upgrade after a downgrade: ``data_keys``...) is made one.
Otherwise a re-created table would stay on the coordinator, where an ``ON DELETE CASCADE``
from the sharded ``sessions`` never fires and to which no session table may hold a key.
A table of ``COORDINATOR_TABLES`` stays there as it is made.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import URL, Connection, ForeignKeyConstraint, Table, event, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import AddConstraint

from ctxstore.db.engine import EngineSettings, create_engine, redact
from ctxstore.db.errors import translated
from ctxstore.db.roles import recorded_role_names
from ctxstore.errors import ConfigurationError
from ctxstore.retry import Retry, linear

ROOT_TABLE = "sessions"
DISTRIBUTION_COLUMN = "session_id"
#: Replicated to every node (besides any table a session table references): the data
#: keys sealed rows reference, the profiles read beside a session (and the write ids
#: recorded with them), and the two one-row tables the analytics views join with every
#: consultation (the pseudonym key and the suppression setting), so each shard joins
#: them locally; and the legal holds, which every purge and erasure checks beside the rows.
REFERENCE_TABLES = (
    "data_keys",
    "user_profiles",
    "applied_profile_writes",
    "ctxstore_pseudonym_key",
    "ctxstore_analytics_settings",
    "legal_holds",
)

#: Plain tables on the coordinator only, never converted: whatever reads or writes them runs
#: there.  The schema's revision and role names (migrations, the CLI); the free-text
#: analytics cells and the record of the days they were counted from, which ``analytics
#: refresh`` writes and the frequency reports read, joined with no distributed table.  As
#: reference tables each refreshed day would commit on every node, and Citus refuses the
#: refresh's upsert of a day's record (``DO UPDATE SET refreshed_at = now()``, SQLSTATE
#: 0A000).  They hold derived, k-suppressed counts: a refresh rebuilds them.  The published
#: months (revision 1004) likewise: the reports read them joined with nothing distributed.
#: The retention periods (revision 1007): the purge reads them alone, on the coordinator.
COORDINATOR_TABLES = (
    "alembic_version",
    "ctxstore_roles",
    "analytics_value_cells",
    "analytics_refreshed_days",
    "analytics_months",
    "analytics_month_kinds",
    "analytics_month_cells",
    "ctxstore_retention_periods",
)

# Tables of the schema ``sessions`` lives in that have a session_id column, but those
# declared for the coordinator or as reference tables (legal_holds names sessions too);
# Citus's own shards (visible when the coordinator holds some) are left out.
_SESSION_TABLES = """
SELECT c.relname FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid
 WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass(:root))
   AND c.relkind IN ('r', 'p') AND NOT c.relispartition
   AND a.attname = :column AND NOT a.attisdropped
   AND NOT relation_is_a_known_shard(c.oid) AND c.relname <> ALL(:kept)
 ORDER BY c.relname <> :root, c.relname"""

_REFERENCED = """
SELECT DISTINCT f.relname FROM pg_constraint AS k
  JOIN pg_class AS t ON t.oid = k.conrelid JOIN pg_class AS f ON f.oid = k.confrelid
 WHERE k.contype = 'f' AND t.relname = ANY(:tables) AND f.relname <> ALL(:tables)
   AND t.relnamespace = f.relnamespace
   AND t.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass(:root))"""

# 'distributed' (hash), 'reference', 'local' (a Citus local table), absent: plain.
_KINDS = """
SELECT c.relname,
       CASE WHEN p.partmethod = 'h' THEN 'distributed'
            WHEN p.repmodel = 't' THEN 'reference' ELSE 'local' END AS kind
  FROM pg_dist_partition AS p JOIN pg_class AS c ON c.oid = p.logicalrelid
 WHERE c.relname = ANY(:tables)
   AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass(:root))"""

_FOREIGN_KEYS = """
SELECT t.relname AS table_name, k.conname, pg_get_constraintdef(k.oid) AS definition
  FROM pg_constraint AS k JOIN pg_class AS t ON t.oid = k.conrelid
  JOIN pg_class AS f ON f.oid = k.confrelid
 WHERE k.contype = 'f' AND (t.relname = ANY(:tables) OR f.relname = ANY(:tables))
   AND t.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass(:root))
 ORDER BY t.relname, k.conname"""


@dataclass
class DistributeReport:
    distributed: list[str] = field(default_factory=list)
    referenced: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    foreign_keys: int = 0
    workers: int = 0
    seconds: float = 0.0
    #: How long writes waited: the copy of the rows into the shards.
    writes_waited: float = 0.0

    def summary(self) -> str:
        if not self.distributed and not self.referenced:
            return f"already distributed ({len(self.already)} tables); nothing to do"
        parts = []
        if self.distributed:
            parts.append(
                f"distributed by {DISTRIBUTION_COLUMN} across {self.workers} worker(s): "
                + ", ".join(self.distributed)
            )
        if self.referenced:
            parts.append("reference tables (on every node): " + ", ".join(self.referenced))
        return "; ".join(parts) + (
            f" ({self.seconds:.1f} s, writes waited {self.writes_waited:.1f} s for the copy; "
            f"{self.foreign_keys} foreign keys added back and validated)"
        )


def citus_version(connection: Connection) -> str | None:
    """The Citus extension's version in this database (None: not installed)."""
    found = connection.execute(
        text("SELECT extversion FROM pg_extension WHERE extname = 'citus'")
    ).scalar()
    return str(found) if found is not None else None


def is_distributed(connection: Connection) -> bool:
    """Whether ``sessions`` is a distributed table (this database runs sharded)."""
    if citus_version(connection) is None:
        return False
    kinds = _kinds(connection, [ROOT_TABLE])
    return kinds.get(ROOT_TABLE) == "distributed"


def _kinds(connection: Connection, tables: list[str]) -> dict[str, str]:
    rows = connection.execute(text(_KINDS), {"tables": tables, "root": ROOT_TABLE})
    return {str(name): str(kind) for name, kind in rows}


def session_tables(connection: Connection) -> list[str]:
    """Every table that belongs to sessions (``sessions`` first)."""
    rows = connection.execute(
        text(_SESSION_TABLES),
        {
            "root": ROOT_TABLE,
            "column": DISTRIBUTION_COLUMN,
            "kept": [*COORDINATOR_TABLES, *REFERENCE_TABLES],
        },
    )
    return [str(name) for name in rows.scalars()]


def _reference_tables(connection: Connection, sessions: list[str]) -> list[str]:
    referenced = connection.execute(text(_REFERENCED), {"tables": sessions, "root": ROOT_TABLE})
    named = connection.execute(
        text("SELECT relname FROM pg_class WHERE relname = ANY(:names) AND relkind = 'r'"),
        {"names": list(REFERENCE_TABLES)},
    )
    found = {str(name) for name in referenced.scalars()} | set(named.scalars())
    return sorted(found - set(COORDINATOR_TABLES))


def _check_cluster(connection: Connection) -> int:
    version = citus_version(connection)
    if version is None:
        raise ConfigurationError(
            "this database has no Citus extension: run CREATE EXTENSION citus on the "
            "coordinator (and every worker), add the workers, then distribute"
        )
    if not connection.execute(text("SELECT citus_is_coordinator()")).scalar():
        raise ConfigurationError("connect to the Citus coordinator to distribute, not a worker")
    if connection.execute(text("SELECT to_regclass(:t)"), {"t": ROOT_TABLE}).scalar() is None:
        raise ConfigurationError("no ctxstore schema here: run `ctxstore db upgrade` first")
    workers = connection.execute(
        text(
            "SELECT count(*) FROM pg_dist_node WHERE isactive AND noderole = 'primary' "
            "AND shouldhaveshards"
        )
    ).scalar_one()
    if not workers:
        raise ConfigurationError(
            "the Citus cluster has no node that takes shards: add workers with "
            "citus_add_node(host, port) on the coordinator first"
        )
    return int(workers)


def distribute_on(connection: Connection) -> DistributeReport:
    """Distribute what is not yet, in steps that each commit (see :func:`distribute`)."""
    started = time.monotonic()
    report = DistributeReport(workers=_check_cluster(connection))
    roles_on_every_node(connection)
    connection.commit()
    todo_reference, todo_distribute, report.already = _todo(connection)
    # Keys to or from a table about to be replicated tie it to tables of another kind:
    # dropped first, added back last.  Keys between session tables stay.
    keys = connection.execute(
        text(_FOREIGN_KEYS), {"tables": todo_reference, "root": ROOT_TABLE}
    ).all()
    connection.commit()
    converted = _in_lock_order([*todo_distribute, *todo_reference])
    keyed = _in_lock_order(_tables_of_keys(keys))

    def drop_keys() -> None:
        for table, name, _definition in keys:
            connection.execute(text(f'ALTER TABLE "{table}" DROP CONSTRAINT "{name}"'))

    def copy() -> None:
        # Citus copies the rows under a lock against writes, never against reads.
        for table in todo_distribute:
            _distribute_table(connection, table)
        for table in todo_reference:
            connection.execute(text("SELECT create_reference_table(:t)"), {"t": table})
        _tune(connection)

    def truncate_local() -> None:
        # The coordinator's own copy of the rows, hidden since the conversion, goes.
        for table in converted:
            connection.execute(
                text("SELECT truncate_local_data_after_distributing_table(:t)"), {"t": table}
            )

    if not todo_reference and not todo_distribute:
        distribute_functions(connection)
        connection.commit()
        return report
    _step(connection, drop_keys, keyed, "ACCESS EXCLUSIVE")
    copying = time.monotonic()
    try:
        _step(connection, copy, converted, "EXCLUSIVE")
    except BaseException:
        _add_keys(connection, keys, keyed)  # the tables are as they were: so are their keys
        raise
    report.writes_waited = time.monotonic() - copying
    _step(connection, truncate_local, converted, "ACCESS EXCLUSIVE")
    _add_keys(connection, keys, keyed)
    distribute_functions(connection)
    connection.commit()
    report.distributed, report.referenced = todo_distribute, todo_reference
    report.foreign_keys = len(keys)
    report.seconds = time.monotonic() - started
    return report


def _todo(connection: Connection) -> tuple[list[str], list[str], list[str]]:
    """The tables to make reference tables, those to distribute, and those already done."""
    sessions = session_tables(connection)
    references = _reference_tables(connection, sessions)
    kinds = _kinds(connection, [*sessions, *references])
    todo_reference = [t for t in references if kinds.get(t) != "reference"]
    todo_distribute = [t for t in sessions if kinds.get(t) != "distributed"]
    already = [t for t in (*references, *sessions) if t not in todo_reference + todo_distribute]
    return todo_reference, todo_distribute, already


def _tables_of_keys(keys: Sequence[Any]) -> set[str]:
    """The tables foreign keys (table, name, definition) go from or to."""
    return {table for table, _, _ in keys} | {_referenced(definition) for _, _, definition in keys}


def roles_on_every_node(connection: Connection) -> None:
    """The database's roles (ctxstore_roles) on every worker, and its owner able to log in
    there.

    Citus creates a role on the workers when it is created on the coordinator (with
    ``citus.enable_create_role_propagation``) or becomes a dependency of a distributed
    object; one made before the extension or the workers is created here (NOLOGIN, as on
    the coordinator).  Citus reaches the shards over connections in the name of the
    current user, which inside a SECURITY DEFINER function (the analytics reports) is the
    owner: NOLOGIN there, it fails with "not permitted to log in" (SQLSTATE 08006).
    The owner stays NOLOGIN on the coordinator, where clients connect.
    """
    names = recorded_role_names(connection)
    if names is None:
        return
    for name in names.all():
        _on_workers(
            connection,
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{name}') "
            f"THEN CREATE ROLE {name} NOLOGIN; END IF; END $$",
        )
    _on_workers(connection, f"ALTER ROLE {names.owner} LOGIN")


def _on_workers(connection: Connection, statement: str) -> None:
    """``statement`` on every worker as itself: not propagated further (a worker refuses
    to propagate role DDL)."""
    command = (
        "SET citus.enable_create_role_propagation TO off; "
        f"SET citus.enable_alter_role_propagation TO off; {statement}"
    )
    failed = connection.execute(
        text(
            "SELECT nodename, nodeport, result FROM run_command_on_workers(:command) "
            "WHERE NOT success"
        ),
        {"command": command},
    ).all()
    if failed:
        nodes = "; ".join(f"{host}:{port}: {result}" for host, port, result in failed)
        raise ConfigurationError(f"could not prepare the ctxstore roles on the workers: {nodes}")


def _referenced(definition: str) -> str:
    """The table a foreign key's definition (pg_get_constraintdef) references."""
    return definition.split(" REFERENCES ", 1)[1].split("(", 1)[0].strip().strip('"')


def _in_lock_order(tables: Iterable[str]) -> list[str]:
    """Tables in the order every ctxstore transaction locks them: the session row first,
    then its children, the profile, the data keys last.  A step that locks them all in
    this order up front never deadlocks with the traffic; one that met its tables one by
    one did."""
    order = {ROOT_TABLE: 0, "user_profiles": 2, "data_keys": 3}
    return sorted(tables, key=lambda table: (order.get(table, 1), table))


#: deadlock_detected, lock_not_available: the locks of live traffic, met by a step (which
#: rolls back and runs again, after 0.1 s, 0.2 s, ...).
_RETRIED = frozenset({"40P01", "55P03"})
LOCKED_OUT = Retry(
    DBAPIError, attempts=8, wait=linear(0.1), when=lambda error: _sqlstate(error) in _RETRIED
)
# No step queues long behind the application's transactions (and so holds them up).
_LOCK_WAIT = "SET LOCAL lock_timeout TO '2s'"


def _step(
    connection: Connection, action: Callable[[], None], tables: Sequence[str], mode: str
) -> None:
    """``action`` in a transaction of its own, ``tables`` locked first in ``mode``; run
    again when the traffic's locks stood in its way."""
    names = ", ".join(f'"{table}"' for table in tables)

    def attempt() -> None:
        try:
            connection.execute(text(_LOCK_WAIT))
            # Conversions and DDL in one transaction: one connection per worker.
            connection.execute(text("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"))
            if names:
                connection.execute(text(f"LOCK TABLE {names} IN {mode} MODE"))
            action()
            connection.commit()
        except DBAPIError:
            connection.rollback()
            raise

    LOCKED_OUT.run_sync(attempt)


def _sqlstate(error: DBAPIError) -> str | None:
    for candidate in (error.orig, getattr(error.orig, "__cause__", None)):
        code = getattr(candidate, "sqlstate", None)
        if isinstance(code, str):
            return code
    return None


def _tune(connection: Connection) -> None:
    """Two settings of the database (propagated to every node):

    - Citus hides shards from catalog reads with a filter that makes those reads slow
      (asyncpg's type lookup on a new connection took half a second); the coordinator
      holds no shard to hide.
    - JIT compiles each shard's task on its own: an analytics report over 32 shards spent
      2.8 s compiling, 14 ms without.  Session queries never needed it.
    """
    database = connection.execute(text("SELECT current_database()")).scalar_one()
    for setting in ("citus.override_table_visibility TO off", "jit TO off"):
        connection.execute(text(f'ALTER DATABASE "{database}" SET {setting}'))


def _add_keys(connection: Connection, keys: Sequence[Any], tables: Sequence[str]) -> None:
    """The keys back: NOT VALID first (a short lock), then validated while reads and
    writes go on."""

    def add() -> None:
        for table, name, definition in keys:
            unchecked = definition.replace(" NOT VALID", "")
            connection.execute(
                text(f'ALTER TABLE "{table}" ADD CONSTRAINT "{name}" {unchecked} NOT VALID')
            )

    _step(connection, add, tables, "SHARE ROW EXCLUSIVE")
    for table, name, definition in keys:
        if "NOT VALID" not in definition:
            _step(connection, functools.partial(_validate, connection, table, name), (), "")


def _validate(connection: Connection, table: str, name: str) -> None:
    connection.execute(text(f'ALTER TABLE "{table}" VALIDATE CONSTRAINT "{name}"'))


async def distribute(url: str | URL) -> DistributeReport:
    """``ctxstore db distribute`` on the coordinator at ``url``.

    In steps, each its own transaction: the foreign keys to the tables about to be
    replicated are dropped; the tables are converted (Citus copies every row into the
    shards: reads go on, writes wait until it commits); the coordinator's copies are
    truncated; the keys come back and are validated without blocking anyone.  A failed
    conversion leaves the tables, and their keys, as they were.
    """
    settings = EngineSettings(
        application_name="ctxstore-distribute",
        statement_timeout_ms=0,  # the copy of every row takes as long as it takes
        command_timeout=None,
    )
    engine = create_engine(url, settings, pooled=False)
    try:
        with translated(f"distributing {redact(engine.url)}"):
            async with engine.connect() as connection:
                return await connection.run_sync(distribute_on)
    finally:
        await engine.dispose()


#: The SQL functions of the schema ``sessions`` lives in that Citus does not know as
#: distributed yet the way they should be: those taking ``p_session_id`` by it, the rest
#: (helpers they call, batch jobs) on every node.
_FUNCTIONS_TO_DISTRIBUTE = """
SELECT p.oid::regprocedure::text AS signature, 'p_session_id' = ANY(p.proargnames) AS by_session
  FROM pg_proc AS p
  LEFT JOIN pg_dist_object AS d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
 WHERE starts_with(p.proname, 'ctxstore_')
   AND p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = to_regclass(:root))
   AND (d.objid IS NULL
        OR ('p_session_id' = ANY(p.proargnames) AND d.distribution_argument_index IS NULL))
 ORDER BY 1"""


def distribute_functions(connection: Connection) -> list[str]:
    """ctxstore's SQL functions registered with Citus (see the module's docstring)."""
    found = connection.execute(text(_FUNCTIONS_TO_DISTRIBUTE), {"root": ROOT_TABLE}).all()
    for signature, by_session in found:
        if by_session:
            connection.execute(
                text(
                    "SELECT create_distributed_function(:f, distribution_arg_name => "
                    ":argument, colocate_with => :with)"
                ),
                {"f": signature, "argument": "p_session_id", "with": ROOT_TABLE},
            )
        else:
            connection.execute(text("SELECT create_distributed_function(:f)"), {"f": signature})
    return [str(signature) for signature, _ in found]


def _distribute_table(connection: Connection, table: str) -> None:
    colocate = "default" if table == ROOT_TABLE else ROOT_TABLE
    connection.execute(
        text("SELECT create_distributed_table(:t, :column, colocate_with => :with)"),
        {"t": table, "column": DISTRIBUTION_COLUMN, "with": colocate},
    )


class KeptDistributed:
    """While a migration runs on a distributed database: new session tables follow.

    Created on the migration's connection before Alembic is configured (one catalog read;
    inert on a database that is not distributed): ``on_version_apply`` runs in Alembic's
    callback at the end of each revision, and ``listening()`` holds the DDL hooks for the
    run.
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.active = is_distributed(connection)
        self._held: dict[str, list[ForeignKeyConstraint]] = {}

    @contextmanager
    def listening(self) -> Iterator[None]:
        if not self.active:
            yield
            return
        # A distribution and DDL in one transaction: one connection per node.
        self.connection.execute(text("SET citus.multi_shard_modify_mode TO 'sequential'"))
        event.listen(Table, "before_create", self._before_create)
        event.listen(Table, "after_create", self._after_create)
        try:
            yield
        finally:
            event.remove(Table, "before_create", self._before_create)
            event.remove(Table, "after_create", self._after_create)

    def _before_create(self, table: Table, connection: Connection, **_: Any) -> None:
        if (
            connection is not self.connection
            or DISTRIBUTION_COLUMN not in table.c
            or table.name in COORDINATOR_TABLES
            or table.name in REFERENCE_TABLES
        ):
            return
        # Created with keys to the sharded sessions and to a reference table, the table
        # could be neither local nor distributed: the keys come once it is distributed.
        held = [c for c in table.constraints if isinstance(c, ForeignKeyConstraint)]
        for constraint in held:
            table.constraints.discard(constraint)
        self._held[table.name] = held

    def _after_create(self, table: Table, connection: Connection, **_: Any) -> None:
        if connection is not self.connection or table.name not in self._held:
            return
        _distribute_table(connection, table.name)
        for constraint in self._held.pop(table.name):
            table.constraints.add(constraint)
            connection.execute(AddConstraint(constraint))

    def on_version_apply(self, *, step: Any, first: Callable[[], None], **_: Any) -> None:
        """Alembic's callback at the end of each revision (in its transaction): ``first``,
        then the session tables the revision made by other means than op.create_table, and
        the reference tables it (re-)created."""
        first()
        if not self.active or not step.is_upgrade:
            return
        sessions = session_tables(self.connection)
        # Reference tables first: a session table may hold a key to one, never to a
        # table on the coordinator.
        references = _reference_tables(self.connection, sessions)
        kinds = _kinds(self.connection, [*sessions, *references])
        for table in references:
            if kinds.get(table) != "reference":
                self.connection.execute(text("SELECT create_reference_table(:t)"), {"t": table})
        for table in sessions:
            if kinds.get(table) != "distributed":
                _distribute_table(self.connection, table)
        distribute_functions(self.connection)
