"""ctxstore: durable, versioned conversation context for LLM assistants, on PostgreSQL."""

from __future__ import annotations

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
    StorageError,
    StorageTimeoutError,
    StorageUnavailableError,
    UnsupportedFormatError,
)
from ctxstore.models import Message, Role
from ctxstore.storage.base import ContextStorage, Limits
from ctxstore.storage.memory import MemoryStorage
from ctxstore.storage.postgres import PostgresStorage

__version__ = "0.1.0"

__all__ = [
    "ConfigurationError",
    "ConflictError",
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
    "Role",
    "StorageError",
    "StorageTimeoutError",
    "StorageUnavailableError",
    "UnsupportedFormatError",
    "create_engine",
]
