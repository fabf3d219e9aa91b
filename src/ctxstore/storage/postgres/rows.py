"""Messages and documents to statement parameters, and rows back to models, by name.

MESSAGE_VALUES is the one mapper of a message write: for each column of ``messages``
(besides the key) it builds that column's array for the new messages.  A new column
means db/tables.py, a revision and one entry here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxstore.errors import InvalidMessageError
from ctxstore.formats.documents import load_profile, load_state, load_summary
from ctxstore.formats.messages import MESSAGE_COLUMN_ORDER
from ctxstore.models import (
    MESSAGE_FORMAT,
    PROFILE_FORMAT,
    STATE_FORMAT,
    ConsultationState,
    Message,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
    digest_of,
    full_digest,
)
from ctxstore.storage import rules
from ctxstore.storage.history import History
from ctxstore.storage.knowledge import Known, MetadataWatch, StoredList
from ctxstore.storage.postgres import sql
from ctxstore.storage.rules import Limits
from ctxstore.tokens import TokenCounter

EMPTY_HASH = hashlib.sha256(b"").digest()


@dataclass(frozen=True)
class Batch:
    """New messages about to be written, with what every column needs."""

    messages: Sequence[Message]
    digests: list[bytes]
    costs: list[int | None]
    encoding: str


def _offsets(batch: Batch) -> list[int | None]:
    result: list[int | None] = []
    for message in batch.messages:
        offset = message.timestamp.utcoffset() if message.timestamp is not None else None
        result.append(int(offset.total_seconds()) if offset is not None else None)
    return result


MESSAGE_VALUES: dict[str, Callable[[Batch], list[Any]]] = {
    "role": lambda b: [m.role for m in b.messages],
    "content": lambda b: [m.content for m in b.messages],
    "turn_id": lambda b: [m.turn_id for m in b.messages],
    "ts": lambda b: [m.timestamp for m in b.messages],
    "ts_offset": _offsets,
    "name": lambda b: [m.name for m in b.messages],
    # the connection's jsonb codec takes JSON text; NULL spares decoding {} on every load
    "metadata": lambda b: [json.dumps(m.metadata) if m.metadata else None for m in b.messages],
    "digest": lambda b: [m.core_digest() for m in b.messages],
    "token_count": lambda b: b.costs,
    "format_version": lambda b: [MESSAGE_FORMAT] * len(b.messages),
    "token_encoding": lambda b: [b.encoding if c is not None else None for c in b.costs],
}
assert set(MESSAGE_VALUES) == set(sql.MESSAGE_WRITE_COLUMNS), "one mapper entry per column"


def batch(messages: Sequence[Message], counter: TokenCounter, limits: Limits) -> Batch:
    return Batch(
        messages,
        digests_of(messages, limits),
        [counter.message_cost(message) for message in messages],
        counter.encoding_name,
    )


def new_message_arrays(new: Batch) -> dict[str, list[Any]]:
    """The ``:new_*`` parameters of sql's message writes, built column by column."""
    arrays = {f"new_{name}": build(new) for name, build in MESSAGE_VALUES.items()}
    arrays["new_seq"] = list(range(len(new.messages)))
    return arrays


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
        "first_ts": whole[0].timestamp if whole else None,
        "last_ts": whole[-1].timestamp if whole else None,
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


# Where LOAD_SESSION's rows hold a message's digest and metadata (looked up by name once:
# this loop runs for every stored message on every load).
_DIGEST = MESSAGE_COLUMN_ORDER.index("digest")
_METADATA = MESSAGE_COLUMN_ORDER.index("metadata")


def known_after_load(
    version: int, rows: Sequence[Any], loaded: History, stored_hash: bytes | None
) -> Known:
    """What a load saw; the messages are recognised later only if the hash checks out."""
    if stored_hash is None:  # left unknown by an append: the next save recomputes it
        return Known(version)
    digests = [
        row[_DIGEST] if row[_METADATA] is None else full_digest(row[_DIGEST], row[_METADATA])
        for row in rows
    ]
    hasher = hashlib.sha256(b"".join(digests))
    if hasher.digest() != stored_hash:  # e.g. rows in an older format
        return Known(version, len(rows), stored_hash)
    watch = MetadataWatch().extended(loaded, digests)
    return Known(version, len(rows), stored_hash, hasher, StoredList.of(loaded), watch)


# -- documents --------------------------------------------------------------------------------


def summary_from_row(row: Any, session_id: str) -> Summary:
    return load_summary(dict(row), row["format_version"], session_id=session_id)


def state_values(state: ConsultationState) -> dict[str, Any]:
    """sql.STATE_COLUMNS: the state's typed columns, its document and its format."""
    values = {
        "stage": state.stage,
        "chief_complaint": state.chief_complaint,
        "body_parts": list(state.body_parts),
        "symptoms": list(state.symptoms),
        "red_flags": list(state.red_flags),
        "pain_level": state.pain_level,
        "duration": state.duration,
        "document": json.dumps(state.document(), ensure_ascii=False),
        "format_version": STATE_FORMAT,
    }
    assert tuple(values) == sql.STATE_COLUMNS
    return values


def profile_values(profile: UserProfile) -> dict[str, Any]:
    """sql.PROFILE_COLUMNS: the profile's typed columns, its document and its format."""
    values = {
        "age": profile.age,
        "gender": profile.gender,
        "exercise_habit": profile.exercise_habit,
        "known_limitations": list(profile.known_limitations),
        "document": json.dumps(profile.document(), ensure_ascii=False),
        "format_version": PROFILE_FORMAT,
    }
    assert tuple(values) == sql.PROFILE_COLUMNS
    return values


def state_from_row(row: Any, session_id: str) -> Versioned[ConsultationState]:
    state = load_state(row["document"], row["format_version"], session_id=session_id)
    return Versioned(state, int(row["version"]), row["updated_at"])


def state_change_from_row(row: Any, session_id: str) -> StateChange:
    state = load_state(row["document"], row["format_version"], session_id=session_id)
    return StateChange(int(row["version"]), state, row["updated_at"])


def profile_from_row(row: Any, user_id: str) -> Versioned[UserProfile]:
    profile = load_profile(row["document"], row["format_version"], user_id=user_id)
    return Versioned(profile, int(row["version"]), row["updated_at"])
