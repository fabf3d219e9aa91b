"""Which revisions must never stop the writers, and migrating through a copy of alembic/.

From the 1.0 baseline on, every revision adds constraints ``NOT VALID`` and validates them
in a later transaction, builds indexes ``CONCURRENTLY`` on tables that grow, backfills in
batches outside the DDL transaction and never rewrites messages, sessions or state tables
(issue 47).  The linter (``scripts/lint-migrations``), the writers' test
(``test_revisions_under_writers.py``) and the stall benchmark
(``benchmarks/bench_migration_stalls.py``) hold the same revisions to it: every revision of
the script directory but those in :data:`NOT_CHECKED`, today's and those added later.

The tests add example revisions to a copy of the script directory (:func:`scripts_with`)
and migrate through it (:func:`migrate`), so the real tree is never touched.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import URL

from ctxstore.db import compat, migrations

#: The revisions the rules above do not apply to: the pre-release history 0001-0026 (its
#: revisions ran as they landed, and the squash takes them out of the tree), and the 1.0
#: baseline "1000", which creates the tables on an empty database, so no writer is there
#: to stop.  Every other revision is checked.
NOT_CHECKED = compat.PRERELEASE_REVISIONS | {migrations.BASELINE}

Direction = Literal["upgrade", "downgrade"]


def script_directory(location: Path | None = None) -> ScriptDirectory:
    """The revisions of ``location`` (default: ctxstore's own alembic/)."""
    return ScriptDirectory(str(location or migrations.script_location()))


def ordered_revisions(location: Path | None = None) -> list[str]:
    """Every revision id of the script directory, from the base to the head."""
    return [
        script.revision for script in reversed(list(script_directory(location).walk_revisions()))
    ]


def checked_revisions(location: Path | None = None) -> list[str]:
    """The revisions held to the rules, from the oldest to the newest."""
    return [revision for revision in ordered_revisions(location) if revision not in NOT_CHECKED]


def parent_of(revision: str, location: Path | None = None) -> str | None:
    """The revision ``revision`` upgrades from (None: the empty database)."""
    found = script_directory(location).get_revision(revision)
    if found is None:
        raise LookupError(f"no revision {revision!r} in the script directory")
    down = found.down_revision
    if down is not None and not isinstance(down, str):
        raise ValueError(f"revision {revision} merges {down}: one parent expected")
    return down


def head_of(location: Path | None = None) -> str:
    head = script_directory(location).get_current_head()
    if head is None:
        raise LookupError("the script directory has no revision")
    return head


def migrate(url: URL, direction: Direction, revision: str, location: Path | None = None) -> None:
    """``ctxstore db upgrade``/``downgrade`` to ``revision``, through ``location``'s
    revisions when given (a copy of alembic/ with more of them)."""
    if location is None:
        getattr(migrations, direction)(url, revision)
        return
    config = migrations.alembic_config(url)
    config.set_main_option("script_location", str(location))
    getattr(command, direction)(config, revision)


def scripts_with(destination: Path, revisions: Mapping[str, str]) -> Path:
    """A copy of ctxstore's alembic/ in ``destination`` with ``revisions`` (file stem ->
    source) added to its versions/; the copy's folder."""
    copy = destination / "alembic"
    shutil.copytree(
        migrations.script_location(), copy, ignore=shutil.ignore_patterns("__pycache__")
    )
    for stem, source in revisions.items():
        (copy / "versions" / f"{stem}.py").write_text(source, encoding="utf-8")
    return copy


def revision_source(
    revision: str, down_revision: str, upgrade: str, downgrade: str, preamble: str = ""
) -> str:
    """The source of a revision file: ``upgrade`` and ``downgrade`` are the bodies of its
    functions, ``preamble`` what comes between its imports and its identifiers."""
    body = textwrap.dedent(
        '''\
        """Example revision {revision} (a test's, in a copy of alembic/)."""

        from __future__ import annotations

        from alembic import op

        {preamble}

        revision = {revision!r}
        down_revision = {down_revision!r}
        branch_labels = None
        depends_on = None


        def upgrade() -> None:
        {upgrade}


        def downgrade() -> None:
        {downgrade}
        '''
    )
    return body.format(
        revision=revision,
        down_revision=down_revision,
        preamble=textwrap.dedent(preamble).strip(),
        upgrade=textwrap.indent(textwrap.dedent(upgrade).strip(), "    "),
        downgrade=textwrap.indent(textwrap.dedent(downgrade).strip(), "    "),
    )
