"""The JSON the service takes and gives that the library has no model for.

Consultation states and profiles travel as the library's own models (ctxstore.models);
a message is the library's fields in a strict model of its own (see MessageIn).  The rest
is what only the service has (a version in a body, a window's position).  Request bodies
are validated strictly (ctxstore.http.bodies); responses are serialized from the
library's values.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictStr,
    WithJsonSchema,
    model_validator,
)

from ctxstore.contract import ContextContract
from ctxstore.errors import InvalidMessageError
from ctxstore.formats.messages import trusted_messages
from ctxstore.models import WHOLE_NUMBER, Message, Role
from ctxstore.storage.rules import DEFAULT_LIMITS
from ctxstore.timestamps import parse_timestamp

_MAX_LABEL = DEFAULT_LIMITS.max_label_chars


def _exact_timestamp(value: object) -> datetime:
    """RFC 3339 with a UTC offset, read exactly (to the nanosecond) by the library's own
    parser: the one parse of a message's time (the library is handed the datetime)."""
    if not isinstance(value, str):
        raise ValueError("a timestamp is RFC 3339 text")  # strict: no numbers
    try:
        parsed = parse_timestamp(value)
    except InvalidMessageError as error:
        raise ValueError(error.message) from None
    if not isinstance(parsed, datetime) or parsed.utcoffset() is None:
        raise ValueError("not an RFC 3339 timestamp with a UTC offset")
    return parsed


Timestamp = Annotated[
    datetime,
    PlainValidator(_exact_timestamp),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MessageIn(_Request):
    """A message as a client sends it: the fields of ctxstore.models.Message (a test
    keeps the two the same), validated strictly (Message's own constructor is lax)."""

    role: Role
    content: StrictStr
    turn_id: StrictStr | None = None
    #: RFC 3339 with a UTC offset; read back with the offset it was written with.
    timestamp: Timestamp | None = None
    name: StrictStr | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class WriteMessages(_Request):
    """PUT replaces the session's messages with these; POST appends them."""

    messages: list[MessageIn]
    #: The user the session belongs to (kept from the first write that gives one).
    user_id: Annotated[StrictStr, Field(min_length=1, max_length=255)] | None = None

    _library: list[Message] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _as_library_messages(self) -> WriteMessages:
        # Here, in the validation (off the event loop for a large body: bodies.parse),
        # the Messages and their digests, which the store would compute on the loop.
        library = trusted_messages(message.__dict__ for message in self.messages)
        for message in library:
            message.core_digest()
        # Into the private dict itself: pydantic's attribute setter costs microseconds.
        private = self.__pydantic_private__
        assert private is not None  # the model declares a private attribute
        private["_library"] = library
        return self

    def library_messages(self) -> list[Message]:
        """The library's Messages, without validating them again: this model validated
        every field strictly, and the store checks its rules (sizes, storable text)."""
        library = self._library
        if library is None:  # built without validation (model_construct)
            library = trusted_messages(message.__dict__ for message in self.messages)
        return library


class SummaryIn(_Request):
    text: StrictStr
    #: Position of the last message the summary covers (-1: none).
    covers_until: Annotated[int, Field(ge=-1, le=2**31), WHOLE_NUMBER]
    token_count: Annotated[int, Field(ge=0, le=2**31), WHOLE_NUMBER] | None = None


class KnowledgeIn(_Request):
    title: StrictStr
    content: StrictStr
    source: StrictStr
    relevance_score: StrictFloat


class ContextRequest(_Request):
    """What the next LLM call answers, and what it may be given."""

    turn_id: StrictStr
    user_message: StrictStr
    token_budget: Annotated[int, Field(gt=0, le=2**31 - 1), WHOLE_NUMBER] = 8000
    retrieved_knowledge: list[KnowledgeIn] = Field(default_factory=list)
    #: Count the budget in the encoding this model uses (gpt-4o: o200k_base); default:
    #: the service's own (CTXSTORE_TOKEN_ENCODING).
    model: Annotated[StrictStr, Field(min_length=1, max_length=200)] | None = None
    #: Add the contract to the session's ledger (GET .../contracts/{turn_id} gives its
    #: bytes back), with ``model``: the write scope besides read.
    record: StrictBool = False


class AttachResponseIn(_Request):
    """The id of the response the LLM gave to a recorded turn's contract."""

    response_id: Annotated[StrictStr, Field(min_length=1, max_length=_MAX_LABEL)]


class MessageOut(BaseModel):
    """A stored message as the service returns it (every field present)."""

    role: Role
    content: str
    turn_id: str | None
    timestamp: datetime | None
    name: str | None
    metadata: dict[str, Any]


class MessagesOut(BaseModel):
    session_id: str
    #: The session's version (also the ETag).
    version: int
    #: Messages the session holds.
    total_messages: int
    #: Position of the first message returned (all of them: 0).
    first_position: int
    #: Contract tokens of the messages returned (only with ``token_budget``).
    token_count: int | None
    messages: list[MessageOut]


class Written(BaseModel):
    #: The resource's new version (also the ETag).
    version: int


class SummaryOut(BaseModel):
    summary_version: int
    text: str
    covers_until: int
    created_at: datetime
    token_count: int | None


class SessionOut(BaseModel):
    """A session in a listing as the service returns it: the fields of
    ctxstore.models.SessionListing (a test keeps the two the same), every one present."""

    session_id: str
    #: When the session was first written (the listing's order, newest first).
    created_at: datetime
    #: When a message was last written to it (a summary or a state doesn't move it).
    updated_at: datetime
    message_count: int
    #: The consultation state's stage (null: no state saved).
    stage: str | None
    #: The latest summary's version (0: none).
    summary_version: int
    #: The latest summary's text: only with ``with_summaries=true`` (else null).
    summary_text: str | None


class SessionsOut(BaseModel):
    """A page of a user's sessions, newest first: the library's SessionPage."""

    items: list[SessionOut]
    #: Pass it back as ``cursor``, with the same filters, for the next page (null: the
    #: last page).
    next_cursor: str | None


class ContractEntryOut(BaseModel):
    """One entry of a session's ledger of contracts: what a recorded call received was
    built from and for (ctxstore.storage.ledger.LedgerEntry), without the text."""

    #: The entry's number in the session's ledger (1, 2, ...).
    entry_seq: int
    turn_id: str
    recorded_at: datetime
    #: The model the call was for (null: none given).
    model: str | None
    #: The encoding the contract's tokens were counted in.
    token_encoding: str
    token_count: int
    #: The versions the contract was built from.
    session_version: int
    summary_version: int
    #: 0: the session had no consultation state stored.
    state_version: int
    #: null: no profile went in.
    profile_version: int | None
    #: The entry's place in the session's chain (SHA-256, hex).
    digest: str
    #: The response attached to the entry (null: none yet).
    response_id: str | None


class ContractsOut(BaseModel):
    """A session's ledger of contracts, oldest first (empty: nothing recorded)."""

    session_id: str
    entries: list[ContractEntryOut]


class ResponseAttached(BaseModel):
    #: The entry the response is attached to (the turn's last).
    entry_seq: int
    response_id: str


#: The response of POST .../context: the Context Contract (docs/context-contract.md).
ContextResponse = ContextContract


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    status: Literal["ready"]
    #: The schema revision the database is at (this server's head, or a later release's):
    #: to an admin token.
    revision: str | None = None
    #: To an admin token, when the schema is ahead of this server: why it is ready all the
    #: same (a later release's additive revisions).
    detail: str | None = None


class NotReady(BaseModel):
    """To a caller without an admin token: the status alone (the reason is logged)."""

    status: Literal["not ready"]
