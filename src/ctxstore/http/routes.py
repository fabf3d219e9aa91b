"""The v1 resources: a session's messages, summary, consultation state and context, and a
user's profile and sessions.  Each handler translates HTTP to one library call and back: the
preconditions become ``expected_version`` (ctxstore.http.conditions), the version comes
back as the ETag, and ctxstore's errors become problems (ctxstore.http.app).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, Protocol, TypeVar

import pydantic_core
from fastapi import Header, Path, Query, Request
from pydantic import BaseModel
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.responses import Response, StreamingResponse

from ctxstore.context.builder import ContextBuilder
from ctxstore.context.compression import TokenBudget
from ctxstore.contract import KnowledgeItem
from ctxstore.errors import SessionNotFoundError, TooManyMessagesError
from ctxstore.http import idempotency
from ctxstore.http.bodies import parse, request_body
from ctxstore.http.conditions import (
    ETAG_PATTERN,
    TAG_LIST_PATTERN,
    check_match,
    not_modified,
    write_expectation,
)
from ctxstore.http.docs import BODY, problems, read_responses, write_responses
from ctxstore.http.middleware import PRINCIPAL_KEY
from ctxstore.http.problems import MALFORMED, NOT_FOUND, Problem, etag
from ctxstore.http.registry import Endpoint, Routes
from ctxstore.http.schemas import (
    AttachResponseIn,
    ContextRequest,
    ContextResponse,
    ContractsOut,
    KnowledgeIn,
    MessagesOut,
    ResponseAttached,
    SessionsOut,
    SummaryIn,
    SummaryOut,
    Timestamp,
    WriteMessages,
    Written,
)
from ctxstore.http.security import check_scope, guarded
from ctxstore.models import ConsultationState, UserProfile, Versioned
from ctxstore.storage.ledger import LedgerEntry
from ctxstore.storage.listing import MAX_CURSOR_CHARS
from ctxstore.storage.rules import DEFAULT_LIMITS, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, NEW_SESSION
from ctxstore.storage.store import Store
from ctxstore.tokens import TokenCounter

_MAX_ID = DEFAULT_LIMITS.max_session_id_length
SessionId = Annotated[str, Path(min_length=1, max_length=_MAX_ID, description="The session id")]
TurnId = Annotated[
    str,
    Path(
        min_length=1,
        max_length=DEFAULT_LIMITS.max_label_chars,
        description="The turn id the contract was built for",
    ),
]
UserId = Annotated[str, Path(min_length=1, max_length=_MAX_ID, description="The user id")]
IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        pattern=ETAG_PATTERN,
        description='Write only if the stored version is this one, e.g. "7" (else 412)',
    ),
]
IfNoneMatchWrite = Annotated[
    str | None,
    Header(
        alias="If-None-Match",
        pattern=r"^\*$",
        description="*: write only if the resource does not exist yet (else 412)",
    ),
]
IfMatchRead = Annotated[
    str | None,
    Header(
        alias="If-Match",
        max_length=1024,
        pattern=TAG_LIST_PATTERN,
        description='Answer only if the current version is one of these tags ("7", "6") '
        "or, with *, if the resource exists (else 412)",
    ),
]
IfNoneMatchRead = Annotated[
    str | None,
    Header(
        alias="If-None-Match",
        max_length=1024,
        pattern=TAG_LIST_PATTERN,
        description='304 when one of these tags is the current version: "7", "6" or *',
    ),
]

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=idempotency.MAX_KEY_LENGTH,
        description="A key of the client's (a UUID, say): a retry with the same key and "
        "body stores nothing more (200, Idempotency-Replayed: true); another body, 422",
    ),
]


class _AnyText(PathConvertor):
    """An id in a path is any text the library accepts: newlines and slashes included
    (percent-encoded by the client), which Starlette's ``path`` (``.*``) would refuse."""

    regex = r"[\s\S]*"


register_url_convertor("ctxstore_id", _AnyText())

JSON = "application/json"
NDJSON = "application/x-ndjson"
SESSION = "/v1/sessions/{session_id:ctxstore_id}"
PROFILE = "/v1/users/{user_id:ctxstore_id}/profile"
USER_SESSIONS = "/v1/users/{user_id:ctxstore_id}/sessions"
USER_EXPORT = "/v1/users/{user_id:ctxstore_id}/export"
router = Routes()
_DocumentT = TypeVar("_DocumentT", ConsultationState, UserProfile)
_Saved_contra = TypeVar("_Saved_contra", contravariant=True)


def _reads(
    path: str, operation_id: str, summary: str, model: type[Any]
) -> Callable[[Endpoint], Endpoint]:
    """A GET of a versioned resource: its ETag, 304 and 412 documented, the read scope."""
    return router.get(
        path,
        operation_id=operation_id,
        summary=summary,
        response_model=model,
        responses=read_responses(),
        openapi_extra=guarded("read"),
    )


def _writes(
    method: str,
    path: str,
    operation_id: str,
    summary: str,
    body: type[BaseModel],
    *extra: int,
    model: type[BaseModel] = Written,
) -> Callable[[Endpoint], Endpoint]:
    """A conditional write of a JSON ``body``: 200 or 201 with the new ETag, the write
    scope, and the ``extra`` problems it can answer besides a write's."""
    return router.route(
        method,
        path,
        operation_id=operation_id,
        summary=summary,
        response_model=model,
        responses=write_responses(model, *extra),
        **_with("write", body),
    )


def _with(scope: str, body: type[BaseModel]) -> dict[str, Any]:
    """A route's scope and its JSON body's schema (parsed by the handler: bodies.parse)."""
    return {"openapi_extra": {**guarded(scope), **request_body(body)}}


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _json(body: Any, version: int | None = None, status: int = 200) -> Response:
    headers = {"ETag": etag(version)} if version is not None else None
    return Response(
        pydantic_core.to_json(body), status_code=status, headers=headers, media_type=JSON
    )


async def _write_messages(request: Request) -> WriteMessages:
    """A messages body, within the per-request limit (one request's CPU is bounded)."""
    body = await parse(request, WriteMessages)
    limit: int = request.app.state.max_messages
    if len(body.messages) > limit:
        raise TooManyMessagesError(
            f"{len(body.messages)} messages in one request; the limit is {limit} "
            "(send them in several requests, each an append)"
        )
    return body


def _unchanged(version: int, if_match: str | None, if_none_match: str | None) -> Response | None:
    """A read's preconditions on the current ``version``: 412 unless If-Match holds, the
    304 answer when If-None-Match names it, None when the body is to be sent."""
    check_match(if_match, version)
    if not_modified(if_none_match, version):
        return Response(status_code=304, headers={"ETag": etag(version)})
    return None


def _stored(
    stored: Versioned[_DocumentT] | None,
    missing: str,
    if_match: str | None,
    if_none_match: str | None,
) -> Response:
    """A GET of a stored document: 404 (``missing`` says why) when there is none."""
    if stored is None:
        raise Problem(NOT_FOUND, missing)
    unchanged = _unchanged(stored.version, if_match, if_none_match)
    return unchanged or _json(stored.value.document(), stored.version)


class _Save(Protocol[_Saved_contra]):
    """A store's save of a whole document, e.g. ``Store.save_state`` bound to a store."""

    async def __call__(
        self, owner: str, document: _Saved_contra, /, *, expected_version: int | None
    ) -> int: ...


async def _replace(
    request: Request,
    owner: str,
    kind: type[_DocumentT],
    save: _Save[_DocumentT],
    if_match: str | None,
    if_none_match: str | None,
) -> Response:
    """A PUT of a whole document of ``kind``, saved for ``owner`` (a session or a user)
    under the request's preconditions."""
    expected = write_expectation(if_match, if_none_match)
    document = await parse(request, kind)
    version = await save(owner, document, expected_version=expected)
    return _written(version, version == 1)


def _written(version: int, created: bool) -> Response:
    return _json({"version": version}, version, 201 if created else 200)


# -- messages ---------------------------------------------------------------------------------


@_reads(
    SESSION + "/messages",
    "get_messages",
    "The session's messages, or the newest that fit a token budget",
    MessagesOut,
)
async def get_messages(
    request: Request,
    session_id: SessionId,
    if_none_match: IfNoneMatchRead = None,
    if_match: IfMatchRead = None,
    token_budget: Annotated[
        int | None,
        Query(
            ge=1,
            le=2**31 - 1,
            description="Only the newest messages whose contract tokens fit this budget",
        ),
    ] = None,
) -> Response:
    store = _store(request)
    if token_budget is None and if_none_match is not None:
        # A client revalidating the list it holds (the Go client's every turn): one
        # statement answers the 304, where the snapshot below takes three round trips.
        version = await store.version(session_id)
        unchanged = _unchanged(version, if_match, if_none_match) if version else None
        if unchanged is not None:
            return unchanged
    if token_budget is not None:
        window = await TokenBudget(token_budget).window(store, session_id, store.token_counter)
        version, messages, total = window.version, window.messages, window.total_messages
        first, tokens = window.first_position, window.token_count
    else:
        async with store.reader(session_id) as reader:
            head = await reader.head()
            version, total, first, tokens = head.version, head.message_count, 0, None
            if not head.exists or not_modified(if_none_match, version):
                messages = []
            else:
                messages = await reader.span(0, total)
    if version == 0:
        raise SessionNotFoundError(session_id=session_id)
    body = {
        "session_id": session_id,
        "version": version,
        "total_messages": total,
        "first_position": first,
        "token_count": tokens,
        "messages": messages,
    }
    return _unchanged(version, if_match, if_none_match) or _json(body, version)


@_writes(
    "PUT",
    SESSION + "/messages",
    "put_messages",
    "Replace the session's messages (creating the session)",
    WriteMessages,
)
async def put_messages(
    request: Request,
    session_id: SessionId,
    if_match: IfMatch = None,
    if_none_match: IfNoneMatchWrite = None,
) -> Response:
    expected = write_expectation(if_match, if_none_match)
    body = await _write_messages(request)
    version = await _store(request).save(
        session_id,
        body.library_messages(),
        expected_version=expected,
        user_id=body.user_id,
    )
    # Version 1 after a save that expected a stored version: the same list again, no new
    # session (a save that changes nothing keeps the version).
    return _written(version, version == 1 and expected in (None, NEW_SESSION))


@_writes(
    "POST",
    SESSION + "/messages",
    "append_messages",
    "Append messages after the stored ones (creating the session)",
    WriteMessages,
)
async def append_messages(
    request: Request,
    session_id: SessionId,
    if_match: IfMatch = None,
    if_none_match: IfNoneMatchWrite = None,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    expected = write_expectation(if_match, if_none_match)
    body = await _write_messages(request)
    messages = body.library_messages()
    store = _store(request)
    if idempotency_key is None:
        version = await store.append(
            session_id, messages, expected_version=expected, user_id=body.user_id
        )
        return _written(version, version == 1)
    ids = idempotency.write_ids(
        request.scope[PRINCIPAL_KEY].name, session_id, idempotency_key, await request.body()
    )

    async def append(current: int) -> int:
        return await store.append(
            session_id, messages, expected_version=current, user_id=body.user_id
        )

    version, wrote = await idempotency.append_once(store, session_id, ids, append, expected)
    if wrote:
        return _written(version, version == 1)
    replayed = _json({"version": version}, version)
    replayed.headers[idempotency.REPLAYED] = "true"
    return replayed


@router.delete(
    SESSION + "/messages",
    operation_id="delete_session",
    summary="Delete the session: messages, summaries, state (not the user's profile)",
    description="Idempotent and unconditional (If-Match or If-None-Match: 400).",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "Deleted, or there was nothing to delete"}, **problems()},
    openapi_extra=guarded("write"),
)
async def delete_session(request: Request, session_id: SessionId) -> Response:
    if "if-match" in request.headers or "if-none-match" in request.headers:
        # Refused rather than ignored: the store has no conditional delete, and a client
        # that sent one must not believe its delete was conditional.
        raise Problem(MALFORMED, "DELETE is unconditional: send it without If-Match")
    await _store(request).delete(session_id)
    return Response(status_code=204)


# -- summary ----------------------------------------------------------------------------------


@_reads(SESSION + "/summary", "get_summary", "The session's latest summary", SummaryOut)
async def get_summary(
    request: Request,
    session_id: SessionId,
    if_none_match: IfNoneMatchRead = None,
    if_match: IfMatchRead = None,
) -> Response:
    summary = await _store(request).load_summary(session_id)
    if summary is None:
        raise Problem(NOT_FOUND, "the session has no summary (or does not exist)")
    version = summary.summary_version
    return _unchanged(version, if_match, if_none_match) or _json(summary, version)


@_writes(
    "PUT",
    SESSION + "/summary",
    "put_summary",
    "Store the session's next summary version",
    SummaryIn,
    404,
    model=SummaryOut,
)
async def put_summary(
    request: Request,
    session_id: SessionId,
    if_match: IfMatch = None,
    if_none_match: IfNoneMatchWrite = None,
) -> Response:
    expected = write_expectation(if_match, if_none_match)
    body = await parse(request, SummaryIn)
    summary = await _store(request).save_summary(
        session_id,
        body.text,
        covers_until=body.covers_until,
        token_count=body.token_count,
        expected_version=expected,
    )
    version = summary.summary_version
    return _json(summary, version, 201 if version == 1 else 200)


# -- consultation state -------------------------------------------------------------------------


@_reads(SESSION + "/state", "get_state", "The session's consultation state", ConsultationState)
async def get_state(
    request: Request,
    session_id: SessionId,
    if_none_match: IfNoneMatchRead = None,
    if_match: IfMatchRead = None,
) -> Response:
    stored = await _store(request).load_state(session_id)
    missing = "the session has no consultation state (or does not exist)"
    return _stored(stored, missing, if_match, if_none_match)


@_writes(
    "PUT",
    SESSION + "/state",
    "put_state",
    "Replace the session's consultation state (the session must exist)",
    ConsultationState,
    404,
)
async def put_state(
    request: Request,
    session_id: SessionId,
    if_match: IfMatch = None,
    if_none_match: IfNoneMatchWrite = None,
) -> Response:
    save = _store(request).save_state
    return await _replace(request, session_id, ConsultationState, save, if_match, if_none_match)


# -- context ------------------------------------------------------------------------------------


@router.post(
    SESSION + "/context",
    operation_id="build_context",
    summary="The Context Contract for the next LLM call, within a token budget",
    description="With `record: true` the contract is also added to the session's ledger "
    "of contracts, with `model` (GET .../contracts/{turn_id} gives its bytes back): the "
    "token then needs the write scope besides read (else 403). The response is the same "
    "bytes either way.",
    response_model=ContextResponse,
    responses={
        200: {"description": "The Context Contract (docs/context-contract.md)"},
        **problems(409, 501, *BODY),
    },
    **_with("read", ContextRequest),
)
async def build_context(request: Request, session_id: SessionId) -> Response:
    body = await parse(request, ContextRequest)
    if body.record:
        # Recording writes: the route's own scope (read) is checked before the body is
        # read, the write scope here, as the route would (401/403, the same challenge).
        check_scope(request.scope, "write")
    builder: ContextBuilder = request.app.state.builder
    if body.model is not None:
        builder = _builder_for(request, TokenCounter.for_model(body.model))
    contract = await builder.build_json(
        session_id,
        body.turn_id,
        body.user_message,
        retrieved_knowledge=[_knowledge(item) for item in body.retrieved_knowledge],
        token_budget=body.token_budget,
        record=body.record,
        model=body.model,
    )
    return Response(contract, media_type=JSON)


def _knowledge(item: KnowledgeIn) -> KnowledgeItem:
    """The library's item, not validated again: KnowledgeIn validated each field strictly
    (the builder still checks the text is storable).  A whole number is a float here, as
    KnowledgeItem's validation would make it."""
    return KnowledgeItem.model_construct(
        title=item.title,
        content=item.content,
        source=item.source,
        relevance_score=float(item.relevance_score),
    )


def _builder_for(request: Request, counter: TokenCounter) -> ContextBuilder:
    """A builder counting with ``counter``, one per encoding for the life of the app."""
    builders: dict[str, ContextBuilder] = request.app.state.builders
    found = builders.get(counter.encoding_name)
    if found is None:
        found = builders[counter.encoding_name] = ContextBuilder(
            _store(request), token_counter=counter
        )
    return found


# -- the ledger of contracts ------------------------------------------------------------------

#: The headers of a recorded contract (GET .../contracts/{turn_id}): its entry.
ENTRY_SEQ = "Ctxstore-Entry-Seq"
ENTRY_DIGEST = "Ctxstore-Entry-Digest"
RECORDED_AT = "Ctxstore-Recorded-At"
TOKEN_COUNT = "Ctxstore-Token-Count"
_ENTRY_HEADERS = {
    ENTRY_SEQ: ("The entry's number in the session's ledger", {"pattern": "^[1-9][0-9]*$"}),
    ENTRY_DIGEST: (
        "The entry's digest in the session's chain (SHA-256, hex)",
        {"pattern": "^[0-9a-f]{64}$"},
    ),
    RECORDED_AT: ("When the entry was recorded (RFC 3339, UTC)", {"format": "date-time"}),
    TOKEN_COUNT: ("The contract's tokens, in the entry's encoding", {"pattern": "^[0-9]+$"}),
}


@router.get(
    SESSION + "/contracts",
    operation_id="list_contracts",
    summary="The session's ledger of recorded contracts, oldest first, without their texts",
    description="Each entry recorded by POST .../context with `record: true`: what the "
    "contract was built from (versions) and for (model, encoding, tokens), its digest in "
    "the session's chain, and the response attached to it. A session without entries has "
    "an empty list (200, never 404). Entries are never changed or removed.",
    response_model=ContractsOut,
    responses={200: {"description": "The entries"}, **problems(501)},
    openapi_extra=guarded("read"),
)
async def list_contracts(request: Request, session_id: SessionId) -> Response:
    entries = await _store(request).list_contracts(session_id)
    return _json({"session_id": session_id, "entries": [_entry(entry) for entry in entries]})


# Before GET .../contracts/{turn_id}, whose template matches this path too (a turn id may
# end in /response): the Allow of a 405 here names the methods of the first one.
@router.put(
    SESSION + "/contracts/{turn_id:ctxstore_id}/response",
    operation_id="attach_response",
    summary="Attach the LLM's response id to the turn's last recorded contract, once",
    description="Idempotent: the same id again answers 200 and changes nothing; another "
    "id is a conflict (409). 404 when the turn has no recorded contract.",
    response_model=ResponseAttached,
    responses={
        200: {"description": "Attached (or it already was)"},
        **problems(404, 409, 501, *BODY),
    },
    **_with("write", AttachResponseIn),
)
async def attach_response(request: Request, session_id: SessionId, turn_id: TurnId) -> Response:
    body = await parse(request, AttachResponseIn)
    entry_seq = await _store(request).attach_response(session_id, turn_id, body.response_id)
    if entry_seq is None:
        raise Problem(NOT_FOUND, "the turn has no recorded contract")
    return _json({"entry_seq": entry_seq, "response_id": body.response_id})


@router.get(
    SESSION + "/contracts/{turn_id:ctxstore_id}",
    operation_id="get_contract",
    summary="The contract a recorded call received, byte for byte",
    description="The turn's last recorded contract (or, with `entry`, that entry of the "
    "session, which must be the turn's), the very bytes POST .../context answered, and "
    "its entry in the headers. 404 when the turn has no entry; 409 (data-key-destroyed) "
    "when the session's user was erased (the entries remain, not their texts).",
    response_model=ContextResponse,
    responses={
        200: {
            "description": "The recorded Context Contract",
            "headers": {
                name: {"description": text, "required": True, "schema": {"type": "string", **rule}}
                for name, (text, rule) in _ENTRY_HEADERS.items()
            },
        },
        **problems(404, 409, 501),
    },
    openapi_extra=guarded("read"),
)
async def get_contract(
    request: Request,
    session_id: SessionId,
    turn_id: TurnId,
    entry: Annotated[
        int | None,
        Query(
            ge=1,
            le=2**31 - 1,
            description="This entry of the session's ledger (it must be the turn's), not "
            "the turn's last",
        ),
    ] = None,
) -> Response:
    recorded = await _store(request).read_contract(session_id, turn_id, entry_seq=entry)
    if recorded is None or recorded.entry.provenance.turn_id != turn_id:
        # With ``entry``, the store reads that entry whatever its turn: another turn's
        # is no contract of this resource.
        missing = "the turn has no recorded contract"
        if entry is not None:
            missing = f"entry {entry} is not a recorded contract of the turn"
        raise Problem(NOT_FOUND, missing)
    found = recorded.entry
    headers = {
        ENTRY_SEQ: str(found.entry_seq),
        ENTRY_DIGEST: found.digest,
        RECORDED_AT: pydantic_core.to_json(found.recorded_at).decode("ascii").strip('"'),
        TOKEN_COUNT: str(found.provenance.token_count),
    }
    return Response(recorded.text, headers=headers, media_type=JSON)


def _entry(entry: LedgerEntry) -> dict[str, Any]:
    provenance = entry.provenance
    return {
        "entry_seq": entry.entry_seq,
        "turn_id": provenance.turn_id,
        "recorded_at": entry.recorded_at,
        "model": provenance.model,
        "token_encoding": provenance.token_encoding,
        "token_count": provenance.token_count,
        "session_version": provenance.session_version,
        "summary_version": provenance.summary_version,
        "state_version": provenance.state_version,
        "profile_version": provenance.profile_version,
        "digest": entry.digest,
        "response_id": entry.response_id,
    }


# -- user profiles ------------------------------------------------------------------------------


@_reads(PROFILE, "get_profile", "The user's profile", UserProfile)
async def get_profile(
    request: Request,
    user_id: UserId,
    if_none_match: IfNoneMatchRead = None,
    if_match: IfMatchRead = None,
) -> Response:
    stored = await _store(request).load_profile(user_id)
    return _stored(stored, "the user has no profile", if_match, if_none_match)


@_writes("PUT", PROFILE, "put_profile", "Replace the user's profile", UserProfile)
async def put_profile(
    request: Request,
    user_id: UserId,
    if_match: IfMatch = None,
    if_none_match: IfNoneMatchWrite = None,
) -> Response:
    save = _store(request).save_profile
    return await _replace(request, user_id, UserProfile, save, if_match, if_none_match)


# -- a user's sessions --------------------------------------------------------------------------


@router.get(
    USER_SESSIONS,
    operation_id="list_sessions",
    summary="A page of the user's sessions, newest first, and the next page's cursor",
    description="Newest first by creation, then session id (VersionedStorage.list_sessions). "
    "Pass next_cursor back as cursor, with the same filters, for the next page; null: the "
    "last page. A user without sessions has an empty page (200, never 404). Expired "
    "sessions are not listed. Not a versioned resource: no ETag.",
    response_model=SessionsOut,
    responses={200: {"description": "The page and the next page's cursor"}, **problems(501)},
    openapi_extra=guarded("read"),
)
async def list_sessions(
    request: Request,
    user_id: UserId,
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE_SIZE, description="Sessions on the page")
    ] = DEFAULT_PAGE_SIZE,
    cursor: Annotated[
        str | None,
        Query(
            min_length=1,
            max_length=MAX_CURSOR_CHARS,
            description="The previous page's next_cursor (none: the first page), with the "
            "same user and filters (else 422)",
        ),
    ] = None,
    stage: Annotated[
        str | None,
        Query(min_length=1, description="Only sessions whose consultation state is at this stage"),
    ] = None,
    updated_since: Annotated[
        Timestamp | None,
        Query(
            description="Only sessions with a message written at or after this time (RFC 3339 "
            "with a UTC offset: Z, or + percent-encoded as %2B)"
        ),
    ] = None,
    with_summaries: Annotated[
        bool,
        Query(description="Each item carries its latest summary's text (summary_text)"),
    ] = False,
) -> Response:
    page = await _store(request).list_sessions(
        user_id,
        limit=limit,
        cursor=cursor,
        stage=stage,
        updated_since=updated_since,
        with_summaries=with_summaries,
    )
    return _json(page)


# -- a user's bundle ----------------------------------------------------------------------------


@router.get(
    USER_EXPORT,
    operation_id="export_user",
    summary="Everything held about the user, as one bundle (JSON lines), streamed",
    description="The bundle VersionedStorage.export_user writes (docs/storage-contract.md, "
    "Export and import): the profile, and every session with its messages, summaries, "
    "state and state history, in plaintext, one JSON record a line, the manifest (counts "
    "and SHA-256 digests) last. Streamed: an error once the stream has begun ends it "
    "without its manifest, which an import refuses. For operators: the admin scope.",
    response_class=StreamingResponse,
    responses={
        200: {"description": "The bundle", "content": {NDJSON: {}}},
        **problems(501),
    },
    openapi_extra=guarded("admin"),
)
async def export_user(request: Request, user_id: UserId) -> StreamingResponse:
    chunks = _store(request).export_user(user_id)
    first = await anext(chunks)  # errors before the first byte are problems, as elsewhere

    async def bundle() -> AsyncIterator[bytes]:
        yield first
        async for chunk in chunks:
            yield chunk

    return StreamingResponse(bundle(), media_type=NDJSON)
