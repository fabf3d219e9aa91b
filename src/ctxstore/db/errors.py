"""Where PostgreSQL driver and network errors become ctxstore errors.

(Redis errors are translated by storage/redis/errors.py, which knows redis-py's classes.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import exc as sa_exc

from ctxstore.errors import (
    ConflictError,
    CtxStoreError,
    InvalidInputError,
    SessionNotFoundError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
)

# SQLSTATE classes and codes (PostgreSQL appendix A).
_UNAVAILABLE_CLASSES = ("08", "53", "57P", "58")
_TIMEOUT_CODES = {"57014", "55P03", "25P03"}  # query_canceled, lock_not_available, idle tx
_INVALID_INPUT_CODES = {
    "22021",  # character_not_in_repertoire
    "22P05",  # untranslatable_character (\u0000 in jsonb)
    "22001",  # string_data_right_truncation
    "22003",  # numeric_value_out_of_range
    "54000",  # program_limit_exceeded (e.g. a value too large to index)
}


def _sqlstate(error: BaseException) -> str | None:
    for candidate in (error, getattr(error, "orig", None), getattr(error, "__cause__", None)):
        code = getattr(candidate, "sqlstate", None) or getattr(candidate, "pgcode", None)
        if isinstance(code, str):
            return code
    return None


def translate_db_error(error: BaseException, action: str) -> CtxStoreError:
    """Map a driver, SQLAlchemy or network error to the ctxstore hierarchy."""
    if isinstance(error, CtxStoreError):
        return error
    code = _sqlstate(error)
    detail = f"{action} failed: {type(error).__name__}"
    if code:
        detail = f"{detail} (SQLSTATE {code})"
    if code == "55P03":
        return StorageTimeoutError(
            f"{action}: a lock was not granted within lock_timeout (another transaction holds it)",
            sqlstate=code,
        )
    if code == "57014":
        return StorageTimeoutError(f"{action}: cancelled by statement_timeout", sqlstate=code)
    if code in _TIMEOUT_CODES or isinstance(error, TimeoutError | asyncio.TimeoutError):
        return StorageTimeoutError(f"{action} timed out", sqlstate=code)
    if code in _INVALID_INPUT_CODES:
        return InvalidInputError(f"{action}: the database rejected a value", sqlstate=code)
    if code is not None and code.startswith(_UNAVAILABLE_CLASSES):
        return StorageUnavailableError(detail, sqlstate=code)
    if isinstance(error, OSError | ConnectionError):
        return StorageUnavailableError(detail)
    if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
        return StorageUnavailableError(detail)
    if isinstance(error, sa_exc.InterfaceError | sa_exc.OperationalError | sa_exc.TimeoutError):
        return StorageUnavailableError(detail)
    if _is_asyncpg_connection_error(error):
        return StorageUnavailableError(detail)
    return StorageError(detail, sqlstate=code)


def _is_asyncpg_connection_error(error: BaseException) -> bool:
    name = type(error).__name__
    return name in {
        "ConnectionDoesNotExistError",
        "InterfaceError",
        "InternalClientError",
        "ConnectionFailureError",
    }


@contextmanager
def translated(action: str, *, conflict_on_duplicate: bool = False) -> Iterator[None]:
    """Re-raise anything but a ctxstore error as one, keeping the original as the cause.

    ``conflict_on_duplicate``: for writes whose version is a key, a unique violation means
    a concurrent writer took that version (ConflictError), and a foreign-key violation
    means the session was deleted meanwhile (SessionNotFoundError).
    """
    try:
        yield
    except CtxStoreError:
        raise
    except Exception as error:
        if not isinstance(error, sa_exc.SQLAlchemyError | OSError | TimeoutError) and not type(
            error
        ).__module__.startswith("asyncpg"):
            raise
        code = _sqlstate(error)
        if conflict_on_duplicate and code == "23505":
            raise ConflictError(f"{action}: a concurrent writer stored that version") from error
        if conflict_on_duplicate and code == "23503":
            raise SessionNotFoundError(f"{action}: the session was deleted") from error
        raise translate_db_error(error, action) from error
