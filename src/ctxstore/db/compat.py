"""Whether this code can run on a database's schema: the one decision behind readiness,
the startup check and opening a store.

The database records its revision in ``alembic_version``; this code knows the revisions
of its own Alembic script directory.  From 1.0 on a revision only adds (docs/design.md),
so code N runs on schema N and on any schema a later release has added to:

- at this code's head: ready;
- ahead, at a revision this code does not know: only a later release can have written
  it, by additive revisions: ready;
- behind, at a revision this code knows that is not its head: not ready until
  ``ctxstore db upgrade`` runs;
- pre-release, at one of 0.x's revisions 0001-0026 (squashed into 1.0's baseline, so
  this code no longer knows them): behind too;
- missing, no ``alembic_version`` or no row in it: not ready until ``ctxstore db
  upgrade`` runs.

:func:`decide` is pure; :func:`read_revision` is the one query.  This module imports
nothing of ctxstore.db: ``migrations`` imports the pre-release revisions from here.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ctxstore.errors import ConfigurationError, MigrationError, SchemaMissingError

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

#: The revisions of ctxstore 0.x, squashed into 1.0's baseline.
PRERELEASE_REVISIONS = frozenset(f"{n:04d}" for n in range(1, 27))
#: Where every 0.x ``ctxstore db upgrade`` left a database: 1.0 upgrades from here only.
PRERELEASE_HEAD = "0026"

_UPGRADE = "run `ctxstore db upgrade` with the same database URL to apply the migrations"

log = logging.getLogger("ctxstore.schema")


class SchemaState(enum.Enum):
    """Where the database's schema stands against this code's migrations."""

    AT_HEAD = "at head"
    AHEAD = "ahead"
    BEHIND = "behind"
    PRERELEASE = "pre-release"
    MISSING = "missing"


#: The states this code runs on.
RUNNABLE = frozenset({SchemaState.AT_HEAD, SchemaState.AHEAD})


@dataclass(frozen=True)
class CodeRevisions:
    """The revisions this code's migrations hold, and their head."""

    head: str
    known: frozenset[str]

    @classmethod
    def of(cls, script: ScriptDirectory) -> CodeRevisions:
        heads = script.get_heads()
        if len(heads) != 1:
            raise MigrationError(f"expected one migration head, found {heads}")
        return cls(heads[0], frozenset(found.revision for found in script.walk_revisions()))


@dataclass(frozen=True)
class SchemaCheck:
    """What :func:`decide` found: the state, both revisions, and why in a sentence."""

    state: SchemaState
    #: The database's revision (None: no schema).
    revision: str | None
    #: This code's head revision.
    head: str
    reason: str

    @property
    def runnable(self) -> bool:
        """Whether this code can run on the schema (at its head, or ahead of it)."""
        return self.state in RUNNABLE

    def error(self, action: str) -> SchemaMissingError:
        """The error for ``action`` on a schema this code can't run on."""
        return SchemaMissingError(
            f"{action} failed: {self.reason}",
            current_revision=self.revision,
            head_revision=self.head,
            revision_read=True,
            action=action,
            reason=self.reason,
            schema_state=self.state.value,
        )


def decide(revision: str | None, code: CodeRevisions) -> SchemaCheck:
    """Whether code with ``code``'s migrations can run on a schema at ``revision``."""
    head = code.head
    needs = f"this ctxstore needs revision {head}"
    if revision is None:
        return SchemaCheck(
            SchemaState.MISSING,
            None,
            head,
            f"schema missing: the database has no ctxstore schema (no revision); {needs}: "
            f"{_UPGRADE}",
        )
    if revision == head:
        return SchemaCheck(
            SchemaState.AT_HEAD, revision, head, f"schema at revision {head}, this ctxstore's head"
        )
    # What the code knows comes first: before the 1.0 squash, 0.x's revisions are its own.
    if revision in code.known:
        return SchemaCheck(
            SchemaState.BEHIND,
            revision,
            head,
            f"schema behind: the database is at revision {revision}; {needs}: {_UPGRADE}",
        )
    if revision in PRERELEASE_REVISIONS:
        return SchemaCheck(
            SchemaState.PRERELEASE, revision, head, prerelease_reason(revision, head)
        )
    return SchemaCheck(
        SchemaState.AHEAD,
        revision,
        head,
        f"schema ahead at revision {revision}: a later release's additive revisions (this "
        f"ctxstore's head is {head}; it runs on a schema that only adds to its own)",
    )


def prerelease_reason(revision: str, head: str) -> str:
    """What a database at 0.x revision ``revision`` needs before code at ``head`` runs."""
    needs = f"this ctxstore needs revision {head}"
    said = f"schema of a pre-release: the database is at 0.x revision {revision}"
    if revision == PRERELEASE_HEAD:
        return f"{said}, the last 0.x head; {needs}: {_UPGRADE}"
    return (
        f"{said}, older than {PRERELEASE_HEAD}, the last 0.x head; {needs}, which upgrades "
        f"from {PRERELEASE_HEAD} only: upgrade the database to {PRERELEASE_HEAD} with "
        "ctxstore 0.x first (pip install 'ctxstore<1' && ctxstore db upgrade), then run "
        "`ctxstore db upgrade` with this ctxstore"
    )


class _Fetches(Protocol):
    async def fetchval(self, query: str, *args: object) -> Any: ...


async def read_revision(connection: _Fetches) -> str | None:
    """The revision ``alembic_version`` records (None: no table, or no row in it)."""
    # to_regclass first: a database without the table answers NULL, not an error (an
    # error in the server's log at every readiness probe of a fresh database).
    if not await connection.fetchval("SELECT to_regclass('alembic_version') IS NOT NULL"):
        return None
    found = await connection.fetchval("SELECT version_num FROM alembic_version")
    return None if found is None else str(found)


async def check(connection: _Fetches, code: CodeRevisions | None = None) -> SchemaCheck:
    """:func:`decide` on the database's revision, read on ``connection`` (by default
    against this code's migrations)."""
    return decide(await read_revision(connection), code or code_revisions())


def report(found: SchemaCheck) -> None:
    """Log what a check found, as one line with the state and both revisions: a warning
    when this code can't run on the schema, else for the record."""
    fields = {
        "schema_state": found.state.value,
        "schema_revision": found.revision,
        "head_revision": found.head,
    }
    line = "schema check: state=%s revision=%s head=%s: %s"
    level = logging.INFO if found.runnable else logging.WARNING
    log.log(level, line, found.state.value, found.revision, found.head, found.reason, extra=fields)


@cache
def code_revisions() -> CodeRevisions:
    """The revisions of this code's migrations (read once per process)."""
    # Alembic is imported here: opening a store is the first to need it.
    from alembic.script import ScriptDirectory  # noqa: PLC0415

    return CodeRevisions.of(ScriptDirectory(str(_script_folder())))


def _script_folder() -> Path:
    """The folders of ``migrations.script_location``, which this module can't import (it
    imports this one): inside the wheel, else the repository's."""
    package_dir = Path(__file__).resolve().parent.parent
    for folder in (package_dir / "_alembic", package_dir.parent.parent / "alembic"):
        if (folder / "env.py").is_file():
            return folder
    raise ConfigurationError("cannot find ctxstore's migrations (alembic/env.py)")
