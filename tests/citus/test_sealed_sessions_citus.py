"""Issue 46 on a distributed database: appends across a rotation and sessions that prove
whose they are (tests/integration's tests, unchanged; the fixtures of
tests/citus/conftest.py give them the Citus cluster's database).  There the append runs
on the session's worker, delegated, and its refusals and key checks with it."""

from __future__ import annotations

from tests.integration import test_rotation_races as races
from tests.integration import test_sealed_ownership as ownership

keyring = races.keyring
writer = races.writer
encryption = ownership.encryption
sealed = ownership.sealed

test_an_append_known_from_before_a_rotation_keeps_the_session_readable = (
    races.test_an_append_known_from_before_a_rotation_keeps_the_session_readable
)
test_an_append_at_a_known_version_across_a_rotation_commits = (
    races.test_an_append_at_a_known_version_across_a_rotation_commits
)
test_a_save_of_a_list_loaded_before_a_rotation_keeps_the_session_readable = (
    races.test_a_save_of_a_list_loaded_before_a_rotation_keeps_the_session_readable
)
test_a_session_moved_to_another_user_is_refused_naming_it = (
    ownership.test_a_session_moved_to_another_user_is_refused_naming_it
)
test_the_rightful_owners_erasure_takes_a_moved_session = (
    ownership.test_the_rightful_owners_erasure_takes_a_moved_session
)
test_a_session_started_afresh_after_expiry_is_sealed_for_its_new_owner = (
    ownership.test_a_session_started_afresh_after_expiry_is_sealed_for_its_new_owner
)
