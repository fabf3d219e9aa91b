"""Messages and documents to statement parameters, and rows back to models, by name.

MESSAGE_VALUES is the one mapper of a message write: for each column of ``messages``
(besides the key) it builds that column's array for the new messages.  A new column
means db/tables.py, a revision and one entry here.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidTag

from ctxstore.encryption import (
    DataKey,
    OpenedKeys,
    bound_message_aad,
    chain_key_id,
    document_aad,
    message_aad,
    message_aad_prefix,
    opening_aad,
    pack_message,
    unpack_message,
)
from ctxstore.errors import CorruptDataError, EncryptionKeyError, InvalidMessageError
from ctxstore.formats.documents import load_profile, load_state, load_summary
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER
from ctxstore.models import (
    MESSAGE_FORMAT,
    PROFILE_FORMAT,
    STATE_FORMAT,
    ConsultationState,
    Message,
    SessionListing,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
    core_digest_of,
    digest_of,
    full_digest,
    pain_number,
)
from ctxstore.storage import rules
from ctxstore.storage.history import History
from ctxstore.storage.knowledge import Known, MetadataWatch, StoredList
from ctxstore.storage.postgres import sql
from ctxstore.storage.rules import Limits
from ctxstore.timestamps import activity_time, nanoseconds_of, postgres_timestamp
from ctxstore.tokens import TokenCounter

unpack_length = struct.Struct(">I").unpack_from

#: A data key by id: the keys a read needs, loaded beforehand (storage/postgres/keys.py),
#: with the rule for plaintext rows.
Keys = OpenedKeys


def hasher(key: DataKey | None, data: bytes = b"") -> Any:
    """The session content hash: SHA-256, or an HMAC under the data key when sealed (a
    plain hash of the digests would confirm a guess of the whole conversation)."""
    return hashlib.sha256(data) if key is None else key.hasher(data)


@dataclass(frozen=True)
class Batch:
    """New messages about to be written, with what every column needs.

    With ``key``, content, metadata and name are sealed (with the core digest, so loads
    need not recompute it), bound to the session, role, turn id and time the row keeps in
    plaintext, and the stored digest is the HMAC of the full digest.
    """

    messages: Sequence[Message]
    digests: list[bytes]
    #: Each message's stored count and its label (TokenCounter.stored_cost).
    costs: list[int | None]
    labels: list[str | None]
    key: DataKey | None = None
    session_id: str = ""


def _sealed(b: Batch) -> list[bytes | None]:
    key = b.key
    if key is None:
        return [None] * len(b.messages)
    prefix = message_aad_prefix(b.session_id)
    return [
        key.seal(
            pack_message(m.content, m.metadata, core_digest_of(m), m.name),
            bound_message_aad(
                prefix, m.role, m.turn_id, m.timestamp, offset, nanoseconds_of(m.timestamp)
            ),
        )
        for m, offset in zip(b.messages, _offsets(b), strict=True)
    ]


def _digests(b: Batch) -> list[bytes]:
    key = b.key
    if key is None:
        return [core_digest_of(m) for m in b.messages]
    return [key.mac(digest) for digest in b.digests]


def _offsets(batch: Batch) -> list[int | None]:
    result: list[int | None] = []
    for message in batch.messages:
        offset = message.timestamp.utcoffset() if message.timestamp is not None else None
        result.append(int(offset.total_seconds()) if offset is not None else None)
    return result


MESSAGE_VALUES: dict[str, Callable[[Batch], list[Any]]] = {
    "role": lambda b: [m.role for m in b.messages],
    "content": lambda b: [m.content if b.key is None else "" for m in b.messages],
    "turn_id": lambda b: [m.turn_id for m in b.messages],
    # text, not datetimes: asyncpg sends Go's zero and maximum times as -infinity/infinity
    "ts": lambda b: [postgres_timestamp(m.timestamp) for m in b.messages],
    "ts_offset": _offsets,
    "ts_nanos": lambda b: [nanoseconds_of(m.timestamp) or None for m in b.messages],
    "name": lambda b: [m.name if b.key is None else None for m in b.messages],
    # the connection's jsonb codec takes JSON text; NULL spares decoding {} on every load
    "metadata": lambda b: [
        json.dumps(m.metadata) if m.metadata and b.key is None else None for m in b.messages
    ],
    "digest": _digests,
    "token_count": lambda b: b.costs,
    "format_version": lambda b: [MESSAGE_FORMAT] * len(b.messages),
    "token_encoding": lambda b: b.labels,
    "key_id": lambda b: [b.key.key_id if b.key is not None else None] * len(b.messages),
    "sealed": _sealed,
}
assert set(MESSAGE_VALUES) == set(sql.MESSAGE_WRITE_COLUMNS), "one mapper entry per column"


def batch(
    messages: Sequence[Message],
    counter: TokenCounter,
    limits: Limits,
    key: DataKey | None = None,
    session_id: str = "",
    *,
    digests: list[bytes] | None = None,
) -> Batch:
    """The one way a write's new messages become a Batch (``digests``: already known)."""
    stored = [counter.stored_cost(message) for message in messages]
    return Batch(
        messages,
        digests if digests is not None else digests_of(messages, limits),
        [cost for cost, _ in stored],
        [label for _, label in stored],
        key,
        session_id,
    )


def new_message_rows(new: Batch, positions: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
    """The ``:new_rows`` of every message write: a ``ctxstore_message_row_v1`` a message
    (revision 0025), its fields ``seq`` (``positions``, else 0, 1, ...: added to where the
    write starts) and the columns in the table's order (a test checks the type's)."""
    columns = [MESSAGE_VALUES[name](new) for name in sql.MESSAGE_WRITE_COLUMNS]
    seqs = range(len(new.messages)) if positions is None else positions
    return list(zip(seqs, *columns, strict=True))


def digests_of(messages: Sequence[Message], limits: Limits) -> list[bytes]:
    """Each message's digest; one that can't be serialized gets a precise error."""
    try:
        return [digest_of(message) for message in messages]
    except (TypeError, ValueError, AttributeError):
        pass  # find which message failed, and why
    digests: list[bytes] = []
    for position, message in enumerate(messages):
        try:
            digests.append(digest_of(message))
        except (TypeError, ValueError, AttributeError) as error:
            rules.check_message(message, position, limits)  # raises the precise reason
            raise InvalidMessageError(
                f"cannot be serialized: {error}", position=position
            ) from error
    return digests


def activity(new: Sequence[Message], whole: Sequence[Message]) -> dict[str, Any]:
    """Analytics parameters of a write: user messages among ``new``, and the times of the
    first and last message of ``whole`` (None: the server's time)."""
    return {
        "turns": sum(1 for message in new if message.role == "user"),
        "first_ts": activity_time(whole[0].timestamp) if whole else None,
        "last_ts": activity_time(whole[-1].timestamp) if whole else None,
    }


def known_after_write(
    version: int,
    messages: Sequence[Message],
    digests: Sequence[bytes],
    hasher: Any,
    located: StoredList,
) -> Known:
    """What is stored after writing ``messages`` (whose digests ``hasher`` consumed),
    found again through ``located``."""
    return Known(
        version,
        len(messages),
        hasher.digest(),
        hasher,
        located,
        MetadataWatch().extended(messages, digests),
    )


# Where LOAD_SESSION's rows hold a message's digest, metadata and format (looked up by
# name once: these loops run for every stored message on every load).
_DIGEST = MESSAGE_COLUMN_ORDER.index("digest")
_METADATA = MESSAGE_COLUMN_ORDER.index("metadata")
_FORMAT = MESSAGE_COLUMN_ORDER.index("format_version")


def known_after_load(
    version: int,
    rows: Sequence[Any],
    loaded: History,
    stored_hash: bytes | None,
    key: DataKey | None = None,
    *,
    chained: bool = False,
    session_id: str | None = None,
    current: int | None = MESSAGE_FORMAT,
) -> Known:
    """What a load saw (``rows`` opened); the messages are recognised later only if the
    hash (keyed by ``key``, the hash's own, when sealed) checks out.

    ``chained``: a sealed session whose content hash is a chain (see
    sealed_chain): a hash that is missing or doesn't match is CorruptDataError.
    ``current``: how the rows spell the current format (load_session's: None)."""
    if stored_hash is None:  # left unknown by an append: the next save recomputes it
        if chained:
            raise _chain_broken("has no content hash", session_id)
        return Known(version)
    digests = [row[_DIGEST] for row in rows]
    # Only these can hold a metadata dict of their own (a current-format row without
    # metadata loads with the shared read-only one): the rest need no digest or watch.
    own_metadata = [
        position
        for position, row in enumerate(rows)
        if row[_METADATA] is not None or row[_FORMAT] != current
    ]
    for position in own_metadata:
        digests[position] = full_digest(digests[position], rows[position][_METADATA])
    joined = b"".join(digests)
    hasher = hashlib.sha256(joined) if key is None else key.hasher(joined)
    if hasher.digest() != stored_hash:  # e.g. rows in an older format
        if chained:
            raise _chain_broken("does not match its messages", session_id)
        return Known(version, len(rows), stored_hash)
    watch = MetadataWatch().watching(
        (position, loaded[position], digests[position]) for position in own_metadata
    )
    return Known(version, len(rows), stored_hash, hasher, StoredList.of(loaded), watch)


def _chain_broken(what: str, session_id: str | None) -> CorruptDataError:
    return CorruptDataError(
        f"the sealed session's content hash {what}: its messages were reordered, "
        "dropped, put back to older values or copied between versions",
        session_id=session_id,
    )


def sealed_chain(found: Sequence[Any]) -> bool:
    """Whether every row is sealed in layout 2: such a session's content hash is a chain
    every writer keeps, so its load verifies it.  (Sessions holding rows sealed before
    chains are verified once `rotate-keys --reencrypt` has sealed them again.)"""
    return bool(found) and all(row[KEY_ID] is not None and row[SEALED][0] == 2 for row in found)


#: load_session's first row sits at this position, before every message: the head.
HEAD_POSITION = -1
#: How load_session's rows spell the current format (MESSAGE_FORMAT, its :current): they
#: send a row's format_version only when it is another (a legacy row's).
LOADED_CURRENT = None


@dataclass(frozen=True, slots=True)
class StoredSession:
    """What load_session read, in one snapshot: the session's head, read once, and its
    message rows in order (starting with MESSAGE_COLUMN_ORDER, then key_id and sealed)."""

    version: int
    message_count: int
    content_hash: bytes | None
    user_id: str | None
    rows: Sequence[Any]


def stored_session(found: Sequence[Any]) -> StoredSession | None:
    """load_session's rows as the head and the messages (None: no head came, the session
    is missing or expired; an expired session's messages are nobody's)."""
    if not found or found[0][0] != HEAD_POSITION:  # positions are never negative
        return None
    first = found[0]
    head = first[_METADATA]
    return StoredSession(
        int(head["version"]),
        int(head["message_count"]),
        first[_DIGEST],
        head["user_id"],
        found[1:],
    )


def needed_key_ids(found: Sequence[Any], stored_hash: bytes | None) -> set[int]:
    """The data keys a full load needs: the rows' and the content hash's."""
    needed = sealed_key_ids(found)
    chain_key = chain_key_id(stored_hash)
    if chain_key is not None:
        needed.add(chain_key)
    return needed


# -- sealed rows ------------------------------------------------------------------------------

# Where the message reads (queries/messages.sql) put the key id and the sealed value.
KEY_ID = len(MESSAGE_COLUMN_ORDER)
SEALED = KEY_ID + 1


def sealed_key_ids(rows: Sequence[Any]) -> set[int]:
    """The data keys sealed message rows need (none: all plaintext)."""
    return {row[KEY_ID] for row in rows if row[KEY_ID] is not None}


def open_messages(rows: Sequence[Any], keys: Keys | None, session_id: str) -> Sequence[Any]:
    """Message rows with sealed content, metadata, name and core digest opened (plaintext
    rows as they are, where the keys accept them); the result starts with
    MESSAGE_COLUMN_ORDER, as formats expect."""
    if not any(row[KEY_ID] is not None for row in rows):
        if rows and keys is not None and not keys.accept_plaintext:
            raise _plaintext_refused(session_id, rows[0][0])
        return rows
    try:
        return _open_fast(rows, keys, session_id)
    except (InvalidTag, ValueError, IndexError):  # say which row failed, and why
        pass
    prefix, first_aad = message_aad_prefix(session_id), message_aad(session_id)
    opened: list[Any] = []
    for row in rows:
        if row[KEY_ID] is None:
            if keys is not None and not keys.accept_plaintext:
                raise _plaintext_refused(session_id, row[0])
            opened.append(row)
            continue
        key = _key(keys, row[KEY_ID], session_id)
        sealed = row[SEALED]
        aad = first_aad if sealed[:1] == b"\x01" else bound_aad_of_row(prefix, row, session_id)
        content, metadata, core, name = unpack_message(
            key.open(sealed, aad, session_id=session_id), session_id
        )
        if sealed[:1] == b"\x01":  # layout 1 kept the name in its column
            name = row[7]
        opened.append((*row[:2], content, *row[3:7], name, metadata, core, row[10]))
    return opened


def bound_aad_of_row(prefix: bytes, row: Any, session_id: str) -> bytes:
    """A layout-2 message row's associated data, from its plaintext columns (a time
    that isn't one, e.g. a naive infinity put there, can't be bound: the row is corrupt)."""
    try:
        return bound_message_aad(prefix, row[1], row[3], row[4], row[5], row[6] or 0)
    except (ValueError, OverflowError, OSError, TypeError, struct.error) as error:
        raise CorruptDataError(
            f"sealed message has a bad timestamp or offset: {error}",
            session_id=session_id,
            position=row[0],
        ) from None


def _plaintext_refused(session_id: str, position: int) -> CorruptDataError:
    return CorruptDataError(
        "a plaintext message where encryption is on: a database writer without the keys "
        "may have put it there (Encryption(accept_plaintext=True) reads data written "
        "before encryption was enabled)",
        session_id=session_id,
        position=position,
    )


def _open_fast(rows: Sequence[Any], keys: Keys | None, session_id: str) -> list[Any]:
    """The loop of every sealed load: one decrypt call per row, nothing else re-checked
    (any failure raises, and the careful loop above finds the row)."""
    prefix, first_aad = message_aad_prefix(session_id), message_aad(session_id)
    refuse_plaintext = keys is not None and not keys.accept_plaintext
    opened: list[Any] = []
    append = opened.append
    decrypt, last_key = None, None
    for row in rows:
        key_id = row[KEY_ID]
        if key_id is None:
            if refuse_plaintext:
                raise ValueError("plaintext")
            append(row)
            continue
        if key_id != last_key:
            decrypt, last_key = _key(keys, key_id, session_id).opener(), key_id
        sealed = row[SEALED]
        layout = sealed[0]
        if layout == 2:
            aad = bound_message_aad(prefix, row[1], row[3], row[4], row[5], row[6] or 0)
            plain = decrypt(sealed[1:13], sealed[13:], aad)  # type: ignore[misc]
            # pad()'s frame, read in place: its length, then pack_message's bytes
            end = 4 + unpack_length(plain, 0)[0]
            if plain[36] == 0:
                content, metadata, name = plain[37:end].decode("utf-8", "surrogatepass"), None, None
                core = plain[4:36]
            else:
                content, metadata, core, name = unpack_message(plain[4:end], session_id)
        elif layout == 1:
            plain = decrypt(sealed[1:13], sealed[13:], first_aad)  # type: ignore[misc]
            name, core = row[7], plain[:32]
            if plain[32] == 0:
                content, metadata = plain[33:].decode("utf-8", "surrogatepass"), None
            else:
                content, metadata, _, _ = unpack_message(plain, session_id)
        else:
            raise ValueError("unknown layout")
        append(
            (row[0], row[1], content, row[3], row[4], row[5], row[6], name, metadata, core, row[10])
        )
    return opened


def _key(keys: Keys | None, key_id: int, session_id: str | None) -> DataKey:
    if keys is None:
        raise EncryptionKeyError(
            f"session {session_id!r} holds rows sealed under data key {key_id}: open the "
            "storage with encryption (PostgresStorage(..., encryption=...)) to read them"
        )
    key = keys.get(key_id)
    if key is None:  # the store loads every key a read needs before opening rows
        raise EncryptionKeyError(f"data key {key_id} is not loaded")
    return key


def _open_document(row: Any, keys: Keys | None, kind: str, owner_id: str) -> Any:
    """The row's document: sealed JSON opened, else the stored one (where accepted)."""
    key_id = row["key_id"]
    session_id = owner_id if kind != "profile" else None
    if key_id is None:
        refuse_plaintext(keys, kind, owner_id)
        return row["document"]
    key = _key(keys, key_id, session_id)
    sealed = row["sealed"]
    aad = opening_aad(sealed, kind, owner_id, int(row["version"]))
    return json.loads(key.open(sealed, aad, session_id=session_id))


def _document_columns(
    document: dict[str, Any],
    format_version: int,
    key: DataKey | None,
    kind: str,
    owner_id: str,
    version: int,
) -> dict[str, Any]:
    """The columns a document table ends with, in its order (db/tables.py): the JSON
    itself, or JSON null and its seal bound to ``version`` (the one the write stores)."""
    text = json.dumps(document, ensure_ascii=False)
    columns: dict[str, Any] = {
        "document": text,
        "format_version": format_version,
        "key_id": None,
        "sealed": None,
    }
    if key is not None:
        sealed = key.seal(text.encode("utf-8"), document_aad(kind, owner_id, version))
        columns.update(document="null", key_id=key.key_id, sealed=sealed)
    return columns


def refuse_plaintext(keys: Keys | None, kind: str, owner_id: str) -> None:
    """CorruptDataError for a plaintext document read where encryption refuses them."""
    if keys is not None and not keys.accept_plaintext:
        whose = f"user {owner_id!r}" if kind == "profile" else f"session {owner_id!r}"
        raise CorruptDataError(
            f"a plaintext {kind} of {whose} where encryption is on: a database writer "
            "without the keys may have put it there (Encryption(accept_plaintext=True) "
            "reads data written before encryption was enabled)",
            session_id=owner_id if kind != "profile" else None,
        )


def document_key_id(row: Any) -> int | None:
    return row["key_id"] if row is not None else None


# -- documents --------------------------------------------------------------------------------


def summary_from_row(row: Any, session_id: str, keys: Keys | None = None) -> Summary:
    fields = dict(row)
    key_id, sealed = fields.pop("key_id", None), fields.pop("sealed", None)
    fields.pop("user_id", None)  # the session's, read beside it to check its key's owner
    if key_id is None:
        refuse_plaintext(keys, "summary", session_id)
    else:
        key = _key(keys, key_id, session_id)
        aad = opening_aad(sealed, "summary", session_id, int(row["summary_version"]))
        plain = key.open(sealed, aad, session_id=session_id)
        fields["text"] = plain.decode("utf-8", "surrogatepass")
    return load_summary(fields, row["format_version"], session_id=session_id)


#: The latest summary's columns of a list_sessions row, as summary_from_row reads them.
_LISTED_SUMMARY = ("text", "covers_until", "token_count", "format_version", "created_at",
                   "key_id", "sealed")  # fmt: skip


def listing_from_row(row: Any, keys: Keys | None, *, with_text: bool) -> SessionListing:
    """A list_sessions row: with ``with_text``, its latest summary's text (opened with
    ``keys`` where sealed; EncryptionKeyError without them)."""
    text = None
    if with_text and row["summary_version"]:
        fields = {name: row[f"summary_{name}"] for name in _LISTED_SUMMARY}
        fields["summary_version"] = row["summary_version"]
        text = summary_from_row(fields, row["session_id"], keys).text
    return SessionListing(
        session_id=row["session_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        message_count=row["message_count"],
        stage=row["stage"],
        summary_version=row["summary_version"],
        summary_text=text,
    )


def summary_values(
    text: str, key: DataKey | None, session_id: str, version: int = 0
) -> dict[str, Any]:
    """The summary's text, or its seal bound to ``version`` (the one the write stores)."""
    if key is None:
        return {"text": text, "key_id": None, "sealed": None}
    aad = document_aad("summary", session_id, version)
    sealed = key.seal(text.encode("utf-8", "surrogatepass"), aad)
    return {"text": "", "key_id": key.key_id, "sealed": sealed}


def state_values(
    state: ConsultationState, key: DataKey | None = None, session_id: str = "", version: int = 0
) -> dict[str, Any]:
    """sql.STATE_COLUMNS: the state's typed columns, its document (sealed with ``key``,
    bound to ``version``, the one the write stores) and its format.

    Sealed, the free text is NULL (empty): it is in the sealed document only, and the
    analytics counts it from there (ctxstore.commands.aggregates); the counts stay for the
    per-consultation view."""
    plain = key is None
    values = {
        "stage": state.stage,
        "chief_complaint": state.chief_complaint if plain else None,
        "body_parts": list(state.body_parts) if plain else [],
        "symptoms": list(state.symptoms) if plain else [],
        "red_flags": list(state.red_flags) if plain else [],
        "pain_level": pain_number(state.pain_level),  # the column is a number, the text isn't
        "duration": state.duration if plain else None,
        "red_flag_count": len(state.red_flags),
        "symptom_count": len(state.symptoms),
        "body_part_count": len(state.body_parts),
        "has_chief_complaint": state.chief_complaint is not None,
        "has_symptom_duration": state.duration is not None,
        **_document_columns(state.document(), STATE_FORMAT, key, "state", session_id, version),
    }
    assert tuple(values) == sql.STATE_COLUMNS
    return values


def profile_values(
    profile: UserProfile, key: DataKey | None = None, user_id: str = "", version: int = 0
) -> dict[str, Any]:
    """sql.PROFILE_COLUMNS: the profile's typed columns, its document and its format.

    Sealed, the typed columns are NULL (empty): no view reads them, and they are the
    user's own health facts."""
    plain = key is None
    values = {
        "age": profile.age if plain else None,
        "gender": profile.gender if plain else None,
        "exercise_habit": profile.exercise_habit if plain else None,
        "known_limitations": list(profile.known_limitations) if plain else [],
        **_document_columns(profile.document(), PROFILE_FORMAT, key, "profile", user_id, version),
    }
    assert tuple(values) == sql.PROFILE_COLUMNS
    return values


def state_from_row(
    row: Any, session_id: str, keys: Keys | None = None
) -> Versioned[ConsultationState]:
    document = _open_document(row, keys, "state", session_id)
    state = load_state(document, row["format_version"], session_id=session_id)
    return Versioned(state, int(row["version"]), row["updated_at"])


def state_document(row: Any, session_id: str, keys: Keys | None = None) -> Any:
    """The state row's document as stored (opened when sealed), not yet upgraded."""
    return _open_document(row, keys, "state", session_id)


def state_change_from_row(row: Any, session_id: str, keys: Keys | None = None) -> StateChange:
    document = _open_document(row, keys, "state", session_id)
    state = load_state(document, row["format_version"], session_id=session_id)
    return StateChange(int(row["version"]), state, row["updated_at"])


def profile_from_row(row: Any, user_id: str, keys: Keys | None = None) -> Versioned[UserProfile]:
    document = _open_document(row, keys, "profile", user_id)
    profile = load_profile(document, row["format_version"], user_id=user_id)
    return Versioned(profile, int(row["version"]), row["updated_at"])
