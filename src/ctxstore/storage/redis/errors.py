"""Redis and network errors as ctxstore errors."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ctxstore.errors import (
    CtxStoreError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
)


@contextmanager
def translated_redis(action: str) -> Iterator[None]:
    """Re-raise a Redis or network error as a ctxstore error, keeping it as the cause.

    Connection problems and timeouts become StorageUnavailableError (a timeout its
    subclass StorageTimeoutError); any other Redis error is a StorageError.
    """
    try:
        yield
    except CtxStoreError:
        raise
    except Exception as error:
        problem = _translate(error, action)
        if problem is None:
            raise
        raise problem from error


def _translate(error: Exception, action: str) -> CtxStoreError | None:
    timeouts: tuple[type[Exception], ...] = (TimeoutError,)
    unreachable: tuple[type[Exception], ...] = (OSError,)
    others: tuple[type[Exception], ...] = ()
    try:
        from redis import exceptions as redis_errors  # noqa: PLC0415 - optional dependency
    except ImportError:  # pragma: no cover - then no Redis client raised it
        pass
    else:
        timeouts += (redis_errors.TimeoutError,)
        unreachable += (redis_errors.ConnectionError, redis_errors.ReadOnlyError)
        others += (redis_errors.RedisError,)
    if isinstance(error, timeouts):
        return StorageTimeoutError(f"{action} timed out")
    detail = f"{action} failed: {type(error).__name__}: {str(error)[:200]}"
    if isinstance(error, unreachable):
        return StorageUnavailableError(detail)
    if isinstance(error, others):
        return StorageError(detail)
    return None
