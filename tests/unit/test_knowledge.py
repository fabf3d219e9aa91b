"""StoredList: where PostgresStorage finds the stored messages again, copying neither the
loaded History nor a list extending it; and only PostgresStorage keeps such knowledge."""

from __future__ import annotations

from pathlib import Path

from ctxstore import MemoryStorage, Message
from ctxstore.storage.history import History
from ctxstore.storage.knowledge import StoredList

SRC = Path(__file__).resolve().parents[2] / "src" / "ctxstore"


def msgs(*contents: str) -> list[Message]:
    return [Message(role="user", content=content) for content in contents]


def test_a_plain_list_extending_a_history_keeps_the_history_as_it_is() -> None:
    loaded = History(msgs("a", "b"))
    stored = StoredList.of(loaded)
    first = loaded + msgs("q1", "r1")
    assert stored.starts(first)
    after_first = stored.extended_by(first)
    assert after_first.base is loaded and after_first.tail == tuple(first[2:])
    second = [*first, *msgs("q2")]
    assert after_first.starts(second) and not after_first.starts(loaded)
    after_second = after_first.extended_by(second)
    assert after_second.messages() == second and after_second.held() == 5


def test_an_edit_of_the_history_or_the_new_part_is_not_taken_for_what_is_stored() -> None:
    loaded = History(msgs("a", "b"))
    stored = StoredList.of(loaded).extended_by(loaded + msgs("q"))
    assert stored.starts([*loaded, *msgs("q")])  # equal messages compare equal
    assert not stored.starts([*loaded, *msgs("other")])
    loaded[0] = Message(role="user", content="A")
    assert not stored.starts(loaded + msgs("q"))


def test_a_mostly_new_list_becomes_a_copy_of_its_own() -> None:
    loaded = History(msgs("a"))
    whole = loaded + msgs("b", "c")
    stored = StoredList.of(loaded).extended_by(whole)
    assert stored.edits is None and stored.base is not loaded and stored.messages() == whole
    whole.append(Message(role="user", content="d"))
    assert stored.starts(whole) and stored.held() == 3


def test_only_postgresql_keeps_knowledge_and_no_library_code_pauses_the_collector() -> None:
    assert not hasattr(MemoryStorage(), "knowledge")
    pausing = [path for path in SRC.rglob("*.py") if "gc.disable" in path.read_text()]
    assert pausing == []
