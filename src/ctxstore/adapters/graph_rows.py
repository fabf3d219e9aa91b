"""The LangGraph checkpoint tables of a PostgresStorage (revision 0024), row by row.

What the checkpointer (langgraph.py) reads and writes, as serialized values: each value is
``(type, bytes)`` as LangGraph's serializer makes it.  When the storage encrypts, every
channel value and pending write is sealed under the session's data key, bound to its place
(thread, namespace, channel and version; or checkpoint, task and index), so a sealed value
copied to another row fails to open.  Checkpoints themselves hold only versions and ids,
and metadata stays queryable (``list(filter=...)``): neither is sealed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.errors import ConfigurationError
from ctxstore.storage.postgres import PostgresStorage, sql
from ctxstore.storage.postgres.statement import Statement

#: A serialized value: LangGraph's ``(type, bytes)``.
Typed = tuple[str, bytes]


@dataclass(frozen=True)
class CheckpointRow:
    ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: Typed
    metadata: dict[str, Any]
    #: The root graph's messages: the session's first ``messages_count`` (None: not kept
    #: as messages), or the first of the archived list ``messages_archive``.
    messages_count: int | None
    messages_archive: str | None
    session_version: int


@dataclass(frozen=True)
class WriteRow:
    ns: str
    checkpoint_id: str
    task_id: str
    idx: int
    channel: str
    value: Typed
    task_path: str


def _columns(places: Sequence[tuple[str, str, str]]) -> dict[str, list[str]]:
    """``(namespace, channel, version)`` places as the three arrays the queries take."""
    return {
        "namespaces": [p[0] for p in places],
        "channels": [p[1] for p in places],
        "versions": [p[2] for p in places],
    }


def _aad(*place: object) -> bytes:
    return b"ctxstore graph v1\x00" + json.dumps(place).encode()


class GraphRows:
    """The checkpoint rows of one storage's threads (a thread's id is its session id)."""

    def __init__(self, storage: PostgresStorage) -> None:
        self.storage = storage

    async def checkpoints(
        self,
        sid: str,
        *,
        ns: str | None,
        checkpoint_id: str | None = None,
        before: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int | None = None,
    ) -> list[CheckpointRow]:
        async with self.storage.maintenance("read checkpoints") as driver:
            found = await sql.GRAPH_CHECKPOINTS.fetch(
                driver,
                sid=sid,
                ns=ns,
                checkpoint_id=checkpoint_id,
                before=before,
                filter=json.dumps(filter or {}),
                limit=limit,
            )
        return [
            CheckpointRow(
                ns=row["checkpoint_ns"],
                checkpoint_id=row["checkpoint_id"],
                parent_id=row["parent_checkpoint_id"],
                checkpoint=(row["checkpoint_type"], row["checkpoint"]),
                metadata=row["metadata"],
                messages_count=row["messages_count"],
                messages_archive=row["messages_archive"],
                session_version=row["session_version"] or 0,
            )
            for row in found
        ]

    async def threads(self, filter: dict[str, Any] | None) -> list[str]:
        async with self.storage.maintenance("list checkpoint threads") as driver:
            found = await sql.GRAPH_THREADS.fetch(driver, filter=json.dumps(filter or {}))
        return sorted(row["session_id"] for row in found)

    async def values(
        self, sid: str, wanted: Iterable[tuple[str, str, str]]
    ) -> dict[tuple[str, str, str], Typed | None]:
        """The values at ``(namespace, channel, version)``; None for an empty channel."""
        places = list(wanted)
        if not places:
            return {}
        found, keys = await self._sealed_rows(
            "read channel values", sql.GRAPH_CHANNEL_VALUES, sid=sid, **_columns(places)
        )
        values: dict[tuple[str, str, str], Typed | None] = {}
        for row in found:
            place = (row["checkpoint_ns"], row["channel"], row["version"])
            payload = row["value"]
            if payload is not None:
                payload = self._open(keys, row["key_id"], payload, _aad(sid, *place), sid)
            values[place] = None if payload is None else (row["value_type"], payload)
        return values

    async def writes(self, sid: str, checkpoints: Sequence[tuple[str, str]]) -> list[WriteRow]:
        """The pending writes of ``(namespace, checkpoint id)``s, in the order a step
        applies them."""
        if not checkpoints:
            return []
        found, keys = await self._sealed_rows(
            "read pending writes",
            sql.GRAPH_PENDING_WRITES,
            sid=sid,
            namespaces=[c[0] for c in checkpoints],
            checkpoint_ids=[c[1] for c in checkpoints],
        )
        return [
            WriteRow(
                ns=row["checkpoint_ns"],
                checkpoint_id=row["checkpoint_id"],
                task_id=row["task_id"],
                idx=row["idx"],
                channel=row["channel"],
                value=(
                    row["value_type"],
                    self._open(
                        keys,
                        row["key_id"],
                        row["value"],
                        _aad(
                            sid,
                            row["checkpoint_ns"],
                            row["checkpoint_id"],
                            row["task_id"],
                            row["idx"],
                        ),
                        sid,
                    ),
                ),
                task_path=row["task_path"],
            )
            for row in found
        ]

    async def put(
        self,
        sid: str,
        user_id: str | None,
        row: CheckpointRow,
        values: dict[str, tuple[str, Typed | None]],
    ) -> None:
        """The checkpoint and its new channel values (``channel: (version, value)``), in
        one statement."""
        async with self.storage.maintenance("save a checkpoint") as driver:
            with translated("save a checkpoint", conflict_on_duplicate=True):
                key = await self._key(driver, sid, user_id)
                await sql.GRAPH_PUT_CHECKPOINT.execute(
                    driver,
                    sid=sid,
                    ns=row.ns,
                    **self._sealed_values(key, sid, row.ns, values),
                    checkpoint_id=row.checkpoint_id,
                    parent_id=row.parent_id,
                    checkpoint_type=row.checkpoint[0],
                    checkpoint=row.checkpoint[1],
                    metadata=json.dumps(row.metadata),
                    messages_count=row.messages_count,
                    messages_archive=row.messages_archive,
                )

    async def put_writes(
        self,
        sid: str,
        user_id: str | None,
        writes: Sequence[WriteRow],
        *,
        replace: bool,
    ) -> None:
        """One task's writes (same checkpoint, task and path); ``replace``: over those
        stored at the same indexes."""
        if not writes:
            return
        first = writes[0]
        async with self.storage.maintenance("save pending writes") as driver:
            with translated("save pending writes", conflict_on_duplicate=True):
                key = await self._key(driver, sid, user_id)
                payloads = [
                    self._seal(
                        key,
                        w.value[1],
                        _aad(sid, w.ns, w.checkpoint_id, w.task_id, w.idx),
                    )
                    for w in writes
                ]
                statement = sql.GRAPH_PUT_WRITES if replace else sql.GRAPH_ADD_WRITES
                await statement.execute(
                    driver,
                    sid=sid,
                    ns=first.ns,
                    checkpoint_id=first.checkpoint_id,
                    task_id=first.task_id,
                    task_path=first.task_path,
                    idxs=[w.idx for w in writes],
                    channels=[w.channel for w in writes],
                    value_types=[w.value[0] for w in writes],
                    payloads=payloads,
                    key_id=key.key_id if key is not None else None,
                )

    async def archive_messages(
        self, sid: str, user_id: str | None, kept: int, archive: str, messages: Typed
    ) -> None:
        """Point the root checkpoints that hold more than the first ``kept`` messages at
        ``messages`` (the session's list before a rewrite), stored as version ``archive``."""
        async with self.storage.maintenance("archive a thread's messages") as driver:
            with translated("archive a thread's messages", conflict_on_duplicate=True):
                async with driver.transaction():
                    moved = await sql.GRAPH_ARCHIVE_MESSAGES.execute(
                        driver, sid=sid, archive=archive, kept=kept
                    )
                    if moved != "UPDATE 0":
                        await self._put_values(
                            driver, sid, user_id, "", {"messages": (archive, messages)}
                        )

    async def delete(
        self,
        sid: str,
        checkpoints: Sequence[tuple[str, str]],
        values: Iterable[tuple[str, str, str]],
    ) -> None:
        """A thread's ``(namespace, checkpoint id)``s with their pending writes, and its
        values at ``(namespace, channel, version)``, in one transaction."""
        async with (
            self.storage.maintenance("delete checkpoints") as driver,
            driver.transaction(),
        ):
            await sql.GRAPH_DELETE_CHECKPOINTS.execute(
                driver,
                sid=sid,
                namespaces=[c[0] for c in checkpoints],
                checkpoint_ids=[c[1] for c in checkpoints],
            )
            await sql.GRAPH_DELETE_VALUES.execute(driver, sid=sid, **_columns(list(values)))

    async def run_checkpoints(self, run_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(thread, namespace, checkpoint id)`` of the checkpoints the runs made."""
        async with self.storage.maintenance("find a run's checkpoints") as driver:
            found = await sql.GRAPH_RUN_CHECKPOINTS.fetch(driver, run_ids=list(run_ids))
        return [(r["session_id"], r["checkpoint_ns"], r["checkpoint_id"]) for r in found]

    # -- sealing ----------------------------------------------------------------------------

    async def _put_values(
        self,
        driver: Any,
        sid: str,
        user_id: str | None,
        ns: str,
        values: dict[str, tuple[str, Typed | None]],
    ) -> None:
        key = await self._key(driver, sid, user_id)
        await sql.GRAPH_PUT_VALUES.execute(
            driver, sid=sid, ns=ns, **self._sealed_values(key, sid, ns, values)
        )

    def _sealed_values(
        self, key: Any, sid: str, ns: str, values: dict[str, tuple[str, Typed | None]]
    ) -> dict[str, Any]:
        """``channel: (version, value)`` as the arrays the value inserts take, sealed under
        ``key`` (None: plaintext); an absent value is the channel's ``empty`` marker."""
        channels = list(values)
        return {
            "channels": channels,
            "versions": [values[c][0] for c in channels],
            "value_types": [typed[0] if (typed := values[c][1]) else "empty" for c in channels],
            "payloads": [
                self._seal(key, typed[1], _aad(sid, ns, c, values[c][0]))
                if (typed := values[c][1])
                else None
                for c in channels
            ],
            "key_id": key.key_id if key is not None else None,
        }

    async def _key(self, driver: Any, sid: str, user_id: str | None) -> Any:
        keys = self.storage.data_keys
        return None if keys is None else await keys.for_session(driver, sid, user_id)

    @staticmethod
    def _seal(key: Any, payload: bytes, aad: bytes) -> bytes:
        return payload if key is None else bytes(key.seal(payload, aad))

    async def _sealed_rows(
        self, action: str, statement: Statement, **values: Any
    ) -> tuple[list[Any], Any]:
        """The rows ``statement`` reads, and the data keys that open them."""
        async with self.storage.maintenance(action) as driver:
            found = await statement.fetch(driver, **values)
            return found, await self._keys(driver, found)

    async def _keys(self, driver: Any, rows: Sequence[Any]) -> Any:
        ids = {row["key_id"] for row in rows if row["key_id"] is not None}
        if not ids:
            return None
        keys = self.storage.data_keys
        if keys is None:
            raise ConfigurationError(
                "this thread's checkpoints are sealed: open the storage with its "
                "encryption (docs/threat-model.md, 'Encryption at rest') to read them"
            )
        return await keys.load(driver, ids)

    @staticmethod
    def _open(keys: Any, key_id: int | None, payload: bytes, aad: bytes, sid: str) -> bytes:
        if key_id is None:
            return bytes(payload)
        return bytes(keys[key_id].open(payload, aad, session_id=sid))
