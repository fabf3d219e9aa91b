"""The service's logging: one stderr handler, secrets masked, no driver text.

The access log (ctxstore.http.access) names the route template and the token's name,
never the path's ids or the token.
"""

from __future__ import annotations

import logging
import sys

from ctxstore.redaction import RedactingFilter

_QUIET_LOGGERS = ("sqlalchemy", "asyncpg")


class _NoDriverText(logging.Filter):
    """Records of SQLAlchemy and asyncpg keep their own message but lose the traceback,
    which quotes the driver (and may quote a statement)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(_QUIET_LOGGERS) and record.exc_info:
            error = record.exc_info[1]
            record.msg = f"{record.getMessage()} ({type(error).__name__})"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def configure_logging() -> None:
    """One stderr handler for the service's process (each worker calls it too): INFO
    for the service, its schema check and uvicorn, WARNING for the rest, secrets masked,
    no driver text."""
    root = logging.getLogger()
    if any(getattr(handler, "_ctxstore_http", False) for handler in root.handlers):
        return
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(_NoDriverText())
    handler.addFilter(RedactingFilter())
    handler._ctxstore_http = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    for name in ("ctxstore.http", "ctxstore.schema", "uvicorn.error"):
        logging.getLogger(name).setLevel(logging.INFO)
