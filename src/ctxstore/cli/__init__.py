"""The ``ctxstore`` command: one module per command (or group), each registering its
subparser with ``set_defaults(func=...)``; :func:`main` reads the settings once, runs the
command, and is the one place that turns ctxstore errors into messages and exit codes.
What a command does (beyond parsing its arguments) is in ``ctxstore.commands``.

- options.py: --database-url and the argument types the commands share;
- db.py: ``db upgrade|downgrade|current|distribute|roles|min-group-size``;
- analytics.py: ``analytics REPORT``;
- maintenance.py: ``upgrade-data``, ``recount``, ``seed-sample``, ``purge-expired``,
  ``rotate-keys``, ``erase-user``;
- bundle.py: ``export-user`` and ``import-user``;
- summarize.py, import_redis.py, serve.py, contract.py, demo.py, dev.py: the command each
  names (summarize.py: ``summarize-worker``);
- reference.py: docs/cli.md, generated from the parser.

Building the parser imports nothing beyond argparse and these modules (``ctxstore
--version`` and ``--help`` answer at once): each module imports what its command needs
(SQLAlchemy, asyncpg, pydantic's settings, tiktoken, the HTTP stack) in the function that
runs it, and the settings are read only once a command has been chosen
(tests/unit/test_cli_imports.py holds that).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ctxstore import __version__
from ctxstore.cli import (
    analytics,
    bundle,
    contract,
    db,
    demo,
    dev,
    holds,
    import_redis,
    ledger,
    maintenance,
    retention,
    serve,
    summarize,
)
from ctxstore.errors import CtxStoreError, SchemaMissingError
from ctxstore.redaction import redact, redact_log_records

if TYPE_CHECKING:
    from ctxstore.settings import Settings

#: In the order ``ctxstore --help`` lists them.
COMMANDS = (
    db, maintenance, holds, retention, bundle, ledger, summarize, import_redis, analytics, serve,
    contract, demo, dev,
)  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxstore", description="Durable conversation context on PostgreSQL."
    )
    parser.add_argument("--version", action="version", version=f"ctxstore {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    redact_log_records()  # ctxstore's, SQLAlchemy's and Alembic's records alike
    args = build_parser().parse_args(argv)
    settings: Settings | None = None
    try:
        from ctxstore import telemetry  # noqa: PLC0415 - not for --help and --version
        from ctxstore.settings import load_settings  # noqa: PLC0415 - pydantic, likewise

        settings = load_settings()
        telemetry.from_settings(settings)
        code: int = args.func(args, settings)
        sys.stdout.flush()  # here, where a closed pipe can still be handled
    except BrokenPipeError:
        # The reader went away (`ctxstore contract schema | head -1`): not an error of
        # ours; stdout goes to devnull so the interpreter's last flush doesn't fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except SchemaMissingError as error:
        print(f"ctxstore: error: {_with_revision(error, args, settings)}", file=sys.stderr)
        return 1
    except CtxStoreError as error:
        # Its message was redacted where it was made (redacting again would also mask the
        # postgresql://user:password@host examples the messages give).
        print(f"ctxstore: error: {error}", file=sys.stderr)
        return 1
    except Exception:
        # A bug, not a user error: its traceback, with any secret a message quoted masked.
        print(redact(traceback.format_exc()), file=sys.stderr, end="")
        return 1
    return code


def _with_revision(
    error: SchemaMissingError, args: argparse.Namespace, settings: Settings | None
) -> CtxStoreError:
    """The error again with the database's revision, read best-effort with one query."""
    if error.details.get("revision_read") or settings is None:
        return error
    from ctxstore.db import migrations  # noqa: PLC0415 - Alembic and SQLAlchemy
    from ctxstore.db.engine import normalize_url  # noqa: PLC0415
    from ctxstore.db.errors import schema_missing  # noqa: PLC0415

    try:
        url = settings.database_url_for(getattr(args, "database_url", None))
        current = migrations.current(normalize_url(url))
    except CtxStoreError:
        return error  # it already says to run `ctxstore db current`
    return schema_missing(
        str(error.details.get("action")),
        str(error.details.get("reason")),
        sqlstate=error.details.get("sqlstate"),
        current=current,
    )


if __name__ == "__main__":
    sys.exit(main())
