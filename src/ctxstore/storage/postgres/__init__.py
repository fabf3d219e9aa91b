"""The PostgreSQL backend.

store.py (PostgresStorage), saving.py (the save path: recognising an extension, the
locked save), queries/*.sql (every statement, named) loaded by sql.py into
statement.py's Statement, rows.py (models to parameters, rows back), documents.py
(summaries, states, profiles), keys.py (data keys for encryption at rest), reader.py
(a SessionReader in one snapshot), rewrite.py (writing upgraded rows back), replica.py
(reads on a streaming replica), connection.py (the pool: checkout, time bound, error
translation). The multi-table writes are SQL functions created by revision 0011.
"""

from __future__ import annotations

from ctxstore.storage.postgres.reader import PostgresSessionReader
from ctxstore.storage.postgres.store import PostgresStorage

__all__ = ["PostgresSessionReader", "PostgresStorage"]
