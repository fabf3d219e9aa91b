"""The OpenAI Agents SDK's ``Session`` on any ctxstore storage (``ctxstore[agents]``).

::

    from ctxstore.adapters.agents import CtxstoreSession

    session = CtxstoreSession("user-123", storage)
    await Runner.run(agent, "Hello", session=session)

Each item (a message, a function call or its output, a reasoning item, ...) is one
ctxstore message, kept exactly: its text field (``content``, ``output`` or
``arguments`` when it is a string) is the message's content, the rest of the item is
under ``metadata["openai_agents"]``.  ``get_items(limit)`` reads only the newest
``limit`` items; ``add_items`` is one versioned append; ``pop_item`` is atomic under
concurrency (tail.py).  Writes run to their end even when the caller is cancelled.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from ctxstore.adapters.loops import on_home_loop, settled
from ctxstore.adapters.records import convert_all, limits_of, missing_extra, pack, unpack
from ctxstore.adapters.tail import newest, pop_newest
from ctxstore.errors import (
    ConflictError,
    CorruptDataError,
    InvalidInputError,
    InvalidMessageError,
    SessionSettingsError,
)
from ctxstore.models import Message, Role
from ctxstore.storage.rules import DEFAULT_LIMITS, Limits, check_session_id
from ctxstore.storage.store import VersionedStorage

try:
    from agents.items import TResponseInputItem
    from agents.memory import SessionSettings
    from agents.memory.session import _CompactionSnapshot
    from agents.memory.session_settings import resolve_session_limit
except ImportError as error:
    raise missing_extra("agents", "openai-agents", error) from error

T = TypeVar("T")

__all__ = ["KEY", "CtxstoreSession", "from_message", "to_message"]

#: Where an item is kept in ctxstore's metadata.
KEY = "openai_agents"

#: The item fields whose string value is the item's text, in the order they are tried.
_TEXT_FIELDS = ("content", "output", "arguments")
_ROLES: dict[str, Role] = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}


def _settings(given: SessionSettings | Mapping[str, Any] | None) -> SessionSettings:
    """The SDK's SessionSettings for what a caller gave (Runner calls ``.resolve`` on it)."""
    if given is None:
        return SessionSettings()
    if isinstance(given, SessionSettings):
        return given
    if not isinstance(given, Mapping):
        raise SessionSettingsError(
            f"session_settings must be SessionSettings or a mapping: {given!r}"
        )
    try:
        return SessionSettings().resolve(dict(given))
    except TypeError as error:  # an unknown setting, as the SDK words it
        raise SessionSettingsError(f"session_settings: {error}".splitlines()[0]) from None
    except ValueError as error:  # pydantic's ValidationError is a ValueError
        raise InvalidInputError(f"session_settings: {error}".splitlines()[0]) from None


class CtxstoreSession:
    """A session's items in ctxstore, as the Agents SDK's ``Session`` protocol.

    ``storage``: any ctxstore storage.  ``user_id``: recorded on the session (for
    erase_user).  ``session_settings.limit``: the default ``limit`` of ``get_items``;
    given as a mapping, it is converted as the SDK's own sessions convert it (an unknown
    or ill-typed setting is InvalidInputError).
    """

    def __init__(
        self,
        session_id: str,
        storage: VersionedStorage,
        *,
        user_id: str | None = None,
        session_settings: SessionSettings | Mapping[str, Any] | None = None,
    ) -> None:
        self.session_id = check_session_id(session_id, limits_of(storage))
        self.storage = storage
        self.user_id = user_id
        self.session_settings = _settings(session_settings)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """Every item, oldest first; with ``limit``, the newest ``limit`` of them (still
        oldest first; 0: none)."""
        limit = resolve_session_limit(limit, self.session_settings)
        if limit is not None and (type(limit) is not int or limit < 0):
            raise InvalidInputError(f"limit must be None or an int >= 0, not {limit!r}")
        stored = await on_home_loop(self.storage, lambda: self._read(limit))
        return convert_all(stored, lambda message: from_message(message, self.session_id))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` after the stored ones, all or none (one versioned append)."""
        if isinstance(items, Mapping | str | bytes) or not isinstance(items, list | tuple):
            raise InvalidMessageError(f"items must be a list of items, not {type(items).__name__}")
        if not items:
            return
        messages = self._messages(items)
        await self._write(
            lambda: self.storage.append(self.session_id, messages, user_id=self.user_id)
        )

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest item and return it (None: the session is empty)."""
        popped = await self._write(lambda: pop_newest(self.storage, self.session_id, self.user_id))
        return from_message(popped, self.session_id) if popped is not None else None

    async def clear_session(self) -> None:
        """Remove the session: its items, and ctxstore's summaries and state of it."""
        await self._write(lambda: self.storage.delete(self.session_id))

    # -- the SDK's compaction protocol (OpenAIResponsesCompactionSession) --------------------

    async def _get_compaction_snapshot(
        self,
        limit: int,
        *,
        prune_prefix: Callable[[TResponseInputItem], bool] | None = None,
    ) -> _CompactionSnapshot | None:
        """The newest ``limit`` items read on one snapshot, whether they are all of the
        session's, and an atomic replacement of a suffix of them: what the SDK's
        compaction wrapper asks of its own SQL sessions to compact a bounded suffix
        instead of requiring the whole history (it skips compaction otherwise).

        ``replace_suffix(start, output)`` replaces the snapshot's items from ``start`` on
        with ``output`` in one versioned save, only if the session is still at the version
        read (else False: the stored suffix changed); ``prune_prefix`` drops the items
        before the suffix it says are expired, oldest first, in the same save."""

        async def read() -> tuple[list[Message], bool, int]:
            async with self.storage.reader(self.session_id) as reader:
                head = await reader.head()
                count = head.message_count
                window = await reader.span(max(0, count - limit), count) if count else []
            return window, count <= limit, head.version

        window, complete, version = await on_home_loop(self.storage, read)
        try:
            items = [from_message(message, self.session_id) for message in window]
        except CorruptDataError:
            return None  # as the SDK's sessions do with rows they cannot decode

        async def replace_suffix(start: int, output: list[TResponseInputItem]) -> bool:
            if not 0 <= start < len(window):
                return False
            replacement = self._messages(output)
            suffix = len(window) - start

            async def replace() -> bool:
                async with self.storage.reader(self.session_id) as reader:
                    head = await reader.head()
                    if head.version != version:
                        return False
                    kept = await reader.span(0, head.message_count - suffix)
                if prune_prefix is not None:
                    while kept and prune_prefix(from_message(kept[0], self.session_id)):
                        kept = kept[1:]
                try:
                    await self.storage.save(
                        self.session_id,
                        kept + replacement,
                        expected_version=version,
                        user_id=self.user_id,
                    )
                except ConflictError:  # another writer got there first
                    return False
                return True

            return await self._write(replace)

        return _CompactionSnapshot(items, complete, replace_suffix)

    async def _atomic_replace_items(self, items: list[TResponseInputItem]) -> bool:
        """Replace every item with ``items`` in one save (the compaction wrapper's whole
        history replacement; without it, it clears and re-adds, two writes)."""
        messages = self._messages(items)
        await self._write(
            lambda: self.storage.save(self.session_id, messages, user_id=self.user_id)
        )
        return True

    def _messages(self, items: list[TResponseInputItem]) -> list[Message]:
        limits = limits_of(self.storage)
        return [to_message(item, limits) for item in items]

    async def _write(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` on the storage's loop, run to its end even if the caller is cancelled."""
        return await settled(on_home_loop(self.storage, call))

    async def _read(self, limit: int | None) -> list[Message]:
        if limit is None:
            return await self.storage.load(self.session_id)
        return await newest(self.storage, self.session_id, limit)


def to_message(item: TResponseInputItem, limits: Limits = DEFAULT_LIMITS) -> Message:
    """``item`` as the ctxstore Message that keeps all of it."""
    if not isinstance(item, Mapping):
        raise InvalidMessageError(f"an item must be a dict, not {type(item).__name__}")
    document = dict(item)
    named = document.get("role")
    role = _ROLES.get(named) if isinstance(named, str) else None
    if role is None:
        kind = document.get("type")
        role = "tool" if isinstance(kind, str) and kind.endswith("_output") else "assistant"
    for field in _TEXT_FIELDS:
        if isinstance(document.get(field), str):
            return pack(KEY, document, role, limits, text_field=field)
    return pack(KEY, document, role, limits, text=_text_of(document))


def from_message(message: Message, session_id: str | None = None) -> TResponseInputItem:
    """The item ``to_message`` stored; a message written by other code becomes an easy
    input message of its role (a tool's: a function call output)."""
    try:
        item = unpack(KEY, message)
    except (KeyError, TypeError, ValueError) as error:
        raise CorruptDataError(
            f"a stored Agents item cannot be restored: {type(error).__name__}: {error}",
            session_id=session_id,
        ) from None
    if item is not None:
        return cast(TResponseInputItem, item)
    if message.role == "tool":
        call_id = message.metadata.get("call_id", message.metadata.get("tool_call_id"))
        return {
            "type": "function_call_output",
            "call_id": call_id if isinstance(call_id, str) else (message.name or ""),
            "output": message.content,
        }
    return {"role": message.role, "content": message.content}


def _text_of(document: dict[str, Any]) -> str:
    """The text parts of an item whose content is a list (for context windows)."""
    texts: list[str] = []
    for field in ("content", "summary", "output"):
        parts = document.get(field)
        if isinstance(parts, list):
            texts.extend(
                part["text"]
                for part in parts
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return "\n".join(texts)
