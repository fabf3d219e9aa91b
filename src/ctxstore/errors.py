"""One exception hierarchy for everything ctxstore raises.

Callers catch these, never asyncpg or SQLAlchemy exceptions: the storage backends route
every driver error through :func:`ctxstore.db.errors.translate_db_error`.  Each class's
docstring is its default message (the procrastinate idiom), so ``raise CorruptDataError()``
still says something useful.
"""

from __future__ import annotations

from typing import Any


class CtxStoreError(Exception):
    """A ctxstore operation failed."""

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or (type(self).__doc__ or "").strip()
        self.details = details
        super().__init__(self.message)


class InvalidInputError(CtxStoreError, ValueError):
    """The input was rejected; nothing was written."""


class InvalidSessionIdError(InvalidInputError):
    """The session id is not acceptable."""


class InvalidMessageError(InvalidInputError):
    """A message is not acceptable."""

    def __init__(
        self, message: str | None = None, *, position: int | None = None, **details: Any
    ) -> None:
        self.position = position
        if message and position is not None:
            message = f"message {position}: {message}"
        super().__init__(message, position=position, **details)


class SessionSettingsError(InvalidInputError, TypeError):
    """``session_settings`` the OpenAI Agents SDK would refuse: a ctxstore InvalidInputError
    that is also the TypeError the SDK's own sessions raise ("Unknown session settings:
    ...")."""


class InputTooLargeError(InvalidInputError):
    """An input is larger than a configured limit; nothing was written."""


class TooManyMessagesError(InputTooLargeError):
    """A session would hold more messages than the configured limit."""


class MessageTooLargeError(InvalidMessageError, InputTooLargeError):
    """A message is larger than the configured size limit."""


class BundleError(InvalidInputError):
    """The user bundle is not an intact ctxstore bundle (not one, another format version,
    truncated, a count or SHA-256 digest that doesn't match); nothing was imported."""


class ConflictError(CtxStoreError):
    """The stored version is not the one the caller expected."""

    def __init__(
        self,
        message: str | None = None,
        *,
        session_id: str | None = None,
        current_version: int | None = None,
        expected_version: int | None = None,
    ) -> None:
        self.session_id = session_id
        self.current_version = current_version
        self.expected_version = expected_version
        super().__init__(
            message,
            session_id=session_id,
            current_version=current_version,
            expected_version=expected_version,
        )

    @classmethod
    def stale(
        cls,
        what: str,
        current: int,
        expected: int | None,
        *,
        session_id: str | None = None,
    ) -> ConflictError:
        """``what`` (e.g. "session 's1'") is at ``current``, not the ``expected`` version."""
        return cls(
            f"{what} is at version {current}, not {expected}",
            session_id=session_id,
            current_version=current,
            expected_version=expected,
        )


class SessionOwnerError(ConflictError):
    """The session belongs to another user; nothing was written.

    A session keeps the user it was first written for, so that erasing that user finds
    it: a write naming another user is refused, whatever its expected version.
    """


class LegalHoldError(CtxStoreError):
    """What the call would delete is under a legal hold (``ctxstore hold``), named in the
    message; nothing was deleted.  Retrying helps only once the owner lifts the hold."""


class StorageUnavailableError(CtxStoreError):
    """The storage backend could not be reached or did not answer in time."""


class StorageTimeoutError(StorageUnavailableError):
    """The storage backend did not answer within the configured time."""


class StorageError(CtxStoreError):
    """The storage backend reported an unexpected error."""


class DataError(CtxStoreError):
    """Stored data could not be read back."""

    def __init__(
        self,
        message: str | None = None,
        *,
        session_id: str | None = None,
        position: int | None = None,
        **details: Any,
    ) -> None:
        self.session_id = session_id
        self.position = position
        where = []
        if session_id is not None:
            where.append(f"session {session_id!r}")
        if position is not None:
            where.append(f"position {position}")
        base = message or (type(self).__doc__ or "").strip()
        if where:
            base = f"{base} ({', '.join(where)})"
        super().__init__(base, session_id=session_id, position=position, **details)


class CorruptDataError(DataError):
    """Stored data is corrupt and cannot be read."""


class UnsupportedFormatError(DataError):
    """Stored data uses a format newer than this version of ctxstore knows."""


class NotSupportedError(CtxStoreError, NotImplementedError):
    """This backend can't do this operation (e.g. a Redis store holds no index of a user's
    sessions to list them by); nothing was read or written.  The other backends can."""

    def __init__(
        self,
        message: str | None = None,
        *,
        operation: str | None = None,
        backend: str | None = None,
    ) -> None:
        #: The operation refused (its method's name) and the backend's class name.
        self.operation = operation
        self.backend = backend
        super().__init__(message, operation=operation, backend=backend)


class ContractVersionError(CtxStoreError):
    """The Context Contract version is not one this receiver accepts."""


class ConfigurationError(CtxStoreError):
    """ctxstore is not configured correctly."""


class TokenizerUnavailableError(ConfigurationError):
    """A tiktoken encoding could not be loaded."""


class MissingExtraError(ConfigurationError, ImportError):
    """An adapter's framework is not installed (an ImportError too, for ``try: import``)."""


class EmbeddedServerUnavailableError(ConfigurationError):
    """The embedded PostgreSQL server cannot run here."""


class EncryptionKeyError(ConfigurationError):
    """A master or data key needed to encrypt or decrypt is missing or wrong."""


class DataKeyDestroyedError(EncryptionKeyError):
    """A write was sealed under a data key that was destroyed (its user erased) before the
    write committed; nothing of the write was kept.  The PostgreSQL store writes again
    under a fresh key, up to three tries in all, so a caller sees this only if they all
    fail."""


class DatabaseNotFoundError(ConfigurationError):
    """The database named in the URL does not exist on the server."""

    def __init__(self, message: str | None = None, *, database: str | None = None) -> None:
        self.database = database
        super().__init__(message, database=database)


class MigrationError(CtxStoreError):
    """A schema migration failed."""


class SchemaMissingError(MigrationError):
    """The database has no ctxstore schema, or an older one: run `ctxstore db upgrade`."""

    def __init__(
        self,
        message: str | None = None,
        *,
        current_revision: str | None = None,
        head_revision: str | None = None,
        **details: Any,
    ) -> None:
        #: The database's revision when it was read (None: no schema at all).
        self.current_revision = current_revision
        #: The revision this ctxstore needs (None when it could not be read).
        self.head_revision = head_revision
        super().__init__(
            message, current_revision=current_revision, head_revision=head_revision, **details
        )


class SessionNotFoundError(CtxStoreError):
    """The session does not exist."""

    def __init__(self, message: str | None = None, *, session_id: str | None = None) -> None:
        self.session_id = session_id
        super().__init__(message or f"session {session_id!r} does not exist", session_id=session_id)


class ContractBudgetError(InvalidInputError):
    """The required parts of the contract alone exceed the token budget."""

    def __init__(self, required: int, budget: int) -> None:
        self.required = required
        self.budget = budget
        super().__init__(
            f"the required parts (user message, consultation state, user profile) need "
            f"{required} tokens but token_budget is {budget}: {required - budget} over"
        )
