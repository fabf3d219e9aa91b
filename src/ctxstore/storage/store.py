"""VersionedStorage, the storage API, and Store, the base every backend shares.

Each operation is declared once, here: VersionedStorage's public method checks its
arguments with storage/rules.py, in the rules' order, then hands ``_call`` its Route (how
a fallback routes and journals it) and the action: the backend's hook (the same name with
a leading underscore), called with validated values.  Store runs the action on itself; a
FallbackStorage (storage/fallback.py) runs it on the side serving the key, from the
Route alone.  A backend implements the hooks and nothing else: it stores, fetches and
enforces atomically what depends on stored data (versions, counts), raising the errors
rules.py builds.  So MemoryStorage, PostgresStorage, RedisStorage and FallbackStorage
accept and reject exactly the same inputs, the same way.

Store's ``_call`` is also where telemetry (ctxstore/telemetry.py, opt-in) wraps each hook
in a span: one place, so every backend reports the same way.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, TypeVar

from ctxstore import telemetry
from ctxstore.errors import ConfigurationError, NotSupportedError
from ctxstore.models import (
    ConsultationState,
    Message,
    SessionListing,
    SessionPage,
    SessionSnapshot,
    StateChange,
    Summary,
    UserProfile,
    Versioned,
)
from ctxstore.storage import rules
from ctxstore.storage.base import (
    AsyncClosing,
    Backups,
    Erased,
    ErasureReceipt,
    MessageInput,
    SessionReader,
    Vacuumed,
)
from ctxstore.storage.bundle import Bundled, ImportReceipt, export_bundle, open_bundle
from ctxstore.storage.journal import Journal, Operation, OperationKind
from ctxstore.storage.ledger import ContractRecord, LedgerEntry, RecordedContract
from ctxstore.storage.listing import ListingQuery, continued
from ctxstore.storage.rules import DEFAULT_LIMITS, Limits, SummaryDraft
from ctxstore.tokens import TokenCounter

T = TypeVar("T")
#: Telemetry's ``db.system.name`` of the backends, by the package that defines them.
_SYSTEMS = {
    "ctxstore.storage.postgres": "postgresql",
    "ctxstore.storage.redis": "redis",
    "ctxstore.storage.memory": "memory",
}


@dataclass(frozen=True, slots=True)
class Route:
    """What a FallbackStorage needs to know of an operation to route it.

    ``journaled``: a write's kind in the fallback's journal (None: a read); ``of_user``:
    its subject is a user id (a profile), not a session id; ``whole``: a read showing the
    session's whole history (refused on a secondary holding only part of it);
    ``session_version``: its result is the session's version (None: gone, version 0);
    ``across_sessions``: a read of many sessions (a user's listing), which only the
    primary holds all of (refused while a fallback is not healthy).
    """

    name: str
    journaled: OperationKind | None = None
    of_user: bool = False
    whole: bool = False
    session_version: bool = False
    across_sessions: bool = False


SAVE = Route("save", journaled="save", session_version=True)
APPEND = Route("append", journaled="append", session_version=True)
LOAD = Route("load", whole=True)
NEWEST = Route("newest")
VERSION = Route("version", session_version=True)
DELETE = Route("delete", journaled="delete", session_version=True)
EXISTS = Route("exists")
SAVE_SUMMARY = Route("save_summary", journaled="summary")
LOAD_SUMMARY = Route("load_summary")
SAVE_STATE = Route("save_state", journaled="state")
LOAD_STATE = Route("load_state")
STATE_HISTORY = Route("state_history", whole=True)
SAVE_PROFILE = Route("save_profile", journaled="profile", of_user=True)
LOAD_PROFILE = Route("load_profile", of_user=True)
DELETE_PROFILE = Route("delete_profile", journaled="delete_profile", of_user=True)
SNAPSHOT = Route("snapshot", whole=True)
LIST_SESSIONS = Route("list_sessions", of_user=True, across_sessions=True)
#: The ledger of contracts is kept by the primary alone (storage/ledger.py).
RECORD_CONTRACT = Route("record_contract", across_sessions=True)
READ_CONTRACT = Route("read_contract", across_sessions=True)
LIST_CONTRACTS = Route("list_contracts", across_sessions=True)
ATTACH_RESPONSE = Route("attach_response", across_sessions=True)

#: What a write leaves for the fallback's journal, built only when one records it.
JournalEntry = Callable[[], Operation]


class VersionedStorage(AsyncClosing, ABC):
    """The whole consultation: versions, appends, summaries, state, profiles, snapshots.

    Offers the Go service's ContextStorage (storage/base.py) and more.  Each public method
    applies the rules, then ``_call``s its Route with the backend's hook.
    """

    limits: Limits
    token_counter: TokenCounter

    @abstractmethod
    def _call(
        self,
        route: Route,
        subject: str,
        action: Callable[[Store], Awaitable[T]],
        journal: JournalEntry | None = None,
    ) -> Awaitable[T]:
        """Run ``action`` (a Store's hook, validated values bound) where ``route`` goes."""

    @abstractmethod
    async def close(self) -> None: ...

    # -- messages -------------------------------------------------------------------------------

    async def save(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        """Replace the session's messages (atomically); the session's new version.

        With ``expected_version`` only if the stored version equals it (``NEW_SESSION``:
        must not exist yet), else ``ConflictError``; without it the last write wins.
        """
        expected = rules.check_write(session_id, expected_version, user_id, self.limits)
        trusted = self._stored_prefix(session_id, messages)
        checked = rules.coerce_messages(messages, self.limits, trusted=trusted)
        return await self._call(
            SAVE,
            session_id,
            lambda store: store._save(session_id, checked, expected, user_id),
            lambda: Operation(
                "save", session_id, tuple(checked), user_id=user_id, based_on=expected
            ),
        )

    async def append(
        self,
        session_id: str,
        messages: Sequence[MessageInput],
        *,
        expected_version: int | None = None,
        user_id: str | None = None,
    ) -> int:
        """Add messages after the stored ones, creating the session; the new version."""
        expected = rules.check_write(session_id, expected_version, user_id, self.limits)
        checked = rules.coerce_messages(messages, self.limits)
        return await self._call(
            APPEND,
            session_id,
            lambda store: store._append(session_id, checked, expected, user_id),
            lambda: Operation(
                "append", session_id, tuple(checked), user_id=user_id, based_on=expected
            ),
        )

    async def load(self, session_id: str) -> list[Message]:
        """Exactly what was saved; ``[]`` for a missing session."""
        rules.check_session_id(session_id, self.limits)
        return await self._call(LOAD, session_id, lambda store: store._load(session_id))

    async def newest(self, session_id: str, limit: int) -> list[Message]:
        """The session's last ``limit`` messages, oldest first; ``[]`` for a missing one.
        Costs the same whatever the session's length."""
        rules.check_session_id(session_id, self.limits)
        if rules.check_limit(limit) == 0:
            return []
        return await self._call(NEWEST, session_id, lambda store: store._newest(session_id, limit))

    async def version(self, session_id: str) -> int:
        """The session's version; 0 when it does not exist."""
        rules.check_session_id(session_id, self.limits)
        return await self._call(VERSION, session_id, lambda store: store._version(session_id))

    async def delete(self, session_id: str) -> None:
        """Remove the session: messages, summaries, state and its history (not the profile)."""
        rules.check_session_id(session_id, self.limits)
        await self._call(
            DELETE,
            session_id,
            lambda store: store._delete(session_id),
            lambda: Operation("delete", session_id),
        )

    async def exists(self, session_id: str) -> bool:
        """True for a stored session, even one saved with ``[]``."""
        rules.check_session_id(session_id, self.limits)
        return await self._call(EXISTS, session_id, lambda store: store._exists(session_id))

    # -- summaries ------------------------------------------------------------------------------

    async def save_summary(
        self,
        session_id: str,
        text: str,
        *,
        covers_until: int,
        token_count: int | None = None,
        expected_version: int | None = None,
    ) -> Summary:
        """Store the next summary version (``expected_version``: the latest one seen)."""
        rules.check_session_id(session_id, self.limits)
        expected = rules.check_expected_version(expected_version)
        draft = rules.check_summary(text, covers_until, token_count, self.limits)
        return await self._call(
            SAVE_SUMMARY,
            session_id,
            lambda store: store._save_summary(session_id, draft, expected),
            lambda: Operation(
                "summary",
                session_id,
                text=draft.text,
                covers_until=draft.covers_until,
                token_count=draft.token_count,
                based_on=expected,
            ),
        )

    async def load_summary(
        self, session_id: str, summary_version: int | None = None
    ) -> Summary | None:
        """The latest summary, or the one at ``summary_version``; None when there is none."""
        rules.check_session_id(session_id, self.limits)
        if summary_version is not None:
            rules.check_expected_version(summary_version)
        return await self._call(
            LOAD_SUMMARY,
            session_id,
            lambda store: store._load_summary(session_id, summary_version),
        )

    # -- consultation state -----------------------------------------------------------------

    async def save_state(
        self,
        session_id: str,
        state: ConsultationState | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        rules.check_session_id(session_id, self.limits)
        expected = rules.check_expected_version(expected_version)
        checked = rules.check_state(state, self.limits)
        return await self._call(
            SAVE_STATE,
            session_id,
            lambda store: store._save_state(session_id, checked, expected),
            lambda: Operation("state", session_id, document=checked.document(), based_on=expected),
        )

    async def load_state(self, session_id: str) -> Versioned[ConsultationState] | None:
        rules.check_session_id(session_id, self.limits)
        return await self._call(LOAD_STATE, session_id, lambda store: store._load_state(session_id))

    async def state_history(self, session_id: str) -> list[StateChange]:
        rules.check_session_id(session_id, self.limits)
        return await self._call(
            STATE_HISTORY, session_id, lambda store: store._state_history(session_id)
        )

    # -- user profiles ----------------------------------------------------------------------

    async def save_profile(
        self,
        user_id: str,
        profile: UserProfile | Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> int:
        rules.check_user_id(user_id, self.limits)
        expected = rules.check_expected_version(expected_version)
        checked = rules.check_profile(profile, self.limits)
        return await self._call(
            SAVE_PROFILE,
            user_id,
            lambda store: store._save_profile(user_id, checked, expected),
            lambda: Operation("profile", user_id, document=checked.document(), based_on=expected),
        )

    async def load_profile(self, user_id: str) -> Versioned[UserProfile] | None:
        rules.check_user_id(user_id, self.limits)
        return await self._call(LOAD_PROFILE, user_id, lambda store: store._load_profile(user_id))

    async def delete_profile(self, user_id: str) -> None:
        """Remove the user's profile (idempotent); sessions stay."""
        rules.check_user_id(user_id, self.limits)
        await self._call(
            DELETE_PROFILE,
            user_id,
            lambda store: store._delete_profile(user_id),
            lambda: Operation("delete_profile", user_id),
        )

    @abstractmethod
    async def erase_user(self, user_id: str, *, vacuum: bool = True) -> ErasureReceipt:
        """Remove everything of the user: each session whose user it is, with its
        messages, summaries, state and state history, and the profile (idempotent).

        Then, with ``vacuum`` (on PostgreSQL), ANALYZE and VACUUM of the tables the
        erasure touched, once it has committed, so neither the table statistics nor dead
        row versions keep the user's ids and text; its outcome, and what backups still
        hold, are on the receipt.  ``vacuum=False`` (a batch of erasures, one clean-up
        after the last) leaves that to a later ``erase_user`` or to the operator."""

    # -- a user's sessions ------------------------------------------------------------------

    async def list_sessions(
        self,
        user_id: str,
        *,
        limit: int = rules.DEFAULT_PAGE_SIZE,
        cursor: str | None = None,
        stage: str | None = None,
        updated_since: datetime | None = None,
        with_summaries: bool = False,
    ) -> SessionPage:
        """One page of the user's sessions, newest first (by creation; storage/listing.py).

        ``limit``: items on the page, 1 to 1,000.  ``cursor``: the previous page's
        ``next_cursor`` (None: the first page), used with the same user and filters (else
        InvalidInputError).  ``stage``: only sessions whose current state is at that stage;
        ``updated_since``: only sessions written (a message write) at or after that time.
        ``with_summaries``: each item carries its latest summary's text, opened where it is
        sealed (EncryptionKeyError when this store has no keys for it); without it, sealed
        text is never read.  Expired sessions are not listed.

        On PostgreSQL one index scan, whatever the depth and however many sessions the user
        and the database hold (a filter reads past the sessions it leaves out).  A
        RedisStorage holds no index by user: NotSupportedError.  A FallbackStorage lists on
        its primary only, and refuses with StorageUnavailableError while it is not healthy.
        """
        rules.check_user_id(user_id, self.limits)
        asked = ListingQuery(
            user_id,
            rules.check_page_size(limit),
            rules.check_stage_filter(stage, self.limits),
            rules.check_updated_since(updated_since),
            rules.check_flag(with_summaries, "with_summaries"),
        )
        query = continued(asked, cursor)  # the cursor checked against what it continues
        return await self._call(LIST_SESSIONS, user_id, lambda store: store._list_sessions(query))

    async def iter_sessions(
        self,
        user_id: str,
        *,
        page_size: int = 100,
        stage: str | None = None,
        updated_since: datetime | None = None,
        with_summaries: bool = False,
    ) -> AsyncGenerator[SessionListing, None]:
        """Every session of the user, newest first: ``list_sessions`` page after page
        (``page_size`` a page, so memory stays bounded by a page).  Each page is read when
        the one before is used up: each session shows what it held then, and one created
        during the walk is before its start (storage/listing.py)."""
        rules.check_page_size(page_size, "page_size")
        cursor: str | None = None
        while True:
            page = await self.list_sessions(
                user_id,
                limit=page_size,
                cursor=cursor,
                stage=stage,
                updated_since=updated_since,
                with_summaries=with_summaries,
            )
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- the ledger of contracts (storage/ledger.py) ------------------------------------------

    async def record_contract(self, record: ContractRecord) -> LedgerEntry:
        """Add a contract a call received to its session's ledger, chained to the last
        entry; the builders call it (``record=True``).  The app role can add entries and
        read them, never change or remove them.  On PostgreSQL only (NotSupportedError
        elsewhere); a FallbackStorage records on its primary while it is healthy."""
        provenance = record.provenance
        rules.check_session_id(provenance.session_id, self.limits)
        return await self._call(
            RECORD_CONTRACT, provenance.session_id, lambda store: store._record_contract(record)
        )

    async def read_contract(
        self, session_id: str, turn_id: str, *, entry_seq: int | None = None
    ) -> RecordedContract | None:
        """The contract the turn's call received, byte for byte as the builder returned
        it, with its provenance: the turn's last entry, or entry ``entry_seq`` of the
        session (None: no such entry).  Sealed pieces are opened (the store needs the
        keys); the pieces of an erased user are gone (DataKeyDestroyedError)."""
        rules.check_session_id(session_id, self.limits)
        rules.check_text_label(turn_id, "turn_id", self.limits)
        if entry_seq is not None:
            rules.check_positive(entry_seq, "entry_seq")
        return await self._call(
            READ_CONTRACT,
            session_id,
            lambda store: store._read_contract(session_id, turn_id, entry_seq),
        )

    async def list_contracts(self, session_id: str) -> list[LedgerEntry]:
        """Every entry of the session's ledger, oldest first, without the texts."""
        rules.check_session_id(session_id, self.limits)
        return await self._call(
            LIST_CONTRACTS, session_id, lambda store: store._list_contracts(session_id)
        )

    async def attach_response(self, session_id: str, turn_id: str, response_id: str) -> int | None:
        """Bind the caller's response id to the turn's last recorded contract, once (the
        same id again changes nothing; another raises ConflictError).  The entry's number,
        or None when the turn has no entry."""
        rules.check_session_id(session_id, self.limits)
        rules.check_text_label(turn_id, "turn_id", self.limits)
        rules.check_text_label(response_id, "response_id", self.limits)
        return await self._call(
            ATTACH_RESPONSE,
            session_id,
            lambda store: store._attach_response(session_id, turn_id, response_id),
        )

    # -- whole sessions -----------------------------------------------------------------------

    async def snapshot(self, session_id: str) -> SessionSnapshot:
        """Messages, latest summary, state, profile and every version, from one snapshot."""
        rules.check_session_id(session_id, self.limits)
        return await self._call(SNAPSHOT, session_id, lambda store: store._snapshot(session_id))

    @abstractmethod
    def reader(self, session_id: str) -> AbstractAsyncContextManager[SessionReader]:
        """A SessionReader on one consistent snapshot, for context assembly."""

    @abstractmethod
    def iter_messages(
        self, session_id: str, *, batch_size: int = 1000
    ) -> AsyncGenerator[Message, None]:
        """Every message of the session, oldest first, ``batch_size`` at a time.

        For exports: memory stays bounded by a batch whatever the session's length, and
        every batch comes from the same snapshot (on PostgreSQL one REPEATABLE READ
        transaction, so the whole export must fit in ``operation_timeout``).
        """

    # -- a user's bundle (storage/bundle/) ----------------------------------------------------

    @abstractmethod
    def export_user(self, user_id: str, *, batch_size: int = 1000) -> AsyncGenerator[bytes, None]:
        """Everything held about the user as one bundle, streamed in chunks of bytes: the
        profile, and each session with its messages, every summary version, its state and
        state history, in plaintext (sealed text opened: the store needs the keys), old
        formats upgraded.  Messages are read ``batch_size`` at a time, so memory stays
        bounded whatever the user holds.  The same data always gives the same bytes.

        Built on ``list_sessions``: a RedisStorage raises NotSupportedError; a
        FallbackStorage exports from its primary, only while it is healthy.  A session
        written to during its export fails it (ConflictError): export again."""

    @abstractmethod
    async def import_user(self, bundle: AsyncIterable[bytes] | Iterable[bytes]) -> ImportReceipt:
        """Restore an ``export_user`` bundle (chunks of bytes, e.g. an open binary file)
        exactly: versions and times as exported, so exporting it again gives the same bytes.

        Every line is checked with this store's rules and limits, and the manifest's
        counts and digests at the end; BundleError if anything is wrong, ConflictError if
        the user (a profile or a live session) or any of its sessions already exists here.
        Either way nothing is written (on PostgreSQL, one transaction).  Sessions expire
        ``ttl`` after the import, as after a write.  A RedisStorage raises
        NotSupportedError; a FallbackStorage imports into its primary while healthy."""

    def _stored_prefix(self, session_id: str, messages: object) -> int:
        """How many of ``messages``' first items are the very Message objects this
        backend knows it stored for the session (checked when written: the rules skip
        them).  ``messages`` is the caller's, unchecked; 0 unless a backend knows."""
        return 0


class Store(VersionedStorage):
    """A VersionedStorage whose public methods apply the rules, then call the backend."""

    #: The backend's name in telemetry (derived from its module unless a class sets it).
    db_system: ClassVar[str] = "other"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "db_system" not in cls.__dict__:
            module = cls.__module__
            for package, system in _SYSTEMS.items():
                if module == package or module.startswith(package + "."):
                    cls.db_system = system

    def __init__(
        self,
        *,
        limits: Limits = DEFAULT_LIMITS,
        ttl: timedelta | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        self.limits = limits
        #: Sessions expire this long after their last write (None: never).
        self.ttl = rules.check_ttl(ttl)
        #: Counts each message's contract cost when it is written; readers know its encoding.
        self.token_counter = token_counter or TokenCounter()

    # -- the fallback's journal -------------------------------------------------------------

    def open_journal(self, name: str) -> Journal:
        """Where a FallbackStorage with this store as its secondary records its writes."""
        raise ConfigurationError(
            f"{type(self).__name__} can't hold a fallback journal: "
            "use a MemoryStorage or a RedisStorage as the secondary"
        )

    async def applied_writes(
        self, subject: str, write_ids: Sequence[str], *, profile: bool = False
    ) -> frozenset[str] | None:
        """Which of ``write_ids`` (storage/write_ids.py) a write to the session (or, with
        ``profile``, the user's profile) ``subject`` applied; None when this store
        records no write ids, so nobody can tell."""
        if not write_ids:
            return frozenset()
        return await self._applied(subject, write_ids, profile=profile)

    async def _applied(
        self, subject: str, write_ids: Sequence[str], *, profile: bool
    ) -> frozenset[str] | None:
        return None

    # -- the operations that are more than one hook --------------------------------------------

    async def erase_user(self, user_id: str, *, vacuum: bool = True) -> ErasureReceipt:
        rules.check_user_id(user_id, self.limits)
        started = time.monotonic()
        erased, erased_at, vacuumed = await self._traced(
            "erase_user", self._erase_then_vacuum(user_id, vacuum), user_id, of_user=True
        )
        backups = self._backups_after_erasure(erased, erased_at)
        return ErasureReceipt(
            user_id=user_id,
            sessions=len(erased.session_ids),
            messages=erased.messages,
            summaries=erased.summaries,
            states=erased.states,
            state_changes=erased.state_changes,
            profile=erased.profile,
            erased_at=erased_at,
            seconds=time.monotonic() - started,
            vacuumed=vacuumed.done,
            vacuum_note=vacuumed.note,
            vacuum_follow_up=vacuumed.follow_up,
            backups=backups.note,
            backups_readable_until=backups.readable_until,
        )

    async def _erase_then_vacuum(
        self, user_id: str, vacuum: bool
    ) -> tuple[Erased, datetime, Vacuumed]:
        erased = await self._erase_user(user_id)
        erased_at = datetime.now(UTC)  # committed: what backups from now on no longer hold
        return erased, erased_at, await self._vacuum_after_erasure(vacuum)

    def reader(self, session_id: str) -> AbstractAsyncContextManager[SessionReader]:
        rules.check_session_id(session_id, self.limits)
        active = telemetry.active
        if active is None:
            return self._reader(session_id)
        return active.observe_context(
            "reader", self.db_system, self._reader(session_id), session=session_id, user=None
        )

    async def iter_messages(
        self, session_id: str, *, batch_size: int = 1000
    ) -> AsyncGenerator[Message, None]:
        rules.check_session_id(session_id, self.limits)
        rules.check_batch_size(batch_size)
        async with self.reader(session_id) as reader:
            head = await reader.head()
            for start in range(0, head.message_count, batch_size):
                for message in await reader.span(start, start + batch_size):
                    yield message

    async def export_user(
        self, user_id: str, *, batch_size: int = 1000
    ) -> AsyncGenerator[bytes, None]:
        rules.check_user_id(user_id, self.limits)
        rules.check_batch_size(batch_size)
        async for chunk in export_bundle(self, user_id, batch_size):
            yield chunk

    async def import_user(self, bundle: AsyncIterable[bytes] | Iterable[bytes]) -> ImportReceipt:
        opened = await open_bundle(bundle, self.limits)
        try:
            await self._traced(
                "import_user",
                self._import_user(opened.user_id, opened.records),
                opened.user_id,
                of_user=True,
            )
        finally:
            await opened.records.aclose()
        return opened.reader.receipt()

    # -- where each operation runs: here ----------------------------------------------------------

    def _call(
        self,
        route: Route,
        subject: str,
        action: Callable[[Store], Awaitable[T]],
        journal: JournalEntry | None = None,
    ) -> Awaitable[T]:
        """The hook on this store (no journal: only a fallback keeps one)."""
        return self._traced(route.name, action(self), subject, of_user=route.of_user)

    def _traced(
        self, operation: str, hook: Awaitable[T], subject: str, *, of_user: bool = False
    ) -> Awaitable[T]:
        """``hook`` itself while telemetry is off (the flag read once); else in a span."""
        active = telemetry.active
        if active is None:
            return hook
        session, user = (None, subject) if of_user else (subject, None)
        return active.observe(operation, self.db_system, hook, session=session, user=user)

    # -- the backend's hooks: validated values in, stored values out ------------------------------

    async def _newest(self, session_id: str, limit: int) -> list[Message]:
        """Through a reader (one snapshot); a backend may do it in one query."""
        async with self._reader(session_id) as reader:
            head = await reader.head()
            if not head.message_count:
                return []
            found = await reader.newest(head.message_count, limit)
        return [stored.message for stored in reversed(found)]

    @abstractmethod
    async def _save(
        self, session_id: str, messages: list[Message], expected: int | None, user_id: str | None
    ) -> int: ...

    @abstractmethod
    async def _append(
        self, session_id: str, messages: list[Message], expected: int | None, user_id: str | None
    ) -> int:
        """Must raise rules.check_message_count's error when the session would grow past
        ``limits.max_messages``, atomically with the write."""

    @abstractmethod
    async def _load(self, session_id: str) -> list[Message]: ...

    @abstractmethod
    async def _version(self, session_id: str) -> int: ...

    @abstractmethod
    async def _delete(self, session_id: str) -> None: ...

    @abstractmethod
    async def _exists(self, session_id: str) -> bool: ...

    @abstractmethod
    async def _save_summary(
        self, session_id: str, draft: SummaryDraft, expected: int | None
    ) -> Summary:
        """Refusals go through rules.refuse_summary, so their order is the same everywhere."""

    @abstractmethod
    async def _load_summary(
        self, session_id: str, summary_version: int | None
    ) -> Summary | None: ...

    @abstractmethod
    async def _save_state(
        self, session_id: str, state: ConsultationState, expected: int | None
    ) -> int: ...

    @abstractmethod
    async def _load_state(self, session_id: str) -> Versioned[ConsultationState] | None: ...

    @abstractmethod
    async def _state_history(self, session_id: str) -> list[StateChange]: ...

    @abstractmethod
    async def _save_profile(
        self, user_id: str, profile: UserProfile, expected: int | None
    ) -> int: ...

    @abstractmethod
    async def _load_profile(self, user_id: str) -> Versioned[UserProfile] | None: ...

    @abstractmethod
    async def _delete_profile(self, user_id: str) -> None: ...

    @abstractmethod
    async def _erase_user(self, user_id: str) -> Erased:
        """Remove the user's sessions and profile; what went (one transaction where the
        backend has them)."""

    async def _vacuum_after_erasure(self, run: bool) -> Vacuumed:
        """After an erasure committed: clean up what the backend keeps of deleted data
        (``run``: asked for).  Nothing to do unless a backend keeps something."""
        return Vacuumed(
            False,
            f"not applicable: a {type(self).__name__} keeps no table statistics or dead "
            "row versions",
        )

    def _backups_after_erasure(self, erased: Erased, erased_at: datetime) -> Backups:
        """What backups taken before ``erased_at`` still hold of the erased user."""
        return Backups(
            f"not applicable: a {type(self).__name__} keeps its data in this process only "
            "and writes no backup"
        )

    async def _list_sessions(self, query: ListingQuery) -> SessionPage:
        """The page of ``query``: its user's live sessions after ``query.after``, in the
        listing's order, filtered, ``query.limit`` at most (``listing.page_of``, told
        whether more follow).  A backend that can't list at a cost bounded by the page
        keeps this refusal."""
        raise NotSupportedError(
            f"{type(self).__name__} can't list a user's sessions",
            operation="list_sessions",
            backend=type(self).__name__,
        )

    def _no_ledger(self, operation: str) -> NotSupportedError:
        return NotSupportedError(
            f"{type(self).__name__} keeps no ledger of contracts: record them on PostgreSQL",
            operation=operation,
            backend=type(self).__name__,
        )

    async def _record_contract(self, record: ContractRecord) -> LedgerEntry:
        raise self._no_ledger("record_contract")

    async def _read_contract(
        self, session_id: str, turn_id: str, entry_seq: int | None
    ) -> RecordedContract | None:
        raise self._no_ledger("read_contract")

    async def _list_contracts(self, session_id: str) -> list[LedgerEntry]:
        raise self._no_ledger("list_contracts")

    async def _attach_response(self, session_id: str, turn_id: str, response_id: str) -> int | None:
        raise self._no_ledger("attach_response")

    async def _import_user(self, user_id: str, records: AsyncIterator[Bundled]) -> None:
        """Write every record of ``user_id``'s bundle, all or nothing: ``records`` checks
        each as it comes and raises at the end if the bundle is not intact, so a backend
        writes only once the last one was read.  ConflictError (nothing written) when the
        user or one of the sessions exists already.  A backend that can't restore versions
        and times exactly keeps this refusal."""
        raise NotSupportedError(
            f"{type(self).__name__} can't import a user's bundle",
            operation="import_user",
            backend=type(self).__name__,
        )

    @abstractmethod
    async def _snapshot(self, session_id: str) -> SessionSnapshot: ...

    @abstractmethod
    def _reader(self, session_id: str) -> AbstractAsyncContextManager[SessionReader]: ...
