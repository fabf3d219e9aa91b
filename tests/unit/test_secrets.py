"""The one redaction rule (ctxstore.redaction) and the places that apply it, without a server.

The end-to-end checks (the real CLI, Alembic and the driver against PostgreSQL) are in
tests/integration/test_secrets_never_printed.py.
"""

from __future__ import annotations

import io
import logging

import asyncpg
import pytest
from sqlalchemy import make_url

from ctxstore.db.engine import create_engine, normalize_url
from ctxstore.db.engine import redact as engine_redact
from ctxstore.db.errors import translate_db_error
from ctxstore.errors import ConfigurationError
from ctxstore.redaction import MASK, RedactingFilter, redact, redact_log_records

SECRET = "S3cr3t-Zq9"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # user info, any scheme, with or without a user
        (f"postgresql://app:{SECRET}@db:5432/ctx", "postgresql://app:***@db:5432/ctx"),
        (f"postgresql+asyncpg://app:{SECRET}@db/ctx", "postgresql+asyncpg://app:***@db/ctx"),
        (f"postgres://:{SECRET}@db/ctx", "postgres://:***@db/ctx"),
        (f"redis://:{SECRET}@cache:6379/0", "redis://:***@cache:6379/0"),
        (f"redis://user:{SECRET}@cache:6379/0", "redis://user:***@cache:6379/0"),
        (f"rediss://user:{SECRET}@cache/0", "rediss://user:***@cache/0"),
        # an unencoded @, / or ? in the password: masked up to the host's @
        (f"postgresql://app:p@{SECRET}@db/ctx", "postgresql://app:***@db/ctx"),
        (f"postgresql://app:a/b?{SECRET}@db/ctx", "postgresql://app:***@db/ctx"),
        # a whole URL whose password or query value holds a blank (SQLAlchemy parses both)
        (f"postgresql://app:a b {SECRET}@db/ctx", "postgresql://app:***@db/ctx"),
        (
            f"postgresql://app@db/ctx?password=a b {SECRET}&ssl=require",
            "postgresql://app@db/ctx?password=***&ssl=require",
        ),
        # query-string and libpq keyword parameters that carry secrets
        (f"postgresql://app@db/ctx?password={SECRET}", "postgresql://app@db/ctx?password=***"),
        (
            f"postgresql://app@db/ctx?sslmode=require&sslpassword={SECRET}&ssl=1",
            "postgresql://app@db/ctx?sslmode=require&sslpassword=***&ssl=1",
        ),
        (f"postgresql://db/ctx?PASSWORD={SECRET}", "postgresql://db/ctx?PASSWORD=***"),
        (
            f"postgresql://db/ctx?oauth_client_secret={SECRET}",
            "postgresql://db/ctx?oauth_client_secret=***",
        ),
        (f"host=db password={SECRET} dbname=ctx", "host=db password=*** dbname=ctx"),
        (f"host=db password='{SECRET} x' dbname=ctx", "host=db password=*** dbname=ctx"),
        (f"PGPASSWORD={SECRET} psql", "PGPASSWORD=*** psql"),
        # a repr or JSON of the connection options
        (f"{{'user': 'app', 'password': '{SECRET}'}}", "{'user': 'app', 'password': ***}"),
        (f'{{"sslpassword": "{SECRET}"}}', '{"sslpassword": ***}'),
        # inside a message, twice
        (
            f"connecting to postgresql://a:{SECRET}@h/d failed; retried redis://:{SECRET}@r/0",
            "connecting to postgresql://a:***@h/d failed; retried redis://:***@r/0",
        ),
    ],
)
def test_redact_masks_every_form(text: str, shown: str) -> None:
    assert redact(text) == shown
    assert SECRET not in redact(text)
    assert redact(redact(text)) == redact(text)  # idempotent: masking twice changes nothing


@pytest.mark.parametrize(
    "text",
    [
        "postgresql+asyncpg://postgres@127.0.0.1:5432/test",  # no password: nothing to mask
        "Connect call failed ('127.0.0.1', 5433)",
        "the server refused the login; check the user and password in the database URL",
        "unknown database URL option 'sslpassword': the URL may set gsslib, host",
        'password authentication failed for user "app"',
        "redis://cache:6379/0",
    ],
)
def test_redact_leaves_text_without_secrets_alone(text: str) -> None:
    assert redact(text) == text


def test_redact_renders_a_sqlalchemy_url_with_its_secrets_masked() -> None:
    url = make_url(f"postgresql://app:{SECRET}@db/ctx?sslmode=require")
    assert redact(url) == "postgresql://app:***@db/ctx?sslmode=require"
    # The query string's password, which SQLAlchemy itself does not hide.
    raw = make_url(f"postgresql://app@db/ctx?password={SECRET}")
    assert SECRET in str(raw)
    assert SECRET not in redact(raw)
    assert engine_redact is redact  # one rule: db.engine re-exports it


@pytest.mark.parametrize(
    "raw",
    [
        f"postgresql://app@db/ctx?password={SECRET}",
        f"postgres://app@db/ctx?password={SECRET}&sslmode=require",
        f"postgresql+asyncpg://app:{SECRET}@db/ctx",
        f"postgresql://db/ctx?password={SECRET}",  # no user: libpq's default user
    ],
)
def test_the_engine_url_never_shows_the_password(raw: str) -> None:
    url = normalize_url(raw)
    assert url.password == SECRET  # still used to log in
    assert "password" not in url.query
    engine = create_engine(raw)
    try:
        for shown in (str(engine.url), repr(engine.url), str(engine.sync_engine.url)):
            assert SECRET not in shown
        assert SECRET not in repr(engine.sync_engine)
        assert SECRET not in engine.url.render_as_string()
    finally:
        engine.sync_engine.dispose()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (f"postgresql://app:{SECRET}@db/ctx?password={SECRET}", "a password both"),
        (f"postgresql://app@db/ctx?password={SECRET}&password=x", "more than once"),
        (f"postgresql://app:p@{SECRET}@db/ctx", "percent-encode @"),
        (f"postgresql://app@db/ctx?sslpassword={SECRET}", "unknown database URL option"),
        (f"postgresql://app@db/ctx?token={SECRET}", "unknown database URL option"),
        (f"postgresql://app:{SECRET}@[::1/ctx", "not a database URL"),
        (f"host=db password={SECRET}", "not a database URL"),
        (f"postgresql://app:{SECRET}@db:port/ctx", "the port must be a number"),
    ],
)
def test_a_refused_url_never_quotes_its_secret(raw: str, expected: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        normalize_url(raw)
    assert expected in str(caught.value)
    for shown in (str(caught.value), repr(caught.value), str(caught.value.details)):
        assert SECRET not in shown


def test_driver_messages_are_redacted_in_the_translated_error() -> None:
    quoting = OSError(f"could not reach postgresql://app:{SECRET}@db/ctx")
    error = translate_db_error(quoting, "connecting")
    assert SECRET not in str(error) and "postgresql://app:***@db/ctx" in str(error)
    client = asyncpg.exceptions.ClientConfigurationError(f"bad option password={SECRET}")
    error = translate_db_error(client, "connecting")
    assert SECRET not in str(error) and "password=***" in str(error)
    refused = asyncpg.exceptions.InvalidPasswordError(f"no: {{'password': '{SECRET}'}}")
    error = translate_db_error(refused, "connecting")
    assert SECRET not in repr(error) and "check the user and password" in str(error)


def test_the_log_filter_masks_messages_arguments_and_tracebacks() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("ctxstore.test_secrets")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("url %s", f"postgresql://a:{SECRET}@h/d")
        logger.warning(f"conninfo password={SECRET}")
        try:
            raise RuntimeError(f"redis://:{SECRET}@r/0 refused")
        except RuntimeError:
            logger.exception("failed")
        logger.warning("stack", stack_info=True, extra={"x": 1})
    finally:
        logger.removeHandler(handler)
    written = stream.getvalue()
    assert SECRET not in written
    assert "postgresql://a:***@h/d" in written and "password=***" in written
    assert "redis://:***@r/0 refused" in written  # the traceback's message line


def test_redact_log_records_filters_every_root_handler_once() -> None:
    root = logging.getLogger()
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root.addHandler(handler)
    before = {id(h): list(h.filters) for h in root.handlers}
    try:
        redact_log_records()
        redact_log_records()
        assert [type(f) for f in handler.filters].count(RedactingFilter) == 1
        logging.getLogger("sqlalchemy.engine.Engine").error(f"dsn password={SECRET}")
        assert SECRET not in stream.getvalue() and f"password={MASK}" in stream.getvalue()
    finally:
        for h in root.handlers:  # pytest's own handlers get their filters back
            h.filters[:] = before.get(id(h), h.filters)
        root.removeHandler(handler)
