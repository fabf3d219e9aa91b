"""RedisStorage: the Store hooks on Redis, in the original Go service's layout.

Keys are in keys.py, the atomic writes in scripts.py, the stored JSON in values.py.  A
save or append sets the TTL of every key of the session; a summary or state written
later takes the session's remaining TTL (like the other backends, only message writes
push the expiry back).  A write that creates a session first deletes whatever an earlier
session of that id left behind.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from ctxstore.errors import (
    ConfigurationError,
    CorruptDataError,
    NotSupportedError,
    SessionNotFoundError,
)
from ctxstore.formats.layouts import GO_SERVICE, GoLayout
from ctxstore.models import (
    PROFILE_FORMAT,
    STATE_FORMAT,
    ConsultationState,
    Message,
    SessionPage,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.redaction import redact
from ctxstore.storage import rules
from ctxstore.storage.base import Backups, Erased
from ctxstore.storage.listing import ListingQuery
from ctxstore.storage.redis import keys, scripts, values
from ctxstore.storage.redis.errors import translated_redis
from ctxstore.storage.redis.journal import RedisJournal
from ctxstore.storage.rules import DEFAULT_LIMITS, Limits, SummaryDraft
from ctxstore.storage.snapshot import SessionCopy, SnapshotReader
from ctxstore.storage.store import Store
from ctxstore.tokens import TokenCounter


class RedisStorage(Store):
    """The storage contract on Redis (redis-py's asyncio client), in the Go layout.

    ``ttl``: sessions expire this long after their last message write (None: never).
    ``layout``: the Go message struct that reads these values (formats/layouts.py;
    default: the original service's); what is written, that struct reads without loss.
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = keys.DEFAULT_PREFIX,
        ttl: timedelta | None = None,
        limits: Limits = DEFAULT_LIMITS,
        token_counter: TokenCounter | None = None,
        owns_client: bool = False,
        layout: GoLayout = GO_SERVICE,
    ) -> None:
        super().__init__(limits=limits, ttl=ttl, token_counter=token_counter)
        self._client = client
        self.prefix = prefix
        self.layout = layout
        self._owns_client = owns_client
        self._ttl_ms = max(1, int(self.ttl.total_seconds() * 1000)) if self.ttl else 0
        self._save_script = client.register_script(scripts.SAVE)
        self._append_script = client.register_script(scripts.APPEND)
        self._summary_script = client.register_script(scripts.SAVE_SUMMARY)
        self._state_script = client.register_script(scripts.SAVE_STATE)
        self._profile_script = client.register_script(scripts.SAVE_PROFILE)
        self._read_script = client.register_script(scripts.READ)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisStorage:
        """A storage with its own client (closed by ``close()``); options as the constructor."""
        try:
            import redis.asyncio as redis_asyncio  # noqa: PLC0415 - optional dependency
        except ImportError:
            raise ConfigurationError(
                "RedisStorage needs the redis extra: pip install 'ctxstore[redis]'"
            ) from None
        try:
            client = redis_asyncio.from_url(url, socket_timeout=5, socket_connect_timeout=5)
        except ValueError as error:  # redis-py's URL parsing, whose message may quote it
            raise ConfigurationError(
                f"not a usable Redis URL ({redact(str(error))}): use "
                "redis://[[user]:password@]host:6379/0"
            ) from None
        return cls(client, owns_client=True, **options)

    async def close(self) -> None:
        """Close the client when this storage created it; a shared one stays open."""
        if self._owns_client:
            with translated_redis("close"):
                await self._client.aclose()

    # -- keys (keys.py) -------------------------------------------------------------------------

    def key(self, session_id: str) -> str:
        """Where the session's messages are (the Go service's key)."""
        return keys.messages_key(self.prefix, session_id)

    def version_key(self, session_id: str) -> str:
        return keys.version_key(self.prefix, session_id)

    def session_keys(self, session_id: str) -> list[str]:
        """Every key of the session, in the order the scripts take them."""
        return keys.session_keys(self.prefix, session_id)

    def profile_key(self, user_id: str) -> str:
        return keys.profile_key(self.prefix, user_id)

    # -- messages -----------------------------------------------------------------------------

    async def _save(
        self,
        session_id: str,
        messages: list[Message],
        expected: int | None,
        user_id: str | None,
    ) -> int:
        value = values.messages_json(messages, self.layout)  # refuses what Go can't hold
        with translated_redis("save"):
            accepted, version = await self._save_script(
                keys=self.session_keys(session_id),
                args=scripts.write_args(value, len(messages), expected, user_id, self._ttl_ms),
            )
        if int(accepted) == -3:
            raise rules.owned_by_another(session_id)
        if not int(accepted):
            raise rules.stale_session(session_id, int(version), expected)
        return int(version)

    async def _append(
        self, session_id: str, messages: list[Message], expected: int | None, user_id: str | None
    ) -> int:
        elements = values.messages_json(messages, self.layout)[1:-1]  # without the brackets
        args = scripts.write_args(elements, len(messages), expected, user_id, self._ttl_ms)
        with translated_redis("append"):
            status, value = await self._append_script(
                keys=self.session_keys(session_id), args=[*args, self.limits.max_messages]
            )
        status, value = int(status), int(value)
        if status == -1:
            raise CorruptDataError("messages: not a JSON array", session_id=session_id)
        if status == -3:
            raise rules.owned_by_another(session_id)
        if status == -2:
            rules.check_message_count(len(messages), self.limits, value)
            raise AssertionError("check_message_count raises")  # pragma: no cover
        if status == 0:
            raise rules.stale_session(session_id, value, expected)
        return value

    async def _load(self, session_id: str) -> list[Message]:
        with translated_redis("load"):
            raw = await self._client.get(self.key(session_id))
        return [] if raw is None else values.parse_session_value(raw, session_id)

    async def _version(self, session_id: str) -> int:
        key = self.version_key(session_id)
        exists, version = await self._if_live(session_id, "version", lambda pipe: pipe.get(key))
        if not exists:
            return 0
        return 1 if version is None else values.integer(version, session_id, "version")

    async def _delete(self, session_id: str) -> None:
        with translated_redis("delete"):
            await self._client.delete(*self.session_keys(session_id))

    async def _delete_profile(self, user_id: str) -> None:
        with translated_redis("delete profile"):
            await self._client.delete(self.profile_key(user_id))

    async def _erase_user(self, user_id: str) -> Erased:
        # Redis has no index by user: the meta hashes are walked (SCAN, never KEYS).
        meta_prefix = self.session_keys("")[keys.META]
        session_ids: list[str] = []
        with translated_redis("erase user"):
            batch: list[str] = []
            async for raw in self._client.scan_iter(match=_glob(meta_prefix) + "*", count=500):
                batch.append(values.text(raw) or "")
                if len(batch) >= 500:
                    session_ids += await self._owned_by(user_id, batch, meta_prefix)
                    batch = []
            session_ids += await self._owned_by(user_id, batch, meta_prefix)
            erased = [await self._erase_session(session_id) for session_id in session_ids]
            profile = bool(await self._client.delete(self.profile_key(user_id)))
        return Erased(
            session_ids=tuple(session_ids),
            messages=sum(counts[0] for counts in erased),
            summaries=sum(counts[1] for counts in erased),
            states=sum(counts[2] for counts in erased),
            state_changes=sum(counts[3] for counts in erased),
            profile=profile,
        )

    def _backups_after_erasure(self, erased: Erased, erased_at: datetime) -> Backups:
        return Backups(
            f"Redis RDB snapshots and AOF files written before "
            f"{erased_at.isoformat(timespec='seconds')}, and every copy of them, hold the "
            "user's data unencrypted until Redis rewrites them (the next BGSAVE, "
            "BGREWRITEAOF) and the copies are deleted; this store knows no retention date"
        )

    async def _owned_by(self, user_id: str, meta_keys: list[str], meta_prefix: str) -> list[str]:
        if not meta_keys:
            return []
        async with self._client.pipeline(transaction=False) as pipe:
            for key in meta_keys:
                pipe.hget(key, "user_id")
            owners = await pipe.execute()
        return [
            key[len(meta_prefix) :]
            for key, owner in zip(meta_keys, owners, strict=True)
            if values.text(owner) == user_id
        ]

    async def _erase_session(self, session_id: str) -> tuple[int, int, int, int]:
        """Delete the session's keys in one transaction; (messages, summaries, states,
        state changes) it held."""
        session = self.session_keys(session_id)
        async with self._client.pipeline(transaction=True) as pipe:
            pipe.get(session[keys.MESSAGES])
            pipe.llen(session[keys.SUMMARIES])
            pipe.exists(session[keys.STATE])
            pipe.llen(session[keys.STATE_HISTORY])
            pipe.delete(*session)
            raw, summaries, states, changes, _ = await pipe.execute()
        try:
            messages = len(values.parse_session_value(raw, session_id)) if raw else 0
        except CorruptDataError:
            messages = 0  # unreadable, and erased all the same
        return messages, int(summaries), int(states), int(changes)

    def open_journal(self, name: str) -> RedisJournal:
        return RedisJournal(self._client, self.prefix, name)

    async def _exists(self, session_id: str) -> bool:
        with translated_redis("exists"):
            return bool(await self._client.exists(self.key(session_id)))

    async def _if_live(
        self, session_id: str, action: str, command: Callable[[Any], object]
    ) -> tuple[bool, Any]:
        """Whether the session exists, and what ``command`` reads, in one transaction."""
        with translated_redis(action):
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.exists(self.key(session_id))
                command(pipe)
                exists, value = await pipe.execute()
        return bool(exists), value

    # -- summaries ----------------------------------------------------------------------------

    async def _save_summary(
        self, session_id: str, draft: SummaryDraft, expected: int | None
    ) -> Summary:
        created_at = datetime.now(UTC)
        with translated_redis("save summary"):
            reply = await self._summary_script(
                keys=self.session_keys(session_id),
                args=[
                    scripts.expected_arg(expected),
                    draft.covers_until,
                    values.summary_json(draft, created_at),
                ],
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
                covers_until=draft.covers_until,
                expected=expected,
            )
            raise AssertionError("refuse_summary raises")  # pragma: no cover
        return Summary(
            summary_version=version,
            text=draft.text,
            covers_until=draft.covers_until,
            created_at=created_at,
            token_count=draft.token_count,
        )

    async def _load_summary(self, session_id: str, summary_version: int | None) -> Summary | None:
        if summary_version is not None and summary_version < 1:
            return None  # versions start at 1
        index = -1 if summary_version is None else summary_version - 1
        key = self.session_keys(session_id)[keys.SUMMARIES]
        exists, raw = await self._if_live(
            session_id, "load summary", lambda pipe: pipe.lindex(key, index)
        )
        if not exists or raw is None:
            return None
        summary = values.parse_summary(raw, session_id)
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
                args=scripts.document_args(expected, values.dumps(state.document()), STATE_FORMAT),
            )
        status, version = int(status), int(version)
        if status == -1:
            raise SessionNotFoundError(session_id=session_id)
        if status == 0:
            raise rules.stale_state(session_id, version, expected)
        return version

    async def _load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        key = self.session_keys(session_id)[keys.STATE]
        exists, fields = await self._if_live(
            session_id, "load state", lambda pipe: pipe.hmget(key, *keys.DOCUMENT_FIELDS)
        )
        return values.parse_state(fields, session_id) if exists else None

    async def _state_history(self, session_id: str) -> list[StateChange]:
        key = self.session_keys(session_id)[keys.STATE_HISTORY]
        exists, entries = await self._if_live(
            session_id, "state history", lambda pipe: pipe.lrange(key, 0, -1)
        )
        if not exists:
            return []
        return [values.parse_state_change(raw, session_id) for raw in entries]

    # -- user profiles ----------------------------------------------------------------------

    async def _save_profile(self, user_id: str, profile: UserProfile, expected: int | None) -> int:
        with translated_redis("save profile"):
            accepted, version = await self._profile_script(
                keys=[self.profile_key(user_id)],
                args=scripts.document_args(
                    expected, values.dumps(profile.document()), PROFILE_FORMAT
                ),
            )
        if not accepted:
            raise rules.stale_profile(user_id, int(version), expected)
        return int(version)

    async def _load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        with translated_redis("load profile"):
            fields = await self._client.hmget(self.profile_key(user_id), *keys.DOCUMENT_FIELDS)
        return values.parse_profile(fields, user_id)

    # -- a user's sessions ------------------------------------------------------------------

    async def _list_sessions(self, query: ListingQuery) -> SessionPage:
        # The Go layout keeps a session's user in its meta hash only: listing one user's
        # sessions would walk every session of the database (as erase_user does), a cost
        # no page may have.
        raise NotSupportedError(
            "RedisStorage can't list a user's sessions: the Go service's key layout has no "
            "index by user, and walking every session's meta hash costs as much as the "
            "whole database; list them on PostgreSQL (or the memory store)",
            operation="list_sessions",
            backend="RedisStorage",
        )

    # -- whole sessions -------------------------------------------------------------------------

    async def _read(self, session_id: str, action: str) -> values.SessionRead | None:
        with translated_redis(action):
            reply = await self._read_script(
                keys=self.session_keys(session_id), args=[self.profile_key("")]
            )
        return values.parse_read(reply, session_id)

    async def _snapshot(self, session_id: str) -> SessionSnapshot:
        read = await self._read(session_id, "snapshot")
        if read is None:
            return SessionSnapshot(session_id, False, 0, None, [], None, None, 0, None, 0)
        return read.snapshot(session_id)

    @asynccontextmanager
    async def _reader(self, session_id: str) -> AsyncIterator[SnapshotReader]:
        """Reads on a copy of the session taken on entry (one read script)."""
        read = await self._read(session_id, "read session")
        copy = (
            None
            if read is None
            else SessionCopy(
                read.version, read.messages, read.created_at, read.user_id, read.summary, read.state
            )
        )

        async def profile(user_id: str) -> Versioned[UserProfile] | None:
            # the session's own user's profile was read with it; another user's is read now
            if read is not None and user_id == read.user_id:
                return read.profile
            return await self.load_profile(user_id)

        yield SnapshotReader(copy, self.token_counter, profile)


def _glob(literal: str) -> str:
    """``literal`` with SCAN's pattern characters escaped."""
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in literal)
