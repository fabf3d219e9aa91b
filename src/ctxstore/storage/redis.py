"""Redis storage in the original Go service's layout (the ``redis`` extra).

Key ``{prefix}:{session_id}`` holds the session's messages as one JSON array, with a TTL,
exactly where the Go service kept them, so both can share a Redis during a migration.
Messages are written in the current format (plus ``format_version``): Go's encoding/json
matches keys case-insensitively and ignores the extra ones.  Messages the Go service
wrote (format 0) are upgraded when loaded.

The session's version lives beside it, outside the prefix's key space
(``{prefix}~version:{session_id}``), so a SCAN of ``{prefix}:*`` still finds sessions
only.  Both keys change together in one Lua script: the version check is atomic.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ctxstore.db.errors import translated
from ctxstore.errors import ConflictError, CorruptDataError
from ctxstore.formats.messages import message_from_document, message_to_document
from ctxstore.models import Message
from ctxstore.storage.base import (
    DEFAULT_LIMITS,
    AsyncClosing,
    Limits,
    MessageInput,
    check_new_message,
    check_session_id,
    check_write,
    coerce_messages,
)

DEFAULT_PREFIX = "ctx:session"

# KEYS: data, version.  ARGV: json, ttl seconds (0: none), expected version ('' : none).
# A session the Go service wrote has no version key: it counts as version 1.
_SAVE = """
local exists = redis.call('EXISTS', KEYS[1]) == 1
local current = 0
if exists then current = tonumber(redis.call('GET', KEYS[2]) or '1') end
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= current then return {0, current} end
local new = current + 1
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ttl)
  redis.call('SET', KEYS[2], new, 'EX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('SET', KEYS[2], new)
end
return {1, new}
"""


def parse_session_value(raw: bytes | str, session_id: str) -> list[Message]:
    """A stored JSON array of messages, any known format, -> current Messages."""
    try:
        documents = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise CorruptDataError(f"not JSON: {error}", session_id=session_id) from error
    if not isinstance(documents, list):
        raise CorruptDataError(
            f"expected a JSON array of messages, got {type(documents).__name__}",
            session_id=session_id,
        )
    return [
        message_from_document(document, session_id=session_id, position=position)
        for position, document in enumerate(documents)
    ]


class RedisStorage(AsyncClosing):
    """ContextStorage on Redis (redis-py's asyncio client)."""

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl_seconds: int | None = 7 * 24 * 3600,
        limits: Limits = DEFAULT_LIMITS,
        owns_client: bool = False,
    ) -> None:
        self._client = client
        self.prefix = prefix
        self._ttl = ttl_seconds
        self._limits = limits
        self._owns_client = owns_client
        self._save_script = client.register_script(_SAVE)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStorage:
        import redis.asyncio as redis_asyncio  # noqa: PLC0415 - optional dependency

        client = redis_asyncio.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        return cls(client, owns_client=True, **options)

    def key(self, session_id: str) -> str:
        return f"{self.prefix}:{session_id}"

    def version_key(self, session_id: str) -> str:
        return f"{self.prefix}~version:{session_id}"

    async def close(self) -> None:
        if self._owns_client:
            with translated("close"):
                await self._client.aclose()

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        """Full overwrite (Redis holds one value per session: the whole list)."""
        expected = check_write(session_id, expected_version, user_id, self._limits)
        validated = coerce_messages(messages, self._limits)
        for position, message in enumerate(validated):
            check_new_message(message, position, self._limits)
        payload = json.dumps(
            [message_to_document(message) for message in validated],
            ensure_ascii=False,
            separators=(",", ":"),
        )
        with translated("save"):
            accepted, version = await self._save_script(
                keys=[self.key(session_id), self.version_key(session_id)],
                args=[payload, self._ttl or 0, "" if expected is None else expected],
            )
        if not accepted:
            raise ConflictError.stale(
                f"session {session_id!r}", int(version), expected, session_id=session_id
            )
        return int(version)

    async def load(self, session_id: str) -> list[Message]:
        check_session_id(session_id, self._limits)
        with translated("load"):
            raw = await self._client.get(self.key(session_id))
        if raw is None:
            return []
        return parse_session_value(raw, session_id)

    async def delete(self, session_id: str) -> None:
        check_session_id(session_id, self._limits)
        with translated("delete"):
            await self._client.delete(self.key(session_id), self.version_key(session_id))

    async def exists(self, session_id: str) -> bool:
        check_session_id(session_id, self._limits)
        with translated("exists"):
            return bool(await self._client.exists(self.key(session_id)))

    async def version(self, session_id: str) -> int:
        check_session_id(session_id, self._limits)
        with translated("version"):
            data, version = await self._client.mget(
                self.key(session_id), self.version_key(session_id)
            )
        if data is None:
            return 0
        return int(version or 1)
