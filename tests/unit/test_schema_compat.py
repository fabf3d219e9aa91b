"""ctxstore.db.compat: whether code can run on a schema, decided from the database's
revision and the code's migrations alone (no database here)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory

from ctxstore.db import migrations
from ctxstore.db.compat import (
    PRERELEASE_HEAD,
    PRERELEASE_REVISIONS,
    CodeRevisions,
    SchemaState,
    code_revisions,
    decide,
    read_revision,
    report,
)
from ctxstore.errors import MigrationError, SchemaMissingError

#: Code of a release after 1.0: the baseline and one revision on it.
RELEASED = CodeRevisions(head="1001", known=frozenset({"1000", "1001"}))
UPGRADE = "run `ctxstore db upgrade`"


def test_at_head_the_code_runs() -> None:
    found = decide("1001", RELEASED)
    assert (found.state, found.runnable, found.revision, found.head) == (
        SchemaState.AT_HEAD,
        True,
        "1001",
        "1001",
    )


@pytest.mark.parametrize("revision", ["1002", "2000", "0027", "a1b2c3d4"])
def test_a_revision_the_code_does_not_know_is_a_later_releases_and_runs(revision: str) -> None:
    found = decide(revision, RELEASED)
    assert (found.state, found.runnable) == (SchemaState.AHEAD, True)
    assert found.reason.startswith(
        f"schema ahead at revision {revision}: a later release's additive revisions"
    )
    assert UPGRADE not in found.reason


def test_a_known_revision_before_head_is_behind() -> None:
    found = decide("1000", RELEASED)
    assert (found.state, found.runnable) == (SchemaState.BEHIND, False)
    assert "the database is at revision 1000; this ctxstore needs revision 1001" in found.reason
    assert UPGRADE in found.reason


def test_no_revision_is_a_missing_schema() -> None:
    found = decide(None, RELEASED)
    assert (found.state, found.runnable, found.revision) == (SchemaState.MISSING, False, None)
    assert "no ctxstore schema (no revision)" in found.reason and UPGRADE in found.reason


def test_the_last_prerelease_head_is_behind_and_upgrades_directly() -> None:
    found = decide(PRERELEASE_HEAD, RELEASED)
    assert (found.state, found.runnable) == (SchemaState.PRERELEASE, False)
    assert "0.x revision 0026, the last 0.x head" in found.reason and UPGRADE in found.reason
    assert "ctxstore 0.x first" not in found.reason


@pytest.mark.parametrize("revision", ["0001", "0010", "0025"])
def test_an_older_prerelease_revision_goes_through_0x_first(revision: str) -> None:
    found = decide(revision, RELEASED)
    assert (found.state, found.runnable) == (SchemaState.PRERELEASE, False)
    assert f"0.x revision {revision}, older than 0026" in found.reason
    assert "upgrade the database to 0026 with ctxstore 0.x first" in found.reason


def test_the_prerelease_revisions_are_0001_to_0026() -> None:
    assert len(PRERELEASE_REVISIONS) == 26
    assert min(PRERELEASE_REVISIONS) == "0001" and max(PRERELEASE_REVISIONS) == PRERELEASE_HEAD
    assert "0000" not in PRERELEASE_REVISIONS and "0027" not in PRERELEASE_REVISIONS


def test_code_that_still_holds_the_prerelease_revisions_decides_by_them() -> None:
    """Before the squash, 0026 is the head and 0025 a known revision behind it."""
    prerelease = CodeRevisions(head=PRERELEASE_HEAD, known=PRERELEASE_REVISIONS)
    assert decide("0026", prerelease).state is SchemaState.AT_HEAD
    behind = decide("0025", prerelease)
    assert behind.state is SchemaState.BEHIND and "ctxstore 0.x first" not in behind.reason
    assert decide("1000", prerelease).state is SchemaState.AHEAD


def test_the_error_names_the_action_both_revisions_and_the_fix() -> None:
    error = decide("1000", RELEASED).error("opening the store")
    assert isinstance(error, SchemaMissingError)
    assert str(error).startswith("opening the store failed: schema behind: ")
    assert (error.current_revision, error.head_revision) == ("1000", "1001")
    assert error.details["revision_read"] is True
    assert error.details["schema_state"] == "behind"


def test_the_codes_revisions_are_its_migrations() -> None:
    code = code_revisions()
    assert code.head == migrations.head_revision()
    script = ScriptDirectory.from_config(migrations.alembic_config())
    assert code.known == {found.revision for found in script.walk_revisions()}
    assert decide(code.head, code).state is SchemaState.AT_HEAD


def test_migrations_with_two_heads_are_refused(tmp_path: Path) -> None:
    versions = tmp_path / "versions"
    versions.mkdir()
    for name, down in (("a", None), ("b", "a"), ("c", "a")):
        (versions / f"{name}.py").write_text(
            f"revision = {name!r}\ndown_revision = {down!r}\n", encoding="utf-8"
        )
    script = ScriptDirectory(str(tmp_path))
    with pytest.raises(MigrationError, match="expected one migration head"):
        CodeRevisions.of(script)


class Answers:
    """A connection that answers ``fetchval`` from a script, recording the queries."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.queries: list[str] = []

    async def fetchval(self, query: str, *args: object) -> Any:
        self.queries.append(query)
        return self.answers.pop(0)


def test_the_revision_is_read_only_where_the_table_is() -> None:
    absent = Answers(False)
    assert asyncio.run(read_revision(absent)) is None
    assert len(absent.queries) == 1  # alembic_version itself never queried: no error logged
    assert asyncio.run(read_revision(Answers(True, None))) is None  # the table, empty
    assert asyncio.run(read_revision(Answers(True, "1001"))) == "1001"


def test_the_report_warns_when_the_code_cannot_run(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ctxstore.schema")
    report(decide("1000", RELEASED))
    report(decide("1002", RELEASED))
    behind, ahead = caplog.records
    assert behind.levelno == logging.WARNING
    assert behind.getMessage().startswith("schema check: state=behind revision=1000 head=1001: ")
    assert UPGRADE in behind.getMessage()
    assert ahead.levelno == logging.INFO
    assert ahead.getMessage().startswith("schema check: state=ahead revision=1002 head=1001: ")
    assert ahead.__dict__["schema_state"] == "ahead"  # for a structured handler
