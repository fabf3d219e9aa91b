"""``alembic/schema.sql`` is the schema the migrations make, and every function at head is
live or kept by the retirement rule."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path

import pytest
from alembic.util import load_python_file
from sqlalchemy import URL

from ctxstore.db import migrations
from tests.migrations.catalog import databases_differ
from tests.migrations.prerelease import REPO, SCHEMA_FILE, apply_schema_file, sqlscript
from tests.migrations.test_database_roles import run_sql, scalar

#: The retirement rule's list: function -> the release that drops it (docs/design.md,
#: "One live version of each function").  Revision 1002 wrote ctxstore_append_v7 out in
#: one function: what it called stays one release, for calls begun before it.  Revision
#: 1003 gave the save new versions: the previous release's processes call the old ones.
KEPT_UNTIL: dict[str, str] = {
    "ctxstore_append_v6": "1.1",
    "ctxstore_append_v2": "1.1",
    "ctxstore_insert_messages_v1": "1.1",
    "ctxstore_append_if_unchanged_v3": "1.1",
    "ctxstore_insert_messages_v2": "1.1",
    # Revision 1004 took them from the analytics role (they difference against the
    # months); the owner keeps them for the previous release's commands.
    "analytics_frequencies_v3": "1.2",
    "analytics_red_flags_v3": "1.2",
    "analytics_overview_v3": "1.2",
}
PUBLIC = "WHERE pronamespace = 'public'::regnamespace"
baseline = load_python_file(str(REPO / "alembic" / "versions"), "1000_baseline.py")


def test_the_migrations_make_the_schema_file(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    migrations.upgrade(empty_database_url, "head")
    asyncio.run(apply_schema_file(second_empty_database))
    assert scalar(second_empty_database, "SELECT count(*) FROM pg_proc " + PUBLIC) == 34
    assert databases_differ(empty_database_url, second_empty_database) == []


def test_the_baseline_reads_the_frozen_copy_once_a_revision_changes_the_schema() -> None:
    """docs/design.md, "Changing the schema": the baseline creates the schema it landed with,
    so the first revision after it freezes that file before changing schema.sql."""
    later = [
        path for path in (REPO / "alembic" / "versions").glob("*.py") if path.name[:4] > "1000"
    ]
    frozen = REPO / "alembic" / "frozen" / "schema-baseline.sql"
    if later:
        assert frozen.is_file(), f"{[p.name for p in later]} need {frozen.name}"
        assert frozen == baseline.SCHEMA_FILE
    else:
        assert baseline.SCHEMA_FILE == SCHEMA_FILE


def test_the_comparison_sees_a_changed_function_and_a_missing_grant(
    empty_database_url: URL, second_empty_database: URL
) -> None:
    """The comparison is not blind: one function body and one grant apart are caught."""
    asyncio.run(apply_schema_file(empty_database_url))
    asyncio.run(apply_schema_file(second_empty_database))

    analytics = scalar(
        second_empty_database,
        "SELECT quote_ident(role_name) FROM ctxstore_roles WHERE kind = 'analytics'",
    )
    run_sql(
        second_empty_database,
        "CREATE OR REPLACE FUNCTION ctxstore_purge_batch_v1(p_batch_size integer, "
        "p_age interval) RETURNS SETOF integer LANGUAGE sql AS 'SELECT 1'",
        f"REVOKE SELECT ON analytics_suppression FROM {analytics}",
    )
    found = databases_differ(empty_database_url, second_empty_database)
    assert any(line.startswith("functions:") for line in found)
    assert any(line.startswith("relation_grants:") for line in found)


SRC = Path(__file__).resolve().parents[2] / "src" / "ctxstore"
VERSION = re.compile(r"_v[0-9]+$")
CALL = re.compile(r"\b((?:ctxstore|analytics)_[a-z_0-9]+_v[0-9]+)\s*\(")


def called_by_src() -> set[str]:
    """The SQL functions ctxstore's code calls by name (in Python and in its .sql files)."""
    found: set[str] = set()
    for path in [*SRC.rglob("*.py"), *SRC.rglob("*.sql")]:
        found.update(CALL.findall(path.read_text(encoding="utf-8")))
    return found


def functions_and_callees(url: URL) -> dict[str, set[str]]:
    [found] = run_sql(url, "SELECT proname, prosrc FROM pg_proc " + PUBLIC)
    return {name: set(CALL.findall(source)) - {name} for name, source in found}


def live(functions: dict[str, set[str]], roots: set[str]) -> set[str]:
    """``roots`` and every function they call, directly or not."""
    reached, todo = set(), [name for name in roots if name in functions]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [callee for callee in functions[name] if callee in functions]
    return reached


def test_every_function_at_head_is_called_or_kept_by_the_retirement_rule(
    database_url: URL,
) -> None:
    """A function at head is called by ctxstore's code (or by a function it calls), or
    the retirement rule keeps it until a named release drops it."""
    functions = functions_and_callees(database_url)
    called = called_by_src()
    assert "ctxstore_append_v7" in called and "analytics_overview_v4" in called
    unaccounted = set(functions) - live(functions, called) - set(KEPT_UNTIL)
    assert not unaccounted, f"neither called nor kept by the retirement rule: {unaccounted}"
    assert not set(baseline.RETIRED_AT_1_0) & set(functions)
    # A kept function is one nothing live reaches any more.
    assert not set(KEPT_UNTIL) & live(functions, called)


def test_each_function_has_one_live_version(database_url: URL) -> None:
    """Beside the retirement rule's list, no two versions of one function are at head."""
    current = set(functions_and_callees(database_url)) - set(KEPT_UNTIL)
    versions = Counter(VERSION.sub("", name) for name in current)
    assert "ctxstore_append" in versions and "ctxstore_insert_messages" in versions
    assert [name for name, count in versions.items() if count > 1] == []


def test_the_rule_catches_a_function_nothing_calls() -> None:
    functions = {"ctxstore_a_v2": {"ctxstore_b_v1"}, "ctxstore_b_v1": set(), "ctxstore_a_v1": set()}
    assert set(functions) - live(functions, {"ctxstore_a_v2"}) == {"ctxstore_a_v1"}


def test_the_script_reader_fills_variables_and_splits_only_between_statements() -> None:
    script = """
    -- a comment; with a semicolon and :"owner_role"
    GRANT :"owner_role" TO CURRENT_USER;
    INSERT INTO t VALUES (:'app_role', ':''app_role;', :min_group_size, '1'::text, :unknown);
    CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; SELECT :'x' $body$;
    """
    variables = {"owner_role": 'o"1', "app_role": "a'b", "min_group_size": 5}
    assert sqlscript.statements(script, variables) == [
        'GRANT "o""1" TO CURRENT_USER',
        "INSERT INTO t VALUES ('a''b', ':''app_role;', 5, '1'::text, :unknown)",
        "CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; SELECT :'x' $body$",
    ]
    with pytest.raises(KeyError):
        sqlscript.statements('GRANT :"nobody" TO x;', variables)
