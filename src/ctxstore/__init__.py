"""ctxstore: durable, versioned conversation context for LLM assistants, on PostgreSQL."""

from __future__ import annotations

from ctxstore.context.manager import ContextManager, RetryPolicy
from ctxstore.db.engine import EngineSettings, create_engine
from ctxstore.errors import (
    ConfigurationError,
    ConflictError,
    ContractVersionError,
    CorruptDataError,
    CtxStoreError,
    DataError,
    EmbeddedServerUnavailableError,
    InvalidInputError,
    InvalidMessageError,
    InvalidSessionIdError,
    MessageTooLargeError,
    MigrationError,
    RetriesExhaustedError,
    SessionNotFoundError,
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
    UnsupportedFormatError,
)
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
from ctxstore.storage.base import NEW_SESSION, ContextStorage, Limits, VersionedStorage
from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.postgres import PostgresStorage

__version__ = "0.1.0"

__all__ = [
    "NEW_SESSION",
    "ConfigurationError",
    "ConflictError",
    "ConsultationState",
    "ContextManager",
    "ContextStorage",
    "ContractVersionError",
    "CorruptDataError",
    "CtxStoreError",
    "DataError",
    "EmbeddedServerUnavailableError",
    "EngineSettings",
    "InvalidInputError",
    "InvalidMessageError",
    "InvalidSessionIdError",
    "Limits",
    "MemoryStorage",
    "Message",
    "MessageTooLargeError",
    "MigrationError",
    "PostgresStorage",
    "RetriesExhaustedError",
    "RetryPolicy",
    "Role",
    "SessionNotFoundError",
    "SessionSnapshot",
    "StateChange",
    "StorageError",
    "StorageTimeoutError",
    "StorageUnavailableError",
    "Summary",
    "UnsupportedFormatError",
    "UserProfile",
    "Versioned",
    "VersionedStorage",
    "create_engine",
]
