"""Bearer tokens: stored hashed, each with its scopes.

A token is 32 random bytes (``ctx_`` + base64url), so one SHA-256 is enough to store it:
nothing short enough to guess is ever hashed, and a slow hash would only add latency to
every request.  The service keeps the hashes only, from ``CTXSTORE_HTTP_TOKENS`` or the
file ``CTXSTORE_HTTP_TOKENS_FILE`` names, one entry a line (``;`` also separates)::

    # name        scopes       hash
    go-backend    read,write   sha256:9f86d081884c7d65...
    prometheus    admin        sha256:2c26b46b68ffc68f...

Scopes do not imply one another: ``read`` reads consultations (and builds contracts),
``write`` changes them, ``admin`` serves the operator's routes (health, readiness,
metrics).  A monitoring token sees no patient's words.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ctxstore.errors import ConfigurationError
from ctxstore.settings import Settings

TOKENS_ENV = "CTXSTORE_HTTP_TOKENS"
TOKENS_FILE_ENV = "CTXSTORE_HTTP_TOKENS_FILE"
SCOPES = ("read", "write", "admin")
_PREFIX = "ctx_"
_HASH = re.compile(r"sha256:([0-9a-f]{64})")
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")


@dataclass(frozen=True)
class Principal:
    """Who a request authenticated as: the token's name (never the token) and scopes."""

    name: str
    scopes: frozenset[str]


def token_hash(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token(name: str, scopes: Iterable[str]) -> tuple[str, str]:
    """A fresh token and the line that grants it (only the line is kept by the service)."""
    wanted = _checked_scopes(",".join(scopes), "the new token")
    _checked_name(name, "the new token")
    token = _PREFIX + secrets.token_urlsafe(32)
    return token, f"{name} {','.join(sorted(wanted))} {token_hash(token)}"


class TokenRegistry:
    """The hashes the service accepts, with their names and scopes."""

    def __init__(self, entries: dict[str, Principal]) -> None:
        if not entries:
            raise ConfigurationError(
                f"no API tokens: set {TOKENS_ENV} or {TOKENS_FILE_ENV} (make one with "
                "`ctxstore serve --new-token NAME:read,write`)"
            )
        self._by_hash = entries

    def __len__(self) -> int:
        return len(self._by_hash)

    def authenticate(self, token: str) -> Principal | None:
        # A dict lookup by the hash: its timing can only tell about the hash, which
        # reveals nothing of a 256-bit token.
        return self._by_hash.get(token_hash(token))

    @classmethod
    def parse(cls, text: str, *, source: str) -> TokenRegistry:
        entries: dict[str, Principal] = {}
        lines = [part for line in text.splitlines() for part in line.split(";")]
        for number, raw in enumerate(lines, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            where = f"{source}: entry {number}"
            if len(fields) != 3:
                # Never echo the entry: a token pasted by mistake would end up in a log.
                raise ConfigurationError(f"{where} is not 'name scopes sha256:hex'")
            name, scopes, hashed = fields
            _checked_name(name, where)
            if not _HASH.fullmatch(hashed):
                raise ConfigurationError(
                    f"{where}: the third field must be sha256: and 64 lowercase hex digits "
                    "(the token itself is never stored)"
                )
            if hashed in entries:
                raise ConfigurationError(f"{where}: the same token hash appears twice")
            entries[hashed] = Principal(name, _checked_scopes(scopes, where))
        return cls(entries)

    @classmethod
    def from_settings(cls, settings: Settings) -> TokenRegistry:
        """``CTXSTORE_HTTP_TOKENS``, else the file ``CTXSTORE_HTTP_TOKENS_FILE`` names."""
        if settings.http_tokens is not None:
            return cls.parse(settings.http_tokens.get_secret_value(), source=TOKENS_ENV)
        path = settings.http_tokens_file
        if path:
            try:
                content = Path(path).read_text(encoding="utf-8")
            except OSError as error:
                raise ConfigurationError(
                    f"cannot read the token file {path!r}: {error.strerror}"
                ) from None
            return cls.parse(content, source=path)
        return cls({})


def _checked_name(name: str, where: str) -> str:
    if not _NAME.fullmatch(name):
        # Not echoed either: it may be a token in the wrong field.
        raise ConfigurationError(f"{where}: a token's name is 1-64 letters, digits or _.@-")
    return name


def _checked_scopes(text: str, where: str) -> frozenset[str]:
    scopes = frozenset(part.strip() for part in text.split(",") if part.strip())
    unknown = sorted(scopes - set(SCOPES))
    if not scopes or unknown:
        raise ConfigurationError(
            f"{where}: scopes are a comma-separated list of {', '.join(SCOPES)}"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )
    return scopes
