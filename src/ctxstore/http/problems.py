"""Errors as RFC 9457 problem details: one stable ``type`` per ctxstore error.

A 4xx problem's ``detail`` is the ctxstore error's message, which only ever speaks of the
caller's own input.  A 5xx problem's ``detail`` is fixed text: the error behind it may
quote the driver, an address or a file, none of which a client needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from ctxstore.errors import (
    BundleError,
    ConfigurationError,
    ConflictError,
    ContractBudgetError,
    ContractVersionError,
    CorruptDataError,
    CtxStoreError,
    DatabaseNotFoundError,
    DataError,
    DataKeyDestroyedError,
    EncryptionKeyError,
    InputTooLargeError,
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    LegalHoldError,
    MessageTooLargeError,
    MigrationError,
    NotSupportedError,
    SchemaMissingError,
    SessionNotFoundError,
    SessionOwnerError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
    TokenizerUnavailableError,
    TooManyMessagesError,
    UnsupportedFormatError,
)

TYPE_BASE = "https://ctxstore.dev/problems/"
MEDIA_TYPE = "application/problem+json"


@dataclass(frozen=True)
class ProblemType:
    slug: str
    title: str
    status: int
    #: For 5xx: the detail every such response gives (None: the error's own message).
    fixed_detail: str | None = None

    @property
    def uri(self) -> str:
        return TYPE_BASE + self.slug


_UNAVAILABLE = "PostgreSQL is unavailable or did not answer in time; retry later"
_INTERNAL = "the server failed to complete the request; the operator's log says why"

#: Every ctxstore error class with its problem type; an error takes its nearest class's.
ERROR_TYPES: dict[type[CtxStoreError], ProblemType] = {
    InvalidInputError: ProblemType("invalid-input", "Invalid input", 422),
    InvalidSessionIdError: ProblemType("invalid-session-id", "Invalid session id", 422),
    InvalidMessageError: ProblemType("invalid-message", "Invalid message", 422),
    ContractBudgetError: ProblemType("contract-budget", "Token budget too small", 422),
    ContractVersionError: ProblemType("contract-version", "Unsupported contract version", 422),
    InputTooLargeError: ProblemType("input-too-large", "Input too large", 413),
    MessageTooLargeError: ProblemType("message-too-large", "Message too large", 413),
    TooManyMessagesError: ProblemType("too-many-messages", "Too many messages", 413),
    BundleError: ProblemType("invalid-bundle", "Invalid user bundle", 422),
    SessionNotFoundError: ProblemType("session-not-found", "Session not found", 404),
    # 412 when the request had a precondition (If-Match, If-None-Match: *), else 409.
    ConflictError: ProblemType("conflict", "Version conflict", 409),
    # Not a failed precondition: no version would make the write acceptable.
    SessionOwnerError: ProblemType("session-owner", "Session of another user", 409),
    # The owner placed a legal hold (`ctxstore hold`): no retry helps until it is lifted.
    LegalHoldError: ProblemType("legal-hold", "Under a legal hold", 409),
    StorageUnavailableError: ProblemType(
        "storage-unavailable", "Storage unavailable", 503, _UNAVAILABLE
    ),
    StorageTimeoutError: ProblemType("storage-timeout", "Storage timeout", 503, _UNAVAILABLE),
    MigrationError: ProblemType(
        "migration-error", "Schema not ready", 503, "the database schema is not ready"
    ),
    SchemaMissingError: ProblemType(
        "schema-missing",
        "Schema missing or behind",
        503,
        "the database schema is missing or behind this server's: run `ctxstore db upgrade`",
    ),
    StorageError: ProblemType("storage-error", "Storage error", 500, _INTERNAL),
    DataError: ProblemType("data-error", "Stored data unreadable", 500, _INTERNAL),
    CorruptDataError: ProblemType("corrupt-data", "Stored data corrupt", 500, _INTERNAL),
    UnsupportedFormatError: ProblemType(
        "unsupported-format", "Stored data in a newer format", 500, _INTERNAL
    ),
    ConfigurationError: ProblemType("configuration-error", "Server misconfigured", 500, _INTERNAL),
    DatabaseNotFoundError: ProblemType(
        "database-not-found", "Database not found", 503, "the configured database does not exist"
    ),
    EncryptionKeyError: ProblemType("encryption-key", "Encryption key missing", 500, _INTERNAL),
    # The user was erased while the write was in flight (the store already tried again).
    DataKeyDestroyedError: ProblemType("data-key-destroyed", "User erased during the write", 409),
    TokenizerUnavailableError: ProblemType(
        "tokenizer-unavailable", "Tokenizer unavailable", 500, _INTERNAL
    ),
    # A backend without the operation (a Redis store lists no user's sessions): retrying
    # the same server never helps, unlike a 503.
    NotSupportedError: ProblemType(
        "not-supported",
        "Not supported by this storage",
        501,
        "this server's storage can't do this operation",
    ),
    CtxStoreError: ProblemType("internal-error", "Internal error", 500, _INTERNAL),
}

# Problems of the HTTP layer itself (not ctxstore errors).
MALFORMED = ProblemType("malformed-request", "Malformed request", 400)
UNAUTHORIZED = ProblemType("unauthorized", "Unauthorized", 401)
FORBIDDEN = ProblemType("forbidden", "Forbidden", 403)
NOT_FOUND = ProblemType("not-found", "Not found", 404)
METHOD_NOT_ALLOWED = ProblemType("method-not-allowed", "Method not allowed", 405)
BODY_TOO_LARGE = ProblemType("body-too-large", "Request body too large", 413)
UNSUPPORTED_MEDIA_TYPE = ProblemType("unsupported-media-type", "Unsupported media type", 415)
INTERNAL = ProblemType("internal-error", "Internal error", 500, _INTERNAL)
# Answered before the application: by the connection's gate (ctxstore.http.connections),
# or, for a body that stops arriving, by the middleware.
TARGET_TOO_LONG = ProblemType("target-too-long", "Request target too long", 414)
HEAD_TOO_LARGE = ProblemType("head-too-large", "Request header fields too large", 431)
TIMED_OUT = ProblemType("request-timeout", "Request timeout", 408)
# An append's Idempotency-Key (ctxstore.http.idempotency).
KEY_REUSED = ProblemType("idempotency-key-reused", "Idempotency key reused", 422)
KEY_BUSY = ProblemType("idempotency-key-busy", "Idempotency key in use", 409)

HTTP_TYPES = (
    MALFORMED,
    UNAUTHORIZED,
    FORBIDDEN,
    NOT_FOUND,
    METHOD_NOT_ALLOWED,
    BODY_TOO_LARGE,
    UNSUPPORTED_MEDIA_TYPE,
    TARGET_TOO_LONG,
    HEAD_TOO_LARGE,
    TIMED_OUT,
    KEY_REUSED,
    KEY_BUSY,
)


def problem_type_of(error: CtxStoreError) -> ProblemType:
    for cls in type(error).__mro__:
        found = ERROR_TYPES.get(cls)
        if found is not None:
            return found
    return ERROR_TYPES[CtxStoreError]


class Problem(Exception):
    """Raised by the HTTP layer to answer with a problem (caught by the app's handler)."""

    def __init__(
        self,
        kind: ProblemType,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        **extensions: Any,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.headers = headers or {}
        self.extensions = extensions

    def response(self) -> Response:
        return problem_response(self.kind, self.detail, self.headers, **self.extensions)


def problem_response(
    kind: ProblemType,
    detail: str | None = None,
    headers: dict[str, str] | None = None,
    *,
    status: int | None = None,
    **extensions: Any,
) -> Response:
    code = status or kind.status
    body = {
        "type": kind.uri,
        "title": kind.title,
        "status": code,
        "detail": kind.fixed_detail or detail or kind.title,
        **extensions,
    }
    return Response(
        json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        status_code=code,
        headers=headers,
        media_type=MEDIA_TYPE,
    )


#: The expected version of a write with both If-Match and If-None-Match: *, which can't
#: both hold (the one needs the resource, the other its absence): no stored version is
#: this one, so the store refuses the write atomically and says where it stands.
NEVER_HOLDS = 2**63 - 1


def error_response(error: CtxStoreError, *, conditional: bool, retry_after: int) -> Response:
    """The problem for a ctxstore error raised by a request (``conditional``: it had
    If-Match or If-None-Match: *, so a version conflict is a failed precondition)."""
    kind = problem_type_of(error)
    headers: dict[str, str] = {}
    extensions: dict[str, Any] = {}
    status = kind.status
    message = error.message
    if isinstance(error, ConflictError) and not isinstance(error, SessionOwnerError):
        status = 412 if conditional else 409
        current = error.current_version
        if error.expected_version == NEVER_HOLDS:
            message = (
                "If-Match and If-None-Match: * never hold together: the one needs the "
                f"resource, the other its absence (its version is {current})"
            )
        if current is not None:
            extensions["current_version"] = current
            if current > 0:
                headers["ETag"] = etag(current)
    if status == 503:
        headers["Retry-After"] = str(retry_after)
    return problem_response(kind, message, headers, status=status, **extensions)


def etag(version: int) -> str:
    """A version as a strong entity tag."""
    return f'"{version}"'
