"""Every SQL statement of the PostgreSQL backend: the named queries of queries/*.sql.

Each query is written once, as SQL, in the file of its concern (messages, sessions,
documents, keys, maintenance): ``-- name: load_session --``, a one-line description, the
statement.  They are loaded once, at import, into :class:`Statement` objects, reached
as upper-case attributes of this module (``sql.LOAD_SESSION``); ``:name`` parameters
are passed as keywords.  tests/integration/test_queries.py checks that each one is used,
prepares against a database at head and reads and writes the tables' columns.

The writes that touch several tables (an append: the session row and its messages; a
state and its history; a deletion and the session's own data key) call the versioned SQL
functions revision 0011 creates: the same text on PostgreSQL and on Citus
(docs/citus.md).  Each version check sits in the WHERE clause (or a key constraint) of
the statement that writes, so PostgreSQL enforces it; when a write returns nothing, a
``*_facts`` read only explains why.

Lock order: every write locks the ``sessions`` row before any row of its children
(messages, summaries, consultation states and their history), and the data key its
commit checks last, so no two writers wait for each other in a cycle.  Deleting a
session locks its row, then the cascade locks the children.
"""

from __future__ import annotations

import re
from importlib import resources

from ctxstore.db.tables import consultation_states, messages, user_profiles
from ctxstore.storage.postgres.statement import Statement

#: The files of queries/, one per concern.
FILES = (
    "messages.sql",
    "sessions.sql",
    "documents.sql",
    "keys.sql",
    "maintenance.sql",
    "write_ids.sql",
    "summary_jobs.sql",
    "checkpoints.sql",
    "bundles.sql",
    "holds.sql",
    "retention.sql",
    "ledger.sql",
)

_HEADER = re.compile(r"^-- name: ([a-z][a-z0-9_]*) --\n-- (.+)\n", re.M)


def parse(text: str, source: str) -> dict[str, Statement]:
    """The named queries of one file: each header, its description, then the statement."""
    found: dict[str, Statement] = {}
    headers = list(_HEADER.finditer(text))
    if not headers or text[: headers[0].start()].strip():
        raise ValueError(f"{source}: text before the first '-- name: ... --' header")
    for header, following in zip(headers, [*headers[1:], None], strict=True):
        name = header.group(1)
        body = text[header.end() : following.start() if following else len(text)].strip()
        if not body.endswith(";") or name in found:
            raise ValueError(f"{source}: query {name!r} is repeated or lacks its final ';'")
        found[name] = Statement(name, body.removesuffix(";"), header.group(2))
    return found


def _load() -> dict[str, Statement]:
    queries: dict[str, Statement] = {}
    folder = resources.files(__package__) / "queries"
    for file in FILES:
        for name, statement in parse(folder.joinpath(file).read_text("utf-8"), file).items():
            if name in queries:
                raise ValueError(f"{file}: query {name!r} is named in another file too")
            queries[name] = statement
    return queries


#: Every named query, by name.
QUERIES = _load()


def __getattr__(name: str) -> Statement:
    """``sql.LOAD_SESSION``: the query named ``load_session``."""
    found = QUERIES.get(name.lower()) if name.isupper() else None
    if found is None:
        raise AttributeError(f"no query named {name.lower()!r} in queries/*.sql")
    return found


# -- the column lists the statements write, and their mappers fill (rows.py) ------------------

#: Every column a message write fills (session_id and seq come apart): the arrays
#: ``:new_<column>`` of append, append_if_unchanged and insert_messages.
MESSAGE_WRITE_COLUMNS = tuple(c.name for c in messages.c if c.name not in ("session_id", "seq"))

#: The state's typed columns, the document and its format: rows.state_values fills them.
STATE_COLUMNS = tuple(
    c.name for c in consultation_states.c if c.name not in ("session_id", "version", "updated_at")
)

#: The profile's typed columns, document and format: rows.profile_values fills them.
PROFILE_COLUMNS = tuple(
    c.name
    for c in user_profiles.c
    if c.name not in ("user_id", "version", "created_at", "updated_at")
)

#: The columns insert_summary returns, in order (a record: asyncpg gives a tuple).
SUMMARY_COLUMNS = (
    "summary_version",
    "text",
    "covers_until",
    "token_count",
    "format_version",
    "created_at",
    "key_id",
    "sealed",
)

# -- upgrade-data and rotate-keys: the same statement for each state table ---------------------

STATE_TABLES = ("consultation_states", "consultation_state_history")
LEGACY_STATES = {table: QUERIES[f"legacy_states_{table}"] for table in STATE_TABLES}
REWRITE_STATE = {table: QUERIES[f"rewrite_state_{table}"] for table in STATE_TABLES}
COUNT_LEGACY_STATES = {table: QUERIES[f"count_legacy_states_{table}"] for table in STATE_TABLES}
STATE_STATEMENTS = {
    table: (QUERIES[f"reencrypt_{table}"], QUERIES[f"reseal_{table}"]) for table in STATE_TABLES
}
