"""Alembic environment: async (asyncpg), NullPool, run under an advisory lock.

The logic is in ctxstore.db.migrations so that it is typed and tested.  This file is not a
revision: it imports ctxstore's current code (ctxstore.db.migrations, ctxstore.redaction)
and, through it, ctxstore's settings.  The revisions (versions/) never do: what they need
reaches them through Alembic's configuration, ``config.attributes["revision_settings"]``
(role names, the adopt-existing-roles override, the analytics group size) and
``config.attributes["migration_error"]``, which run_env sets from ctxstore's settings with
``alembic -x name=value`` arguments over them (ctxstore.db.migrations.X_SETTINGS); the
code a landed revision used of ctxstore is frozen beside them in frozen/.
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
