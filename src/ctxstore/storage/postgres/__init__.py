"""The PostgreSQL backend: store.py (PostgresStorage), sql.py (every statement), rows.py
(models to parameters and rows back), reader.py, rewrite.py, connection.py."""

from __future__ import annotations

from ctxstore.storage.postgres.reader import PostgresSessionReader
from ctxstore.storage.postgres.store import PostgresStorage

__all__ = ["PostgresSessionReader", "PostgresStorage"]
