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
from ctxstore.http.problems import MALFORMED, NEVER_HOLDS, Problem
from ctxstore.storage.rules import NEW_SESSION

#: The OpenAPI pattern of a version tag (If-Match takes exactly one).
ETAG_PATTERN = r'^"[1-9][0-9]{0,18}"$'
_STRONG = re.compile(r'"([1-9][0-9]{0,18})"')
_MAX_VERSION = 2**63 - 1
_OWS = "[ \\t]*"
_TAG = '(W/)?"([!#-~]*)"'  # RFC 9110 section 8.8.3 (ASCII etagc): weakness, opaque tag
_ANY_TAG = '(?:W/)?"[!#-~]*"'  # the same, nothing captured
#: The OpenAPI pattern of a read's If-Match and If-None-Match, and what the server takes:
#: * or a list of entity tags, optional whitespace around them, empty elements ignored
#: (RFC 9110 section 5.6.1).
TAG_LIST_PATTERN = rf"^{_OWS}(?:\*|(?:,{_OWS})*{_ANY_TAG}(?:{_OWS},(?:{_OWS}{_ANY_TAG})?)*){_OWS}$"
_TAG_LIST = re.compile(TAG_LIST_PATTERN)
_TAGS = re.compile(_TAG)


def write_expectation(if_match: str | None, if_none_match: str | None) -> int | None:
    """The ``expected_version`` a write's preconditions ask for (None: unconditional).
    Both headers can't hold at once (RFC 9110 section 13.2.2 evaluates both): 412."""
    if if_none_match is not None and if_none_match.strip() != "*":
        raise Problem(MALFORMED, "a write takes If-None-Match: * (create only), not a list of tags")
    expected = _one_version(if_match) if if_match is not None else None
    if if_none_match is None:
        return expected
    return NEW_SESSION if expected is None else NEVER_HOLDS


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
    if if_none_match is None:
        return False
    tags = _tag_list(if_none_match, "If-None-Match")
    if version <= 0:
        return False
    return tags is None or any(tag == str(version) for _, tag in tags)


def check_match(if_match: str | None, version: int) -> None:
    """A read's ``If-Match`` (RFC 9110 section 13.1.1): ``*`` or a list of tags, compared
    strongly with the current version; false is 412, on a GET as on a write."""
    if if_match is None:
        return
    tags = _tag_list(if_match, "If-Match")
    if tags is None and version > 0:
        return
    if tags is not None and any(not weak and tag == str(version) for weak, tag in tags):
        return  # a weak tag never matches strongly
    raise ConflictError(
        f"If-Match {if_match.strip()} does not match the current version {version}",
        current_version=version,
    )


def _tag_list(value: str, header: str) -> list[tuple[bool, str]] | None:
    """A list header's (weak, opaque tag) pairs, None for ``*``; anything else is 400."""
    if not _TAG_LIST.fullmatch(value):
        raise Problem(MALFORMED, f'{header} is "*" or a comma-separated list of entity tags')
    if value.strip(" \t") == "*":
        return None
    return [(bool(weak), tag) for weak, tag in _TAGS.findall(value)]
