"""LangGraph's checkpointer on ctxstore's PostgreSQL storage (``ctxstore[langgraph]``).

::

    from ctxstore.adapters.langgraph import CtxstoreSaver

    graph = builder.compile(checkpointer=CtxstoreSaver(storage))
    graph.invoke(inputs, {"configurable": {"thread_id": "consultation-42"}})

A graph's ``thread_id`` is a ctxstore session id.  The root graph's ``messages`` channel
(a list of LangChain messages, as ``add_messages`` keeps it) is the session's messages:
each checkpoint appends only what is new since its parent (one versioned append), and
records how many messages it holds, so the Context Contract, analytics, the HTTP API,
erasure and encryption see the conversation as they see any other.  Every other channel
value is a versioned blob, written when its version changes; pending writes are kept
per task.  Time travel and forks work: a checkpoint written from an older parent, or
after an edit (``RemoveMessage``, a message replaced by id), rewrites the session to its
messages, and the checkpoints that held more of the old ones read them from an archived
copy from then on.

A turn's write costs what is new, and reading the latest state costs one session version
check while this saver holds the thread's messages (the last ``cached_threads`` threads
it wrote or read); see docs/adapters.md.  Messages are treated as LangGraph treats them:
immutable, edited by replacing them by id.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

from ctxstore.adapters.graph_rows import CheckpointRow, GraphRows, Typed, WriteRow
from ctxstore.adapters.langchain import from_message, to_message
from ctxstore.adapters.loops import call_blocking, on_home_loop, settled
from ctxstore.adapters.records import limits_of, missing_extra
from ctxstore.errors import ConflictError, CorruptDataError, InvalidInputError
from ctxstore.storage.postgres import PostgresStorage
from ctxstore.storage.rules import NEW_SESSION, check_session_id

try:
    from langchain_core.messages import BaseMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        PendingWrite,
        get_checkpoint_id,
        get_serializable_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ImportError as error:
    raise missing_extra("langgraph", "langgraph", error) from error

__all__ = ["MESSAGES", "CtxstoreSaver"]

#: The channel kept as the session's messages (in the root graph, when it holds messages).
MESSAGES = "messages"
#: Rewrites of a session lost to concurrent writers before a checkpoint gives up.
_ATTEMPTS = 5


@dataclass(frozen=True)
class _Held:
    """A session's messages as of its ``version``, as this saver last wrote or read them."""

    version: int
    messages: list[BaseMessage]


class CtxstoreSaver(BaseCheckpointSaver[int]):
    """LangGraph checkpoints in ctxstore, sync and async (see the module's docstring).

    ``storage``: a PostgresStorage.  A thread's user (for ``erase_user`` and its data
    key) is ``config["configurable"]["user_id"]`` when given.
    """

    def __init__(
        self,
        storage: PostgresStorage,
        *,
        serde: SerializerProtocol | None = None,
        cached_threads: int = 1024,
    ) -> None:
        if not isinstance(storage, PostgresStorage):
            raise InvalidInputError(
                f"CtxstoreSaver needs a PostgresStorage, not {type(storage).__name__}"
            )
        super().__init__(serde=serde)
        self.storage = storage
        self._rows = GraphRows(storage)
        self._held: OrderedDict[str, _Held] = OrderedDict()
        #: Threads whose session is being made (a step's writes and checkpoint race to it).
        self._locks: dict[str, asyncio.Lock] = {}
        self._cached_threads = cached_threads

    # -- reads --------------------------------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        sid, ns = self._thread(config)
        return await on_home_loop(
            self.storage, lambda: self._get(sid, ns, get_checkpoint_id(config))
        )

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        found = await on_home_loop(self.storage, lambda: self._list(config, filter, before, limit))
        for tup in found:
            yield tup

    async def _get(self, sid: str, ns: str, checkpoint_id: str | None) -> CheckpointTuple | None:
        rows = await self._rows.checkpoints(sid, ns=ns, checkpoint_id=checkpoint_id, limit=1)
        return (await self._tuples(sid, rows))[0] if rows else None

    async def _list(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> list[CheckpointTuple]:
        _check_limit(limit)
        threads = await self._threads(config, filter)
        ns = (config or {}).get("configurable", {}).get("checkpoint_ns")
        before_id = get_checkpoint_id(before) if before else None
        found: list[CheckpointTuple] = []
        for sid in threads:
            rows = await self._rows.checkpoints(
                sid,
                ns=ns,
                checkpoint_id=get_checkpoint_id(config) if config else None,
                before=before_id,
                filter=filter,
                limit=None if limit is None else limit - len(found),
            )
            found.extend(await self._tuples(sid, rows))
            if limit is not None and len(found) >= limit:
                break
        found.sort(key=lambda t: t.checkpoint["id"], reverse=True)
        return found if limit is None else found[:limit]

    async def _threads(
        self, config: RunnableConfig | None, filter: dict[str, Any] | None
    ) -> list[str]:
        """The thread ``config`` names, or every thread whose checkpoints ``filter`` admits."""
        if (config or {}).get("configurable", {}).get("thread_id") is not None:
            return [self._thread(config or {})[0]]
        return await self._rows.threads(filter)

    async def _tuples(self, sid: str, rows: Sequence[CheckpointRow]) -> list[CheckpointTuple]:
        """The checkpoints of ``rows`` with their values and pending writes."""
        checkpoints = {(r.ns, r.checkpoint_id): self._loads(r.checkpoint, sid) for r in rows}
        wanted = {
            (row.ns, channel, str(version))
            for row in rows
            for channel, version in checkpoints[row.ns, row.checkpoint_id][
                "channel_versions"
            ].items()
            if not self._in_session(row, channel)
        }
        wanted |= {(r.ns, MESSAGES, r.messages_archive) for r in rows if r.messages_archive}
        values = await self._rows.values(sid, wanted)
        writes = await self._pending_writes(sid, rows)
        session: list[_Held] = []  # the session's messages, read at most once
        found = []
        for row in rows:
            checkpoint = checkpoints[row.ns, row.checkpoint_id]
            checkpoint["channel_values"] = await self._channel_values(
                sid, row, checkpoint, values, session
            )
            found.append(
                CheckpointTuple(
                    config=_config(sid, row.ns, row.checkpoint_id),
                    checkpoint=checkpoint,
                    metadata=row.metadata,  # type: ignore[arg-type]
                    parent_config=(_config(sid, row.ns, row.parent_id) if row.parent_id else None),
                    pending_writes=writes.get((row.ns, row.checkpoint_id), []),
                )
            )
        return found

    async def _pending_writes(
        self, sid: str, rows: Sequence[CheckpointRow]
    ) -> dict[tuple[str, str], list[PendingWrite]]:
        """The pending writes of each of ``rows``' checkpoints, by (ns, checkpoint id)."""
        writes: dict[tuple[str, str], list[PendingWrite]] = {}
        for w in await self._rows.writes(sid, [(row.ns, row.checkpoint_id) for row in rows]):
            pending = (w.task_id, w.channel, self._loads(w.value, sid))
            writes.setdefault((w.ns, w.checkpoint_id), []).append(pending)
        return writes

    async def _channel_values(
        self,
        sid: str,
        row: CheckpointRow,
        checkpoint: Checkpoint,
        values: dict[tuple[str, str, str], Typed | None],
        session: list[_Held],
    ) -> dict[str, Any]:
        channel_values: dict[str, Any] = {}
        for channel, version in checkpoint["channel_versions"].items():
            if self._in_session(row, channel):
                channel_values[channel] = await self._messages_at(sid, row, values, session)
            elif (typed := values.get((row.ns, channel, str(version)))) is not None:
                channel_values[channel] = self._loads(typed, sid)
        return channel_values

    @staticmethod
    def _in_session(row: CheckpointRow, channel: str) -> bool:
        return channel == MESSAGES and row.messages_count is not None

    async def _messages_at(
        self,
        sid: str,
        row: CheckpointRow,
        values: dict[tuple[str, str, str], Typed | None],
        session: list[_Held],
    ) -> list[BaseMessage]:
        """The messages ``row`` holds; ``session``: the session as this call read it (at
        most once, however many checkpoints it reads)."""
        count = row.messages_count or 0
        if row.messages_archive is not None:
            archived = values.get((row.ns, MESSAGES, row.messages_archive))
            if archived is None:
                raise CorruptDataError(
                    f"checkpoint {row.checkpoint_id}: its archived messages are missing",
                    session_id=sid,
                )
            return list(self._loads(archived, sid)[:count])
        if not session:
            cached = self._held.get(sid)
            fresh = cached is not None and cached.version == row.session_version
            session.append(
                cached if cached is not None and fresh else await self._load_session(sid)
            )
        held = session[0]
        if len(held.messages) < count:
            raise CorruptDataError(
                f"checkpoint {row.checkpoint_id} holds {count} messages; the session has "
                f"{len(held.messages)} (it was cut outside the graph)",
                session_id=sid,
            )
        return held.messages[:count]

    async def _load_session(self, sid: str) -> _Held:
        async with self.storage.reader(sid) as reader:  # one snapshot: version and messages
            head = await reader.head()
            stored = await reader.span(0, head.message_count) if head.message_count else []
        held = _Held(head.version, [from_message(m, sid) for m in stored])
        self._hold(sid, held)
        return held

    def _hold(self, sid: str, held: _Held) -> None:
        self._held[sid] = held
        self._held.move_to_end(sid)
        while len(self._held) > self._cached_threads:
            self._held.popitem(last=False)

    # -- writes -------------------------------------------------------------------------------

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        sid, ns = self._thread(config)
        user_id = _user_of(config)
        serializable = dict(get_serializable_checkpoint_metadata(config, metadata))
        return await settled(
            on_home_loop(
                self.storage,
                lambda: self._put(sid, ns, user_id, config, checkpoint, serializable, new_versions),
            )
        )

    async def _put(
        self,
        sid: str,
        ns: str,
        user_id: str | None,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: dict[str, Any],
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        values = checkpoint["channel_values"]
        messages = values.get(MESSAGES)
        held = self._held.get(sid)
        extended = (
            held
            if held and isinstance(messages, list) and _extends(messages, held.messages)
            else None
        )
        as_session = ns == "" and _are_messages(messages, len(extended.messages) if extended else 0)
        count = None
        if as_session:
            count = await self._store_messages(
                sid, user_id, cast(list[BaseMessage], messages), extended
            )
        else:
            await self._ensure_session(sid, user_id)
        body = {**checkpoint, "channel_values": {}}
        blobs: dict[str, tuple[str, Typed | None]] = {
            channel: (
                str(version),
                self.serde.dumps_typed(values[channel]) if channel in values else None,
            )
            for channel, version in new_versions.items()
            if not (as_session and channel == MESSAGES)
        }
        row = CheckpointRow(
            ns=ns,
            checkpoint_id=checkpoint["id"],
            parent_id=get_checkpoint_id(config),
            checkpoint=self.serde.dumps_typed(body),
            metadata=metadata,
            messages_count=count,
            messages_archive=None,
            session_version=0,
        )
        await self._rows.put(sid, user_id, row, blobs)
        return _config(sid, ns, checkpoint["id"])

    async def _ensure_session(self, sid: str, user_id: str | None) -> None:
        """The thread's session made if it does not exist (its rows hang off it)."""
        async with self._locks.setdefault(sid, asyncio.Lock()):
            if sid in self._held:
                return
            with contextlib.suppress(ConflictError):  # it exists
                await self.storage.save(sid, [], expected_version=NEW_SESSION, user_id=user_id)
            await self._load_session(sid)
        self._locks.pop(sid, None)

    async def _store_messages(
        self, sid: str, user_id: str | None, messages: list[BaseMessage], extended: _Held | None
    ) -> int:
        """The session made to hold ``messages`` (appending what is new when it holds their
        beginning, else rewritten); their count.  ``extended``: the held messages that
        ``messages`` is already known to begin with."""
        held = extended or self._held.get(sid)
        for _ in range(_ATTEMPTS):
            if held is None:
                held = await self._load_session(sid)
                continue
            appending = held is extended or _extends(messages, held.messages)
            if not appending:  # a fork or an edit: the checkpoints past the change keep theirs
                await self._rows.archive_messages(
                    sid,
                    user_id,
                    _common_prefix(messages, held.messages),
                    f"archive.{uuid.uuid4()}",
                    self.serde.dumps_typed(held.messages),
                )
            try:
                version = await self._write_messages(sid, user_id, messages, held, appending)
            except ConflictError:
                held = await self._load_session(sid)
                continue
            self._hold(sid, _Held(version, list(messages)))
            return len(messages)
        raise ConflictError(
            f"thread {sid!r}: its session changed under {_ATTEMPTS} attempts to save a checkpoint"
        )

    async def _write_messages(
        self,
        sid: str,
        user_id: str | None,
        messages: list[BaseMessage],
        held: _Held,
        appending: bool,
    ) -> int:
        """The session's new version: ``messages`` past ``held`` appended, or all of them
        saved over it (ConflictError: it changed since ``held``)."""
        limits = limits_of(self.storage)
        if not appending:
            converted = [to_message(m, limits) for m in messages]
            return await self.storage.save(
                sid, converted, expected_version=held.version, user_id=user_id
            )
        new = messages[len(held.messages) :]
        if not new:
            return held.version
        converted = [to_message(m, limits) for m in new]
        return await self.storage.append(
            sid, converted, expected_version=held.version, user_id=user_id
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        sid, ns = self._thread(config)
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None:
            raise InvalidInputError("put_writes needs the config of a checkpoint (checkpoint_id)")
        rows = [
            WriteRow(
                ns=ns,
                checkpoint_id=checkpoint_id,
                task_id=task_id,
                idx=WRITES_IDX_MAP.get(channel, idx),
                channel=channel,
                value=self.serde.dumps_typed(value),
                task_path=task_path,
            )
            for idx, (channel, value) in enumerate(writes)
        ]
        replace = all(channel in WRITES_IDX_MAP for channel, _ in writes)
        user_id = _user_of(config)

        async def put() -> None:
            await self._ensure_session(sid, user_id)
            await self._rows.put_writes(sid, user_id, rows, replace=replace)

        await settled(on_home_loop(self.storage, put))

    # -- threads ------------------------------------------------------------------------------

    async def adelete_thread(self, thread_id: str) -> None:
        sid = check_session_id(str(thread_id), limits_of(self.storage))
        self._held.pop(sid, None)
        await settled(on_home_loop(self.storage, lambda: self.storage.delete(sid)))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        async def delete() -> None:
            made: dict[str, set[tuple[str, str]]] = {}
            for sid, ns, checkpoint_id in await self._rows.run_checkpoints(list(run_ids)):
                made.setdefault(sid, set()).add((ns, checkpoint_id))
            for sid, gone in made.items():

                def theirs(
                    rows: list[CheckpointRow], gone: set[tuple[str, str]] = gone
                ) -> list[CheckpointRow]:
                    return [row for row in rows if (row.ns, row.checkpoint_id) in gone]

                await self._delete(sid, theirs)

        await settled(on_home_loop(self.storage, delete))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        if strategy not in ("keep_latest", "delete"):
            raise InvalidInputError(f"strategy must be 'keep_latest' or 'delete', not {strategy!r}")

        async def prune() -> None:
            for thread_id in thread_ids:
                sid = check_session_id(str(thread_id), limits_of(self.storage))
                await self._delete(sid, _all_but_latest if strategy == "keep_latest" else list)

        await settled(on_home_loop(self.storage, prune))

    async def _delete(
        self, sid: str, chosen: Callable[[list[CheckpointRow]], list[CheckpointRow]]
    ) -> None:
        """Delete the checkpoints ``chosen`` picks of the thread's (newest first), their
        writes, and the values they alone referred to.  Only what was read is deleted: a
        checkpoint written meanwhile, and what it refers to, stays."""
        rows = await self._rows.checkpoints(sid, ns=None)
        deleted = chosen(rows)
        if not deleted:
            return
        deleted_ids = {(row.ns, row.checkpoint_id) for row in deleted}
        kept = [row for row in rows if (row.ns, row.checkpoint_id) not in deleted_ids]
        freed = set().union(*(self._refers_to(row, sid) for row in deleted))
        still = set().union(*(self._refers_to(row, sid) for row in kept))
        await self._rows.delete(sid, sorted(deleted_ids), freed - still)

    def _refers_to(self, row: CheckpointRow, sid: str) -> set[tuple[str, str, str]]:
        """The ``(namespace, channel, version)``s of the values a checkpoint reads."""
        versions = self._loads(row.checkpoint, sid)["channel_versions"]
        places = {(row.ns, c, str(v)) for c, v in versions.items()}
        if row.messages_archive:
            places.add((row.ns, MESSAGES, row.messages_archive))
        return places

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        source = check_session_id(str(source_thread_id), limits_of(self.storage))
        target = check_session_id(str(target_thread_id), limits_of(self.storage))

        async def copy() -> None:
            rows = await self._rows.checkpoints(source, ns=None)
            if not rows:
                return
            snapshot = await self.storage.snapshot(source)
            await self.storage.save(target, snapshot.messages, user_id=snapshot.user_id)
            self._held.pop(target, None)
            tuples = await self._tuples(source, rows)
            writes = await self._rows.writes(source, [(r.ns, r.checkpoint_id) for r in rows])
            for row, tup in zip(reversed(rows), reversed(tuples), strict=True):
                versions = tup.checkpoint["channel_versions"]
                blobs: dict[str, tuple[str, Typed | None]] = {
                    channel: (str(versions[channel]), self.serde.dumps_typed(value))
                    for channel, value in tup.checkpoint["channel_values"].items()
                    if not self._in_session(row, channel)
                }
                if row.messages_archive is not None:  # the copy keeps its messages as a blob
                    blobs[MESSAGES] = (
                        str(versions[MESSAGES]),
                        self.serde.dumps_typed(tup.checkpoint["channel_values"][MESSAGES]),
                    )
                copied = replace(
                    row,
                    messages_archive=None,
                    messages_count=None if row.messages_archive else row.messages_count,
                )
                await self._rows.put(target, snapshot.user_id, copied, blobs)
            by_task: dict[tuple[str, str, str, str], list[WriteRow]] = {}
            for write in writes:
                key = (write.ns, write.checkpoint_id, write.task_id, write.task_path)
                by_task.setdefault(key, []).append(write)
            for task_writes in by_task.values():
                await self._rows.put_writes(target, snapshot.user_id, task_writes, replace=True)

        await settled(on_home_loop(self.storage, copy))

    # -- synchronous --------------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return call_blocking(self.storage, self.aget_tuple, config)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [
                tup async for tup in self.alist(config, filter=filter, before=before, limit=limit)
            ]

        return iter(call_blocking(self.storage, collect))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return call_blocking(self.storage, self.aput, config, checkpoint, metadata, new_versions)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        call_blocking(self.storage, self.aput_writes, config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        call_blocking(self.storage, self.adelete_thread, thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        call_blocking(self.storage, self.adelete_for_runs, run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        call_blocking(self.storage, self.acopy_thread, source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        call_blocking(self.storage, lambda: self.aprune(thread_ids, strategy=strategy))

    # -- helpers ------------------------------------------------------------------------------

    def _thread(self, config: RunnableConfig) -> tuple[str, str]:
        configurable = config.get("configurable") or {}
        thread_id = configurable.get("thread_id")
        if thread_id is None:
            raise InvalidInputError('a checkpoint config needs configurable["thread_id"]')
        ns = configurable.get("checkpoint_ns") or ""
        return check_session_id(str(thread_id), limits_of(self.storage)), str(ns)

    def _loads(self, typed: Typed, sid: str) -> Any:
        try:
            return self.serde.loads_typed(typed)
        except Exception as error:  # the serializer's own errors, whatever they are
            raise CorruptDataError(
                f"a checkpoint value cannot be read: {type(error).__name__}", session_id=sid
            ) from None


def _check_limit(limit: object) -> None:
    if limit is not None and (type(limit) is not int or limit < 0):
        raise InvalidInputError(f"limit must be None or an int >= 0, not {limit!r}")


def _config(sid: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": sid, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}}


def _user_of(config: RunnableConfig) -> str | None:
    user_id = (config.get("configurable") or {}).get("user_id")
    return user_id if isinstance(user_id, str) and user_id else None


def _all_but_latest(rows: list[CheckpointRow]) -> list[CheckpointRow]:
    """Every checkpoint but the latest of its namespace (``rows``: newest first)."""
    seen: set[str] = set()
    older = []
    for row in rows:
        if row.ns in seen:
            older.append(row)
        seen.add(row.ns)
    return older


def _are_messages(value: Any, checked: int) -> bool:
    """Whether ``value`` is a list of LangChain messages (its first ``checked`` known to be)."""
    return isinstance(value, list) and all(
        isinstance(m, BaseMessage) for m in itertools.islice(value, checked, None)
    )


def _extends(messages: list[BaseMessage], held: list[BaseMessage]) -> bool:
    """Whether ``messages`` begins with ``held`` (a turn's state: the reducer keeps the
    messages it was given, the very objects, and adds new ones after them).  List
    comparison checks identity first, at C speed, and equality only where it differs."""
    return len(messages) >= len(held) and messages[: len(held)] == held


def _common_prefix(messages: list[BaseMessage], stored: list[BaseMessage]) -> int:
    kept = 0
    for new, old in zip(messages, stored, strict=False):
        if new is not old and new != old:
            break
        kept += 1
    return kept
