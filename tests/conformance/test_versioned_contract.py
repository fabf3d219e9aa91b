"""Versions, appends, summaries, consultation state, profiles and snapshots: every backend."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ctxstore import (
    ConflictError,
    ConsultationState,
    InvalidInputError,
    Message,
    SessionNotFoundError,
    UserProfile,
)
from ctxstore.contract import EXAMPLE
from ctxstore.storage.base import NEW_SESSION, VersionedStorage


@pytest.fixture(params=["memory", "postgres"])
def backend(request: pytest.FixtureRequest) -> tuple[str, object]:
    """Only the backends that keep whole consultations (not Redis's original layout)."""
    if request.param == "postgres":
        return ("postgres", request.getfixturevalue("database_url"))
    return ("memory", None)


KNEE_STATE: dict[str, Any] = copy.deepcopy(EXAMPLE["context"]["consultation_state"])


def turn(index: int) -> list[Message]:
    return [
        Message(role="user", content=f"问题 {index}", turn_id=f"t{index}"),
        Message(role="assistant", content=f"回答 {index}", turn_id=f"t{index}"),
    ]


async def test_storage_satisfies_the_versioned_protocol(storage: VersionedStorage) -> None:
    assert isinstance(storage, VersionedStorage)


async def test_every_save_returns_the_next_version(storage: VersionedStorage) -> None:
    assert await storage.version("v") == 0
    assert await storage.save("v", turn(0)) == 1
    assert await storage.save("v", turn(0) + turn(1)) == 2
    assert await storage.save("v", []) == 3
    assert await storage.version("v") == 3


async def test_expected_version_zero_means_must_not_exist(storage: VersionedStorage) -> None:
    assert await storage.save("new", turn(0), expected_version=NEW_SESSION) == 1
    with pytest.raises(ConflictError) as caught:
        await storage.save("new", turn(1), expected_version=NEW_SESSION)
    assert caught.value.current_version == 1
    assert caught.value.expected_version == 0
    assert await storage.load("new") == turn(0)


async def test_a_stale_save_raises_conflict_and_changes_nothing(storage: VersionedStorage) -> None:
    await storage.save("s", turn(0))
    assert await storage.save("s", turn(0) + turn(1), expected_version=1) == 2
    with pytest.raises(ConflictError) as caught:
        await storage.save("s", turn(9), expected_version=1)
    assert caught.value.current_version == 2
    assert caught.value.session_id == "s"
    assert await storage.load("s") == turn(0) + turn(1)
    assert await storage.version("s") == 2


async def test_expected_version_of_a_missing_session_conflicts(storage: VersionedStorage) -> None:
    with pytest.raises(ConflictError) as caught:
        await storage.save("missing", turn(0), expected_version=3)
    assert caught.value.current_version == 0
    assert not await storage.exists("missing")


@pytest.mark.parametrize("bad", [-1, 1.5, "1", True])
async def test_bad_expected_versions_are_invalid_input(
    storage: VersionedStorage, bad: object
) -> None:
    with pytest.raises(InvalidInputError):
        await storage.save("s", turn(0), expected_version=bad)  # type: ignore[arg-type]


async def test_append_adds_after_the_stored_messages(storage: VersionedStorage) -> None:
    assert await storage.append("a", turn(0)) == 1  # creates the session
    assert await storage.append("a", turn(1)) == 2
    await storage.save("a", [*turn(0), *turn(1), *turn(2)])
    assert await storage.append("a", turn(3), expected_version=3) == 4
    assert await storage.load("a") == [*turn(0), *turn(1), *turn(2), *turn(3)]
    with pytest.raises(ConflictError) as caught:
        await storage.append("a", turn(4), expected_version=3)
    assert caught.value.current_version == 4
    with pytest.raises(ConflictError):
        await storage.append("a", turn(4), expected_version=NEW_SESSION)
    assert await storage.append("b", turn(0), expected_version=NEW_SESSION) == 1
    assert len(await storage.load("a")) == 8


async def test_append_rejects_bad_messages_without_writing(storage: VersionedStorage) -> None:
    await storage.append("a", turn(0))
    with pytest.raises(InvalidInputError):
        await storage.append("a", [*turn(1), {"role": "user", "content": "\x00"}])
    assert await storage.load("a") == turn(0)
    assert await storage.version("a") == 1


async def test_save_after_appends_is_still_a_full_overwrite(storage: VersionedStorage) -> None:
    await storage.append("mix", turn(0))
    await storage.append("mix", turn(1))
    await storage.save("mix", [turn(0)[0], *turn(5)])
    assert await storage.load("mix") == [turn(0)[0], *turn(5)]
    await storage.append("mix", turn(6))
    assert await storage.load("mix") == [turn(0)[0], *turn(5), *turn(6)]


async def test_summaries_are_versioned(storage: VersionedStorage) -> None:
    await storage.save("s", [*turn(0), *turn(1)])
    assert await storage.load_summary("s") is None
    first = await storage.save_summary("s", "膝盖下坠感一周", covers_until=1, token_count=9)
    assert (first.summary_version, first.covers_until, first.token_count) == (1, 1, 9)
    second = await storage.save_summary("s", "更新的总结", covers_until=3, expected_version=1)
    assert second.summary_version == 2
    assert second.created_at >= first.created_at
    assert await storage.load_summary("s") == second
    assert await storage.load_summary("s", 1) == first
    assert await storage.load_summary("s", 7) is None
    with pytest.raises(ConflictError) as caught:
        await storage.save_summary("s", "stale", covers_until=3, expected_version=1)
    assert caught.value.current_version == 2


async def test_summary_preconditions(storage: VersionedStorage) -> None:
    with pytest.raises(SessionNotFoundError):
        await storage.save_summary("nowhere", "text", covers_until=0)
    await storage.save("s", turn(0))
    with pytest.raises(InvalidInputError):
        await storage.save_summary("s", "covers a message that does not exist", covers_until=2)
    with pytest.raises(InvalidInputError):
        await storage.save_summary("s", "bad \x00 text", covers_until=0)
    assert await storage.load_summary("s") is None


async def test_state_is_versioned_with_history(storage: VersionedStorage) -> None:
    await storage.save("c", turn(0))
    assert await storage.load_state("c") is None
    assert await storage.save_state("c", KNEE_STATE) == 1
    advanced = {**KNEE_STATE, "stage": "assessing", "pain_level": 4, "swelling": False}
    assert await storage.save_state("c", ConsultationState(**advanced), expected_version=1) == 2
    current = await storage.load_state("c")
    assert current is not None
    assert current.version == 2
    assert current.value == ConsultationState(**advanced)
    history = await storage.state_history("c")
    assert [(change.version, change.state.stage) for change in history] == [
        (1, "collecting_details"),
        (2, "assessing"),
    ]
    assert history[0].created_at <= history[1].created_at


async def test_state_conflicts_and_preconditions(storage: VersionedStorage) -> None:
    with pytest.raises(SessionNotFoundError):
        await storage.save_state("nowhere", KNEE_STATE)
    await storage.save("c", [])
    with pytest.raises(ConflictError):
        await storage.save_state("c", KNEE_STATE, expected_version=1)
    assert await storage.save_state("c", KNEE_STATE, expected_version=NEW_SESSION) == 1
    with pytest.raises(ConflictError) as caught:
        await storage.save_state("c", KNEE_STATE, expected_version=NEW_SESSION)
    assert caught.value.current_version == 1
    assert len(await storage.state_history("c")) == 1


@pytest.mark.parametrize(
    "bad",
    [
        {"chief_complaint": "no stage"},
        {**KNEE_STATE, "pain_level": 11},
        {**KNEE_STATE, "body_parts": "膝盖"},
        {**KNEE_STATE, "symptoms": ["a\x00b"]},
        {**KNEE_STATE, "extra": {"nested": ["\ud800"]}},
    ],
    ids=["no-stage", "pain-11", "not-a-list", "NUL", "surrogate-in-unknown-field"],
)
async def test_invalid_state_is_rejected(storage: VersionedStorage, bad: dict[str, Any]) -> None:
    await storage.save("c", [])
    await storage.save_state("c", KNEE_STATE)
    with pytest.raises(InvalidInputError):
        await storage.save_state("c", bad)
    current = await storage.load_state("c")
    assert current is not None and current.version == 1


async def test_unknown_state_fields_are_kept(storage: VersionedStorage) -> None:
    await storage.save("c", [])
    await storage.save_state("c", {**KNEE_STATE, "triage_score": {"v": 2, "by": "model-x"}})
    current = await storage.load_state("c")
    assert current is not None
    assert current.value.document()["triage_score"] == {"v": 2, "by": "model-x"}


async def test_profiles_are_versioned_and_outlive_sessions(storage: VersionedStorage) -> None:
    profile = {"age": 34, "gender": "female", "exercise_habit": "跑步", "known_limitations": []}
    assert await storage.load_profile("u1") is None
    assert await storage.save_profile("u1", profile) == 1
    assert (
        await storage.save_profile("u1", UserProfile(**{**profile, "age": 35}), expected_version=1)
        == 2
    )
    with pytest.raises(ConflictError):
        await storage.save_profile("u1", profile, expected_version=1)
    await storage.save("s", turn(0), user_id="u1")
    await storage.delete("s")
    stored = await storage.load_profile("u1")
    assert stored is not None
    assert (stored.version, stored.value.age) == (2, 35)
    with pytest.raises(InvalidInputError):
        await storage.save_profile("u1", {"age": -3})


async def test_delete_removes_summaries_state_and_history(storage: VersionedStorage) -> None:
    await storage.save("d", turn(0), user_id="u")
    await storage.save_summary("d", "summary", covers_until=1)
    await storage.save_state("d", KNEE_STATE)
    await storage.delete("d")
    assert await storage.load_summary("d") is None
    assert await storage.load_state("d") is None
    assert await storage.state_history("d") == []
    await storage.save("d", [])
    assert await storage.load_summary("d") is None
    assert await storage.load_state("d") is None
    snapshot = await storage.snapshot("d")
    assert (snapshot.version, snapshot.user_id, snapshot.state_version) == (1, None, 0)


async def test_snapshot_returns_everything_with_versions(storage: VersionedStorage) -> None:
    missing = await storage.snapshot("none")
    assert (missing.exists, missing.version, missing.messages, missing.summary_version) == (
        False,
        0,
        [],
        0,
    )
    await storage.save_profile("u9", {"age": 50, "known_limitations": ["半月板损伤"]})
    await storage.save("full", [*turn(0), *turn(1)], user_id="u9")
    await storage.save_summary("full", "两轮对话的总结", covers_until=1)
    await storage.save_state("full", KNEE_STATE)
    snapshot = await storage.snapshot("full")
    assert snapshot.exists
    assert snapshot.version == 1
    assert snapshot.user_id == "u9"
    assert snapshot.messages == [*turn(0), *turn(1)]
    assert snapshot.summary is not None and snapshot.summary.text == "两轮对话的总结"
    assert snapshot.summary_version == 1
    assert snapshot.state == ConsultationState(**KNEE_STATE)
    assert snapshot.state_version == 1
    assert snapshot.profile is not None and snapshot.profile.known_limitations == ["半月板损伤"]
    assert snapshot.profile_version == 1
