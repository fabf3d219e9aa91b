"""Secrets in URLs and text: the one rule for what ctxstore never prints or logs.

:func:`redact` masks, in a URL or in any text holding URLs:

- the password of a URL's user info, whatever the scheme (``postgresql://user:pw@host``,
  ``redis://:pw@host``, ``redis://user:pw@host``), up to the last ``@`` of the run of
  non-blank characters, so an unencoded ``@`` in the password is masked too; when the
  text is one URL (it starts with ``scheme://``), up to its last ``@`` and its query
  values up to the next ``&``, blanks included (SQLAlchemy's parser allows them);
- the value of every parameter whose name says it holds a secret (``password``,
  ``sslpassword``, ``passfile``, ``oauth_client_secret``, ``token``, ... : see
  :data:`SECRET_NAME`), written ``name=value`` (a URL's query string, a libpq
  ``key=value`` connection string, an environment assignment) or ``'name': 'value'``
  (a dict's or a JSON object's text).

A :class:`sqlalchemy.URL` (anything with ``render_as_string``) is rendered with its
password hidden first.  Over-masking is the safe failure: a non-secret value that follows
``passfile=`` is masked too.  Exact secret strings are not searched for: a password such
as "postgres" or "ctxstore" would mask every mention of the word.
"""

from __future__ import annotations

import logging
import re

MASK = "***"
#: A parameter name holding a secret: libpq's password, sslpassword, passfile (its path
#: is no secret, but masking it costs nothing), oauth_client_secret, and the usual others.
SECRET_NAME = r"[\w.-]*(?:pass|pwd|secret|token|credential|api_?key|private_?key)[\w.-]*"

# scheme://user:PASSWORD@ (the user may be empty: redis://:PASSWORD@host).
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*:)(?P<secret>\S*)@")
_QUOTED = r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""
# name=VALUE, in a query string, a libpq conninfo or an environment assignment.
_ASSIGNED = re.compile(
    rf"(?P<head>(?<![\w.-])(?:{SECRET_NAME})\s*=\s*)(?P<secret>{_QUOTED}|[^\s&]*)",
    re.IGNORECASE,
)
# 'name': 'VALUE' in a repr or JSON; an unquoted value after a colon is prose, not data.
_KEYED = re.compile(
    rf"(?P<head>(?P<q>['\"])(?:{SECRET_NAME})(?P=q)\s*:\s*)(?P<secret>{_QUOTED})",
    re.IGNORECASE,
)
# The same two, when the text is one URL: its parts may hold blanks.
_WHOLE_USERINFO = re.compile(
    r"\A(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*:)(?P<secret>.*)@", re.DOTALL
)
_WHOLE_QUERY = re.compile(rf"(?P<head>[?&](?:{SECRET_NAME})=)(?P<secret>[^&]*)", re.IGNORECASE)
_URL_START = re.compile(r"\A[A-Za-z][A-Za-z0-9+.-]*://")
_RULES = (_USERINFO, _ASSIGNED, _KEYED)


def _masked(match: re.Match[str]) -> str:
    secret = match.group("secret")
    if secret == MASK or not secret:
        return match.group(0)
    tail = match.group(0)[match.end("secret") - match.start() :]
    return f"{match.group('head')}{MASK}{tail}"


def redact(value: object) -> str:
    """``value`` as text with every secret masked; safe to print and log."""
    if isinstance(value, str):
        text = value
    else:
        render = getattr(value, "render_as_string", None)
        text = render(hide_password=True) if callable(render) else str(value)
    if _URL_START.match(text):
        text = _WHOLE_QUERY.sub(_masked, _WHOLE_USERINFO.sub(_masked, text))
    for rule in _RULES:
        text = rule.sub(_masked, text)
    return text


class RedactingFilter(logging.Filter):
    """A handler filter that masks secrets in each record's message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            # Formatted here, once: the formatter then uses this text as it is.
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def redact_log_records() -> None:
    """Mask secrets in everything the root logger's handlers write (a CLI's output).

    On the handlers, not the loggers: a logger's filter does not see its children's
    records (sqlalchemy.engine.Engine, alembic.runtime.migration, ...).
    """
    for handler in logging.getLogger().handlers:
        if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
            handler.addFilter(RedactingFilter())
