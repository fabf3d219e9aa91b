"""Revisions 0004, 0008 and 0009 run exactly the SQL they ran before they were frozen.

Every statement each of them executes, up and down, against a fresh database, recorded
through SQLAlchemy's ``before_cursor_execute`` with its parameters, is compared byte for
byte with ``golden/revision_sql.json``.  The golden file was recorded from the code of
main before the revisions stopped importing ctxstore (when they still read their settings
from the environment), for two sets of settings: the defaults, and explicit role names
with the adopt-existing-roles override and a minimum group size.  Only what differs from
run to run is replaced: the database's name, its role names and the migrating user.

Regenerate (only when a revision's SQL is meant to change, which for a landed revision is
never): ``python -m tests.migrations.test_revision_sql``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

from ctxstore.db import migrations
from ctxstore.db.roles import (
    ADOPT_ENV,
    ANALYTICS_ENV,
    APP_ENV,
    MIN_GROUP_SIZE_ENV,
    OWNER_ENV,
    PREFIX_ENV,
)
from tests.pg_harness import PgTestServer, start_server

GOLDEN = Path(__file__).parent / "golden" / "revision_sql.json"
FROZEN_REVISIONS = ("0004", "0008", "0009")
SETTING_ENVS = (OWNER_ENV, APP_ENV, ANALYTICS_ENV, ADOPT_ENV, MIN_GROUP_SIZE_ENV)
# Alembic logs "Running upgrade 0003 -> 0004, ..." just before it calls the revision, and
# writes alembic_version just after it returns.
_RUNNING = re.compile(r"Running (upgrade|downgrade) (\S*) -> ([^\s,]+)")
_VERSION_TABLE = re.compile(r"\s*(UPDATE|INSERT INTO|DELETE FROM) alembic_version\b")

Recording = list[tuple[str, str]]


def scenarios(role_prefix: str) -> dict[str, dict[str, str]]:
    """The settings each scenario migrates with: name -> {what: value}."""
    return {
        "defaults": {},
        "explicit": {
            "owner_role": f"{role_prefix}_gold_owner",
            "app_role": f"{role_prefix}_gold_app",
            "analytics_role": f"{role_prefix}_gold_analytics",
            "adopt_existing_roles": "1",
            "analytics_min_group_size": "7",
        },
    }


_ENV_OF = {
    "owner_role": OWNER_ENV,
    "app_role": APP_ENV,
    "analytics_role": ANALYTICS_ENV,
    "adopt_existing_roles": ADOPT_ENV,
    "analytics_min_group_size": MIN_GROUP_SIZE_ENV,
}


class _Markers(logging.Handler):
    def __init__(self, recording: Recording) -> None:
        super().__init__(logging.INFO)
        self.recording = recording

    def emit(self, record: logging.LogRecord) -> None:
        found = _RUNNING.match(record.getMessage())
        if found:
            direction, source, target = found.groups()
            revision = target if direction == "upgrade" else source
            self.recording.append(("#", f"{direction} {revision}"))


@contextmanager
def recorded() -> Iterator[Recording]:
    """Every statement any engine executes, and alembic's "Running ..." markers."""
    recording: Recording = []

    def on_execute(*args: Any) -> None:
        statement, parameters = args[2], args[3]
        recording.append((statement, repr(parameters)))

    logger = logging.getLogger("alembic.runtime.migration")
    level = logger.level
    markers = _Markers(recording)
    logger.addHandler(markers)
    logger.setLevel(logging.INFO)
    event.listen(Engine, "before_cursor_execute", on_execute)
    try:
        yield recording
    finally:
        event.remove(Engine, "before_cursor_execute", on_execute)
        logger.removeHandler(markers)
        logger.setLevel(level)


def revision_statements(recording: Recording) -> dict[str, list[list[str]]]:
    """The frozen revisions' own statements, keyed "upgrade 0004", "downgrade 0004", ..."""
    steps: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for statement, parameters in recording:
        if statement == "#":
            current = steps.setdefault(parameters, [])
        elif current is not None:
            if _VERSION_TABLE.match(statement):
                current = None
            else:
                current.append([statement, parameters])
    return {
        step: statements
        for step, statements in steps.items()
        if step.split()[1] in FROZEN_REVISIONS
    }


def normalized(text: str, replacements: dict[str, str]) -> str:
    for value in sorted(replacements, key=len, reverse=True):
        text = text.replace(value, replacements[value])
    return text


def record_scenario(server: PgTestServer, settings: dict[str, str]) -> dict[str, Any]:
    """Upgrade a fresh database to head and back down to 0003 under ``settings``; the
    frozen revisions' statements, normalized."""
    from ctxstore.db.roles import derived_role_names  # noqa: PLC0415
    from ctxstore.settings import load_settings  # noqa: PLC0415

    name = server.new_name("golden")
    url = server.create(name)
    saved = {env: os.environ.get(env) for env in SETTING_ENVS}
    try:
        for env in SETTING_ENVS:
            os.environ.pop(env, None)
        for what, value in settings.items():
            os.environ[_ENV_OF[what]] = value
        roles = derived_role_names(name, load_settings())
        with recorded() as recording:
            migrations.upgrade(url, "head")
            migrations.downgrade(url, "0003")
    finally:
        for env, value in saved.items():
            if value is None:
                os.environ.pop(env, None)
            else:
                os.environ[env] = value
        server.drop(name)
    replacements = {
        roles.owner: "<owner>",
        roles.app: "<app>",
        roles.analytics: "<analytics>",
        name: "<database>",
        f'"{url.username}"': '"<migrator>"',
    }
    return {
        step: [[normalized(part, replacements) for part in pair] for pair in statements]
        for step, statements in revision_statements(recording).items()
    }


def record_all(server: PgTestServer) -> dict[str, Any]:
    return {
        scenario: record_scenario(server, settings)
        for scenario, settings in scenarios(os.environ[PREFIX_ENV]).items()
    }


def test_frozen_revisions_run_the_sql_they_ran_before(pg_server: PgTestServer) -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    actual = record_all(pg_server)
    for scenario, steps in expected.items():
        assert set(actual[scenario]) == set(steps), scenario
        assert {
            f"{way} {rev}" for way in ("upgrade", "downgrade") for rev in FROZEN_REVISIONS
        } == set(steps)
        for step, statements in steps.items():
            assert actual[scenario][step] == statements, f"{scenario}: {step}"


def main() -> None:
    server = start_server()
    try:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(
            json.dumps(record_all(server), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    finally:
        server.close()
    print(f"wrote {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    main()
