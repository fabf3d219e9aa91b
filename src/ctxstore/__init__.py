"""ctxstore: durable, versioned conversation context for LLM assistants, on PostgreSQL."""

from __future__ import annotations

from ctxstore.context.builder import ContextBuilder
from ctxstore.context.compression import (
    CompressionStrategy,
    ContextWindow,
    SlidingWindow,
    SummarizeOldest,
    TokenBudget,
    extractive_summarizer,
)
from ctxstore.context.manager import ContextManager, RetryPolicy
from ctxstore.contract import (
    CONTEXT_VERSION,
    ContextContract,
    KnowledgeItem,
    contract_json_schema,
    parse_contract,
)
from ctxstore.db.engine import EngineSettings, create_engine
from ctxstore.errors import (
    ConfigurationError,
    ConflictError,
    ContractBudgetError,
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
    TokenizerUnavailableError,
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
from ctxstore.tokens import TokenCounter

__version__ = "0.1.0"

__all__ = [
    "CONTEXT_VERSION",
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
    "EmbeddedServerUnavailableError",
    "EngineSettings",
    "InvalidInputError",
    "InvalidMessageError",
    "InvalidSessionIdError",
    "KnowledgeItem",
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
    "SlidingWindow",
    "StateChange",
    "StorageError",
    "StorageTimeoutError",
    "StorageUnavailableError",
    "SummarizeOldest",
    "Summary",
    "TokenBudget",
    "TokenCounter",
    "TokenizerUnavailableError",
    "UnsupportedFormatError",
    "UserProfile",
    "Versioned",
    "VersionedStorage",
    "contract_json_schema",
    "create_engine",
    "extractive_summarizer",
    "parse_contract",
]
