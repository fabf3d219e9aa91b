"""Role names: one set per database, checked whole, bounded to PostgreSQL's 63 characters.

The variables are read by ctxstore.settings; the names derive from the settings."""

from __future__ import annotations

import re

import pytest

from ctxstore.db.roles import (
    ADOPT_ENV,
    ANALYTICS_ENV,
    APP_ENV,
    MAX_NAME_LENGTH,
    MIN_GROUP_SIZE_ENV,
    OWNER_ENV,
    PREFIX_ENV,
    MigrationRoles,
    RoleNames,
    database_part,
    derived_role_names,
    validate_role_name,
)
from ctxstore.errors import ConfigurationError
from ctxstore.settings import DEFAULT_MIN_GROUP_SIZE, Settings, load_settings

NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def role_names(database: str) -> RoleNames:
    """The names the environment's settings give ``database``."""
    return derived_role_names(database, load_settings())


def adopt_existing_roles() -> bool:
    return load_settings().adopt_existing_roles


def min_group_size_from_environment() -> int:
    return load_settings().analytics_min_group_size


@pytest.fixture(autouse=True)
def default_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (PREFIX_ENV, OWNER_ENV, APP_ENV, ANALYTICS_ENV, ADOPT_ENV, MIN_GROUP_SIZE_ENV):
        monkeypatch.delenv(name, raising=False)


def test_the_default_names_carry_the_database_name() -> None:
    assert role_names("consult_prod") == RoleNames(
        "ctxstore_consult_prod_owner",
        "ctxstore_consult_prod_app",
        "ctxstore_consult_prod_analytics",
    )


def test_the_prefix_still_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFIX_ENV, "acme")
    assert role_names("db1").app == "acme_db1_app"


@pytest.mark.parametrize(
    "database",
    ["my-db", "My_DB", "my_db", "Ünïcode база", "x" * 63, "a" * 40 + "-" + "b" * 22, "123"],
)
def test_any_database_name_gives_valid_names_of_at_most_63(database: str) -> None:
    names = role_names(database)
    for name in names.all():
        assert NAME.fullmatch(name) and len(name) <= MAX_NAME_LENGTH, name
    # the three share their middle
    middles = {name.removeprefix("ctxstore_").rsplit("_", 1)[0] for name in names.all()}
    assert len(middles) == 1
    assert role_names(database) == names  # deterministic


def test_databases_whose_plain_forms_meet_get_different_names() -> None:
    names = {role_names(database).app for database in ("my-db", "My_DB", "my_db", "my db")}
    assert len(names) == 4
    long_a, long_b = "x" * 60 + "a", "x" * 60 + "b"
    assert role_names(long_a).app != role_names(long_b).app


def test_a_plain_name_that_fits_stays_readable() -> None:
    assert database_part("consult_prod", 30) == "consult_prod"
    cut = database_part("consult-prod", 30)
    assert cut.startswith("consult_prod_") and len(cut) == len("consult_prod_") + 8
    assert len(database_part("y" * 100, 20)) == 20


@pytest.mark.parametrize(
    "bad", ["ctxstore_app\n", "ctxstore_app\r\n", "Ctxstore", "1abc", "a b", "a" * 64, "", "é"]
)
def test_role_names_are_checked_whole(bad: str) -> None:
    with pytest.raises(ConfigurationError, match="lower-case letters"):
        validate_role_name(bad, APP_ENV)


def test_predefined_role_names_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="PostgreSQL's own"):
        validate_role_name("pg_read_all_data", ANALYTICS_ENV)


@pytest.mark.parametrize("env", [PREFIX_ENV, OWNER_ENV, APP_ENV, ANALYTICS_ENV])
def test_a_trailing_newline_in_the_environment_is_refused(
    monkeypatch: pytest.MonkeyPatch, env: str
) -> None:
    monkeypatch.setenv(env, "ctxstore\n")
    with pytest.raises(ConfigurationError, match=env):
        role_names("db")


def test_explicit_names_stay_and_must_differ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(APP_ENV, "service")
    assert role_names("db") == RoleNames("ctxstore_db_owner", "service", "ctxstore_db_analytics")
    monkeypatch.setenv(ANALYTICS_ENV, "service")
    with pytest.raises(ConfigurationError, match="three different roles"):
        role_names("db")


def test_a_prefix_too_long_to_leave_room_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFIX_ENV, "p" * 45)
    with pytest.raises(ConfigurationError, match="at most 44 characters"):
        role_names("db")
    monkeypatch.setenv(PREFIX_ENV, "p" * 44)
    assert all(len(name) <= MAX_NAME_LENGTH for name in role_names("d" * 50).all())


def test_a_migration_uses_the_recorded_names_else_derives_them() -> None:
    assert MigrationRoles("db_a", None, Settings()).names.owner == "ctxstore_db_a_owner"
    recorded = RoleNames("o", "a", "an")
    # recorded by the baseline: kept after a rename or a copy
    assert MigrationRoles("renamed", recorded, Settings()).names == recorded


def test_a_recorded_role_is_not_silently_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(APP_ENV, "another")
    run = MigrationRoles("db", RoleNames("o", "a", "an"), load_settings())
    with pytest.raises(ConfigurationError) as caught:
        _ = run.names
    assert "already has its app role 'a'" in str(caught.value)


def test_settings_built_in_code_ignore_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PREFIX_ENV, "acme")
    assert derived_role_names("db1", Settings()).app == "ctxstore_db1_app"
    assert derived_role_names("db1", Settings(role_prefix="acme")).app == "acme_db1_app"


@pytest.mark.parametrize(
    ("value", "adopt"), [("1", True), ("yes", True), ("0", False), ("", False)]
)
def test_adopting_existing_roles_is_explicit(
    monkeypatch: pytest.MonkeyPatch, value: str, adopt: bool
) -> None:
    monkeypatch.setenv(ADOPT_ENV, value)
    assert adopt_existing_roles() is adopt


def test_an_unclear_adopt_value_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ADOPT_ENV, "sure")
    with pytest.raises(ConfigurationError, match=ADOPT_ENV):
        adopt_existing_roles()


@pytest.mark.parametrize(
    ("value", "expected"), [(None, DEFAULT_MIN_GROUP_SIZE), ("2", 2), ("50", 50)]
)
def test_the_min_group_size_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: int
) -> None:
    if value is not None:
        monkeypatch.setenv(MIN_GROUP_SIZE_ENV, value)
    assert min_group_size_from_environment() == expected


@pytest.mark.parametrize("value", ["1", "0", "-5", "five", "2.5", "10000000"])
def test_a_min_group_size_below_two_or_not_a_number_is_refused(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(MIN_GROUP_SIZE_ENV, value)
    with pytest.raises(ConfigurationError, match=MIN_GROUP_SIZE_ENV):
        min_group_size_from_environment()
