"""Running the Alembic migrations: configuration, the advisory lock and lock_timeout.

``alembic/env.py`` only calls :func:`run_env`; the logic lives here so it is typed, tested
and shared by ``alembic`` itself and ``ctxstore db``.  The revisions import none of it:
what they need from ctxstore's settings they read from Alembic's configuration
(:class:`RevisionSettings`, ``alembic -x`` arguments over the settings: X_SETTINGS).
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import URL, Connection, text

from ctxstore.db import compat, roles
from ctxstore.db.distribute import KeptDistributed
from ctxstore.db.engine import (
    MIGRATION_DATABASE_URL_ENV,
    EngineSettings,
    behind_transaction_pooler,
    create_engine,
    normalize_url,
    redact,
)
from ctxstore.db.errors import reading_revision, translated
from ctxstore.db.tables import metadata
from ctxstore.errors import ConfigurationError, CtxStoreError, MigrationError
from ctxstore.settings import Settings, load_settings

#: pg_advisory_lock key: the bytes of "ctxstore" read as a big-endian integer.
MIGRATION_LOCK_KEY = int.from_bytes(b"ctxstore", "big")
DEFAULT_LOCK_TIMEOUT = "5s"
# How long a second migrator waits for the first to finish before giving up, asking for
# the lock this often.
ADVISORY_WAIT_SECONDS = 600.0
ADVISORY_POLL_SECONDS = 0.25
#: The revision that creates or takes over this database's roles: the 1.0 baseline.
BASELINE = "1000"
ROLE_REVISIONS = frozenset({BASELINE})
#: ``alembic -x name=value``: the settings (ctxstore.settings fields) a bare ``alembic``
#: run may give the revisions, over the variables they stand for.
X_SETTINGS = (
    "role_prefix",
    "owner_role",
    "app_role",
    "analytics_role",
    "adopt_existing_roles",
    "analytics_min_group_size",
)


def script_location() -> Path:
    """The folder holding env.py and versions/: inside the wheel, else the repository's."""
    package_dir = Path(__file__).resolve().parent.parent
    packaged = package_dir / "_alembic"
    if (packaged / "env.py").is_file():
        return packaged
    in_repo = package_dir.parent.parent / "alembic"
    if (in_repo / "env.py").is_file():
        return in_repo
    raise ConfigurationError("cannot find ctxstore's migrations (alembic/env.py)")


def alembic_config(
    database_url: str | URL | None = None,
    *,
    lock_timeout: str | None = None,
    settings: Settings | None = None,
) -> Config:
    """An Alembic Config for ctxstore's migrations, independent of any alembic.ini.

    ``settings``: the role names' and lock timeout's configuration; without it, env.py
    reads the environment (as ``alembic upgrade`` run by hand does)."""
    config = Config()
    config.set_main_option("script_location", str(script_location()))
    if settings is not None:
        config.attributes["settings"] = settings
    if database_url is not None:
        config.attributes["database_url"] = normalize_url(database_url)
    if lock_timeout is not None:
        config.attributes["lock_timeout"] = lock_timeout
    return config


def _settings(context: EnvironmentContext) -> Settings:
    """The run's settings: the caller's, else the environment's (env.py is an entry point:
    ``alembic upgrade head`` run by hand starts there), with ``alembic -x`` over them."""
    given = context.config.attributes.get("settings")
    if not isinstance(given, Settings):
        given = context.config.attributes["settings"] = load_settings()
    arguments = context.get_x_argument(as_dictionary=True)
    given = given.replaced({name: arguments[name] for name in X_SETTINGS if name in arguments})
    context.config.attributes["settings"] = given
    return given


def _resolve_url(context: EnvironmentContext) -> URL:
    config = context.config
    explicit = config.attributes.get("database_url")
    if explicit is not None:
        return normalize_url(explicit)
    x_url = context.get_x_argument(as_dictionary=True).get("database_url")
    return normalize_url(_settings(context).database_url_for(x_url, migrating=True))


def _lock_timeout(context: EnvironmentContext) -> str:
    value = context.config.attributes.get("lock_timeout")
    value = value or _settings(context).migration_lock_timeout
    return str(value or DEFAULT_LOCK_TIMEOUT)


class RevisionSettings(Mapping[str, object]):
    """What the revisions read from ``config.attributes["revision_settings"]`` (they import
    no ctxstore module and read no environment variable): ``role_names`` (owner, app,
    analytics), ``adopt_existing_roles`` and ``analytics_min_group_size``.

    Each comes from ``run`` (ctxstore's settings, ``alembic -x`` arguments over them,
    validated when they were read); the role names are worked out when a revision first
    reads them, inside the run.
    """

    def __init__(self, run: roles.MigrationRoles) -> None:
        self._sources: dict[str, Callable[[], object]] = {
            "role_names": lambda: {kind: run.names.of(kind) for kind in roles.KINDS},
            "adopt_existing_roles": lambda: run.adopt_existing,
            "analytics_min_group_size": lambda: run.min_group_size,
        }
        self._values: dict[str, object] = {}

    def __getitem__(self, name: str) -> object:
        if name not in self._values:
            self._values[name] = self._sources[name]()
        return self._values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sources)

    def __len__(self) -> int:
        return len(self._sources)


def _configure_revisions(context: EnvironmentContext, run: roles.MigrationRoles) -> None:
    """Hand the revisions what they need through Alembic's configuration (fresh for each
    run: a Config may serve several)."""
    context.config.attributes["revision_settings"] = RevisionSettings(run)
    context.config.attributes["migration_error"] = MigrationError


def _migrate_on(connection: Connection, context: EnvironmentContext, lock_timeout: str) -> None:
    # Wait for any other migrator under its own bound, then hold the session-level lock
    # for the whole run: two deploys running `alembic upgrade head` at once serialize,
    # and the second finds the schema at head and does nothing.
    session = _SessionMark(connection)
    session.lock()
    try:
        # DDL blocked by live traffic fails fast instead of queueing every request behind it.
        connection.execute(
            text("SELECT set_config('lock_timeout', :t, false)"), {"t": lock_timeout}
        )
        # On Citus: a revision's new session tables are distributed beside sessions.  (Read
        # before the commit: Alembic keeps a transaction open at configure() as its own.)
        kept = KeptDistributed(connection)
        connection.commit()
        context.configure(
            connection=connection,
            target_metadata=metadata,
            transaction_per_migration=True,
            compare_type=True,
            # In each revision's own transaction, before it commits.
            on_version_apply=lambda **step: kept.on_version_apply(first=session.check, **step),
        )
        # The revisions read this database's roles and the other settings from the
        # configuration (RevisionSettings), worked out by ctxstore.db.roles.
        database = connection.execute(text("SELECT current_database()")).scalar_one()
        run = roles.MigrationRoles(
            database, roles.recorded_role_names(connection), _settings(context)
        )
        _configure_revisions(context, run)
        _upgrade_prerelease(connection, context)
        if _upgrades_through(context, ROLE_REVISIONS):
            # Refuse before the first revision runs, not halfway through the upgrade.
            roles.check_adoptable(connection, run.names.all(), adopt_anyway=run.adopt_existing)
        connection.commit()
        with context.begin_transaction(), kept.listening():
            context.run_migrations()
        connection.commit()
    finally:
        if connection.in_transaction():
            connection.rollback()
        session.unlock()
        connection.commit()


class _SessionMark:
    """Proof that every transaction of a migration runs on the session holding its lock.

    Through a transaction pooler (PgBouncer, pool_mode=transaction) each transaction may
    run on another server connection: the advisory lock would stay on one of them and
    protect nothing.  A random mark set for the session travels with it; a transaction
    that doesn't see it is on another session, and the migration stops there (before any
    revision, or rolling back the revision that noticed: never half-applied).
    """

    _SEEN = "current_setting('ctxstore.migration_session', true) = :mark"

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.mark = secrets.token_hex(16)
        self.locked = False
        connection.execute(
            text("SELECT set_config('ctxstore.migration_session', :mark, false)"),
            {"mark": self.mark},
        )
        connection.commit()

    def lock(self) -> None:
        """Take the lock once no other migrator holds it (ADVISORY_WAIT_SECONDS at most).

        Asked for again and again, each time in a transaction of its own, rather than
        waited for in one statement: a waiting statement holds a snapshot, and a revision
        building an index CONCURRENTLY (under the lock) waits for every older snapshot to
        end, so the two would deadlock."""
        deadline = time.monotonic() + ADVISORY_WAIT_SECONDS
        while True:
            found = self.connection.execute(
                text(f"SELECT pg_try_advisory_lock(:key) WHERE {self._SEEN}"),
                {"key": MIGRATION_LOCK_KEY, "mark": self.mark},
            ).first()
            self.connection.commit()
            if found is None:
                raise _moved()
            if found[0]:
                self.locked = True
                return
            if time.monotonic() >= deadline:
                raise MigrationError(
                    f"another migration of this database held its lock for "
                    f"{ADVISORY_WAIT_SECONDS:.0f} s: nothing was applied; run again once it "
                    "is done"
                )
            time.sleep(ADVISORY_POLL_SECONDS)

    def check(self) -> None:
        seen = self.connection.execute(
            text(f"SELECT {self._SEEN}"), {"mark": self.mark}
        ).scalar_one()
        if not seen:
            raise _moved()

    def unlock(self) -> None:
        if self.locked:
            self.connection.execute(
                text(f"SELECT pg_advisory_unlock(:key) WHERE {self._SEEN}"),
                {"key": MIGRATION_LOCK_KEY, "mark": self.mark},
            )


def _moved() -> MigrationError:
    return MigrationError(
        "migrations need one server session for the whole run (they hold a session-level "
        "advisory lock), but this connection's transactions ran on different server "
        "sessions: the URL goes through a transaction pooler (e.g. PgBouncer with "
        f"pool_mode=transaction).  Nothing was applied past the last completed revision.  "
        f"Migrate over a direct connection: set {MIGRATION_DATABASE_URL_ENV} or pass "
        "--database-url with the server's own host and port"
    )


def refuse_transaction_pooler(url: URL) -> None:
    """A URL marked ``?pooling=transaction`` can't hold the migrations' session lock."""
    if behind_transaction_pooler(url):
        raise MigrationError(
            f"{redact(url)} goes through a transaction pooler (pooling=transaction): "
            "migrations hold a session-level advisory lock and need a direct connection; "
            f"set {MIGRATION_DATABASE_URL_ENV} to the server's own address"
        )


def _upgrade_prerelease(connection: Connection, context: EnvironmentContext) -> None:
    """A database where ctxstore 0.x left it (revision 0026) to the 1.0 baseline, in one
    transaction, before Alembic reads its revision; an older pre-release one is refused,
    saying what to run."""
    found = _recorded_revision(connection)
    if found not in compat.PRERELEASE_REVISIONS:
        return
    destination = context.get_revision_argument()
    if found != compat.PRERELEASE_HEAD:
        raise MigrationError(
            compat.prerelease_reason(found, context.script.get_current_head() or BASELINE)
        )
    if destination is None or str(destination).startswith("-"):
        raise MigrationError(
            f"this database is at pre-release revision {found}: ctxstore 1.x only upgrades "
            f"it (ctxstore db upgrade); downgrade it with ctxstore 0.x"
        )
    baseline = context.script.get_revision(BASELINE)
    if baseline is None:  # pragma: no cover - the baseline ships with the code
        raise MigrationError(f"the baseline revision {BASELINE} is missing")
    baseline.module.upgrade_from_prerelease(connection)
    connection.commit()


def _recorded_revision(connection: Connection) -> str | None:
    exists = connection.execute(text("SELECT to_regclass('alembic_version') IS NOT NULL"))
    if not exists.scalar_one():
        return None
    found = connection.execute(text("SELECT version_num FROM alembic_version")).scalar()
    connection.commit()
    return None if found is None else str(found)


def _upgrades_through(context: EnvironmentContext, revisions: frozenset[str]) -> bool:
    """Whether this run may upgrade the database through one of ``revisions`` (one not yet
    applied, and the destination at or above it; when unsure, yes)."""
    script = context.script
    applied: set[str] = set()
    for head in context.get_context().get_current_heads():
        applied.update(rev.revision for rev in script.iterate_revisions(head, "base"))
    pending = revisions - applied
    if not pending:
        return False
    destination = context.get_revision_argument()
    if destination is None:  # base: a downgrade
        return False
    if isinstance(destination, str) and destination.startswith("-"):
        return False
    try:
        reached = {rev.revision for rev in script.iterate_revisions(destination, "base")}
    except Exception:  # relative or partial identifiers: check, to be safe
        return True
    return bool(pending & reached)


async def _run_online(context: EnvironmentContext) -> None:
    url = _resolve_url(context)
    refuse_transaction_pooler(url)  # also for `alembic upgrade` run directly
    settings = EngineSettings(
        application_name="ctxstore-migrate",
        statement_timeout_ms=0,
        lock_timeout_ms=0,
        command_timeout=None,
    )
    engine = create_engine(url, settings, pooled=False)
    try:
        with translated(f"migrating {redact(url)}"):
            async with engine.connect() as connection:
                await connection.run_sync(_migrate_on, context, _lock_timeout(context))
    finally:
        await engine.dispose()


def run_env(context: EnvironmentContext) -> None:
    """The body of alembic/env.py."""
    if context.is_offline_mode():
        url = _resolve_url(context)
        context.configure(
            url=str(url),
            target_metadata=metadata,
            literal_binds=True,
            transaction_per_migration=True,
        )
        _configure_revisions(
            context, roles.MigrationRoles(url.database or "", None, _settings(context))
        )
        with context.begin_transaction():
            context.run_migrations()
        return
    shared: Any = context.config.attributes.get("connection")
    if shared is not None:
        _migrate_on(shared, context, _lock_timeout(context))
        return
    asyncio.run(_run_online(context))


def head_revision() -> str:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    if len(heads) != 1:
        raise MigrationError(f"expected one migration head, found {heads}")
    return heads[0]


def upgrade(database_url: str | URL, revision: str = "head", **options: Any) -> None:
    """Apply migrations up to ``revision``; raises MigrationError on failure."""
    _run(command.upgrade, database_url, revision, **options)


def downgrade(database_url: str | URL, revision: str, **options: Any) -> None:
    _run(command.downgrade, database_url, revision, **options)


def current(database_url: str | URL) -> str | None:
    """The revision the database is at (None for an empty database)."""

    async def read() -> str | None:
        engine = create_engine(database_url, pooled=False)
        try:
            with translated(reading_revision(engine.url)):
                async with engine.connect() as connection:
                    return await connection.run_sync(
                        lambda sync: MigrationContext.configure(sync).get_current_revision()
                    )
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _run(action: Any, database_url: str | URL, revision: str, **options: Any) -> None:
    refuse_transaction_pooler(normalize_url(database_url))
    config = alembic_config(
        database_url, lock_timeout=options.get("lock_timeout"), settings=options.get("settings")
    )
    try:
        action(config, revision)
    except (ConfigurationError, MigrationError):
        raise
    except CtxStoreError as error:
        raise MigrationError(f"{error} (target revision {revision})") from error
    except Exception as error:
        # Alembic's and the migrations' own messages, which may quote a URL.
        raise MigrationError(
            f"migrating {redact(normalize_url(database_url))} to {revision} failed: "
            f"{redact(str(error))}"
        ) from error
