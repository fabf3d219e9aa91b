"""Listing a user's sessions: the query every backend answers, and its keyset cursor.

A listing is newest first: by ``created_at`` (when the session was first written, which
no later write changes), descending, then by ``session_id``, descending, for two sessions
created in the same microsecond.  Not by the last write: an index on a time every turn
moves would make each append's update of the session row non-HOT (a new entry in every
index of ``sessions``: +17% WAL a turn, measured); a creation time never moves, so the
listing's index costs a turn nothing (revision 1005 has the figures).  ``updated_since``
filters by the last write (``updated_at``) within that order: a page of it reads the
user's sessions until it is full.

A page ends where its last item is, and the cursor is that position, so the next page
starts strictly after it, at the same cost whatever its depth (no offset is skipped
over).  The order never changes under the walk: a walk through the pages shows each
session that lives through it exactly once, with what it held when its page was read;
a session created meanwhile is on a new first page.

The cursor is opaque text, URL-safe (base64url of compact JSON, no padding): the format,
a fingerprint of the user and the filters, and the position (``created_at`` in UTC with
its microseconds, the session id).  The fingerprint turns a cursor from another user's or
another filter's listing into an InvalidInputError instead of a page of something else;
it is a digest, so the cursor does not carry the user id in clear.  A cursor grants
nothing: the query is always the caller's own user's, the cursor only says where to start.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from ctxstore.errors import InvalidInputError
from ctxstore.models import SessionListing, SessionPage
from ctxstore.storage import rules

#: The cursor's format: a cursor of another format is refused, never misread.
CURSOR_FORMAT = 1
#: The longest cursor accepted: a position with a 255-character session id fits well.
MAX_CURSOR_CHARS = 2048
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_START_AGAIN = "list again without a cursor"


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page ended: its last item's order key."""

    created_at: datetime
    session_id: str


@dataclass(frozen=True, slots=True)
class ListingQuery:
    """A checked listing request: what a backend's ``_list_sessions`` answers."""

    user_id: str
    #: Items on the page (1 to rules.MAX_PAGE_SIZE).
    limit: int
    #: Only sessions whose current state is at this stage (None: any, or none).
    stage: str | None
    #: Only sessions written at or after this time (None: any).
    updated_since: datetime | None
    #: Open and return each latest summary's text.
    with_summaries: bool
    #: Start after this position (None: the first page).
    after: Position | None = None

    def fingerprint(self) -> str:
        """What the cursor checks it is used for: the user and the filters."""
        since = _utc_text(self.updated_since) if self.updated_since is not None else None
        digest = hashlib.sha256(
            json.dumps([self.user_id, self.stage, since], ensure_ascii=False).encode("utf-8")
        ).digest()
        return _encode(digest[:9])


def continued(query: ListingQuery, cursor: object) -> ListingQuery:
    """``query`` from where ``cursor`` (None: the first page) says its last page ended."""
    return replace(query, after=position_of(cursor, query))


def page_of(query: ListingQuery, items: list[SessionListing], *, more: bool) -> SessionPage:
    """The page of ``items`` (``query.limit`` at most, in the listing's order); ``more``:
    the listing goes on after them (a backend reads one item past the page to know)."""
    return SessionPage(items=items, next_cursor=cursor_after(query, items[-1]) if more else None)


def cursor_after(query: ListingQuery, item: SessionListing) -> str:
    """The cursor of the page after ``item``."""
    document = [CURSOR_FORMAT, query.fingerprint(), _utc_text(item.created_at), item.session_id]
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    return _encode(text.encode("utf-8"))


def position_of(cursor: object, query: ListingQuery) -> Position | None:
    """Where ``cursor`` (None: the first page) says ``query``'s page starts, or an
    InvalidInputError saying why it can't be used."""
    if cursor is None:
        return None
    document = _decoded(cursor)
    if (
        not isinstance(document, list)
        or len(document) != 4
        or not all(isinstance(part, str) for part in document[1:])
    ):
        raise InvalidInputError(f"cursor is not a session listing's cursor: {_START_AGAIN}")
    version, fingerprint, created_at, session_id = document
    if type(version) is not int or version != CURSOR_FORMAT:
        raise InvalidInputError(
            f"cursor is of format {version!r}, not {CURSOR_FORMAT}: {_START_AGAIN}"
        )
    if fingerprint != query.fingerprint():
        raise InvalidInputError(
            "cursor was made for another user's listing or other filters (stage, "
            f"updated_since): pass it back with the same ones, or {_START_AGAIN}"
        )
    return Position(_parsed_time(created_at), _checked_session_id(session_id))


def _decoded(cursor: object) -> object:
    if not isinstance(cursor, str):
        raise InvalidInputError(f"cursor must be a string or None, not {type(cursor).__name__}")
    if len(cursor) > MAX_CURSOR_CHARS or not _BASE64URL.fullmatch(cursor):
        raise InvalidInputError(f"cursor is not one a listing gave: {_START_AGAIN}")
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        return json.loads(raw.decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError, RecursionError):
        raise InvalidInputError(f"cursor is not one a listing gave: {_START_AGAIN}") from None


def _parsed_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.utcoffset() is None:
        raise InvalidInputError(f"cursor holds no valid position: {_START_AGAIN}")
    return moment


def _checked_session_id(session_id: str) -> str:
    try:
        return rules.check_session_id(session_id)
    except InvalidInputError:
        raise InvalidInputError(f"cursor holds no valid position: {_START_AGAIN}") from None


def _utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
