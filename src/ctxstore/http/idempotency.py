"""``Idempotency-Key`` on an unconditional append (draft-ietf-httpapi-idempotency-key-header).

A client that appends a turn and loses the response can't tell whether it was stored;
retrying an unconditional POST would store it twice.  With the same ``Idempotency-Key``
the retry stores nothing more: the first request's write recorded two write ids in its
own transaction (storage/write_ids.py, revision 0020), one naming the key and one naming
the key with the request's bytes, and the retry finds them.

- the same key and the same body: not written again; 200 with the session's current
  version and ``Idempotency-Replayed: true``;
- the same key with another body: 422 ``idempotency-key-reused``;
- two requests with one key at once: exactly one writes.  Each reads the version, then
  asks whether the key was applied, then appends on the condition that the version is
  still the one it read: whichever commits second finds the version moved, asks again
  and sees the first's ids.

With ``If-Match`` the append happens only at that version, as without a key, and is tried
first: a 412 is answered only when the key's own earlier request did not move the version
(asked only then), so a conditional turn is one statement.

Keys are scoped to the token's name and the session, and remembered as long as write ids
are (``ctxstore purge-expired`` forgets them after WRITE_IDS_KEPT).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable

from ctxstore.errors import ConfigurationError, ConflictError
from ctxstore.http.problems import KEY_BUSY, KEY_REUSED, MALFORMED, Problem
from ctxstore.storage.store import Store
from ctxstore.storage.write_ids import carrying

HEADER = "idempotency-key"
REPLAYED = "Idempotency-Replayed"
MAX_KEY_LENGTH = 255
#: A key's write retried against other writers before giving up (409).
_ATTEMPTS = 8
_NAMESPACE = uuid.UUID("6f1f0c63-7d0e-4a43-9a4b-2b8f4f1c3a10")


def write_ids(principal: str, session_id: str, key: str, body: bytes) -> tuple[str, str]:
    """The write id naming the key, and the one naming the key with these bytes."""
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise Problem(
            MALFORMED,
            f"Idempotency-Key is 1 to {MAX_KEY_LENGTH} printable characters (a UUID, say)",
        )
    named = f"{principal}\0{session_id}\0{key}"
    digest = hashlib.sha256(body).hexdigest()
    return (
        uuid.uuid5(_NAMESPACE, named).hex,
        uuid.uuid5(_NAMESPACE, f"{named}\0{digest}").hex,
    )


async def append_once(
    store: Store,
    session_id: str,
    ids: tuple[str, str],
    append: Callable[[int], Awaitable[int]],
    expected: int | None = None,
) -> tuple[int, bool]:
    """``append(version)`` unless the key's write was applied; the version and whether
    this request wrote it.  Unconditional (``expected`` None): at the version just read,
    tried again while other writes come between.  Conditional: at ``expected``, and its
    conflict stands unless the key's own earlier request is what moved the version."""
    if expected is None:
        return await _unconditional(store, session_id, ids, append)
    # An applied write moved the version, so a retry of it is refused by its own
    # condition and recognised then: the first try needs no read before it.
    try:
        with carrying(ids):
            return await append(expected), True
    except ConflictError:
        version = await store.version(session_id)  # before asking: see the module doc
        if not await _applied(store, session_id, ids):
            raise
        return version, False


async def _unconditional(
    store: Store, session_id: str, ids: tuple[str, str], append: Callable[[int], Awaitable[int]]
) -> tuple[int, bool]:
    for _ in range(_ATTEMPTS):
        version = await store.version(session_id)  # before asking: see the module doc
        if await _applied(store, session_id, ids):
            return version, False
        try:
            with carrying(ids):
                return await append(version), True
        except ConflictError:
            pass  # another write came between: was it this key's?
    raise Problem(KEY_BUSY, "the session kept changing while this key's write was tried: retry it")


async def _applied(store: Store, session_id: str, ids: tuple[str, str]) -> bool:
    """Whether the key's write was applied; 422 when it was, with another body."""
    applied = await store.applied_writes(session_id, ids)
    if applied is None:
        raise ConfigurationError(f"{type(store).__name__} records no write ids")
    if applied and ids[1] not in applied:
        raise Problem(
            KEY_REUSED,
            "this Idempotency-Key was used for a different request body on this "
            "session: use a new key for a new request",
        )
    return bool(applied)
