"""SessionReader on PostgreSQL: one REPEATABLE READ, read-only transaction."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ctxstore.formats.messages import rows_to_messages
from ctxstore.models import ConsultationState, Message, Summary, UserProfile, Versioned
from ctxstore.storage.base import SessionHead, StoredMessage
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.statement import Driver
from ctxstore.tokens import untimed_label

#: Loads the data keys a read needs, on the given connection (PostgresStorage._keys_for).
KeyLoader = Callable[[set[int], Driver], Awaitable[rows.Keys | None]]
#: A document head() did not read with the session's head.
_UNREAD: Any = object()


class PostgresSessionReader:
    def __init__(
        self,
        driver: Driver,
        session_id: str,
        encoding: str,
        keys: KeyLoader | None = None,
        *,
        head: SessionHead | None = None,
    ) -> None:
        self._driver = driver
        #: Already read in this snapshot (the replica's freshness check): head() is free.
        self._head = head
        self.session_id = session_id
        #: Stored counts under another label (TokenCounter.count_label) are not used.
        self._encoding = encoding
        self._load_keys = keys
        #: The head's row with the session's summary, state and profile (m_, st_, p_
        #: columns), when head() read them together; None: each is read when asked.
        self._documents: Any = None

    async def _keys(self, key_ids: set[int]) -> rows.Keys | None:
        if self._load_keys is None:
            return None
        return await self._load_keys(key_ids, self._driver)

    async def _open(self, found: list[Any]) -> list[Message]:
        keys = await self._keys(rows.sealed_key_ids(found))
        opened = rows.open_messages(found, keys, self.session_id)
        return rows_to_messages(opened, session_id=self.session_id)

    async def head(self) -> SessionHead:
        """The head, read with the summary, state and profile a context needs next (one
        statement instead of four)."""
        if self._head is not None:
            return self._head
        row = await sql.SESSION_HEAD_AND_DOCUMENTS.fetchrow(self._driver, sid=self.session_id)
        if row is None:
            self._head = SessionHead(False, 0, 0, None, None)
            return self._head
        self._documents = row
        self._head = SessionHead(
            True, int(row["version"]), int(row["message_count"]), row["created_at"], row["user_id"]
        )
        return self._head

    async def latest_summary(self) -> Summary | None:
        row = self._document("m_", "summary_version")
        if row is _UNREAD:
            row = await sql.LATEST_SUMMARY.fetchrow(self._driver, sid=self.session_id)
        if row is None:
            return None
        keys = await self._keys({row["key_id"]} - {None})
        return rows.summary_from_row(row, self.session_id, keys)

    async def state(self) -> Versioned[ConsultationState] | None:
        row = self._document("st_", "version")
        if row is _UNREAD:
            row = await sql.CURRENT_STATE.fetchrow(self._driver, sid=self.session_id)
        if row is None:
            return None
        keys = await self._keys({row["key_id"]} - {None})
        return rows.state_from_row(row, self.session_id, keys)

    async def profile(self, user_id: str) -> Versioned[UserProfile] | None:
        row = self._document("p_", "version") if user_id == self._head_user() else _UNREAD
        if row is _UNREAD:
            row = await sql.CURRENT_PROFILE.fetchrow(self._driver, user_id=user_id)
        if row is None:
            return None
        keys = await self._keys({row["key_id"]} - {None})
        return rows.profile_from_row(row, user_id, keys)

    def _head_user(self) -> str | None:
        return self._head.user_id if self._head is not None else None

    def _document(self, prefix: str, present: str) -> Any:
        """The prefixed columns of the head's row as a row of their own (None: there is
        no such document; _UNREAD: head() did not read it)."""
        found = self._documents
        if found is None:
            return None if self._head is not None and not self._head.exists else _UNREAD
        if found[prefix + present] is None:
            return None
        cut = len(prefix)
        return {name[cut:]: value for name, value in found.items() if name.startswith(prefix)}

    async def newest(
        self, before: int, limit: int, token_budget: int | None = None
    ) -> list[StoredMessage]:
        if token_budget is None:
            found = await sql.NEWEST.fetch(
                self._driver, sid=self.session_id, before=before, limit=limit
            )
        else:
            found = await sql.NEWEST_WITHIN.fetch(
                self._driver,
                sid=self.session_id,
                before=before,
                limit=limit,
                budget=token_budget,
                encoding=self._encoding,
                untimed=untimed_label(self._encoding),
            )
        messages = await self._open(found)
        return [
            StoredMessage(row["seq"], message, row["token_count"], row["token_encoding"])
            for row, message in zip(found, messages, strict=True)
        ]

    async def span(self, start: int, stop: int) -> list[Message]:
        found = await sql.SPAN.fetch(self._driver, sid=self.session_id, start=start, stop=stop)
        return await self._open(found)

    async def token_total(self, after: int) -> tuple[int, int]:
        row = await sql.TOKEN_TOTAL.fetchrow(
            self._driver, sid=self.session_id, after=after, encoding=self._encoding
        )
        return int(row["messages"]), int(row["tokens"])
