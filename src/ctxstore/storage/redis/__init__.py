"""Redis storage in the original Go service's layout (the ``redis`` extra).

The session's messages are one JSON array at the Go service's key, so both can share a
Redis during a migration.  store.py (RedisStorage: the Store hooks), keys.py (the key
layout), scripts.py (the Lua scripts that make versioned writes atomic), values.py (the
stored JSON), errors.py (translated_redis); readers are storage/snapshot.py's.
"""

from __future__ import annotations

from ctxstore.storage.redis.errors import translated_redis
from ctxstore.storage.redis.keys import DEFAULT_PREFIX
from ctxstore.storage.redis.store import RedisStorage
from ctxstore.storage.redis.values import parse_session_value

__all__ = [
    "DEFAULT_PREFIX",
    "RedisStorage",
    "parse_session_value",
    "translated_redis",
]
