"""SQLAlchemy Core tables: the one description of the schema in Python.

Alembic revisions create the schema; the migration tests check that the migrated database
matches these definitions exactly.  Every key of a session-scoped table starts with
``session_id`` so the tables can later be distributed by session (Citus).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    ARRAY,
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Computed,
    Date,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    Interval,
    LargeBinary,
    MetaData,
    Numeric,
    SmallInteger,
    Table,
    Text,
    Uuid,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.schema import SchemaItem

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _now(name: str) -> Column[datetime]:
    """A time column set to the transaction's time by default."""
    return Column(name, DateTime(timezone=True), nullable=False, server_default=text("now()"))


def _count(name: str) -> Column[int]:
    """A count, 0 by default."""
    return Column(name, Integer, nullable=False, server_default=text("0"))


def _texts(name: str) -> Column[list[str]]:
    """A list of texts, empty by default."""
    return Column(name, ARRAY(Text), nullable=False, server_default=text("'{}'"))


def _key_id() -> Column[int]:
    """The data key a row is sealed under (revision 0009), NULL on a plaintext row.
    Checked at commit (0010): a write sealed under a key an erasure destroyed fails."""
    return Column(
        "key_id",
        BigInteger,
        ForeignKey("data_keys.key_id", deferrable=True, initially="DEFERRED"),
        nullable=True,
    )


def _sealed_columns() -> list[SchemaItem]:
    """Encryption at rest (revision 0009): the data key a row is sealed under and the
    AES-256-GCM ciphertext of its private fields; both NULL on a plaintext row."""
    return [_key_id(), Column("sealed", LargeBinary, nullable=True)]


def _sealed_check(table: str) -> tuple[CheckConstraint, Index]:
    """The sealed pair's check, and the index that keeps deleting a data key cheap (0010)."""
    return (
        CheckConstraint("(key_id IS NULL) = (sealed IS NULL)", name="sealed_with_key"),
        Index(f"ix_{table}_key_id", "key_id", postgresql_where=text("key_id IS NOT NULL")),
    )


MAX_SESSION_ID_LENGTH = 255

#: The hour a session expires in (date_bin: PostgreSQL 14 and newer).
EXPIRES_HOUR = "date_bin('1 hour', expires_at, timestamptz '2000-01-01 00:00:00+00')"

sessions = Table(
    "sessions",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("user_id", Text, nullable=True),
    # Bumped by every accepted save; the basis of optimistic concurrency.
    Column("version", BigInteger, nullable=False, server_default=text("0")),
    _count("message_count"),
    # SHA-256 over the concatenated message digests: lets a save recognise "same prefix,
    # new messages appended" without reading the stored messages back.
    # NULL after an append by a process that did not know the previous hash; the next
    # full-overwrite save recomputes it from the stored digests.
    Column("content_hash", LargeBinary, nullable=True),
    _now("created_at"),
    _now("updated_at"),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    # expires_at moves on every write, so indexing it would make every write a non-HOT
    # update (new entries in every index of the row).  Its hour changes once an hour:
    # purge-expired finds expired sessions through this one, then checks expires_at.
    Column(
        "expires_hour",
        DateTime(timezone=True),
        Computed(EXPIRES_HOUR, persisted=True),
        nullable=True,
    ),
    # Kept by every write for analytics, so reports never scan the messages: user messages,
    # and the first and last message's time (the server's time for messages without one).
    _count("turn_count"),
    _now("first_activity_at"),
    _now("last_activity_at"),
    CheckConstraint(
        f"char_length(session_id) BETWEEN 1 AND {MAX_SESSION_ID_LENGTH}", name="session_id_length"
    ),
    CheckConstraint("message_count >= 0", name="message_count_non_negative"),
    # A user's sessions newest first, for the listing's keyset pages (revision 1005); its
    # prefix serves the lookups by user.  On created_at, which no write changes, so the
    # append's update of the row stays HOT (an index on updated_at would not).
    Index(
        "ix_sessions_user_id_created_at",
        "user_id",
        text("created_at DESC"),
        text("session_id DESC"),
    ),
    Index("ix_sessions_first_activity_at", "first_activity_at"),
    # purge-expired walks expired sessions oldest first; most sessions may never expire.
    Index(
        "ix_sessions_expires_hour",
        "expires_hour",
        postgresql_where=text("expires_hour IS NOT NULL"),
    ),
)

# No foreign key to sessions (revision 1001): the deletes remove a session's messages
# themselves and the inserts hold its row, which costs a turn nothing the append doesn't
# already pay (docs/design.md, "What the hot table pays for, per turn").
messages = Table(
    "messages",
    metadata,
    Column("session_id", Text, primary_key=True),
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
    # The tiktoken encoding token_count was made with: a reader counting with another one
    # recounts instead of using it (NULL: no count, or one from before this column).
    Column("token_encoding", Text, nullable=True),
    # Sealed rows keep content '' and metadata NULL; digest is then an HMAC (0009).
    *_sealed_columns(),
    # The nanoseconds below ts's microsecond (Go's time.Time has them; 0021): NULL for none.
    Column("ts_nanos", SmallInteger, nullable=True),
    *_sealed_check("messages"),
    CheckConstraint("seq >= 0", name="seq_non_negative"),
    CheckConstraint(
        "ts_nanos IS NULL OR (ts_nanos BETWEEN 1 AND 999 AND ts IS NOT NULL)",
        name="ts_nanos_below_a_microsecond",
    ),
    CheckConstraint(
        "format_version <> 2 OR role IN ('user', 'assistant', 'system', 'tool')",
        name="role_known",
    ),
    CheckConstraint(
        "metadata IS NULL OR jsonb_typeof(metadata) = 'object'", name="metadata_object"
    ),
)


def _session_key() -> Column[str]:
    return Column(
        "session_id",
        Text,
        ForeignKey("sessions.session_id", ondelete="CASCADE"),
        primary_key=True,
    )


summaries = Table(
    "summaries",
    metadata,
    _session_key(),
    Column("summary_version", Integer, primary_key=True),
    Column("text", Text, nullable=False),
    # Position of the last message the summary covers.
    Column("covers_until", Integer, nullable=False),
    Column("token_count", Integer, nullable=True),
    Column("format_version", SmallInteger, nullable=False),
    _now("created_at"),
    *_sealed_columns(),  # sealed: text is ''
    *_sealed_check("summaries"),
    CheckConstraint("summary_version >= 1", name="summary_version_positive"),
    CheckConstraint("covers_until >= -1", name="covers_until_valid"),
)


def _state_columns() -> list[SchemaItem]:
    """The consultation state's typed columns, plus the whole document.

    The free text (complaint, body parts, symptoms, red flags, duration) is in plaintext
    only on a plaintext row; a sealed row keeps it in its sealed document alone (0018)
    and shows only the counts the per-consultation analytics view reads."""
    return [
        Column("stage", Text, nullable=False),
        Column("chief_complaint", Text, nullable=True),
        _texts("body_parts"),
        _texts("symptoms"),
        _texts("red_flags"),
        Column("pain_level", SmallInteger, nullable=True),
        Column("duration", Text, nullable=True),
        _count("red_flag_count"),
        _count("symptom_count"),
        _count("body_part_count"),
        Column("has_chief_complaint", Boolean, nullable=False, server_default=text("false")),
        Column("has_symptom_duration", Boolean, nullable=False, server_default=text("false")),
        Column("document", JSONB, nullable=False),
        Column("format_version", SmallInteger, nullable=False),
        # sealed: document is JSON null and the free text is NULL / empty
        *_sealed_columns(),
        CheckConstraint(
            "key_id IS NULL OR (chief_complaint IS NULL AND duration IS NULL "
            "AND body_parts = '{}' AND symptoms = '{}' AND red_flags = '{}')",
            name="sealed_state_has_no_free_text",
        ),
    ]


consultation_states = Table(
    "consultation_states",
    metadata,
    _session_key(),
    Column("version", BigInteger, nullable=False),
    *_state_columns(),
    _now("updated_at"),
    *_sealed_check("consultation_states"),
    CheckConstraint("version >= 1", name="version_positive"),
)

# Every accepted state version, for stage transitions and the analytics funnel.
consultation_state_history = Table(
    "consultation_state_history",
    metadata,
    _session_key(),
    Column("version", BigInteger, primary_key=True),
    *_state_columns(),
    _now("created_at"),
    *_sealed_check("consultation_state_history"),
)

# Belongs to the user, not a session: deleting a session leaves it.
user_profiles = Table(
    "user_profiles",
    metadata,
    Column("user_id", Text, primary_key=True),
    Column("version", BigInteger, nullable=False),
    Column("age", SmallInteger, nullable=True),
    Column("gender", Text, nullable=True),
    Column("exercise_habit", Text, nullable=True),
    _texts("known_limitations"),
    Column("document", JSONB, nullable=False),
    Column("format_version", SmallInteger, nullable=False),
    _now("created_at"),
    _now("updated_at"),
    # sealed: document is JSON null and the typed columns are NULL / empty
    *_sealed_columns(),
    *_sealed_check("user_profiles"),
    CheckConstraint(
        f"char_length(user_id) BETWEEN 1 AND {MAX_SESSION_ID_LENGTH}", name="user_id_length"
    ),
    CheckConstraint("version >= 1", name="version_positive"),
)

# -- owned by the owner role, read by no other (revision 0008) -------------------------------

# The roles of this database: role names are cluster-wide, this says which are its own.
ctxstore_roles = Table(
    "ctxstore_roles",
    metadata,
    Column("kind", Text, primary_key=True),
    Column("role_name", Text, nullable=False),
    CheckConstraint("kind IN ('owner', 'app', 'analytics')", name="kind_known"),
)

# The analytics settings, one row: free text shows only for at least min_group_size
# consultations.
ctxstore_analytics_settings = Table(
    "ctxstore_analytics_settings",
    metadata,
    Column("singleton", Boolean, primary_key=True, server_default=text("true")),
    Column("min_group_size", Integer, nullable=False),
    CheckConstraint("singleton", name="one_row"),
    CheckConstraint("min_group_size >= 2", name="min_group_size_at_least_two"),
)

# Free-text counts per UTC day, written by `ctxstore analytics refresh`
# (ctxstore.commands.aggregates, revision 0018): a value with the number of the day's
# consultations whose current state has it, stored only when at least k of them have it
# and at least k don't.
analytics_value_cells = Table(
    "analytics_value_cells",
    metadata,
    Column("kind", Text, primary_key=True),
    Column("day", Date, primary_key=True),
    Column("value", Text, primary_key=True),
    Column("consultations", Integer, nullable=False),
    CheckConstraint("consultations > 0", name="consultations_positive"),
)

# Each refreshed day and what it was computed from, so a refresh redoes only changed days.
analytics_refreshed_days = Table(
    "analytics_refreshed_days",
    metadata,
    Column("day", Date, primary_key=True),
    Column("sessions", Integer, nullable=False),
    Column("fingerprint", Numeric, nullable=False),
    Column("min_group_size", Integer, nullable=False),
    _now("refreshed_at"),
)

# The months `ctxstore analytics refresh` published (revision 1004): each month's
# consultations, its red-flag count (NULL: withheld), the k it was published with and a
# fingerprint of its consultations' states.
analytics_months = Table(
    "analytics_months",
    metadata,
    Column("month", Date, primary_key=True),
    Column("consultations", Integer, nullable=False),
    Column("with_red_flags", Integer),
    Column("min_group_size", Integer, nullable=False),
    # What it was computed from: republished at a new k only from the same consultations.
    Column("fingerprint", Text, nullable=False),
    _now("published_at"),
    CheckConstraint("EXTRACT(day FROM month) = 1", name="first_of_month"),
    CheckConstraint("consultations > 0", name="consultations_positive"),
)

# What a published month shows and withholds of each kind of free text.
analytics_month_kinds = Table(
    "analytics_month_kinds",
    metadata,
    Column(
        "month", Date, ForeignKey("analytics_months.month", ondelete="CASCADE"), primary_key=True
    ),
    Column("kind", Text, primary_key=True),
    Column("shown_values", Integer, nullable=False),
    Column("withheld_values", Integer),
    Column("withheld_consultations", Integer),
)

# A published month's values, each shared by at least k of its consultations and not by
# all but fewer than k.
analytics_month_cells = Table(
    "analytics_month_cells",
    metadata,
    Column("kind", Text, primary_key=True),
    Column(
        "month", Date, ForeignKey("analytics_months.month", ondelete="CASCADE"), primary_key=True
    ),
    Column("value", Text, primary_key=True),
    Column("consultations", Integer, nullable=False),
    CheckConstraint("consultations > 0", name="consultations_positive"),
)

# How long each kind of data is kept (revision 1007), set by the owner with who and when;
# ``ctxstore purge-expired`` removes what is older (commands/expiry.py says what each kind's
# period removes).  No row: that kind is kept until its session expires.
ctxstore_retention_periods = Table(
    "ctxstore_retention_periods",
    metadata,
    Column("data_class", Text, primary_key=True),
    Column("keep_for", Interval, nullable=False),
    Column("set_by", Text, nullable=False),
    _now("set_at"),
    CheckConstraint(
        "data_class = ANY (ARRAY['messages', 'summaries', 'state_history', 'profiles', 'ledger'])",
        name="data_class_known",
    ),
    CheckConstraint("keep_for >= interval '1 day'", name="keep_for_a_day_or_more"),
)

# -- legal holds (revision 1006) ------------------------------------------------------------

# A hold on a user or on one session: what it covers no purge, deletion or erasure removes
# while it is in force (lifted_at NULL).  Placed and lifted by the owner only, with who and
# when; the app role reads them.
legal_holds = Table(
    "legal_holds",
    metadata,
    Column("hold_id", Uuid, primary_key=True, server_default=text("gen_random_uuid()")),
    Column("user_id", Text),
    Column("session_id", Text),
    Column("reason", Text, nullable=False),
    Column("placed_by", Text, nullable=False),
    _now("placed_at"),
    Column("lifted_by", Text),
    Column("lifted_at", DateTime(timezone=True)),
    CheckConstraint("(user_id IS NULL) <> (session_id IS NULL)", name="one_subject"),
    CheckConstraint("char_length(reason) BETWEEN 1 AND 1000", name="reason_given"),
    CheckConstraint("(lifted_at IS NULL) = (lifted_by IS NULL)", name="lifted_by_someone"),
    Index("ix_legal_holds_user_id", "user_id", postgresql_where=text("lifted_at IS NULL")),
    Index("ix_legal_holds_session_id", "session_id", postgresql_where=text("lifted_at IS NULL")),
)

# -- the ledger of contracts (revision 1008) ---------------------------------------------------

# Per session: how many entries and pieces were recorded, and the last entry's digest;
# the user whose erasure erases the pieces.  No foreign key: the ledger outlives the session.
contract_chains = Table(
    "contract_chains",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("user_id", Text, index=True),
    _count("entries"),
    _count("pieces"),
    Column("last_digest", LargeBinary),
    Column("erased_at", DateTime(timezone=True)),
    # The oldest entry kept: a retention purge (revision 1009) removed those before it.
    Column("first_entry", Integer, nullable=False, server_default=text("1")),
)

# A contract's pieces, content-addressed per session (storage/ledger.py): plain or sealed.
contract_pieces = Table(
    "contract_pieces",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("piece_no", Integer, primary_key=True),
    Column("digest", LargeBinary, nullable=False),
    Column("content", Text),
    Column("key_id", BigInteger),
    Column("sealed", LargeBinary),
    CheckConstraint("(key_id IS NULL) = (sealed IS NULL)", name="sealed_with_key"),
    CheckConstraint("content IS NULL OR sealed IS NULL", name="plain_or_sealed"),
    Index("ix_contract_pieces_session_id_digest", "session_id", "digest", unique=True),
    Index("ix_contract_pieces_key_id", "key_id", postgresql_where=text("key_id IS NOT NULL")),
)

# One recorded contract: its provenance, its frame of piece numbers (negative: a comma
# first), and its place in the session's chain.
contract_entries = Table(
    "contract_entries",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("entry_seq", Integer, primary_key=True),
    Column("turn_id", Text, nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("model", Text),
    Column("token_encoding", Text, nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("session_version", BigInteger, nullable=False),
    Column("summary_version", Integer, nullable=False),
    Column("state_version", BigInteger, nullable=False),
    Column("profile_version", BigInteger),
    Column("frame", ARRAY(Integer), nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("prev", LargeBinary, nullable=False),
    Column("digest", LargeBinary, nullable=False),
)

# The caller's response id, attached once to an entry and bound to its digest.
contract_responses = Table(
    "contract_responses",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("entry_seq", Integer, primary_key=True),
    Column("response_id", Text, nullable=False),
    _now("attached_at"),
    Column("digest", LargeBinary, nullable=False),
)

# The HMAC-SHA256 key of the analytics pseudonyms, one row, kept as its two padded forms
# (key XOR ipad, key XOR opad, 64 bytes each) so the views compute HMAC with sha256() alone.
ctxstore_pseudonym_key = Table(
    "ctxstore_pseudonym_key",
    metadata,
    Column("singleton", Boolean, primary_key=True, server_default=text("true")),
    Column("inner_pad", LargeBinary, nullable=False),
    Column("outer_pad", LargeBinary, nullable=False),
    _now("created_at"),
    CheckConstraint("singleton", name="one_row"),
    CheckConstraint(
        "octet_length(inner_pad) = 64 AND octet_length(outer_pad) = 64", name="pads_64_bytes"
    ),
)

# -- the fallback journal's write ids (revision 0020) -----------------------------------------

# Journal write ids recorded in the transaction of the write that applied them, so a replay
# applies only what PostgreSQL has not (storage/replay.py).  No foreign key: the record of
# a delete outlives the session.  Kept a week (purge-expired), erased with their user.


def _applied_writes(name: str, subject: str) -> Table:
    return Table(
        name,
        metadata,
        Column(subject, Text, primary_key=True),
        Column("write_id", Uuid, primary_key=True),
        _now("applied_at"),
        Index(f"ix_{name}_applied_at", "applied_at"),
    )


applied_session_writes = _applied_writes("applied_session_writes", "session_id")
applied_profile_writes = _applied_writes("applied_profile_writes", "user_id")

# -- summaries in the background (revision 0023) ----------------------------------------------

# One job per session whose unsummarized history passed its trigger, leased to one worker
# at a time (ctxstore/summaries).  No foreign key: a job whose session is gone is dropped
# when claimed; an erasure deletes the user's jobs.  last_error: the error's class only.
summary_jobs = Table(
    "summary_jobs",
    metadata,
    Column("session_id", Text, primary_key=True),
    Column("until_seq", Integer, nullable=False),
    Column("state", Text, nullable=False, server_default=text("'queued'")),
    _count("attempts"),
    _now("run_after"),
    Column("lease_token", Uuid, nullable=True),
    Column("lease_until", DateTime(timezone=True), nullable=True),
    _now("enqueued_at"),
    Column("last_error", Text, nullable=True),
    CheckConstraint("state IN ('queued', 'running', 'dead')", name="state"),
    CheckConstraint("(state = 'running') = (lease_token IS NOT NULL)", name="lease"),
    Index("ix_summary_jobs_due", "run_after", postgresql_where=text("state <> 'dead'")),
)

# -- LangGraph checkpoints (revision 0024) -----------------------------------------------------

# A graph's thread is a session (ctxstore.adapters.langgraph): the root graph's messages are
# the session's, a checkpoint records how many it holds (or the archived list that does,
# after a fork rewrote the session); other channel values are versioned blobs.  Every row
# hangs off its session, so deleting it (or erasing its user) deletes them.


graph_checkpoints = Table(
    "graph_checkpoints",
    metadata,
    _session_key(),
    Column("checkpoint_ns", Text, primary_key=True),
    Column("checkpoint_id", Text, primary_key=True),
    Column("parent_checkpoint_id", Text, nullable=True),
    Column("checkpoint_type", Text, nullable=False),
    Column("checkpoint", LargeBinary, nullable=False),
    Column("metadata", JSONB, nullable=False),
    Column("messages_count", Integer, nullable=True),
    Column("messages_archive", Text, nullable=True),
    _now("created_at"),
    CheckConstraint("messages_archive IS NULL OR messages_count IS NOT NULL", name="messages"),
    Index("ix_graph_checkpoints_run_id", text("(metadata ->> 'run_id')")),
)

graph_channel_values = Table(
    "graph_channel_values",
    metadata,
    _session_key(),
    Column("checkpoint_ns", Text, primary_key=True),
    Column("channel", Text, primary_key=True),
    Column("version", Text, primary_key=True),
    Column("value_type", Text, nullable=False),
    Column("value", LargeBinary, nullable=True),
    _key_id(),
)

graph_writes = Table(
    "graph_writes",
    metadata,
    _session_key(),
    Column("checkpoint_ns", Text, primary_key=True),
    Column("checkpoint_id", Text, primary_key=True),
    Column("task_id", Text, primary_key=True),
    Column("idx", Integer, primary_key=True),
    Column("channel", Text, nullable=False),
    Column("value_type", Text, nullable=False),
    Column("value", LargeBinary, nullable=False),
    Column("task_path", Text, nullable=False),
    _key_id(),
)

# -- encryption at rest (revision 0009) -------------------------------------------------------

# Data keys, one current per owner ('u:' + user id, or 's:' + session id for a session
# without a user), stored wrapped by a master key.  Deleting an owner's rows here is
# crypto-shredding: whatever was sealed under them can no longer be opened, backups included
# once the backups holding these rows are gone too.  retired_at: replaced by
# ``rotate-keys --reencrypt``, deleted once no row is sealed under it.
data_keys = Table(
    "data_keys",
    metadata,
    Column("key_id", BigInteger, Identity(always=True), primary_key=True),
    Column("owner", Text, nullable=False),
    Column("master_key_id", Text, nullable=False),
    Column("wrapped", LargeBinary, nullable=False),
    _now("created_at"),
    Column("retired_at", DateTime(timezone=True), nullable=True),
    Index(
        "ix_data_keys_current_owner",
        "owner",
        unique=True,
        postgresql_where=text("retired_at IS NULL"),
    ),
    Index("ix_data_keys_owner", "owner"),
)
