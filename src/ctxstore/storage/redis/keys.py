"""The key layout: every Redis key a RedisStorage uses, named in one place.

=======================================  =====================================================
key                                      holds
=======================================  =====================================================
``{prefix}:{session_id}``                the messages: one JSON array, at the Go service's key
``{prefix}~version:{session_id}``        the session's version (none: the Go service wrote
                                         the session, which counts as version 1)
``{prefix}~meta:{session_id}``           hash: user_id, created_at, and the message count
                                         with the byte length of the array it counts (a
                                         count that doesn't match, e.g. after the Go
                                         service rewrote the array, is recounted)
``{prefix}~summaries:{session_id}``      list of JSON summaries, oldest first
``{prefix}~state:{session_id}``          hash of the consultation state (DOCUMENT_FIELDS)
``{prefix}~state-history:{session_id}``  list of every accepted state, as JSON
``{prefix}~profile:{user_id}``           hash of a user profile (DOCUMENT_FIELDS); not a
                                         session's, so it never expires
``{prefix}~journal:{name}``              stream: FallbackStorage's journal of writes made
                                         while its primary was down (storage/journal.py)
``{prefix}~journal-mark:{name}``         hash: entry id -> "version:position" replay
                                         appends that entry at
``{prefix}~journal-quarantine:{name}``   list of JSON: operations the primary refused
``{prefix}~journal-copies:{name}``       set: what this secondary holds of journaled writes
=======================================  =====================================================

Only the messages key is in the prefix's key space, so a SCAN of ``{prefix}:*`` finds
sessions only.  The session exists while its messages key does.
"""

from __future__ import annotations

DEFAULT_PREFIX = "ctx:session"

# Positions in session_keys(), the order every session script takes its KEYS in.
MESSAGES, VERSION, META, SUMMARIES, STATE, STATE_HISTORY = range(6)

#: The fields of a state or profile hash, in the order the scripts read them.
DOCUMENT_FIELDS = ("version", "updated_at", "format_version", "document")


def messages_key(prefix: str, session_id: str) -> str:
    return f"{prefix}:{session_id}"


def version_key(prefix: str, session_id: str) -> str:
    return f"{prefix}~version:{session_id}"


def session_keys(prefix: str, session_id: str) -> list[str]:
    """Every key of the session, in the order the scripts take them."""
    return [
        messages_key(prefix, session_id),
        version_key(prefix, session_id),
        *(
            f"{prefix}~{kind}:{session_id}"
            for kind in ("meta", "summaries", "state", "state-history")
        ),
    ]


def profile_key(prefix: str, user_id: str) -> str:
    return f"{prefix}~profile:{user_id}"


def journal_keys(prefix: str, name: str) -> tuple[str, str, str, str]:
    """The journal's stream, mark, quarantine and copies keys (never expire)."""
    return (
        f"{prefix}~journal:{name}",
        f"{prefix}~journal-mark:{name}",
        f"{prefix}~journal-quarantine:{name}",
        f"{prefix}~journal-copies:{name}",
    )
