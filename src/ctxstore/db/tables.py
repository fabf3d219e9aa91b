"""SQLAlchemy Core tables: the one description of the schema in Python.

Alembic revisions create the schema; the migration tests check that the migrated database
matches these definitions exactly.  Every key of a session-scoped table starts with
``session_id`` so the tables can later be distributed by session (Citus).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Integer,
    LargeBinary,
    MetaData,
    SmallInteger,
    Table,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)

MAX_SESSION_ID_LENGTH = 255

sessions = Table(
    "sessions",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("user_id", Text, nullable=True),
    # Bumped by every accepted save; the basis of optimistic concurrency.
    Column("version", BigInteger, nullable=False, server_default=text("0")),
    Column("message_count", Integer, nullable=False, server_default=text("0")),
    # SHA-256 over the concatenated message digests: lets a save recognise "same prefix,
    # new messages appended" without reading the stored messages back.
    Column("content_hash", LargeBinary, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=text("now()")),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    CheckConstraint(
        f"char_length(session_id) BETWEEN 1 AND {MAX_SESSION_ID_LENGTH}", name="session_id_length"
    ),
    CheckConstraint("message_count >= 0", name="message_count_non_negative"),
)

messages = Table(
    "messages",
    metadata,
    Column(
        "session_id",
        Text,
        ForeignKey("sessions.session_id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("seq", Integer, primary_key=True),
    Column("role", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("turn_id", Text, nullable=True),
    Column("ts", DateTime(timezone=True), nullable=True),
    # timestamptz keeps the instant, not the writer's UTC offset; this keeps the offset so
    # a message reads back exactly as written.
    Column("ts_offset", Integer, nullable=True),
    Column("name", Text, nullable=True),
    # NULL means "no metadata", which spares decoding an empty object on every load.
    Column("metadata", JSONB(none_as_null=True), nullable=True),
    # SHA-256 of the message's fields except metadata (see Message.core_digest).
    Column("digest", LargeBinary, nullable=False),
    Column("token_count", Integer, nullable=True),
    Column("format_version", SmallInteger, nullable=False),
    CheckConstraint("seq >= 0", name="seq_non_negative"),
    CheckConstraint(
        "format_version <> 2 OR role IN ('user', 'assistant', 'system', 'tool')",
        name="role_known",
    ),
    CheckConstraint(
        "metadata IS NULL OR jsonb_typeof(metadata) = 'object'", name="metadata_object"
    ),
)
