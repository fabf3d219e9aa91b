"""The storage contract and its backends.

- base.py: the protocols (ContextStorage, SessionReader) and receipts;
- rules.py: every input rule, written once; store.py: VersionedStorage, the public API
  that applies them, each operation declared once with its Route, and Store, which runs
  each backend's hooks;
- memory.py (MemoryStorage), postgres/ (PostgresStorage), redis/ (RedisStorage): the
  backends; knowledge.py: what PostgresStorage last knew of each session; history.py:
  the list ``load`` returns; snapshot.py: a SessionReader over a session in memory;
- fallback.py (FallbackStorage, a router over two Stores), failover.py (which side serves
  a key), journal.py (the writes served while the primary was down), replay.py (the
  journal applied to the primary).
"""
