"""A user's sessions listed on a distributed database (tests/integration/test_list_sessions.py,
unchanged): the fixtures of tests/citus/conftest.py give the contract the Citus cluster's
database.  Sessions are distributed by session id, so one user's sessions are on every
shard: the coordinator asks each shard for a page (the same ordered index scan, the LIMIT
pushed down) and sorts those shards x page rows, a cost that grows with the shards, not
with the sessions."""

from __future__ import annotations

import tests.integration.test_list_sessions as on_postgres


class TestCitus(on_postgres.TestPostgres):
    pass


class TestCitusEncrypted(on_postgres.TestPostgresEncrypted):
    pass
