"""FallbackStorage's journal in Redis: a stream beside the secondary's sessions.

Survives a restart of the process (as long as the Redis keeps its data: with persistence
off, a Redis restart loses it like every session it holds).  Keys: keys.journal_keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxstore.errors import CorruptDataError
from ctxstore.storage.journal import Entry, Journal, Operation, Position, Quarantined
from ctxstore.storage.redis import keys
from ctxstore.storage.redis.errors import translated_redis
from ctxstore.storage.redis.values import text


class RedisJournal(Journal):
    def __init__(self, client: Any, prefix: str, name: str) -> None:
        self._client = client
        self._stream, self._mark, self._quarantine, self._copies = keys.journal_keys(prefix, name)

    async def record(self, operation: Operation) -> str:
        with translated_redis("journal write"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.xadd(self._stream, {"op": operation.to_json()})
                pipe.sadd(self._copies, operation.copy_key)
                entry_id, _ = await pipe.execute()
        return text(entry_id) or ""

    async def head(self, limit: int, *, after: str | None = None) -> list[Entry]:
        start = f"({after}" if after else "-"
        with translated_redis("journal read"):
            rows = await self._client.xrange(self._stream, min=start, count=limit)
        return self._entries(rows)

    async def get_many(self, entry_ids: Sequence[str]) -> list[Entry | None]:
        with translated_redis("journal read"):
            async with self._client.pipeline(transaction=False) as pipe:
                for entry_id in entry_ids:
                    pipe.xrange(self._stream, min=entry_id, max=entry_id)
                replies = await pipe.execute()
        found: list[Entry | None] = []
        for rows in replies:
            entries = self._entries(rows)
            found.append(entries[0] if entries else None)
        return found

    def _entries(self, rows: list[Any]) -> list[Entry]:
        entries = []
        for raw_id, fields in rows:
            entry_id = text(raw_id) or ""
            try:
                raw = fields.get(b"op", fields.get("op"))
                if raw is None:
                    raise CorruptDataError(f"journal entry {entry_id} has no operation")
                entries.append(Entry(entry_id, Operation.from_json(raw, entry_id)))
            except CorruptDataError as error:
                entries.append(Entry(entry_id, None, str(error)))
        return entries

    async def remove(self, entry_ids: Sequence[str]) -> None:
        if not entry_ids:
            return
        with translated_redis("journal write"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.xdel(self._stream, *entry_ids)
                pipe.hdel(self._mark, *entry_ids)
                await pipe.execute()

    async def size(self) -> int:
        with translated_redis("journal read"):
            return int(await self._client.xlen(self._stream))

    async def mark(self, positions: Mapping[str, Position]) -> None:
        with translated_redis("journal write"):
            await self._client.hset(
                self._mark, mapping={key: value.encode() for key, value in positions.items()}
            )

    async def marks(self) -> dict[str, Position]:
        with translated_redis("journal read"):
            found = await self._client.hgetall(self._mark)
        return {text(key) or "": Position.decode(text(raw) or "0") for key, raw in found.items()}

    async def quarantine(self, entry: Entry, reason: str) -> None:
        kind, key = entry.describe()
        record = {"entry": entry.id, "kind": kind, "key": key}
        with translated_redis("journal write"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(self._quarantine, json.dumps({**record, "reason": reason}))
                pipe.xdel(self._stream, entry.id)
                pipe.hdel(self._mark, entry.id)
                await pipe.execute()

    async def quarantined(self) -> list[Quarantined]:
        with translated_redis("journal read"):
            rows = await self._client.lrange(self._quarantine, 0, -1)
        found = []
        for row in rows:
            record = json.loads(row)
            found.append(
                Quarantined(record["entry"], record["kind"], record["key"], record["reason"])
            )
        return found

    async def copies(self) -> set[str]:
        with translated_redis("journal read"):
            members = await self._client.smembers(self._copies)
        return {text(member) or "" for member in members}

    async def drop_copies(self, keys_: Iterable[str]) -> None:
        dropped = list(keys_)
        if dropped:
            with translated_redis("journal write"):
                await self._client.srem(self._copies, *dropped)
