"""The ledger of contracts on a distributed database (tests/integration/test_ledger.py,
unchanged): its tables are distributed beside ``sessions`` and its functions run on the
session's worker, so a contract is recorded, read back and chained on one node."""

from __future__ import annotations

from tests.integration.test_ledger import (
    TAMPERINGS,
    encryption,
    ledger,
    test_an_erasure_makes_the_entries_unreadable_and_the_chains_still_verify,
    test_concurrent_records_of_one_session_make_one_unbroken_chain,
    test_each_tampering_is_found_and_named,
    test_every_turn_of_a_consultation_reads_back_byte_for_byte,
    test_responses_attach_once_and_unknown_turns_read_as_missing,
    test_the_ledger_is_purged_by_its_own_period_and_still_verifies,
)

__all__ = [
    "TAMPERINGS",
    "encryption",
    "ledger",
    "test_an_erasure_makes_the_entries_unreadable_and_the_chains_still_verify",
    "test_concurrent_records_of_one_session_make_one_unbroken_chain",
    "test_each_tampering_is_found_and_named",
    "test_every_turn_of_a_consultation_reads_back_byte_for_byte",
    "test_responses_attach_once_and_unknown_turns_read_as_missing",
    "test_the_ledger_is_purged_by_its_own_period_and_still_verifies",
]
