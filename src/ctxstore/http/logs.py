"""The service's logging: one stderr handler, secrets masked, no driver text, each line of
a request tagged with its request id.

Two formats (CTXSTORE_HTTP_LOG_FORMAT): ``text``, the default, one readable line per
record; ``json``, one JSON object per line for a log pipeline (time, level, logger,
message, request_id, and the access line's fields).  The level (CTXSTORE_HTTP_LOG_LEVEL)
is the service's own loggers' and uvicorn's; the libraries' stay at WARNING at least
(SQLAlchemy's INFO would log statements and their parameters).

The request id is the caller's ``X-Request-ID`` when well-formed, else a new one
(:func:`request_id_of`); the middleware holds it in a context variable for the request's
duration, and the handler's filter puts it on every record logged meanwhile, a library's
too.  The access log (ctxstore.http.access) names the route template and the token's
name, never the path's ids or the token.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import uuid
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any, TextIO

from ctxstore.redaction import RedactingFilter

#: The loggers the level setting is for; the rest log WARNING and above (or the level,
#: when it is higher).
SERVICE_LOGGERS = ("ctxstore.http", "ctxstore.schema", "uvicorn.error")
#: The access line's fields, JSON keys of their own (``extra=`` of the record).
ACCESS_FIELDS = ("method", "route", "status", "duration_ms", "principal")
#: A caller's request id is taken as it is when it is 1 to 200 of these characters (the
#: OpenAPI document publishes it as the header's pattern).
REQUEST_ID_PATTERN = r"[A-Za-z0-9._:-]{1,200}"
_WELL_FORMED = re.compile(REQUEST_ID_PATTERN)
_QUIET_LOGGERS = ("sqlalchemy", "asyncpg")

#: The id of the request this task serves (None: outside a request).
_request_id: ContextVar[str | None] = ContextVar("ctxstore_http_request_id", default=None)


def request_id_of(given: bytes | None) -> str:
    """The caller's id (an ``X-Request-ID`` value) when well-formed, else a new one."""
    if given is not None:
        text = given.decode("latin-1").strip()
        if _WELL_FORMED.fullmatch(text):
            return text
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    """The id of the request being served (None outside one)."""
    return _request_id.get()


def serving(request_id: str) -> Token[str | None]:
    """Marks the rest of this task (and the tasks it starts) as serving ``request_id``;
    the token given back ends it (:func:`served`)."""
    return _request_id.set(request_id)


def served(token: Token[str | None]) -> None:
    _request_id.reset(token)


class RequestIdFilter(logging.Filter):
    """Puts the current request's id (or None) on each record as ``request_id``."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = _request_id.get()
        return True


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


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message``, then `` request_id=...`` within a request."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = getattr(record, "request_id", None)
        return f"{line} request_id={request_id}" if request_id else line


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id:
            entry["request_id"] = request_id
        for name in ACCESS_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)


def make_handler(log_format: str = "text", stream: TextIO | None = None) -> logging.Handler:
    """The service's handler: ``log_format`` (text or json) on ``stream`` (stderr), its
    records tagged with the request id, secrets masked, no driver text."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
    handler.addFilter(RequestIdFilter())
    handler.addFilter(_NoDriverText())
    handler.addFilter(RedactingFilter())
    return handler


def configure_logging(log_format: str = "text", level: str = "info") -> None:
    """One stderr handler for the service's process (each worker calls it too): the
    service, its schema check and uvicorn at ``level`` (INFO), WARNING at least for the
    rest, secrets masked, no driver text."""
    root = logging.getLogger()
    if any(getattr(handler, "_ctxstore_http", False) for handler in root.handlers):
        return
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = make_handler(log_format)
    handler._ctxstore_http = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    number = logging.getLevelNamesMapping()[level.upper()]
    root.setLevel(max(logging.WARNING, number))
    for name in SERVICE_LOGGERS:
        logging.getLogger(name).setLevel(number)
