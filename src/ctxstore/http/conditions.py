"""Conditional requests (RFC 9110 section 13) over ctxstore's versions.

A resource's version is its strong ETag, ``"7"``.  On a write, ``If-Match: "7"`` becomes
``expected_version=7`` and ``If-None-Match: *`` becomes ``expected_version=0`` (create
only): the store checks either atomically with the write, and its ConflictError becomes
412.  Nothing here reads the store: a precondition is never checked by a read before
the write, which another writer could slip between.
"""

from __future__ import annotations

import re

from ctxstore.errors import ConflictError
from ctxstore.http.problems import MALFORMED, Problem
from ctxstore.storage.rules import NEW_SESSION

#: The OpenAPI pattern of a version tag (If-Match takes exactly one).
ETAG_PATTERN = r'^"[1-9][0-9]{0,18}"$'
_STRONG = re.compile(r'"([1-9][0-9]{0,18})"')
_ANY_TAG = re.compile(r'\s*(W/)?"([^"]*)"\s*')
_MAX_VERSION = 2**63 - 1


def write_expectation(if_match: str | None, if_none_match: str | None) -> int | None:
    """The ``expected_version`` a write's preconditions ask for (None: unconditional)."""
    if if_match is not None and if_none_match is not None:
        raise Problem(MALFORMED, "give If-Match or If-None-Match, not both")
    if if_none_match is not None:
        if if_none_match.strip() != "*":
            raise Problem(
                MALFORMED, "a write takes If-None-Match: * (create only), not a list of tags"
            )
        return NEW_SESSION
    if if_match is not None:
        return _one_version(if_match)
    return None


def _one_version(value: str) -> int:
    found = _STRONG.fullmatch(value.strip())
    version = int(found.group(1)) if found else 0
    if not found or version > _MAX_VERSION:
        raise Problem(
            MALFORMED,
            'If-Match takes one strong tag, the version the client holds, e.g. If-Match: "7" '
            "(not *, a weak tag or a list)",
        )
    return version


def not_modified(if_none_match: str | None, version: int) -> bool:
    """Whether a GET's ``If-None-Match`` matches the current version (weak comparison)."""
    if if_none_match is None or version <= 0:
        return False
    value = if_none_match.strip()
    if value == "*":
        return True
    current = str(version)
    position = 0
    while position < len(value):
        found = _ANY_TAG.match(value, position)
        if found is None:
            raise Problem(MALFORMED, 'If-None-Match is "*" or a comma-separated list of tags')
        if found.group(2) == current:
            return True
        position = found.end()
        if position < len(value):
            if value[position] != ",":
                raise Problem(MALFORMED, 'If-None-Match is "*" or a comma-separated list of tags')
            position += 1
    return False


def check_match(if_match: str | None, version: int) -> None:
    """A read's ``If-Match`` (RFC 9110 section 13.1.1): ``*`` or a list of tags, compared
    strongly with the current version; false is 412, on a GET as on a write."""
    if if_match is None:
        return
    value = if_match.strip()
    if value == "*" and version > 0:
        return
    if value != "*" and str(version) in _strong_tags(value):
        return
    raise ConflictError(
        f"If-Match {value} does not match the current version {version}",
        current_version=version,
    )


def _strong_tags(value: str) -> set[str]:
    tags: set[str] = set()
    for element in value.split(","):
        if not element.strip():
            continue  # RFC 9110 section 5.6.1: empty list elements are ignored
        found = _ANY_TAG.fullmatch(element)
        if found is None:
            raise Problem(MALFORMED, 'If-Match is "*" or a comma-separated list of tags')
        if found.group(1) is None:  # a weak tag never matches strongly
            tags.add(found.group(2))
    return tags
