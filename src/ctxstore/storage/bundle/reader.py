"""A bundle's lines read back into records (records.py), each checked as it is read with
the target store's rules and limits, and the manifest checked at the end: a backend
writes the records as they come, in one transaction it rolls back unless the whole
bundle checked out."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from ctxstore.errors import BundleError
from ctxstore.models import Message, StateChange, Summary, UserProfile, Versioned
from ctxstore.storage import rules
from ctxstore.storage.bundle.fields import checked, exact_fields, positive_int, written_time
from ctxstore.storage.bundle.format import FORMAT, FORMAT_VERSION, Tally
from ctxstore.storage.bundle.records import (
    Bundled,
    BundledMessages,
    BundledSession,
    BundledState,
    BundledStateChange,
    BundledSummary,
    ImportReceipt,
)
from ctxstore.storage.rules import Limits

#: Messages handed to a backend's import at once.
IMPORT_BATCH = 1000


class BundleReader:
    """Reads a bundle's bytes into records, checking each line with ``limits`` and, at the
    end, the manifest; any problem is a BundleError naming the line."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.tally = Tally()
        self.file_digest = hashlib.sha256()
        self.bytes = 0
        self.line_number = 0
        self.user_id: str | None = None
        self.session: BundledSession | None = None
        self.position = 0
        self._state_change_version = 0
        self._summary_version = 0
        self._manifest: dict[str, Any] | None = None
        self.started = time.monotonic()

    async def header(self, lines: AsyncIterator[bytes]) -> str:
        """The user the bundle is of, from its first line."""
        line = await anext(lines, None)
        if line is None:
            raise BundleError("the bundle is empty: it is not a ctxstore user bundle")
        record = self._parsed(line)
        if record.get("kind") != "header" or record.get("format") != FORMAT:
            raise BundleError(f"line 1: not a ctxstore user bundle (no {FORMAT!r} header)")
        if record.get("format_version") != FORMAT_VERSION:
            raise BundleError(
                f"line 1: bundle format version {record.get('format_version')!r}; this "
                f"ctxstore reads version {FORMAT_VERSION}"
            )
        exact_fields(record, {"kind", "format", "format_version", "user_id"}, 1)
        self.user_id = checked(rules.check_user_id, 1, record["user_id"], self.limits)
        self.tally.add("header", line)
        return self.user_id

    async def records(self, lines: AsyncIterator[bytes]) -> AsyncGenerator[Bundled, None]:
        """Every record after the header, messages in batches; then the manifest checked."""
        batch: BundledMessages | None = None
        async for line in lines:
            record = self._parsed(line)
            kind = record.get("kind")
            if self._manifest is not None:
                raise BundleError(f"line {self.line_number}: more follows the manifest")
            if kind == "manifest":
                self._manifest = record
                continue
            self.tally.add(str(kind), line)
            if kind == "message":
                message = self._message(record)
                if batch is None or len(batch.messages) >= IMPORT_BATCH:
                    if batch is not None:
                        yield batch
                    batch = BundledMessages(message[0], message[1], [])
                batch.messages.append(message[2])
                continue
            if batch is not None:
                yield batch
                batch = None
            yield self._record(kind, record)
        if batch is not None:
            yield batch
        self._finish_session()
        self._check_manifest()

    def receipt(self) -> ImportReceipt:
        counts = self.tally.counts
        assert self.user_id is not None
        return ImportReceipt(
            user_id=self.user_id,
            sessions=counts["session"],
            messages=counts["message"],
            summaries=counts["summary"],
            states=counts["state"],
            state_changes=counts["state_change"],
            profile=counts["profile"] == 1,
            bytes=self.bytes,
            sha256=self.file_digest.hexdigest(),
            seconds=time.monotonic() - self.started,
        )

    # -- lines ---------------------------------------------------------------------------------

    def _parsed(self, line: bytes) -> dict[str, Any]:
        self.line_number += 1
        self.bytes += len(line)
        self.file_digest.update(line)
        if not line.endswith(b"\n"):
            raise BundleError(f"line {self.line_number}: truncated (no end of line)")
        try:
            record = json.loads(line)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise BundleError(f"line {self.line_number}: not a line of JSON") from None
        if not isinstance(record, dict):
            raise BundleError(f"line {self.line_number}: not a JSON object")
        return record

    def _record(self, kind: object, record: dict[str, Any]) -> Bundled:
        if kind == "profile":
            return self._profile(record)
        if kind == "session":
            return self._session(record)
        if kind in ("summary", "state", "state_change") and self.session is None:
            raise BundleError(f"line {self.line_number}: a {kind} before any session")
        if kind == "summary":
            return self._summary(record)
        if kind == "state":
            return self._state(record)
        if kind == "state_change":
            return self._state_change(record)
        raise BundleError(f"line {self.line_number}: unknown record kind {kind!r}")

    def _profile(self, record: dict[str, Any]) -> Versioned[UserProfile]:
        n = self.line_number
        exact_fields(record, {"kind", "profile", "version", "updated_at"}, n)
        if self.tally.counts["profile"] > 1 or self.tally.counts["session"]:
            raise BundleError(f"line {n}: a profile must come once, before the sessions")
        profile = checked(rules.check_profile, n, record["profile"], self.limits)
        return Versioned(
            profile, positive_int(record, "version", n), written_time(record, "updated_at", n)
        )

    def _session(self, record: dict[str, Any]) -> BundledSession:
        n = self.line_number
        exact_fields(
            record,
            {"kind", "session_id", "version", "created_at", "updated_at", "message_count"},
            n,
        )
        self._finish_session()
        count = record["message_count"]
        if type(count) is not int or not 0 <= count <= self.limits.max_messages:
            raise BundleError(f"line {n}: message_count must be 0 to {self.limits.max_messages}")
        self.session = BundledSession(
            checked(rules.check_session_id, n, record["session_id"], self.limits),
            positive_int(record, "version", n),
            written_time(record, "created_at", n),
            written_time(record, "updated_at", n),
            count,
        )
        self.position = 0
        self._summary_version = 0
        self._state_change_version = 0
        return self.session

    def _finish_session(self) -> None:
        if self.session is not None and self.position != self.session.message_count:
            raise BundleError(
                f"line {self.line_number}: session {self.session.session_id!r} has "
                f"{self.position} messages, not the {self.session.message_count} it declares"
            )

    def _message(self, record: dict[str, Any]) -> tuple[str, int, Message]:
        n = self.line_number
        exact_fields(record, {"kind", "session_id", "position", "message"}, n)
        session = self._owner(record, n)
        if record["position"] != self.position or self.position >= session.message_count:
            raise BundleError(
                f"line {n}: message at position {record['position']!r} where session "
                f"{session.session_id!r} expects position {self.position} of "
                f"{session.message_count}"
            )
        (message,) = checked(rules.coerce_messages, n, [record["message"]], self.limits)
        self.position += 1
        return session.session_id, self.position - 1, message

    def _summary(self, record: dict[str, Any]) -> BundledSummary:
        n = self.line_number
        fields = {"session_id", "summary_version", "text", "covers_until", "token_count"}
        exact_fields(record, {"kind", "created_at", *fields}, n)
        session = self._owner(record, n)
        version = positive_int(record, "summary_version", n)
        if version <= self._summary_version:
            raise BundleError(f"line {n}: summary versions must increase")
        self._summary_version = version
        draft = checked(
            rules.check_summary,
            n,
            record["text"],
            record["covers_until"],
            record["token_count"],
            self.limits,
        )
        if draft.covers_until >= session.message_count:
            raise BundleError(f"line {n}: the summary covers messages the session lacks")
        summary = Summary(
            summary_version=version,
            text=draft.text,
            covers_until=draft.covers_until,
            token_count=draft.token_count,
            created_at=written_time(record, "created_at", n),
        )
        return BundledSummary(session.session_id, summary)

    def _state(self, record: dict[str, Any]) -> BundledState:
        n = self.line_number
        exact_fields(record, {"kind", "session_id", "version", "updated_at", "state"}, n)
        session = self._owner(record, n)
        state = checked(rules.check_state, n, record["state"], self.limits)
        versioned = Versioned(
            state, positive_int(record, "version", n), written_time(record, "updated_at", n)
        )
        return BundledState(session.session_id, versioned)

    def _state_change(self, record: dict[str, Any]) -> BundledStateChange:
        n = self.line_number
        exact_fields(record, {"kind", "session_id", "version", "created_at", "state"}, n)
        session = self._owner(record, n)
        version = positive_int(record, "version", n)
        if version <= self._state_change_version:
            raise BundleError(f"line {n}: state change versions must increase")
        self._state_change_version = version
        state = checked(rules.check_state, n, record["state"], self.limits)
        change = StateChange(version, state, written_time(record, "created_at", n))
        return BundledStateChange(session.session_id, change)

    def _owner(self, record: dict[str, Any], n: int) -> BundledSession:
        """The session the record is of: the one whose record came last."""
        session = self.session
        if session is None or record["session_id"] != session.session_id:
            raise BundleError(f"line {n}: a {record['kind']} outside its session's records")
        return session

    def _check_manifest(self) -> None:
        manifest = self._manifest
        if manifest is None:
            raise BundleError(
                f"the bundle ends at line {self.line_number} without its manifest: truncated"
            )
        expected = self.tally.manifest()
        for part, says in (
            ("counts", "its records are not the ones the manifest counts"),
            ("sha256", "a kind of record does not have the digest the manifest says"),
            ("bundle_sha256", "the bundle's bytes do not have the digest the manifest says"),
        ):
            if manifest.get(part) != expected[part]:
                raise BundleError(f"the bundle is damaged: {says} ({part})")
        if set(manifest) != set(expected):
            raise BundleError("the manifest has fields this format does not")
