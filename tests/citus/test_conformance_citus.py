"""The storage contract on a distributed database (tests/conformance/contract.py, unchanged):
the fixtures of tests/citus/conftest.py give the suite the Citus cluster's database."""

from __future__ import annotations

import tests.conformance.test_postgres as on_postgres


class TestCitus(on_postgres.TestPostgres):
    pass


class TestCitusEncrypted(on_postgres.TestPostgresEncrypted):
    pass
