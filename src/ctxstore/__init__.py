"""ctxstore: durable, versioned conversation context for LLM assistants, on PostgreSQL.

Everything a user needs is importable from here.  The names that need SQLAlchemy,
asyncpg or redis (the PostgreSQL and Redis backends, the fallback pair, the engine) are
imported on first use (PEP 562), so ``from ctxstore import MemoryStorage, Message``
loads no database driver.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from ctxstore.context.builder import ContextBuilder
from ctxstore.context.compression import (
    CompressionStrategy,
    ContextWindow,
    SlidingWindow,
    SummarizeOldest,
    TokenBudget,
    extractive_summarizer,
)
from ctxstore.context.manager import ContextManager
from ctxstore.contract import (
    CONTEXT_VERSION,
    ContextContract,
    KnowledgeItem,
    contract_json_schema,
    parse_contract,
)
from ctxstore.errors import (
    ConfigurationError,
    ConflictError,
    ContractBudgetError,
    ContractVersionError,
    CorruptDataError,
    CtxStoreError,
    DatabaseNotFoundError,
    DataError,
    DataKeyDestroyedError,
    EmbeddedServerUnavailableError,
    EncryptionKeyError,
    InputTooLargeError,
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    MessageTooLargeError,
    MigrationError,
    SchemaMissingError,
    SessionNotFoundError,
    SessionOwnerError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
    TokenizerUnavailableError,
    TooManyMessagesError,
    UnsupportedFormatError,
)
from ctxstore.formats.layouts import GO_SERVICE, GoLayout
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
from ctxstore.storage.base import (
    ContextStorage,
    SessionHead,
    SessionReader,
    StoredMessage,
    VersionedStorage,
)
from ctxstore.storage.history import History
from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.rules import NEW_SESSION, Limits
from ctxstore.storage.store import Store
from ctxstore.tokens import TokenCounter

if TYPE_CHECKING:
    # What the lazy names below resolve to, for type checkers and IDEs.
    from ctxstore.db.engine import EngineSettings, create_engine
    from ctxstore.encryption import Encryption, KeyProvider, Keyring
    from ctxstore.storage.fallback import FallbackStorage
    from ctxstore.storage.postgres import PostgresStorage
    from ctxstore.storage.redis import RedisStorage

__version__ = "0.1.0"

#: Public name -> the module that defines it, imported on first access: these modules
#: import SQLAlchemy and asyncpg (or redis, or cryptography), which a MemoryStorage user
#: never needs.
_LAZY = {
    "Encryption": "ctxstore.encryption",
    "EngineSettings": "ctxstore.db.engine",
    "FallbackStorage": "ctxstore.storage.fallback",
    "KeyProvider": "ctxstore.encryption",
    "Keyring": "ctxstore.encryption",
    "PostgresStorage": "ctxstore.storage.postgres",
    "RedisStorage": "ctxstore.storage.redis",
    "create_engine": "ctxstore.db.engine",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "CONTEXT_VERSION",
    "GO_SERVICE",
    "NEW_SESSION",
    "CompressionStrategy",
    "ConfigurationError",
    "ConflictError",
    "ConsultationState",
    "ContextBuilder",
    "ContextContract",
    "ContextManager",
    "ContextStorage",
    "ContextWindow",
    "ContractBudgetError",
    "ContractVersionError",
    "CorruptDataError",
    "CtxStoreError",
    "DataError",
    "DataKeyDestroyedError",
    "DatabaseNotFoundError",
    "EmbeddedServerUnavailableError",
    "Encryption",
    "EncryptionKeyError",
    "EngineSettings",
    "FallbackStorage",
    "GoLayout",
    "History",
    "InputTooLargeError",
    "InvalidInputError",
    "InvalidMessageError",
    "InvalidSessionIdError",
    "KeyProvider",
    "Keyring",
    "KnowledgeItem",
    "Limits",
    "MemoryStorage",
    "Message",
    "MessageTooLargeError",
    "MigrationError",
    "PostgresStorage",
    "RedisStorage",
    "Role",
    "SchemaMissingError",
    "SessionHead",
    "SessionNotFoundError",
    "SessionOwnerError",
    "SessionReader",
    "SessionSnapshot",
    "SlidingWindow",
    "StateChange",
    "StorageError",
    "StorageTimeoutError",
    "StorageUnavailableError",
    "Store",
    "StoredMessage",
    "SummarizeOldest",
    "Summary",
    "TokenBudget",
    "TokenCounter",
    "TokenizerUnavailableError",
    "TooManyMessagesError",
    "UnsupportedFormatError",
    "UserProfile",
    "Versioned",
    "VersionedStorage",
    "contract_json_schema",
    "create_engine",
    "extractive_summarizer",
    "parse_contract",
]
