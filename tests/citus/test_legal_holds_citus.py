"""Legal holds on a distributed database (tests/integration/test_legal_holds.py, unchanged
but for the app login, which needs the single server's role fixtures): the holds are a
reference table, so every shard checks them beside its rows, and the races hold as on
one server."""

from __future__ import annotations

from tests.integration.test_legal_holds import (
    test_a_held_session_refuses_deletion_and_holds_its_users_erasure,
    test_a_held_user_is_not_erased_and_the_error_names_the_hold,
    test_a_purge_racing_a_hold_and_a_writer_never_removes_what_the_hold_covers,
    test_an_erasure_racing_a_hold_never_removes_what_the_hold_covers,
    test_an_expired_held_session_reads_as_missing_but_stays,
    test_holds_are_listed_with_who_and_when_and_refuse_bad_input,
    test_purge_keeps_held_sessions_and_the_dry_run_counts_what_it_then_removes,
    test_the_hold_command_adds_lists_and_lifts,
)

__all__ = [
    "test_a_held_session_refuses_deletion_and_holds_its_users_erasure",
    "test_a_held_user_is_not_erased_and_the_error_names_the_hold",
    "test_a_purge_racing_a_hold_and_a_writer_never_removes_what_the_hold_covers",
    "test_an_erasure_racing_a_hold_never_removes_what_the_hold_covers",
    "test_an_expired_held_session_reads_as_missing_but_stays",
    "test_holds_are_listed_with_who_and_when_and_refuse_bad_input",
    "test_purge_keeps_held_sessions_and_the_dry_run_counts_what_it_then_removes",
    "test_the_hold_command_adds_lists_and_lifts",
]
