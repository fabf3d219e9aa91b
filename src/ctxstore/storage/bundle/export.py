"""A user's bundle written from a store's public reads, streamed in chunks.

Export reads through the public read paths only (the listing, ``iter_messages`` in
batches, ``load_summary``, ``load_state``, ``state_history``, ``load_profile``), so old
formats come out upgraded and sealed text opened, and memory stays bounded by a batch and
a chunk, whatever the user holds.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ctxstore.errors import ConflictError, NotSupportedError
from ctxstore.models import (
    ConsultationState,
    Message,
    SessionListing,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage.bundle.format import FORMAT, FORMAT_VERSION, Tally, canonical, store_time

#: Lines are yielded in chunks of about this many bytes.
CHUNK_BYTES = 256 * 1024


class Exported(Protocol):
    """The reads an export makes: a VersionedStorage's public ones (store.py imports this
    module, so it is named by what it offers)."""

    def iter_sessions(self, user_id: str) -> AsyncIterator[SessionListing]: ...

    def iter_messages(self, session_id: str, *, batch_size: int) -> AsyncIterator[Message]: ...

    async def version(self, session_id: str) -> int: ...

    async def load_profile(self, user_id: str) -> Versioned[UserProfile] | None: ...

    async def load_summary(
        self, session_id: str, summary_version: int | None = None
    ) -> Summary | None: ...

    async def load_state(self, session_id: str) -> Versioned[ConsultationState] | None: ...

    async def state_history(self, session_id: str) -> list[StateChange]: ...


@dataclass
class _Lines:
    """Lines waiting to be yielded, tallied as they are added."""

    tally: Tally = field(default_factory=Tally)
    pending: list[bytes] = field(default_factory=list)
    size: int = 0

    def add(self, kind: str, record: dict[str, Any]) -> None:
        line = canonical({"kind": kind, **record})
        self.tally.add(kind, line)
        self.pending.append(line)
        self.size += len(line)

    @property
    def full(self) -> bool:
        return self.size >= CHUNK_BYTES

    def take(self) -> bytes:
        chunk = b"".join(self.pending)
        self.pending.clear()
        self.size = 0
        return chunk


async def export_bundle(
    storage: Exported, user_id: str, batch_size: int
) -> AsyncGenerator[bytes, None]:
    """The user's bundle, in chunks (the caller checked ``user_id`` and ``batch_size``)."""
    lines = _Lines()
    lines.add("header", {"format": FORMAT, "format_version": FORMAT_VERSION, "user_id": user_id})
    async for listed in _sessions_of(storage, user_id):
        if lines.tally.counts["session"] == 0:  # the profile first, once the user is readable
            await _add_profile(storage, user_id, lines)
        async for chunk in _session_lines(storage, listed, lines, batch_size):
            yield chunk
    if lines.tally.counts["session"] == 0:
        await _add_profile(storage, user_id, lines)
    manifest = canonical(lines.tally.manifest())
    yield lines.take() + manifest


async def _sessions_of(storage: Exported, user_id: str) -> AsyncGenerator[SessionListing, None]:
    """The user's sessions (the listing's order); a store that can't list them can't
    export them, and says so for this operation."""
    listed = storage.iter_sessions(user_id)
    try:
        first = await anext(listed, None)
    except NotSupportedError as error:
        raise NotSupportedError(
            f"{error.backend} can't export a user: {error.message}",
            operation="export_user",
            backend=error.backend,
        ) from error
    if first is None:
        return
    yield first
    async for item in listed:
        yield item


async def _add_profile(storage: Exported, user_id: str, lines: _Lines) -> None:
    profile = await storage.load_profile(user_id)
    if profile is not None:
        lines.add(
            "profile",
            {
                "profile": profile.value.document(),
                "version": profile.version,
                "updated_at": store_time(profile.updated_at),
            },
        )


async def _session_lines(
    storage: Exported, listed: SessionListing, lines: _Lines, batch_size: int
) -> AsyncGenerator[bytes, None]:
    """One session's records.  Its reads are several: a write to the session meanwhile
    (a new version, another message count) fails the export rather than mixing two."""
    session_id = listed.session_id
    version = await storage.version(session_id)
    lines.add(
        "session",
        {
            "session_id": session_id,
            "version": version,
            "created_at": store_time(listed.created_at),
            "updated_at": store_time(listed.updated_at),
            "message_count": listed.message_count,
        },
    )
    position = 0
    async for message in storage.iter_messages(session_id, batch_size=batch_size):
        lines.add(
            "message",
            {"session_id": session_id, "position": position, "message": message_document(message)},
        )
        position += 1
        if lines.full:
            yield lines.take()
    await _add_documents(storage, session_id, lines)
    if position != listed.message_count or await storage.version(session_id) != version:
        raise ConflictError(
            f"export: session {session_id!r} was written to during the export; export again",
            session_id=session_id,
        )


def message_document(message: Message) -> dict[str, Any]:
    """A message as a bundle holds it: its JSON form (times as Go writes them, to the
    nanosecond, with their UTC offsets)."""
    return message.model_dump(mode="json")


async def _add_documents(storage: Exported, session_id: str, lines: _Lines) -> None:
    latest = await storage.load_summary(session_id)
    for summary_version in range(1, latest.summary_version + 1 if latest else 1):
        summary = (
            latest
            if latest is not None and summary_version == latest.summary_version
            else await storage.load_summary(session_id, summary_version)
        )
        if summary is not None:
            lines.add("summary", _summary_record(session_id, summary))
    state = await storage.load_state(session_id)
    if state is not None:
        lines.add(
            "state",
            {
                "session_id": session_id,
                "version": state.version,
                "updated_at": store_time(state.updated_at),
                "state": state.value.document(),
            },
        )
    for change in await storage.state_history(session_id):
        lines.add(
            "state_change",
            {
                "session_id": session_id,
                "version": change.version,
                "created_at": store_time(change.created_at),
                "state": change.state.document(),
            },
        )


def _summary_record(session_id: str, summary: Summary) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "summary_version": summary.summary_version,
        "text": summary.text,
        "covers_until": summary.covers_until,
        "token_count": summary.token_count,
        "created_at": store_time(summary.created_at),
    }
