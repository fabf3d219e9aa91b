"""FallbackStorage's journal in Redis: a stream beside the secondary's sessions.

Survives a restart of the process, and a crash of Redis only as far as Redis persists
what it acknowledged: :meth:`RedisJournal.durability` reads that from the server
(``INFO persistence``, ``CONFIG GET appendfsync``, the version).  An entry is durable
when it is in an AOF fsynced before the reply (``appendfsync always``), or fsynced on
request (``WAITAOF 1 0``, Redis 7.2 and newer: the entry is acknowledged after it).
With RDB snapshots only, or an AOF fsynced every second without WAITAOF, a crash loses
acknowledged entries, and FallbackStorage refuses to journal there unless told to accept
it.  Keys: keys.journal_keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ctxstore.errors import CorruptDataError, StorageUnavailableError
from ctxstore.storage.journal import Durability, Entry, Journal, Operation, Position, Quarantined
from ctxstore.storage.redis import keys
from ctxstore.storage.redis.errors import translated_redis
from ctxstore.storage.redis.values import text

#: The entry and its copy key in one atomic step, so WAITAOF can follow on the same
#: connection (a MULTI block can't hold it).  KEYS: stream, copies; ARGV: operation, copy.
_RECORD = """
local id = redis.call('XADD', KEYS[1], '*', 'op', ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
return id
"""
#: How long an entry may take to be fsynced before the write is refused, not acknowledged.
FSYNC_TIMEOUT = 2.0


class RedisJournal(Journal):
    def __init__(self, client: Any, prefix: str, name: str) -> None:
        self._client = client
        self._stream, self._mark, self._quarantine, self._copies = keys.journal_keys(prefix, name)
        #: Set by durability(): each entry is acknowledged after WAITAOF.
        self._wait_aof = False

    async def durability(self) -> Durability:
        with translated_redis("journal durability check"):
            persistence = await self._client.info("persistence")
            version = str((await self._client.info("server")).get("redis_version", "0"))
            fsync = await self._appendfsync()
        aof = int(persistence.get("aof_enabled", 0)) == 1
        wait_aof = _version(version) >= (7, 2)
        self._wait_aof = aof and wait_aof and fsync != "always"
        if aof and fsync == "always":
            return Durability(True, f"Redis {version} AOF, appendfsync always")
        if self._wait_aof:
            return Durability(
                True, f"Redis {version} AOF (appendfsync {fsync or '?'}), each entry after WAITAOF"
            )
        if aof:
            return Durability(
                False,
                f"Redis {version} AOF with appendfsync {fsync or 'unknown (CONFIG refused)'}: "
                "a crash loses the last second of entries (appendfsync always, or Redis 7.2+ "
                "for WAITAOF, makes each entry durable before it is acknowledged)",
            )
        return Durability(
            False,
            f"Redis {version} without AOF (appendonly no): a crash loses every entry since "
            "the last RDB save (set appendonly yes and appendfsync always)",
        )

    async def _appendfsync(self) -> str | None:
        """The AOF fsync policy; None where CONFIG is renamed or refused (managed Redis)."""
        from redis.exceptions import ResponseError  # noqa: PLC0415 - optional dependency

        try:
            found = await self._client.config_get("appendfsync")
        except ResponseError:
            return None
        return text(found.get("appendfsync", found.get(b"appendfsync")))

    async def record(self, operation: Operation) -> str:
        with translated_redis("journal write"):
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.eval(
                    _RECORD, 2, self._stream, self._copies, operation.to_json(), operation.copy_key
                )
                if self._wait_aof:
                    pipe.execute_command("WAITAOF", 1, 0, int(FSYNC_TIMEOUT * 1000))
                replies = await pipe.execute()
        entry_id = text(replies[0]) or ""
        if self._wait_aof and int(replies[1][0]) < 1:
            await self.remove([entry_id])  # best effort: it was never acknowledged
            raise StorageUnavailableError(
                f"the fallback journal's entry was not fsynced by Redis within "
                f"{FSYNC_TIMEOUT:.0f} s (WAITAOF): the write is not acknowledged"
            )
        return entry_id

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


def _version(raw: str) -> tuple[int, ...]:
    return tuple(int(part) for part in raw.split(".")[:2] if part.isdigit())
