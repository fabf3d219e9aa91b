"""Redis storage in the original Go service's layout (the ``redis`` extra).

Key ``{prefix}:{session_id}`` holds the session's messages as one JSON array, exactly
where the Go service kept them, so both can share a Redis during a migration.  Messages
are written in the current format (plus ``format_version``): Go's encoding/json matches
keys case-insensitively and ignores the extra ones.  Messages the Go service wrote
(format 0) are upgraded when loaded (docs/legacy-formats.md).

Everything else lives outside the prefix's key space, so a SCAN of ``{prefix}:*`` still
finds sessions only:

- ``{prefix}~version:{session_id}``: the session's version (a session the Go service
  wrote has none: it counts as version 1);
- ``{prefix}~meta:{session_id}``: a hash of user_id, created_at, and the message count
  with the byte length of the array it counts (a count that doesn't match the array's
  length, e.g. after the Go service rewrote it, is recounted);
- ``{prefix}~summaries:{session_id}``: a list of JSON summaries, oldest first;
- ``{prefix}~state:{session_id}``: a hash of the consultation state, its version,
  format and update time; ``{prefix}~state-history:{session_id}``: a list of every
  accepted state;
- ``{prefix}~profile:{user_id}``: a hash like the state's; profiles are not sessions and
  never expire.

The session exists while its messages key does.  Every write that checks a version is one
Lua script, so the check and the write are atomic.  A save or append sets the TTL of every
key of the session; a summary or state written later takes the session's remaining TTL
(like the other backends, only message writes push the expiry back).  A write that
creates a session first deletes whatever an earlier session of that id left behind.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ctxstore.errors import (
    CorruptDataError,
    CtxStoreError,
    SessionNotFoundError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
)
from ctxstore.formats.documents import load_profile, load_state, load_summary
from ctxstore.formats.mapper import FORMAT_KEY
from ctxstore.formats.messages import message_from_document, message_to_document
from ctxstore.models import (
    PROFILE_FORMAT,
    STATE_FORMAT,
    SUMMARY_FORMAT,
    ConsultationState,
    Message,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage import rules
from ctxstore.storage.base import SessionHead, StoredMessage
from ctxstore.storage.knowledge import Known
from ctxstore.storage.rules import DEFAULT_LIMITS, Limits
from ctxstore.storage.store import Store
from ctxstore.tokens import TokenCounter

DEFAULT_PREFIX = "ctx:session"

# -- Lua ------------------------------------------------------------------------------------
# Every session script gets the session's keys in this order:
# KEYS[1] messages, [2] version, [3] meta, [4] summaries, [5] state, [6] state history.

_HELPERS = """
local function version_of(exists)
  if not exists then return 0 end
  return tonumber(redis.call('GET', KEYS[2]) or '1')
end

-- Messages in the stored array; nil when it is not a JSON array.
local function message_count(raw)
  local meta = redis.call('HMGET', KEYS[3], 'count', 'bytes')
  if meta[1] and tonumber(meta[2]) == #raw then return tonumber(meta[1]) end
  if not string.find(raw, '^%s*%[') then return nil end
  local ok, decoded = pcall(cjson.decode, raw)
  if not ok or type(decoded) ~= 'table' then return nil end
  return #decoded
end

-- A new session starts with nothing an earlier one of the same id left behind.
local function start_session(now)
  redis.call('DEL', KEYS[3], KEYS[4], KEYS[5], KEYS[6])
  redis.call('HSET', KEYS[3], 'created_at', now)
end

local function wrote(value, count, version, user_id, now, ttl)
  redis.call('SET', KEYS[1], value)
  redis.call('SET', KEYS[2], version)
  redis.call('HSET', KEYS[3], 'count', count, 'bytes', #value)
  redis.call('HSETNX', KEYS[3], 'created_at', now)
  if user_id ~= '' then redis.call('HSET', KEYS[3], 'user_id', user_id) end
  for i = 1, 6 do
    if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
end

-- Keys written after the messages expire with them.
local function inherit_ttl(key)
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) else redis.call('PERSIST', key) end
end
"""

# ARGV: array, count, expected ('': none), user_id ('': none), now, ttl ms (0: none).
# {1, version} | {0, current}: stale.
_SAVE = (
    _HELPERS
    + """
local exists = redis.call('EXISTS', KEYS[1]) == 1
local current = version_of(exists)
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= current then return {0, current} end
if not exists then start_session(ARGV[5]) end
wrote(ARGV[1], tonumber(ARGV[2]), current + 1, ARGV[4], ARGV[5], tonumber(ARGV[6]))
return {1, current + 1}
"""
)

# ARGV: the new elements joined by commas ('': none), their count, expected, user_id,
# now, ttl ms, max messages.
# {1, version} | {0, current}: stale | {-1, 0}: stored value not an array | {-2, stored}: full.
# The message-count limit is checked before the version, as every backend does.
_APPEND = (
    _HELPERS
    + """
local raw = redis.call('GET', KEYS[1])
local stored = 0
if raw then
  stored = message_count(raw)
  if stored == nil then return {-1, 0} end
end
local added = tonumber(ARGV[2])
if stored + added > tonumber(ARGV[7]) then return {-2, stored} end
local current = version_of(raw ~= false)
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= current then return {0, current} end
local value
if not raw then
  start_session(ARGV[5])
  value = '[' .. ARGV[1] .. ']'
elseif added == 0 then
  value = raw
else
  local body = string.match(raw, '^(.*)%]%s*$')
  if body == nil then return {-1, 0} end
  if string.find(body, '^%s*%[%s*$') then
    value = body .. ARGV[1] .. ']'
  else
    value = body .. ',' .. ARGV[1] .. ']'
  end
end
wrote(value, stored + added, current + 1, ARGV[4], ARGV[5], tonumber(ARGV[6]))
return {1, current + 1}
"""
)

# ARGV: expected ('': none), covers_until, the summary as a JSON object without its version.
# {1, version} | {0, latest, message count (-1: no session; -2: not an array)}.
_SAVE_SUMMARY = (
    _HELPERS
    + """
local raw = redis.call('GET', KEYS[1])
local latest = redis.call('LLEN', KEYS[4])
if not raw then return {0, latest, -1} end
local count = message_count(raw)
if count == nil then return {0, latest, -2} end
if (ARGV[1] ~= '' and tonumber(ARGV[1]) ~= latest) or tonumber(ARGV[2]) >= count then
  return {0, latest, count}
end
local version = latest + 1
redis.call('RPUSH', KEYS[4], '{"summary_version":' .. version .. ',' .. string.sub(ARGV[3], 2))
inherit_ttl(KEYS[4])
return {1, version}
"""
)

# ARGV: expected ('': none), the state document (JSON), its format, now.
# {1, version} | {0, current}: stale | {-1, 0}: no session.
_SAVE_STATE = (
    _HELPERS
    + """
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1, 0} end
local current = tonumber(redis.call('HGET', KEYS[5], 'version') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= current then return {0, current} end
local version = current + 1
redis.call('HSET', KEYS[5], 'version', version, 'updated_at', ARGV[4],
           'format_version', ARGV[3], 'document', ARGV[2])
redis.call('RPUSH', KEYS[6], '{"version":' .. version .. ',"created_at":"' .. ARGV[4] ..
           '","format_version":' .. ARGV[3] .. ',"document":' .. ARGV[2] .. '}')
inherit_ttl(KEYS[5])
inherit_ttl(KEYS[6])
return {1, version}
"""
)

# KEYS[1]: the profile.  ARGV: expected ('': none), document (JSON), its format, now.
# {1, version} | {0, current}: stale.
_SAVE_PROFILE = """
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= current then return {0, current} end
local version = current + 1
redis.call('HSET', KEYS[1], 'version', version, 'updated_at', ARGV[4],
           'format_version', ARGV[3], 'document', ARGV[2])
return {1, version}
"""

_DOCUMENT_FIELDS = ("version", "updated_at", "format_version", "document")

# Everything a snapshot or a reader needs, read at one instant.  ARGV[1]: the profile
# key prefix (the session's user is only known inside the script).
# {messages, version, user_id, created_at, latest summary, state (4 fields), profile (4)}.
_READ = """
local raw = redis.call('GET', KEYS[1])
if not raw then return {} end
local meta = redis.call('HMGET', KEYS[3], 'user_id', 'created_at')
local state = redis.call('HMGET', KEYS[5], 'version', 'updated_at', 'format_version', 'document')
local profile = {false, false, false, false}
if meta[1] then
  profile = redis.call('HMGET', ARGV[1] .. meta[1],
                       'version', 'updated_at', 'format_version', 'document')
end
local summary = redis.call('LINDEX', KEYS[4], -1)
return {raw, redis.call('GET', KEYS[2]), meta[1], meta[2], summary,
        state[1], state[2], state[3], state[4],
        profile[1], profile[2], profile[3], profile[4]}
"""


# -- errors ---------------------------------------------------------------------------------


@contextmanager
def translated_redis(action: str) -> Iterator[None]:
    """Re-raise a Redis or network error as a ctxstore error, keeping it as the cause.

    Connection problems and timeouts become StorageUnavailableError (a timeout its
    subclass StorageTimeoutError); any other Redis error is a StorageError.
    """
    try:
        yield
    except CtxStoreError:
        raise
    except Exception as error:
        problem = _translate(error, action)
        if problem is None:
            raise
        raise problem from error


def _translate(error: Exception, action: str) -> CtxStoreError | None:
    timeouts: tuple[type[Exception], ...] = (TimeoutError,)
    unreachable: tuple[type[Exception], ...] = (OSError,)
    others: tuple[type[Exception], ...] = ()
    try:
        from redis import exceptions as redis_errors  # noqa: PLC0415 - optional dependency
    except ImportError:  # pragma: no cover - then no Redis client raised it
        pass
    else:
        timeouts += (redis_errors.TimeoutError,)
        unreachable += (redis_errors.ConnectionError, redis_errors.ReadOnlyError)
        others += (redis_errors.RedisError,)
    if isinstance(error, timeouts):
        return StorageTimeoutError(f"{action} timed out")
    detail = f"{action} failed: {type(error).__name__}: {str(error)[:200]}"
    if isinstance(error, unreachable):
        return StorageUnavailableError(detail)
    if isinstance(error, others):
        return StorageError(detail)
    return None


# -- stored values ---------------------------------------------------------------------------


def parse_session_value(raw: bytes | str, session_id: str) -> list[Message]:
    """A stored JSON array of messages, any known format, -> current Messages."""
    documents = _json(raw, session_id, "messages")
    if not isinstance(documents, list):
        raise CorruptDataError(
            f"expected a JSON array of messages, got {type(documents).__name__}",
            session_id=session_id,
        )
    return [
        message_from_document(document, session_id=session_id, position=position)
        for position, document in enumerate(documents)
    ]


def _json(raw: bytes | str, session_id: str | None, what: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise CorruptDataError(f"{what}: not JSON: {error}", session_id=session_id) from error


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text(value: bytes | str | None) -> str | None:
    # The client may or may not decode responses.
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _int(value: Any, session_id: str | None, what: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError) as error:
        raise CorruptDataError(
            f"{what}: {value!r} is not a number", session_id=session_id
        ) from error


def _stamp(value: Any, session_id: str | None, what: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(str(_text(value)))
    except ValueError as error:
        raise CorruptDataError(f"{what}: {value!r} is not a time", session_id=session_id) from error
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _summary(raw: bytes | str, session_id: str) -> Summary:
    fields = _json(raw, session_id, "summary")
    if not isinstance(fields, dict):
        raise CorruptDataError("summary: not a JSON object", session_id=session_id)
    # The mapper rejects a missing or non-integer format as corrupt.
    format_version: Any = fields.get(FORMAT_KEY)
    return load_summary(fields, format_version, session_id=session_id)


def _state(fields: Sequence[Any], session_id: str) -> Versioned[ConsultationState] | None:
    """A state hash's fields (version, updated_at, format_version, document)."""
    version, updated_at, format_version, document = fields
    if version is None:
        return None
    state = load_state(
        _json(document, session_id, "consultation state"),
        _int(format_version, session_id, "consultation state format"),
        session_id=session_id,
    )
    return Versioned(
        state,
        _int(version, session_id, "consultation state version"),
        _stamp(updated_at, session_id, "consultation state"),
    )


def _profile(fields: Sequence[Any], user_id: str) -> Versioned[UserProfile] | None:
    version, updated_at, format_version, document = fields
    if version is None:
        return None
    where = f"user profile of {user_id!r}"
    profile = load_profile(
        _json(document, None, where), _int(format_version, None, where), user_id=user_id
    )
    return Versioned(profile, _int(version, None, where), _stamp(updated_at, None, where))


@dataclass(frozen=True)
class _Read:
    """One session as the read script returned it."""

    messages: list[Message]
    version: int
    user_id: str | None
    created_at: datetime | None
    summary: Summary | None
    state: Versioned[ConsultationState] | None
    profile: Versioned[UserProfile] | None


class RedisStorage(Store):
    """The storage contract on Redis (redis-py's asyncio client), in the Go layout.

    ``ttl``: sessions expire this long after their last message write (None: never).
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = DEFAULT_PREFIX,
        ttl: timedelta | None = None,
        limits: Limits = DEFAULT_LIMITS,
        token_counter: TokenCounter | None = None,
        owns_client: bool = False,
    ) -> None:
        super().__init__(limits=limits, ttl=ttl, token_counter=token_counter)
        self._client = client
        self.prefix = prefix
        self._owns_client = owns_client
        self._ttl_ms = max(1, int(self.ttl.total_seconds() * 1000)) if self.ttl else 0
        self._save_script = client.register_script(_SAVE)
        self._append_script = client.register_script(_APPEND)
        self._summary_script = client.register_script(_SAVE_SUMMARY)
        self._state_script = client.register_script(_SAVE_STATE)
        self._profile_script = client.register_script(_SAVE_PROFILE)
        self._read_script = client.register_script(_READ)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStorage:
        """A storage with its own client (closed by ``close()``); options as the constructor."""
        import redis.asyncio as redis_asyncio  # noqa: PLC0415 - optional dependency

        client = redis_asyncio.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        return cls(client, owns_client=True, **options)

    async def close(self) -> None:
        """Close the client when this storage created it; a shared one stays open."""
        if self._owns_client:
            with translated_redis("close"):
                await self._client.aclose()

    # -- keys -----------------------------------------------------------------------------------

    def key(self, session_id: str) -> str:
        """Where the session's messages are (the Go service's key)."""
        return f"{self.prefix}:{session_id}"

    def version_key(self, session_id: str) -> str:
        return f"{self.prefix}~version:{session_id}"

    def session_keys(self, session_id: str) -> list[str]:
        """Every key of the session, in the order the scripts take them."""
        return [
            self.key(session_id),
            self.version_key(session_id),
            *(
                f"{self.prefix}~{kind}:{session_id}"
                for kind in ("meta", "summaries", "state", "state-history")
            ),
        ]

    def profile_key(self, user_id: str) -> str:
        return f"{self.prefix}~profile:{user_id}"

    # -- messages -----------------------------------------------------------------------------

    async def _save(
        self,
        session_id: str,
        messages: list[Message],
        known: Known | None,
        expected: int | None,
        user_id: str | None,
    ) -> int:
        payload = _dumps([message_to_document(message) for message in messages])
        with translated_redis("save"):
            accepted, version = await self._save_script(
                keys=self.session_keys(session_id),
                args=[payload, len(messages), _arg(expected), user_id or "", _now(), self._ttl_ms],
            )
        if not accepted:
            raise rules.stale_session(session_id, int(version), expected)
        return int(version)

    async def _append(
        self, session_id: str, messages: list[Message], expected: int | None, user_id: str | None
    ) -> int:
        elements = _dumps([message_to_document(message) for message in messages])[1:-1]
        with translated_redis("append"):
            status, value = await self._append_script(
                keys=self.session_keys(session_id),
                args=[
                    elements,
                    len(messages),
                    _arg(expected),
                    user_id or "",
                    _now(),
                    self._ttl_ms,
                    self.limits.max_messages,
                ],
            )
        status, value = int(status), int(value)
        if status == -1:
            raise CorruptDataError("messages: not a JSON array", session_id=session_id)
        if status == -2:
            rules.check_message_count(len(messages), self.limits, value)
            raise AssertionError("check_message_count raises")  # pragma: no cover
        if status == 0:
            raise rules.stale_session(session_id, value, expected)
        return value

    async def _load(self, session_id: str) -> list[Message]:
        with translated_redis("load"):
            raw = await self._client.get(self.key(session_id))
        return [] if raw is None else parse_session_value(raw, session_id)

    async def _version(self, session_id: str) -> int:
        with translated_redis("version"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.exists(self.key(session_id))
                pipe.get(self.version_key(session_id))
                exists, version = await pipe.execute()
        if not exists:
            return 0
        return 1 if version is None else _int(version, session_id, "version")

    async def _delete(self, session_id: str) -> None:
        with translated_redis("delete"):
            await self._client.delete(*self.session_keys(session_id))

    async def _exists(self, session_id: str) -> bool:
        with translated_redis("exists"):
            return bool(await self._client.exists(self.key(session_id)))

    # -- summaries ----------------------------------------------------------------------------

    async def _save_summary(
        self,
        session_id: str,
        text: str,
        covers_until: int,
        token_count: int | None,
        expected: int | None,
    ) -> Summary:
        created_at = datetime.now(UTC)
        document = {
            FORMAT_KEY: SUMMARY_FORMAT,
            "text": text,
            "covers_until": covers_until,
            "created_at": created_at.isoformat(),
            "token_count": token_count,
        }
        with translated_redis("save summary"):
            reply = await self._summary_script(
                keys=self.session_keys(session_id),
                args=[_arg(expected), covers_until, _dumps(document)],
            )
        status, version = int(reply[0]), int(reply[1])
        if status != 1:
            count = int(reply[2])
            if count == -2:
                raise CorruptDataError("messages: not a JSON array", session_id=session_id)
            rules.refuse_summary(
                session_id,
                message_count=None if count < 0 else count,
                latest=version,
                covers_until=covers_until,
                expected=expected,
            )
            raise AssertionError("refuse_summary raises")  # pragma: no cover
        return Summary(
            summary_version=version,
            text=text,
            covers_until=covers_until,
            created_at=created_at,
            token_count=token_count,
        )

    async def _load_summary(self, session_id: str, summary_version: int | None) -> Summary | None:
        if summary_version is not None and summary_version < 1:
            return None  # versions start at 1
        summaries = self.session_keys(session_id)[3]
        index = -1 if summary_version is None else summary_version - 1
        with translated_redis("load summary"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.exists(self.key(session_id))
                pipe.lindex(summaries, index)
                exists, raw = await pipe.execute()
        if not exists or raw is None:
            return None
        summary = _summary(raw, session_id)
        if summary_version is None or summary.summary_version == summary_version:
            return summary
        # Versions are 1, 2, ... in list order; anything else was not written here.
        raise CorruptDataError(
            f"summary {summary_version} is stored as {summary.summary_version}",
            session_id=session_id,
        )

    # -- consultation state -------------------------------------------------------------------

    async def _save_state(
        self, session_id: str, state: ConsultationState, expected: int | None
    ) -> int:
        with translated_redis("save state"):
            status, version = await self._state_script(
                keys=self.session_keys(session_id),
                args=[_arg(expected), _dumps(state.document()), STATE_FORMAT, _now()],
            )
        status, version = int(status), int(version)
        if status == -1:
            raise SessionNotFoundError(session_id=session_id)
        if status == 0:
            raise rules.stale_state(session_id, version, expected)
        return version

    async def _load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        with translated_redis("load state"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.exists(self.key(session_id))
                pipe.hmget(self.session_keys(session_id)[4], *_DOCUMENT_FIELDS)
                exists, fields = await pipe.execute()
        return _state(fields, session_id) if exists else None

    async def _state_history(self, session_id: str) -> list[StateChange]:
        with translated_redis("state history"):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.exists(self.key(session_id))
                pipe.lrange(self.session_keys(session_id)[5], 0, -1)
                exists, entries = await pipe.execute()
        if not exists:
            return []
        changes = []
        for raw in entries:
            entry = _json(raw, session_id, "state history")
            if not isinstance(entry, dict):
                raise CorruptDataError("state history: not a JSON object", session_id=session_id)
            state = load_state(
                entry.get("document"),
                _int(entry.get(FORMAT_KEY), session_id, "state history format"),
                session_id=session_id,
            )
            changes.append(
                StateChange(
                    _int(entry.get("version"), session_id, "state history version"),
                    state,
                    _stamp(entry.get("created_at"), session_id, "state history"),
                )
            )
        return changes

    # -- user profiles ----------------------------------------------------------------------

    async def _save_profile(self, user_id: str, profile: UserProfile, expected: int | None) -> int:
        with translated_redis("save profile"):
            accepted, version = await self._profile_script(
                keys=[self.profile_key(user_id)],
                args=[_arg(expected), _dumps(profile.document()), PROFILE_FORMAT, _now()],
            )
        if not accepted:
            raise rules.stale_profile(user_id, int(version), expected)
        return int(version)

    async def _load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        with translated_redis("load profile"):
            fields = await self._client.hmget(self.profile_key(user_id), *_DOCUMENT_FIELDS)
        return _profile(fields, user_id)

    # -- whole sessions -------------------------------------------------------------------------

    async def _read(self, session_id: str, action: str) -> _Read | None:
        with translated_redis(action):
            reply = await self._read_script(
                keys=self.session_keys(session_id), args=[self.profile_key("")]
            )
        if not reply:
            return None
        raw, version, user_id, created_at, summary = reply[:5]
        user = _text(user_id)
        return _Read(
            messages=parse_session_value(raw, session_id),
            version=1 if version is None else _int(version, session_id, "version"),
            user_id=user,
            created_at=None if created_at is None else _stamp(created_at, session_id, "session"),
            summary=None if summary is None else _summary(summary, session_id),
            state=_state(reply[5:9], session_id),
            profile=None if user is None else _profile(reply[9:13], user),
        )

    async def _snapshot(self, session_id: str) -> SessionSnapshot:
        read = await self._read(session_id, "snapshot")
        if read is None:
            return SessionSnapshot(session_id, False, 0, None, [], None, None, 0, None, 0)
        return SessionSnapshot(
            session_id=session_id,
            exists=True,
            version=read.version,
            user_id=read.user_id,
            messages=read.messages,
            summary=read.summary,
            state=read.state.value if read.state else None,
            state_version=read.state.version if read.state else 0,
            profile=read.profile.value if read.profile else None,
            profile_version=read.profile.version if read.profile else 0,
        )

    @asynccontextmanager
    async def _reader(self, session_id: str) -> AsyncIterator[RedisSessionReader]:
        """Reads on a snapshot of the session taken on entry."""
        yield RedisSessionReader(self, await self._read(session_id, "read session"))


def _arg(expected: int | None) -> int | str:
    return "" if expected is None else expected


class RedisSessionReader:
    """SessionReader over a snapshot of one RedisStorage session.

    Messages in Redis carry no token count: each is counted with the storage's counter.
    The session's own user's profile is part of the snapshot; another user's is read
    when asked for.
    """

    def __init__(self, storage: RedisStorage, read: _Read | None) -> None:
        self._storage = storage
        self._read = read
        self._counter = storage.token_counter

    async def head(self) -> SessionHead:
        read = self._read
        if read is None:
            return SessionHead(False, 0, 0, None, None)
        return SessionHead(True, read.version, len(read.messages), read.created_at, read.user_id)

    async def latest_summary(self) -> Summary | None:
        return self._read.summary if self._read else None

    async def state(self) -> Versioned[ConsultationState] | None:
        if self._read is None or self._read.state is None:
            return None
        state = self._read.state
        return Versioned(state.value.model_copy(deep=True), state.version, state.updated_at)

    async def profile(self, user_id: str) -> Versioned[UserProfile] | None:
        if self._read is not None and user_id == self._read.user_id:
            return self._read.profile
        return await self._storage.load_profile(user_id)

    async def newest(
        self, before: int, limit: int, token_budget: int | None = None
    ) -> list[StoredMessage]:
        if self._read is None:
            return []
        messages = self._read.messages
        stop = min(before, len(messages))
        positions = range(stop - 1, max(stop - limit, 0) - 1, -1)
        return [
            StoredMessage(
                position,
                messages[position].model_copy(deep=True),
                self._counter.message_cost(messages[position]),
                self._counter.encoding_name,
            )
            for position in positions
        ]

    async def span(self, start: int, stop: int) -> list[Message]:
        if self._read is None:
            return []
        return [message.model_copy(deep=True) for message in self._read.messages[start:stop]]

    async def token_total(self, after: int) -> tuple[int, int]:
        if self._read is None:
            return 0, 0
        tail = self._read.messages[after + 1 :]
        tokens = 0
        for message in tail:
            cost = self._counter.message_cost(message)
            tokens += cost if cost is not None else len(message.content) + 16
        return len(tail), tokens
