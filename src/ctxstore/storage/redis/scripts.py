"""The Lua scripts: every write that checks a version is one script, so the check and
the write are atomic.

Every session script takes the session's keys in keys.session_keys() order:
KEYS[1] messages, [2] version, [3] meta, [4] summaries, [5] state, [6] state history.
An expected version of '' means none; times are ISO 8601 strings.  A write script
replies with a list whose first element is its status, 1 when it wrote.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

_HELPERS = """
local function version_of(exists)
  if not exists then return 0 end
  return tonumber(redis.call('GET', KEYS[2]) or '1')
end

-- Go marshals a nil []Message as null: a session without messages.
local function is_null(raw)
  return string.find(raw, '^%s*null%s*$') ~= nil
end

-- Messages in the stored array (0 for null); nil when it is not a JSON array.
local function message_count(raw)
  local meta = redis.call('HMGET', KEYS[3], 'count', 'bytes')
  if meta[1] and tonumber(meta[2]) == #raw then return tonumber(meta[1]) end
  if is_null(raw) then return 0 end
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

-- A write for another user than the one the session keeps (user_id '': names none).
local function owned_by_another(exists, user_id)
  if not exists or user_id == '' then return false end
  local owner = redis.call('HGET', KEYS[3], 'user_id')
  return owner ~= false and owner ~= user_id
end

-- A message write sets the TTL of every key of the session; the first user named stays.
local function wrote(value, count, version, user_id, now, ttl)
  redis.call('SET', KEYS[1], value)
  redis.call('SET', KEYS[2], version)
  redis.call('HSET', KEYS[3], 'count', count, 'bytes', #value)
  redis.call('HSETNX', KEYS[3], 'created_at', now)
  if user_id ~= '' then redis.call('HSETNX', KEYS[3], 'user_id', user_id) end
  for i = 1, 6 do
    if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
end

-- Keys written after the messages expire with them (only message writes push it back).
local function inherit_ttl(key)
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then redis.call('PEXPIRE', key, ttl) else redis.call('PERSIST', key) end
end
"""

# ARGV: array, count, expected, user_id ('': none), now, ttl ms (0: none).
# {1, version} | {0, current}: stale | {-3, 0}: another user's session.
# The stored list saved again (the same bytes, or Go's null for none) keeps the version.
SAVE = (
    _HELPERS
    + """
local raw = redis.call('GET', KEYS[1])
local exists = raw ~= false
if owned_by_another(exists, ARGV[4]) then return {-3, 0} end
local current = version_of(exists)
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= current then return {0, current} end
local version = current + 1
if not exists then
  start_session(ARGV[5])
elseif raw == ARGV[1] or (tonumber(ARGV[2]) == 0 and is_null(raw)) then
  version = current
end
wrote(ARGV[1], tonumber(ARGV[2]), version, ARGV[4], ARGV[5], tonumber(ARGV[6]))
return {1, version}
"""
)

# ARGV: the new elements joined by commas ('': none), their count, expected, user_id,
# now, ttl ms, max messages.
# {1, version} | {0, current}: stale | {-1, 0}: stored value not an array | {-2, stored}: full
# | {-3, 0}: another user's session.
# The message-count limit is checked before the version, as every backend does.
APPEND = (
    _HELPERS
    + """
local raw = redis.call('GET', KEYS[1])
local stored = 0
if raw then
  stored = message_count(raw)
  if stored == nil then return {-1, 0} end
end
if owned_by_another(raw ~= false, ARGV[4]) then return {-3, 0} end
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
elseif is_null(raw) then
  value = '[' .. ARGV[1] .. ']'
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

# ARGV: expected, covers_until, the summary as a JSON object without its version.
# {1, version} | {0, latest, message count (-1: no session; -2: not an array)}.
SAVE_SUMMARY = (
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

# ARGV: expected, the state document (JSON), its format, now.
# {1, version} | {0, current}: stale | {-1, 0}: no session.
SAVE_STATE = (
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

# Not a session script.  KEYS[1]: the profile.  ARGV: expected, document (JSON), its
# format, now.  {1, version} | {0, current}: stale.
SAVE_PROFILE = """
local current = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= current then return {0, current} end
local version = current + 1
redis.call('HSET', KEYS[1], 'version', version, 'updated_at', ARGV[4],
           'format_version', ARGV[3], 'document', ARGV[2])
return {1, version}
"""

# Everything a snapshot or a reader needs, read at one instant.  ARGV[1]: the profile
# key prefix (the session's user is only known inside the script).
# {} when there is no session, else {messages, version, user_id, created_at, latest
# summary, state (the 4 DOCUMENT_FIELDS), profile (the 4 DOCUMENT_FIELDS)}.
READ = """
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


def expected_arg(expected: int | None) -> int | str:
    """An expected version as the scripts take it."""
    return "" if expected is None else expected


def write_args(
    messages: str, count: int, expected: int | None, user_id: str | None, ttl_ms: int
) -> list[Any]:
    """ARGV of SAVE, and the first six of APPEND's."""
    return [messages, count, expected_arg(expected), user_id or "", _now(), ttl_ms]


def document_args(expected: int | None, document: str, format_version: int) -> list[Any]:
    """ARGV of SAVE_STATE and SAVE_PROFILE."""
    return [expected_arg(expected), document, format_version, _now()]


def _now() -> str:
    return datetime.now(UTC).isoformat()
