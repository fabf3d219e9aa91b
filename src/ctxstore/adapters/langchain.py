"""LangChain's chat message history on any ctxstore storage (``ctxstore[langchain]``).

::

    from ctxstore.adapters.langchain import CtxstoreChatMessageHistory

    history = CtxstoreChatMessageHistory("session-1", storage)
    RunnableWithMessageHistory(chain, lambda sid: CtxstoreChatMessageHistory(sid, storage))

Each LangChain message is one ctxstore message: its string content is the content
(what context windows and token counts read), everything else (type, ids, tool calls,
usage, kwargs, metadata, list content) is kept under ``metadata["langchain"]``, so
``messages`` returns messages equal to the ones added.  Appends are ctxstore's
versioned append: concurrent workers never lose a message.  ``window`` makes
``messages`` return only the newest messages, read in one backward range scan.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxstore.adapters.loops import call_blocking, on_home_loop
from ctxstore.adapters.records import convert_all, limits_of, missing_extra, pack, unpack
from ctxstore.adapters.tail import newest
from ctxstore.errors import CorruptDataError, InvalidInputError, InvalidMessageError
from ctxstore.models import ROLES, Message, Role
from ctxstore.storage.rules import DEFAULT_LIMITS, Limits, check_session_id
from ctxstore.storage.store import VersionedStorage

try:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.messages import (
        AIMessage,
        BaseMessage,
        HumanMessage,
        SystemMessage,
        ToolMessage,
        messages_from_dict,
    )
except ImportError as error:
    raise missing_extra("langchain", "langchain-core", error) from error

__all__ = ["KEY", "CtxstoreChatMessageHistory", "from_message", "to_message"]

#: Where a message's LangChain fields are kept in ctxstore's metadata.
KEY = "langchain"

# Every type messages_from_dict restores, with its ctxstore role (None: ChatMessage's own
# role when it is one of ctxstore's, else "user").
_ROLES: dict[str, Role | None] = {
    "human": "user",
    "HumanMessageChunk": "user",
    "ai": "assistant",
    "AIMessageChunk": "assistant",
    "system": "system",
    "SystemMessageChunk": "system",
    "tool": "tool",
    "ToolMessageChunk": "tool",
    "function": "tool",
    "FunctionMessageChunk": "tool",
    "remove": "system",
    "chat": None,
    "ChatMessageChunk": None,
}


class CtxstoreChatMessageHistory(BaseChatMessageHistory):
    """A session's messages in ctxstore, as LangChain's ``BaseChatMessageHistory``.

    ``storage``: any ctxstore storage (PostgresStorage, MemoryStorage, RedisStorage,
    FallbackStorage).  ``user_id``: recorded on the session (for erase_user).
    ``window``: ``messages`` returns at most this many of the newest messages (None: all).

    The synchronous methods run on the event loop that serves the storage (loops.py), so
    one storage serves synchronous and asynchronous code alike.
    """

    def __init__(
        self,
        session_id: str,
        storage: VersionedStorage,
        *,
        user_id: str | None = None,
        window: int | None = None,
    ) -> None:
        super().__init__()
        self.session_id = check_session_id(session_id, limits_of(storage))
        self.storage = storage
        self.user_id = user_id
        if window is not None and (type(window) is not int or window < 0):
            raise InvalidInputError(f"window must be None or an int >= 0, not {window!r}")
        self.window = window

    # -- asynchronous -------------------------------------------------------------------------

    async def aget_messages(self) -> list[BaseMessage]:
        return await on_home_loop(self.storage, self._read)

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await on_home_loop(self.storage, lambda: self._append(messages))

    async def aclear(self) -> None:
        await on_home_loop(self.storage, self._clear)

    # -- synchronous ----------------------------------------------------------------------------

    @property
    def messages(self) -> list[BaseMessage]:
        return call_blocking(self.storage, self._read)

    @messages.setter
    def messages(self, messages: Sequence[BaseMessage]) -> None:
        """Replace every message of the session (one atomic save)."""
        call_blocking(self.storage, self._replace, messages)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        call_blocking(self.storage, self._append, messages)

    def clear(self) -> None:
        call_blocking(self.storage, self._clear)

    # -- on the storage's loop --------------------------------------------------------------------

    async def _read(self) -> list[BaseMessage]:
        if self.window is None:
            stored = await self.storage.load(self.session_id)
        else:
            stored = await newest(self.storage, self.session_id, self.window)
        return convert_all(stored, lambda message: from_message(message, self.session_id))

    async def _append(self, messages: Sequence[BaseMessage]) -> None:
        converted = self._converted(messages)
        if converted:
            await self.storage.append(self.session_id, converted, user_id=self.user_id)

    async def _replace(self, messages: Sequence[BaseMessage]) -> None:
        await self.storage.save(self.session_id, self._converted(messages), user_id=self.user_id)

    async def _clear(self) -> None:
        await self.storage.delete(self.session_id)

    def _converted(self, messages: Sequence[BaseMessage]) -> list[Message]:
        if isinstance(messages, BaseMessage | str | bytes) or not isinstance(messages, Sequence):
            raise InvalidMessageError(
                f"messages must be a sequence of LangChain messages, not {type(messages).__name__}"
            )
        limits = limits_of(self.storage)
        return [to_message(message, limits) for message in messages]


def to_message(message: BaseMessage, limits: Limits = DEFAULT_LIMITS) -> Message:
    """``message`` as the ctxstore Message that keeps all of it."""
    if not isinstance(message, BaseMessage):
        raise InvalidMessageError(
            f"expected a LangChain message (BaseMessage), got {type(message).__name__}"
        )
    data = message.model_dump()
    kind = data.get("type")
    if kind not in _ROLES:
        raise InvalidMessageError(
            f"LangChain message type {kind!r} is not one messages_from_dict restores"
        )
    role = _ROLES[kind]
    if role is None:
        role = data["role"] if data.get("role") in ROLES else "user"
    if isinstance(data["content"], str):
        return pack(KEY, data, role, limits, text_field="content")
    return pack(KEY, data, role, limits, text=str(message.text))


def from_message(message: Message, session_id: str | None = None) -> BaseMessage:
    """The LangChain message ``to_message`` stored; a message written by other code
    becomes the LangChain message of its role."""
    try:
        data = unpack(KEY, message)
        if data is not None:
            return messages_from_dict([{"type": data["type"], "data": data}])[0]
    except (KeyError, TypeError, ValueError) as error:  # pydantic's errors are ValueErrors
        raise CorruptDataError(
            f"a stored LangChain message cannot be restored: {type(error).__name__}: {error}",
            session_id=session_id,
        ) from None
    return _plain(message)


def _plain(message: Message) -> BaseMessage:
    if message.role == "user":
        return HumanMessage(content=message.content, name=message.name)
    if message.role == "assistant":
        return AIMessage(content=message.content, name=message.name)
    if message.role == "system":
        return SystemMessage(content=message.content, name=message.name)
    call_id = message.metadata.get("tool_call_id")
    return ToolMessage(
        content=message.content,
        name=message.name,
        tool_call_id=call_id if isinstance(call_id, str) else (message.name or ""),
    )
