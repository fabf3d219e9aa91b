"""Where PostgreSQL driver and network errors become ctxstore errors.

One mapping, of asyncpg's errors: by SQLSTATE for everything the server reports, by
asyncpg's base classes for its few client-side errors (no SQLSTATE).  Errors raised
through SQLAlchemy (migrations, reports, admin code) are first unwrapped to the asyncpg
error under them (:func:`driver_error`), so they map exactly as on the storage's path.

(Redis errors are translated by storage/redis/errors.py, which knows redis-py's classes.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Final

import asyncpg
from sqlalchemy import exc as sa_exc

from ctxstore.db.compat import code_revisions
from ctxstore.db.pool import PoolClosedError
from ctxstore.errors import (
    ConfigurationError,
    ConflictError,
    CtxStoreError,
    DatabaseNotFoundError,
    DataKeyDestroyedError,
    InvalidInputError,
    LegalHoldError,
    SchemaMissingError,
    SessionNotFoundError,
    SessionOwnerError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
)
from ctxstore.redaction import redact

# SQLSTATE classes and codes (PostgreSQL appendix A).
_UNAVAILABLE_CLASSES = ("08", "53", "57P", "58")
#: Why the server is unavailable, where its SQLSTATE says: what an operator acts on.
_UNAVAILABLE_REASONS = {
    "53100": "the database server's disk is full: free space on it (nothing was written)",
    "53200": "the database server is out of memory",
    "53300": "the database server has no free connection slot (max_connections)",
    "57P01": "the database server is shutting down (administrator command)",
    "57P02": "the database server crashed and is restarting (crash recovery)",
    "57P03": "the database server is starting up or in recovery and takes no connection yet",
}
_QUERY_CANCELED = "57014"  # statement_timeout, or a cancel
_LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout
_TIMEOUT_CODES = {_QUERY_CANCELED, _LOCK_NOT_AVAILABLE, "25P03"}  # and idle_in_transaction
_INVALID_INPUT_CODES = {
    "22000",  # data_exception: asyncpg's own, for a parameter it cannot encode
    "22008",  # datetime_field_overflow
    "2201W",  # invalid_row_count_in_limit_clause
    "22021",  # character_not_in_repertoire
    "22P05",  # untranslatable_character (\u0000 in jsonb)
    "22001",  # string_data_right_truncation
    "22003",  # numeric_value_out_of_range
    "54000",  # program_limit_exceeded (e.g. a value too large to index)
}
# A table, column or SQL function this code uses is not there: the schema is missing or
# behind (the writes call revision 0011's functions).
_SCHEMA_CODES = {"42P01", "42703", "42883"}  # undefined_table, _column, _function
_MISSING_DATABASE = "3D000"  # invalid_catalog_name
_FOREIGN_KEY_VIOLATION = "23503"
_PROTOCOL_VIOLATION = "08P01"  # PgBouncer: "unsupported startup parameter: ..."
_NO_PRIVILEGE = "42501"  # insufficient_privilege: "permission denied for table sessions"
# A named prepared statement another pooled session holds, or lacks: the URL points at a
# transaction pooler and doesn't say so.
_PREPARED_STATEMENT_CODES = frozenset({"26000", "42P05"})
#: The privilege each kind of object needs, as PostgreSQL's "permission denied for <kind>".
_PRIVILEGE_OF_KIND = {
    "function": "EXECUTE",
    "procedure": "EXECUTE",
    "schema": "USAGE",
    "sequence": "USAGE",
    "table": "SELECT, INSERT, UPDATE or DELETE (as the statement needs)",
    "view": "SELECT",
    "database": "CONNECT",
}
# fk_<table>_key_id_data_keys (revision 0010): a sealed row whose data key is gone.
_SEALED_KEY_FK = "_key_id_data_keys"
_LOGIN_CLASS = "28"
# Raised by the writes of revision 0015: the session belongs to another user.
_SESSION_OWNER = "CX001"  # invalid_authorization_specification, invalid_password
# Raised by the deletions of revision 1006: what they would delete is under a legal hold.
_LEGAL_HOLD = "CX002"
# Raised by the ledger's record (revision 1008): the session's ledger was erased.
_LEDGER_ERASED = "CX003"

#: ``current`` of :func:`schema_missing` when the database's revision was not read.
UNREAD: Final = "unread"


#: asyncpg's client-side errors (no SQLSTATE): a connection closed, broken or misused.
_CLIENT_CONNECTION_ERRORS = asyncpg.InterfaceError | asyncpg.InternalClientError | PoolClosedError
#: asyncpg's errors: the server's (each with a SQLSTATE) and the client's own.
_DRIVER_ERRORS = asyncpg.PostgresError | _CLIENT_CONNECTION_ERRORS


def driver_error(error: BaseException) -> BaseException:
    """The asyncpg (or network) error under SQLAlchemy's wrappers; else ``error`` itself.

    SQLAlchemy's asyncpg dialect raises its own DBAPI error whose ``orig`` is the
    dialect's adapted error, caused by asyncpg's."""
    candidate: BaseException | None = error
    for _ in range(4):
        if candidate is None:
            break
        if isinstance(candidate, _DRIVER_ERRORS | OSError | TimeoutError):
            return candidate
        orig = getattr(candidate, "orig", None)
        candidate = orig if isinstance(orig, BaseException) else candidate.__cause__
    return error


def _sqlstate(error: BaseException) -> str | None:
    code = getattr(driver_error(error), "sqlstate", None)
    return code if isinstance(code, str) else None


def _constraint(error: BaseException) -> str | None:
    """The name of the constraint the server reported."""
    name = getattr(driver_error(error), "constraint_name", None)
    return name if isinstance(name, str) else None


def _sealed_key_gone(error: BaseException) -> bool:
    # the message names it too: Citus relays a worker's error without the constraint field
    named = _constraint(error) or _server_message(error) or ""
    return _SEALED_KEY_FK in named


def _server_message(error: BaseException) -> str | None:
    """The driver's own message, without SQLAlchemy's statement text.

    Used only for errors whose message names objects, never values: a missing table,
    column or database, a refused login.  Redacted all the same: a client-side error
    (ClientConfigurationError) may quote the connection options.
    """
    found = driver_error(error)
    if isinstance(found, _DRIVER_ERRORS):
        return redact(str(found)) or None
    return None


@cache
def _head_revision() -> str | None:
    """The newest migration this code ships, best-effort (None when it can't be read)."""
    try:
        return code_revisions().head
    except Exception:  # the error being translated matters more than this detail
        return None


def schema_missing(
    action: str, reason: str, *, sqlstate: str | None = None, current: str | None = UNREAD
) -> SchemaMissingError:
    """The error for a database whose schema is missing or older than this code.

    ``current``: the database's revision (None: no schema at all), or UNREAD when it was
    not read (translation happens where no query can be made; the CLI reads it).
    """
    head = _head_revision()
    needs = f"this ctxstore needs revision {head}" if head else "this ctxstore needs the head"
    fix = "run `ctxstore db upgrade` with the same database URL to apply the migrations"
    if current == UNREAD:
        state = f"{needs}; run `ctxstore db current` to see the database's revision, then {fix}"
    elif current is None:
        state = f"the database has no ctxstore schema (no revision); {needs}: {fix}"
    elif current == head:
        fix = (
            "the schema was changed by hand, or the URL's role or search_path points at "
            "another schema"
        )
        state = f"the database reports revision {current}, the head, yet lacks it: {fix}"
    else:
        state = f"the database is at revision {current}; {needs}: {fix}"
    return SchemaMissingError(
        f"{action} failed: the database schema is missing or behind ({reason}); {state}",
        current_revision=None if current == UNREAD else current,
        head_revision=head,
        revision_read=current != UNREAD,
        action=action,
        reason=reason,
        sqlstate=sqlstate,
    )


@dataclass(frozen=True, slots=True)
class _Failure:
    """An error being translated, with what the rules read of it."""

    error: BaseException  # as raised (perhaps SQLAlchemy's wrapper)
    found: BaseException  # the driver or network error under it
    code: str | None  # its SQLSTATE
    action: str
    role: str | None

    @property
    def detail(self) -> str:
        detail = f"{self.action} failed: {type(self.found).__name__}"
        return f"{detail} (SQLSTATE {self.code})" if self.code else detail

    @property
    def said(self) -> str:
        """The server's message, or ''."""
        return _server_message(self.error) or ""

    def misconfigured(self, why: str) -> ConfigurationError:
        return ConfigurationError(f"{self.action} failed: {why}", sqlstate=self.code)


def _missing_schema(failure: _Failure) -> CtxStoreError:
    # e.g. relation "sessions" does not exist (its first line: not the server's hint)
    named = failure.said.split("\n", 1)[0]
    code = failure.code
    reason = f"{named}, SQLSTATE {code}" if named else f"SQLSTATE {code}"
    return schema_missing(failure.action, reason, sqlstate=code)


def _missing_database(failure: _Failure) -> DatabaseNotFoundError:
    found = re.search(r'database "(.*)" does not exist', failure.said)
    name = found.group(1) if found else None
    which = f"database {name!r}" if name is not None else "the database named in the URL"
    return DatabaseNotFoundError(
        f"{failure.action} failed: {which} does not exist on the server (SQLSTATE "
        f"{failure.code}); check the database name in the URL, or create it (createdb) and "
        "run `ctxstore db upgrade`",
        database=name,
    )


def _startup_parameter_refused(failure: _Failure) -> CtxStoreError | None:
    refused = failure.said
    if "unsupported startup parameter" not in refused:
        return None
    return failure.misconfigured(
        f"the server refused a startup setting ({refused}): the URL points at a connection "
        "pooler such as PgBouncer; add ?pooling=transaction to the URL when it pools "
        "transactions (docs/production.md)"
    )


def _not_granted(failure: _Failure) -> ConfigurationError:
    """A permission error naming the role, the object and the privilege to grant."""
    said = (failure.said or "permission denied").split("\n", 1)[0]
    found = re.search(r"permission denied for (\w+) (\S+)", said)
    kind, name = (found.group(1), found.group(2)) if found else ("object", "(unnamed)")
    privilege = _PRIVILEGE_OF_KIND.get(kind, "the privilege the statement needs")
    role = failure.role
    who = f"role {role!r}" if role else "the URL's role"
    return ConfigurationError(
        f"{failure.action} failed: {said} (SQLSTATE {_NO_PRIVILEGE}): {who} lacks {privilege} "
        f"on {kind} {name}. Run the service as a member of ctxstore's app role, which has "
        "every privilege it needs: `ctxstore db roles` prints the role to grant "
        f"(GRANT <app role> TO {role or '<login>'})",
        sqlstate=_NO_PRIVILEGE,
        role=role,
        object=f"{kind} {name}",
        privilege=privilege,
    )


def _transaction_pooler(failure: _Failure) -> CtxStoreError | None:
    said = failure.said
    if "prepared statement" not in said:
        return None
    return failure.misconfigured(
        f"{said} (SQLSTATE {failure.code}): the URL points at a connection pooler in "
        "transaction mode, which hands each transaction another server session; add "
        "?pooling=transaction to the URL (docs/production.md)"
    )


def _data_key_destroyed(failure: _Failure) -> CtxStoreError | None:
    if not _sealed_key_gone(failure.error):
        return None
    return DataKeyDestroyedError(
        f"{failure.action}: a data key this write was sealed under was destroyed (its user "
        "was erased) before the write committed; nothing of it was kept",
        sqlstate=failure.code,
    )


def _other_owner(failure: _Failure) -> CtxStoreError:
    refused = failure.said or "the session belongs to another user"
    return SessionOwnerError(
        f"{failure.action}: {refused}; nothing was written (a session keeps the user it was "
        "first written for)"
    )


def _held(failure: _Failure) -> CtxStoreError:
    held = failure.said or "under a legal hold"
    return LegalHoldError(f"{failure.action}: {held}; nothing was deleted")


def _ledger_erased(failure: _Failure) -> CtxStoreError:
    erased = failure.said or "the session's ledger was erased"
    return DataKeyDestroyedError(f"{failure.action}: {erased} with its user; nothing recorded")


def _lock_not_granted(failure: _Failure) -> CtxStoreError:
    return StorageTimeoutError(
        f"{failure.action}: a lock was not granted within lock_timeout (another transaction "
        "holds it)",
        sqlstate=failure.code,
    )


def _statement_timeout(failure: _Failure) -> CtxStoreError:
    return StorageTimeoutError(
        f"{failure.action}: cancelled by statement_timeout", sqlstate=failure.code
    )


_Translate = Callable[[_Failure], CtxStoreError | None]

#: The SQLSTATEs with an error of their own; a None from one falls to the general rules.
_BY_SQLSTATE: dict[str, _Translate] = {
    **dict.fromkeys(_SCHEMA_CODES, _missing_schema),
    _MISSING_DATABASE: _missing_database,
    _PROTOCOL_VIOLATION: _startup_parameter_refused,
    _NO_PRIVILEGE: _not_granted,
    **dict.fromkeys(_PREPARED_STATEMENT_CODES, _transaction_pooler),
    _FOREIGN_KEY_VIOLATION: _data_key_destroyed,
    _SESSION_OWNER: _other_owner,
    _LEGAL_HOLD: _held,
    _LEDGER_ERASED: _ledger_erased,
    _LOCK_NOT_AVAILABLE: _lock_not_granted,
    _QUERY_CANCELED: _statement_timeout,
}


def _login_refused(failure: _Failure) -> CtxStoreError | None:
    if failure.code is None or not failure.code.startswith(_LOGIN_CLASS):
        return None
    refused = failure.said or "login refused"
    return failure.misconfigured(
        f"the server refused the login ({refused}; SQLSTATE {failure.code}); check the user "
        "and password in the database URL"
    )


def _timed_out(failure: _Failure) -> CtxStoreError | None:
    if failure.code in _TIMEOUT_CODES or isinstance(failure.found, TimeoutError):
        return StorageTimeoutError(f"{failure.action} timed out", sqlstate=failure.code)
    return None


def _value_refused(failure: _Failure) -> CtxStoreError | None:
    if failure.code in _INVALID_INPUT_CODES:
        return InvalidInputError(
            f"{failure.action}: the database rejected a value", sqlstate=failure.code
        )
    return None


def _server_unavailable(failure: _Failure) -> CtxStoreError | None:
    if failure.code is None or not failure.code.startswith(_UNAVAILABLE_CLASSES):
        return None
    why = _UNAVAILABLE_REASONS.get(failure.code)
    detail = failure.detail
    return StorageUnavailableError(f"{detail}: {why}" if why else detail, sqlstate=failure.code)


def _network_refused(failure: _Failure) -> CtxStoreError | None:
    found = failure.found
    if isinstance(found, ConnectionRefusedError):
        return StorageUnavailableError(
            f"{failure.detail}: {redact(str(found))} (is PostgreSQL running at the URL's host "
            "and port? A server restarting after a crash, a full disk for its WAL say, "
            "refuses connections until its recovery ends: its log says why)"
        )
    if isinstance(found, OSError):
        # e.g. "Connect call failed ('127.0.0.1', 5433)": the address, redacted all the same.
        return StorageUnavailableError(
            f"{failure.detail}: {redact(str(found))} (is PostgreSQL running at the URL's host "
            "and port?)"
        )
    return None


def _client_side(failure: _Failure) -> CtxStoreError | None:
    found = failure.found
    if isinstance(found, asyncpg.ClientConfigurationError):
        return ConfigurationError(f"{failure.detail}: {_server_message(found)}")
    # a connection closed or broken (e.g. "connection is closed"), or an SQLAlchemy pool's
    # own (admin engines): no connection within pool_timeout
    if isinstance(
        found, _CLIENT_CONNECTION_ERRORS | sa_exc.TimeoutError | sa_exc.DisconnectionError
    ):
        return StorageUnavailableError(failure.detail)
    return None


#: After the SQLSTATE's own: by SQLSTATE class, then by the driver's or network's error.
_GENERAL_RULES: tuple[_Translate, ...] = (
    _login_refused,
    _timed_out,
    _value_refused,
    _server_unavailable,
    _network_refused,
    _client_side,
)


def reading_revision(url: object) -> str:
    """The action of reading a database's schema revision, as its errors name it: the
    words of `ctxstore db current` and of the service's readiness check, for one URL
    alike (its password masked)."""
    return f"reading the schema revision of {redact(url)}"


def translate_db_error(
    error: BaseException, action: str, *, role: str | None = None
) -> CtxStoreError:
    """Map a driver (or SQLAlchemy-wrapped driver) or network error to the ctxstore
    hierarchy (``role``: the URL's user, named by a permission error)."""
    if isinstance(error, CtxStoreError):
        return error
    failure = _Failure(error, driver_error(error), _sqlstate(error), action, role)
    own = _BY_SQLSTATE.get(failure.code or "")
    for rule in _GENERAL_RULES if own is None else (own, *_GENERAL_RULES):
        translated = rule(failure)
        if translated is not None:
            return translated
    return StorageError(failure.detail, sqlstate=failure.code)


@contextmanager
def translated(
    action: str, *, conflict_on_duplicate: bool = False, role: str | None = None
) -> Iterator[None]:
    """Re-raise anything but a ctxstore error as one, keeping the original as the cause
    (see ``translation``)."""
    try:
        yield
    except CtxStoreError:
        raise
    except Exception as error:
        found = translation(error, action, conflict_on_duplicate=conflict_on_duplicate, role=role)
        if found is None:
            raise
        raise found from error


def translation(
    error: Exception, action: str, *, conflict_on_duplicate: bool = False, role: str | None = None
) -> CtxStoreError | None:
    """The ctxstore error a driver, SQLAlchemy, OS or timeout error raised by ``action``
    is, or None for anything else (a bug: re-raised as it is).

    ``conflict_on_duplicate``: for writes whose version is a key, a unique violation means
    a concurrent writer took that version (ConflictError), and a foreign-key violation
    means the session was deleted meanwhile (SessionNotFoundError).
    """
    # EmulatedDBAPIException: what the asyncpg dialect raises where SQLAlchemy does not
    # wrap it, e.g. a connection taken from an engine's pool failing to connect.
    if isinstance(error, CtxStoreError) or not isinstance(
        error,
        _DRIVER_ERRORS
        | sa_exc.SQLAlchemyError
        | sa_exc.EmulatedDBAPIException
        | OSError
        | TimeoutError,
    ):
        return None
    code = _sqlstate(error)
    if conflict_on_duplicate and code == "23505":
        return ConflictError(f"{action}: a concurrent writer stored that version")
    if conflict_on_duplicate and code == "23503" and not _sealed_key_gone(error):
        return SessionNotFoundError(f"{action}: the session was deleted")
    return translate_db_error(error, action, role=role)
