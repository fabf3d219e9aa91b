"""Alembic environment: async (asyncpg), NullPool, run under an advisory lock.

The logic is in ctxstore.db.migrations so that it is typed and tested.
"""

from __future__ import annotations

from logging.config import fileConfig

from alembic import context

from ctxstore.db.migrations import run_env
from ctxstore.redaction import redact_log_records

if context.config.config_file_name is not None:
    fileConfig(context.config.config_file_name, disable_existing_loggers=False)
    redact_log_records()  # the handlers alembic.ini made print no password either

run_env(context)
