"""ctxstore: durable, versioned conversation context for LLM assistants, on PostgreSQL.

The library's types and storages are importable from here; every exception other than
the root, :class:`CtxStoreError`, from :mod:`ctxstore.errors`, and the rest from the
module that defines it.  Every name but :class:`CtxStoreError` is imported on first use
(PEP 562): ``import ctxstore`` (which ``ctxstore --version`` and every ``ctxstore.*``
import run first) loads neither pydantic nor tiktoken, and ``from ctxstore import
MemoryStorage, Message`` loads no database driver (SQLAlchemy, asyncpg, redis and
cryptography come with the PostgreSQL and Redis backends, the fallback pair, engine
settings and encryption only).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from ctxstore.errors import CtxStoreError

if TYPE_CHECKING:
    # What the lazy names below resolve to, for type checkers and IDEs.
    from ctxstore.context.builder import ContextBuilder
    from ctxstore.context.compression import SlidingWindow, SummarizeOldest, TokenBudget
    from ctxstore.context.manager import ContextManager
    from ctxstore.contract import ContextContract, KnowledgeItem, parse_contract
    from ctxstore.db.engine import EngineSettings
    from ctxstore.encryption import Encryption, Keyring
    from ctxstore.models import (
        ConsultationState,
        Message,
        Role,
        SessionSnapshot,
        StateChange,
        Summary,
        UserProfile,
        Versioned,
    )
    from ctxstore.storage.base import ContextStorage
    from ctxstore.storage.fallback import FallbackStorage
    from ctxstore.storage.history import History
    from ctxstore.storage.memory import MemoryStorage
    from ctxstore.storage.postgres import PostgresStorage
    from ctxstore.storage.redis import RedisStorage
    from ctxstore.storage.rules import NEW_SESSION, Limits
    from ctxstore.storage.store import Store, VersionedStorage
    from ctxstore.tokens import TokenCounter

__version__ = "1.0.0"

#: Public name -> the module that defines it, imported on first access.  The models
#: import pydantic, the context tiktoken's counter, and the backends SQLAlchemy and
#: asyncpg (or redis, or cryptography): none of which ``ctxstore --version`` or a
#: MemoryStorage user needs all of.
_LAZY = {
    **dict.fromkeys(("ContextBuilder",), "ctxstore.context.builder"),
    **dict.fromkeys(
        ("SlidingWindow", "SummarizeOldest", "TokenBudget"), "ctxstore.context.compression"
    ),
    "ContextManager": "ctxstore.context.manager",
    **dict.fromkeys(("ContextContract", "KnowledgeItem", "parse_contract"), "ctxstore.contract"),
    "EngineSettings": "ctxstore.db.engine",
    **dict.fromkeys(("Encryption", "Keyring"), "ctxstore.encryption"),
    **dict.fromkeys(
        (
            "ConsultationState",
            "Message",
            "Role",
            "SessionSnapshot",
            "StateChange",
            "Summary",
            "UserProfile",
            "Versioned",
        ),
        "ctxstore.models",
    ),
    "ContextStorage": "ctxstore.storage.base",
    "FallbackStorage": "ctxstore.storage.fallback",
    "History": "ctxstore.storage.history",
    "MemoryStorage": "ctxstore.storage.memory",
    "PostgresStorage": "ctxstore.storage.postgres",
    "RedisStorage": "ctxstore.storage.redis",
    **dict.fromkeys(("NEW_SESSION", "Limits"), "ctxstore.storage.rules"),
    **dict.fromkeys(("Store", "VersionedStorage"), "ctxstore.storage.store"),
    "TokenCounter": "ctxstore.tokens",
}

#: Names this package exported before 1.0 -> where they live now, so the AttributeError
#: for one says where to import it from.
_MOVED = {
    **dict.fromkeys(
        (
            "ConfigurationError",
            "ConflictError",
            "ContractBudgetError",
            "ContractVersionError",
            "CorruptDataError",
            "DataError",
            "DataKeyDestroyedError",
            "DatabaseNotFoundError",
            "EmbeddedServerUnavailableError",
            "EncryptionKeyError",
            "InputTooLargeError",
            "InvalidInputError",
            "InvalidMessageError",
            "InvalidSessionIdError",
            "MessageTooLargeError",
            "MigrationError",
            "SchemaMissingError",
            "SessionNotFoundError",
            "SessionOwnerError",
            "StorageError",
            "StorageTimeoutError",
            "StorageUnavailableError",
            "TokenizerUnavailableError",
            "TooManyMessagesError",
            "UnsupportedFormatError",
        ),
        "ctxstore.errors",
    ),
    "CONTEXT_VERSION": "ctxstore.contract",
    "contract_json_schema": "ctxstore.contract",
    "CompressionStrategy": "ctxstore.context.compression",
    "ContextWindow": "ctxstore.context.compression",
    "extractive_summarizer": "ctxstore.context.compression",
    "GO_SERVICE": "ctxstore.formats.layouts",
    "GoLayout": "ctxstore.formats.layouts",
    "SessionHead": "ctxstore.storage.base",
    "SessionReader": "ctxstore.storage.base",
    "StoredMessage": "ctxstore.storage.base",
    "create_engine": "ctxstore.db.engine",
    "KeyProvider": "ctxstore.encryption",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        moved = _MOVED.get(name)
        hint = f": import it from {moved} (`from {moved} import {name}`)" if moved else ""
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}{hint}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "NEW_SESSION",
    "ConsultationState",
    "ContextBuilder",
    "ContextContract",
    "ContextManager",
    "ContextStorage",
    "CtxStoreError",
    "Encryption",
    "EngineSettings",
    "FallbackStorage",
    "History",
    "Keyring",
    "KnowledgeItem",
    "Limits",
    "MemoryStorage",
    "Message",
    "PostgresStorage",
    "RedisStorage",
    "Role",
    "SessionSnapshot",
    "SlidingWindow",
    "StateChange",
    "Store",
    "SummarizeOldest",
    "Summary",
    "TokenBudget",
    "TokenCounter",
    "UserProfile",
    "Versioned",
    "VersionedStorage",
    "parse_contract",
]
