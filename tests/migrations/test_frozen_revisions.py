"""A revision imports no ctxstore module and reads no environment variable.

A landed revision must do years later what it did on release; what it needs comes from
Alembic's configuration (alembic/env.py), and the code it used of ctxstore is frozen
beside it in alembic/frozen/.  This guard reads every file under alembic/versions and
alembic/frozen, so a new revision can't slip.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import URL

from ctxstore.db import migrations
from ctxstore.db.roles import PREFIX_ENV
from tests.migrations.test_database_roles import recorded, run_sql, scalar
from tests.pg_harness import PgTestServer

REPO = Path(__file__).resolve().parents[2]
ALEMBIC = REPO / "alembic"
FILES = sorted([*(ALEMBIC / "versions").glob("*.py"), *(ALEMBIC / "frozen").glob("*.py")])
ENVIRONMENT_READS = {"environ", "getenv", "environb", "getenvb", "putenv", "unsetenv"}


def offences(tree: ast.AST) -> list[str]:
    """Where ``tree`` imports ctxstore or touches the process environment."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            modules = [node.module or ""]
            if node.module == "os":
                modules += [f"os.{a.name}" for a in node.names if a.name in ENVIRONMENT_READS]
        else:
            modules = []
        for module in modules:
            if module.split(".")[0] == "ctxstore" or module.startswith("os."):
                found.append(f"line {node.lineno}: imports {module}")
        if isinstance(node, ast.Attribute) and node.attr in ENVIRONMENT_READS:
            found.append(f"line {node.lineno}: reads .{node.attr}")
        named = node.value if isinstance(node, ast.Constant) else None
        if isinstance(named, str) and named.startswith("ctxstore.") and " " not in named:
            found.append(f"line {node.lineno}: names module {named!r}")
    return found


def test_the_guard_sees_each_way_in() -> None:
    source = """
import ctxstore
from ctxstore.db import roles
from os import environ
import os
os.getenv("CTXSTORE_ROLE_PREFIX")
importlib.import_module("ctxstore.db.roles")
"""
    assert len(offences(ast.parse(source))) == 5
    assert {path.name for path in FILES} >= {"1000_baseline.py", "roles.py", "sqlscript.py"}


@pytest.mark.parametrize("path", FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_a_revision_imports_no_ctxstore_and_reads_no_environment(path: Path) -> None:
    found = offences(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    assert not found, f"{path.name}: " + "; ".join(found)


def test_a_bare_alembic_run_gives_the_revisions_its_x_arguments(
    pg_server: PgTestServer, empty_database_url: URL
) -> None:
    """``alembic -x name=value`` over ctxstore's settings: the prefix, an explicit role
    name, the adopt-existing-roles override and the group size all reach the baseline."""
    prefix = f"{os.environ[PREFIX_ENV]}_x"
    app = f"{prefix}_app_{uuid.uuid4().hex[:6]}"
    run_sql(pg_server.url, f"CREATE ROLE {app} LOGIN")  # refused without the override
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSTORE_")}
        env["CTXSTORE_DATABASE_URL"] = empty_database_url.render_as_string(hide_password=False)
        arguments = {
            "role_prefix": prefix,
            "app_role": app,
            "adopt_existing_roles": "1",
            "analytics_min_group_size": "9",
        }
        result = subprocess.run(  # noqa: PLW1510 - the test reads returncode
            [
                str(Path(sys.executable).with_name("alembic")),
                *(f"-x{name}={value}" for name, value in arguments.items()),
                "upgrade",
                "head",
            ],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        roles = recorded(empty_database_url)
        assert roles.app == app
        assert roles.owner.startswith(f"{prefix}_") and roles.owner.endswith("_owner")
        assert roles.analytics.startswith(f"{prefix}_")
        assert scalar(empty_database_url, "SELECT min_group_size FROM analytics_suppression") == 9
        migrations.downgrade(empty_database_url, "base")
    finally:
        run_sql(pg_server.url, f"DROP ROLE IF EXISTS {app}")
