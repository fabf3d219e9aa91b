"""The checks of a bundle record's fields: each failure is a BundleError naming the line
(``n``), so whoever holds a damaged bundle knows where to look."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ctxstore.errors import BundleError, CtxStoreError
from ctxstore.storage.bundle.format import store_time


def exact_fields(record: dict[str, Any], fields: set[str], n: int) -> None:
    """The record has ``fields``, no fewer and no more (a field this format lacks would
    be dropped silently, and the round trip no longer exact)."""
    if set(record) != fields:
        missing, extra = sorted(fields - set(record)), sorted(set(record) - fields)
        raise BundleError(f"line {n}: a {record.get('kind')} record lacks {missing} or has {extra}")


def checked(check: Callable[..., Any], n: int, *values: Any) -> Any:
    """``check(*values)`` (one of storage.rules' checks), its InvalidInputError told as
    this line's BundleError."""
    try:
        return check(*values)
    except BundleError:
        raise
    except CtxStoreError as error:
        raise BundleError(f"line {n}: {error.message}") from error


def positive_int(record: dict[str, Any], name: str, n: int) -> int:
    """A version: an integer from 1 (``true`` is not one, though Python says it is)."""
    value = record[name]
    if type(value) is not int or value < 1:
        raise BundleError(f"line {n}: {name} must be a positive integer, not {value!r}")
    return value


def written_time(record: dict[str, Any], name: str, n: int) -> datetime:
    """A time exactly as ``store_time`` writes it: any other spelling of the same instant
    would export differently, so it is refused."""
    value = record[name]
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.utcoffset() is None or store_time(moment) != value:
        raise BundleError(f"line {n}: {name} must be a time as a bundle writes it, not {value!r}")
    return moment
