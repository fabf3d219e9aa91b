"""SessionReader on PostgreSQL: one snapshot.

Its reads run in one REPEATABLE READ, read-only transaction, begun before the first.
Except one: a head read with a WindowHint is one statement (the head, the documents and
the window's first chunk, one snapshot by itself) run without a transaction; a later read
then begins the transaction and first checks the session is still at the head's version
(a session's messages never change without a new version), else raises SnapshotMoved.
A context build is then one round trip instead of four (BEGIN, head, chunk, COMMIT).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ctxstore.formats.messages import rows_to_messages
from ctxstore.models import ConsultationState, Message, Summary, UserProfile, Versioned
from ctxstore.storage.base import SessionHead, SnapshotMoved, StoredMessage, WindowHint
from ctxstore.storage.postgres import rows, sql
from ctxstore.storage.postgres.keys import SessionOwners
from ctxstore.storage.postgres.statement import Driver
from ctxstore.tokens import untimed_label

#: Loads the data keys a read needs, on the given connection, each checked against the
#: owners given (PostgresStorage._keys_for).
KeyLoader = Callable[[set[int], Driver, SessionOwners | None], Awaitable[rows.Keys | None]]
#: Begins the reader's transaction (PostgresStorage._reader).
Begin = Callable[[], Awaitable[None]]
#: A document head() did not read with the session's head.
_UNREAD: Any = object()
#: head() without a window reads no message.
_NO_WINDOW = WindowHint(0, 0)


class PostgresSessionReader:
    def __init__(
        self,
        driver: Driver,
        session_id: str,
        encoding: str,
        keys: KeyLoader | None = None,
        *,
        head: SessionHead | None = None,
        begin: Begin | None = None,
    ) -> None:
        self._driver = driver
        #: Already read in this snapshot (the replica's freshness check): head() is free.
        self._head = head
        #: None: the transaction is open (or this reader needs none begun).
        self._begin = begin
        #: The head's version when it was read outside the transaction (with a window).
        self._unguarded: int | None = None
        #: The window's first chunk, read with the head: (before, messages).
        self._window: tuple[int, list[StoredMessage]] | None = None
        self.session_id = session_id
        #: Stored counts under another label (TokenCounter.count_label) are not used.
        self._encoding = encoding
        self._load_keys = keys
        #: The head's row with the session's summary, state and profile (m_, st_, p_
        #: columns), when head() read them together; None: each is read when asked.
        self._documents: Any = None

    async def _snapshot(self) -> Driver:
        """The driver, in the reader's transaction (begun on the first read that needs
        it; after a head read without one, only while the session kept its version)."""
        if self._begin is not None:
            begin, self._begin = self._begin, None
            await begin()
            if self._unguarded is not None:
                now = await sql.SESSION_HEAD.fetchrow(self._driver, sid=self.session_id)
                if now is None or int(now["version"]) != self._unguarded:
                    raise SnapshotMoved(self.session_id)
        return self._driver

    async def _keys(self, key_ids: set[int], *, of_session: bool = True) -> rows.Keys | None:
        """The keys of ``key_ids``; ``of_session``: rows of the session, whose keys must be
        its own or its user's (the head says who that is: read first if it wasn't)."""
        if self._load_keys is None or not key_ids:
            return None
        owners = None
        if of_session:
            head = self._head if self._head is not None else await self.head()
            owners = SessionOwners(self.session_id, head.user_id)
        return await self._load_keys(key_ids, await self._snapshot(), owners)

    async def _open(self, found: list[Any]) -> list[Message]:
        keys = await self._keys(rows.sealed_key_ids(found))
        opened = rows.open_messages(found, keys, self.session_id)
        return rows_to_messages(opened, session_id=self.session_id)

    async def _stored(self, found: list[Any]) -> list[StoredMessage]:
        messages = await self._open(found)
        return [
            StoredMessage(row["seq"], message, row["token_count"], row["token_encoding"])
            for row, message in zip(found, messages, strict=True)
        ]

    async def head(self, window: WindowHint | None = None) -> SessionHead:
        """The head, read with the summary, state and profile a context needs next, and
        with ``window`` the first chunk of its newest messages (one statement)."""
        if self._head is not None:
            return self._head
        # With a window, before any other read: one statement, a snapshot of its own.
        outside = window is not None and self._begin is not None
        hint = window if window is not None and outside else _NO_WINDOW
        found = await sql.SESSION_HEAD_AND_DOCUMENTS.fetch(
            self._driver if outside else await self._snapshot(),
            sid=self.session_id,
            limit=hint.limit,
            budget=hint.token_budget,
            encoding=self._encoding,
            untimed=untimed_label(self._encoding),
        )
        if not found:
            self._head = SessionHead(False, 0, 0, None, None)
            return self._head
        row = found[0]
        self._documents = row
        self._head = SessionHead(
            True, int(row["version"]), int(row["message_count"]), row["created_at"], row["user_id"]
        )
        if outside:
            self._unguarded = self._head.version
            chunk = [row for row in found if row["seq"] is not None]
            self._window = (self._head.message_count, await self._stored(chunk))
        return self._head

    async def latest_summary(self) -> Summary | None:
        row = self._document("m_", "summary_version")
        if row is _UNREAD:
            row = await sql.LATEST_SUMMARY.fetchrow(await self._snapshot(), sid=self.session_id)
        if row is None:
            return None
        keys = await self._keys({row["key_id"]} - {None})
        return rows.summary_from_row(row, self.session_id, keys)

    async def state(self) -> Versioned[ConsultationState] | None:
        row = self._document("st_", "version")
        if row is _UNREAD:
            row = await sql.CURRENT_STATE.fetchrow(await self._snapshot(), sid=self.session_id)
        if row is None:
            return None
        keys = await self._keys({row["key_id"]} - {None})
        return rows.state_from_row(row, self.session_id, keys)

    async def profile(self, user_id: str) -> Versioned[UserProfile] | None:
        row = self._document("p_", "version") if user_id == self._head_user() else _UNREAD
        if row is _UNREAD:
            row = await sql.CURRENT_PROFILE.fetchrow(await self._snapshot(), user_id=user_id)
        if row is None:
            return None
        # a profile's seal binds its user id: it is no row of the session
        keys = await self._keys({row["key_id"]} - {None}, of_session=False)
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
        window, self._window = self._window, None
        if window is not None and window[0] == before:
            # Read with the head: the newest messages within the window's budget, as
            # many or more than these arguments ask (the caller stops where it must).
            return window[1]
        driver = await self._snapshot()
        if token_budget is None:
            found = await sql.NEWEST.fetch(driver, sid=self.session_id, before=before, limit=limit)
        else:
            found = await sql.NEWEST_WITHIN.fetch(
                driver,
                sid=self.session_id,
                before=before,
                limit=limit,
                budget=token_budget,
                encoding=self._encoding,
                untimed=untimed_label(self._encoding),
            )
        return await self._stored(found)

    async def span(self, start: int, stop: int) -> list[Message]:
        found = await sql.SPAN.fetch(
            await self._snapshot(), sid=self.session_id, start=start, stop=stop
        )
        return await self._open(found)

    async def token_total(self, after: int) -> tuple[int, int]:
        row = await sql.TOKEN_TOTAL.fetchrow(
            await self._snapshot(), sid=self.session_id, after=after, encoding=self._encoding
        )
        return int(row["messages"]), int(row["tokens"])
