"""The ledger of Context Contracts on PostgreSQL (revision 1008): what each recorded call
received comes back byte for byte after anything later, every tampering is found and
named, the app role can only add and read, and an erasure leaves chains that verify."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import AsyncIterator
from datetime import timedelta

import asyncpg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import URL

from ctxstore import Message, PostgresStorage
from ctxstore.commands.expiry import purge_store
from ctxstore.commands.holds import place_hold
from ctxstore.commands.ledger import verify_ledger
from ctxstore.commands.retention import set_period
from ctxstore.context.builder import ContextBuilder
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import (
    ConflictError,
    DataKeyDestroyedError,
    InvalidInputError,
)
from ctxstore.storage.ledger import ZERO_DIGEST, cut, join, link_digest, plain_digest
from tests.integration.ledger_consultation import consult
from tests.integration.test_erasure import app_login, cli  # noqa: F401 - a fixture

pytestmark = pytest.mark.postgres

TURN = [Message(role="user", content="我膝盖疼了三天", turn_id="t0")]


@pytest.fixture
def encryption() -> Encryption:
    return Encryption(Keyring({"k1": os.urandom(32)}))


async def sql(url: URL, query: str, *arguments: object) -> list[asyncpg.Record]:
    connection = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(False))
    try:
        return list(await connection.fetch(query, *arguments))
    finally:
        await connection.close()


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
async def test_every_turn_of_a_consultation_reads_back_byte_for_byte(
    database_url: URL, encryption: Encryption, sealed: bool
) -> None:
    async with PostgresStorage.from_url(
        database_url, encryption=encryption if sealed else None
    ) as storage:
        recorded = await consult(storage, "consult-1", "patient-1")
        for turn in recorded:  # read after every later save, summary and state change
            found = await storage.read_contract("consult-1", turn.turn_id)
            assert found is not None
            assert found.text == turn.text
            assert found.text.encode() == turn.text.encode()
        entries = await storage.list_contracts("consult-1")
        report = await verify_ledger(storage)
    assert [entry.provenance.turn_id for entry in entries] == [t.turn_id for t in recorded]
    assert [entry.entry_seq for entry in entries] == list(range(1, 101))
    summaries = {entry.provenance.summary_version for entry in entries}
    states = {entry.provenance.state_version for entry in entries}
    assert summaries == {0, 1, 2, 3, 4, 5} and len(states) > 10
    assert report.intact and report.entries == 100, report.findings
    stored = await sql(database_url, "SELECT key_id IS NOT NULL AS sealed FROM contract_pieces")
    assert {row["sealed"] for row in stored} == {sealed}
    if sealed:  # no word of a sealed consultation is stored in the clear
        contents = await sql(database_url, "SELECT count(content) FROM contract_pieces")
        assert contents[0][0] == 0


_AWKWARD = st.sampled_from(
    ['\n,"meta":{', ',"user_profile":', "\u2028\u2029", '",\\"', "\n]\n,{", "😀𝄞", "", "\t\r"]
)
_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40
)


@given(texts=st.lists(st.one_of(_AWKWARD, _TEXT), min_size=1, max_size=6))
@settings(max_examples=300, deadline=None)
def test_any_text_cut_into_pieces_joins_back_exactly(texts: list[str]) -> None:
    text = "".join(texts)
    pieces = cut(text, plain_digest)
    numbers = {digest: n for n, digest in enumerate(pieces.pieces, start=1)}
    frame = [-numbers[d] if comma else numbers[d] for comma, d in pieces.frame]
    assert join(frame, {numbers[d]: t for d, t in pieces.pieces.items()}) == text


@given(texts=st.lists(st.one_of(_AWKWARD, _TEXT.filter(bool)), min_size=1, max_size=4))
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_awkward_messages_read_back_exactly_plain_and_sealed(
    database_url: URL, encryption: Encryption, texts: list[str]
) -> None:
    async def run() -> None:
        for name, keys in (("plain", None), ("sealed", encryption)):
            session_id = f"awkward-{name}-{os.urandom(4).hex()}"
            async with PostgresStorage.from_url(database_url, encryption=keys) as storage:
                recorded = await consult(
                    storage, session_id, "u-" + session_id, turns=8, texts=texts
                )
                for turn in recorded:
                    found = await storage.read_contract(session_id, turn.turn_id)
                    assert found is not None and found.text == turn.text

    asyncio.run(run())


# -- tampering: each one found and named ------------------------------------------------------


@pytest.fixture
async def ledger(database_url: URL) -> AsyncIterator[PostgresStorage]:
    """Six entries in session "s", and two in "other"."""
    async with PostgresStorage.from_url(database_url) as storage:
        builder = ContextBuilder(storage, record=True)
        for session_id, turns in (("s", 6), ("other", 2)):
            for turn in range(1, turns + 1):
                message = Message(role="user", content=f"第{turn}次：还是疼", turn_id=f"t{turn}")
                await storage.append(session_id, [message], user_id="u")
                await builder.build_json(session_id, f"t{turn + 1}", "怎么办")
        await storage.attach_response("s", "t3", "resp-3")
        yield storage


TAMPERINGS = {
    "edit": (
        ["UPDATE contract_entries SET model = 'forged' WHERE session_id = 's' AND entry_seq = 3"],
        [(3, "altered")],
    ),
    "edit and re-digest": (
        [
            "UPDATE contract_entries SET token_count = 1, digest = sha256(digest)"
            " WHERE session_id = 's' AND entry_seq = 3"
        ],
        [(3, "altered")],
    ),
    "delete": (
        ["DELETE FROM contract_entries WHERE session_id = 's' AND entry_seq = 2"],
        [(2, "removed")],
    ),
    "swap": (
        [
            "UPDATE contract_entries AS e SET frame = o.frame, body = o.body"
            " FROM contract_entries AS o WHERE e.session_id = 's' AND o.session_id = 's'"
            " AND (e.entry_seq, o.entry_seq) IN ((2, 4), (4, 2))"
        ],
        [(2, "swapped"), (4, "swapped")],
    ),
    "re-insert": (
        [
            "INSERT INTO contract_entries SELECT session_id, 7, turn_id, recorded_at, model,"
            " token_encoding, token_count, session_version, summary_version, state_version,"
            " profile_version, frame, body, prev, digest FROM contract_entries"
            " WHERE session_id = 's' AND entry_seq = 2"
        ],
        [(7, "re-inserted")],
    ),
    "truncate the tail": (
        ["DELETE FROM contract_entries WHERE session_id = 's' AND entry_seq >= 5"],
        [(5, "truncated")],
    ),
    "reorder": (
        [
            "UPDATE contract_entries SET entry_seq = -entry_seq"
            " WHERE session_id = 's' AND entry_seq IN (2, 5)",
            "UPDATE contract_entries SET entry_seq = 7 + entry_seq"
            " WHERE session_id = 's' AND entry_seq < 0",
        ],
        [(2, "reordered"), (5, "reordered")],
    ),
    "edit a piece": (
        [
            "UPDATE contract_pieces SET content = replace(content, '还是疼', '不疼了')"
            " WHERE session_id = 's' AND content LIKE '%第1次%'"
        ],
        [(n, "altered") for n in range(1, 7)],
    ),
    "edit a response": (
        ["UPDATE contract_responses SET response_id = 'resp-forged' WHERE session_id = 's'"],
        [(2, "response altered")],
    ),
}


@pytest.mark.parametrize("tampering", list(TAMPERINGS))
async def test_each_tampering_is_found_and_named(
    ledger: PostgresStorage, database_url: URL, tampering: str
) -> None:
    assert (await verify_ledger(ledger)).intact
    statements, expected = TAMPERINGS[tampering]
    for statement in statements:
        await sql(database_url, statement)
    report = await verify_ledger(ledger)
    named = sorted({(f.entry_seq, f.kind) for f in report.findings})
    assert named == sorted(expected), [f.line() for f in report.findings]
    assert {f.session_id for f in report.findings} == {"s"}  # the other chain is intact
    alone = await verify_ledger(ledger, session_id="other")
    assert alone.intact and alone.chains == 1


async def test_a_reordered_entry_is_named_with_the_place_it_was_recorded_at(
    ledger: PostgresStorage, database_url: URL
) -> None:
    for statement in TAMPERINGS["reorder"][0]:
        await sql(database_url, statement)
    lines = sorted(f.line() for f in (await verify_ledger(ledger)).findings)
    assert lines == [
        "session s, entry 2: reordered: recorded as entry 5",
        "session s, entry 5: reordered: recorded as entry 2",
    ]


# -- who may do what ---------------------------------------------------------------------------


async def test_the_app_role_adds_and_reads_but_never_changes_or_removes(
    database_url: URL,
    app_login: URL,  # noqa: F811 - the fixture imported above
) -> None:
    async with PostgresStorage.from_url(app_login) as storage:
        await storage.save("s", TURN, user_id="u")
        text = await ContextBuilder(storage).build_json("s", "t1", "还疼", record=True)
        found = await storage.read_contract("s", "t1")
        assert found is not None and found.text == text
    for statement in (
        "UPDATE contract_entries SET model = 'x'",
        "DELETE FROM contract_entries",
        "UPDATE contract_pieces SET content = 'x'",
        "DELETE FROM contract_pieces",
        "INSERT INTO contract_entries SELECT * FROM contract_entries",
        "UPDATE contract_chains SET entries = 0",
        "DELETE FROM contract_responses",
    ):
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await sql(app_login, statement)
    assert len(await sql(app_login, "SELECT * FROM contract_entries")) == 1


# -- reading, responses, bad input -------------------------------------------------------------


async def test_responses_attach_once_and_unknown_turns_read_as_missing(
    ledger: PostgresStorage,
) -> None:
    assert await ledger.attach_response("s", "t3", "resp-3") == 2  # the same id: no change
    with pytest.raises(ConflictError, match="resp-3"):
        await ledger.attach_response("s", "t3", "resp-other")
    assert await ledger.attach_response("s", "no-such-turn", "r") is None
    assert await ledger.read_contract("s", "no-such-turn") is None
    assert await ledger.read_contract("nobody", "t2") is None
    by_number = await ledger.read_contract("s", "ignored", entry_seq=4)
    assert by_number is not None and by_number.entry.provenance.turn_id == "t5"
    listed = {e.entry_seq: e.response_id for e in await ledger.list_contracts("s")}
    assert listed == {1: None, 2: "resp-3", 3: None, 4: None, 5: None, 6: None}
    for bad in ("", "x" * 300, "a\x00b"):
        with pytest.raises(InvalidInputError):
            await ledger.read_contract("s", bad)
        with pytest.raises(InvalidInputError):
            await ledger.attach_response("s", "t3", bad)
    with pytest.raises(InvalidInputError):
        await ledger.read_contract("s", "t3", entry_seq=0)


async def test_concurrent_records_of_one_session_make_one_unbroken_chain(
    database_url: URL,
) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("busy", TURN, user_id="u")
        builder = ContextBuilder(storage, record=True)
        texts = await asyncio.gather(
            *(builder.build_json("busy", f"t{n}", f"问题{n}") for n in range(24))
        )
        report = await verify_ledger(storage)
        for n, text in enumerate(texts):
            found = await storage.read_contract("busy", f"t{n}")
            assert found is not None and found.text == text
    assert report.intact and report.entries == 24


# -- erasure -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sealed", [False, True], ids=["plain", "sealed"])
async def test_an_erasure_makes_the_entries_unreadable_and_the_chains_still_verify(
    database_url: URL, encryption: Encryption, sealed: bool
) -> None:
    async with PostgresStorage.from_url(
        database_url, encryption=encryption if sealed else None
    ) as storage:
        builder = ContextBuilder(storage, record=True)
        for user in ("erased", "kept"):
            await storage.save(f"{user}-s", TURN, user_id=user)
            for turn in range(3):
                await builder.build_json(f"{user}-s", f"t{turn}", "我膝盖疼")
        await storage.erase_user("erased")
        with pytest.raises(DataKeyDestroyedError, match="erased"):
            await storage.read_contract("erased-s", "t1")
        assert len(await storage.list_contracts("erased-s")) == 3  # the entries stay
        kept = await storage.read_contract("kept-s", "t1")
        assert kept is not None and "我膝盖疼" in kept.text
        report = await verify_ledger(storage)
        with pytest.raises(DataKeyDestroyedError):
            await builder.build_json("erased-s", "t9", "again")
    assert report.intact and (report.chains, report.erased_chains, report.entries) == (2, 1, 6)
    left = await sql(
        database_url, "SELECT count(*) FROM contract_pieces WHERE session_id = 'erased-s'"
    )
    assert left[0][0] == 0
    words = await sql(
        database_url,
        "SELECT count(*) FROM contract_entries WHERE turn_id LIKE '%膝%' OR model LIKE '%膝%'",
    )
    assert words[0][0] == 0


async def test_a_retired_key_sealing_ledger_pieces_is_kept(
    database_url: URL, encryption: Encryption
) -> None:
    async with PostgresStorage.from_url(database_url, encryption=encryption) as storage:
        await storage.save("s", TURN, user_id="u")
        await ContextBuilder(storage, record=True).build_json("s", "t1", "还疼")
        await storage.delete("s")
    await sql(database_url, "UPDATE data_keys SET retired_at = now()")
    deleted = await sql(database_url, "SELECT * FROM ctxstore_delete_unused_retired_keys_v1()")
    async with PostgresStorage.from_url(database_url, encryption=encryption) as storage:
        found = await storage.read_contract("s", "t1")
    assert deleted == [] and found is not None and "我膝盖疼了三天" in found.text


async def test_stores_without_a_ledger_say_so() -> None:
    from ctxstore import MemoryStorage  # noqa: PLC0415
    from ctxstore.errors import NotSupportedError  # noqa: PLC0415

    storage = MemoryStorage()
    await storage.save("s", TURN)
    with pytest.raises(NotSupportedError, match="no ledger"):
        await ContextBuilder(storage).build_json("s", "t1", "hi", record=True)


# -- retention (revision 1009) ---------------------------------------------------------------


async def backdate(url: URL, session_id: str, through: int, days: int) -> None:
    """Entries 1 to ``through`` recorded ``days`` earlier, their digests made again as the
    record function makes them (a backdated entry is otherwise an altered one)."""
    connection = await asyncpg.connect(url.set(drivername="postgresql").render_as_string(False))
    try:
        rows = await connection.fetch(
            "SELECT entry_seq, recorded_at, body, prev FROM contract_entries"
            " WHERE session_id = $1 ORDER BY entry_seq",
            session_id,
        )
        prev = ZERO_DIGEST
        for row in rows:
            moved = row["recorded_at"] - timedelta(days=days if row["entry_seq"] <= through else 0)
            digest = link_digest(prev, row["entry_seq"], moved, row["body"])
            await connection.execute(
                "UPDATE contract_entries SET recorded_at = $3, prev = $4, digest = $5"
                " WHERE session_id = $1 AND entry_seq = $2",
                session_id,
                row["entry_seq"],
                moved,
                prev,
                digest,
            )
            prev = digest
        await connection.execute(
            "UPDATE contract_chains SET last_digest = $2 WHERE session_id = $1", session_id, prev
        )
        responses = await connection.fetch(
            "SELECT r.entry_seq, r.response_id, e.digest FROM contract_responses AS r"
            " JOIN contract_entries AS e USING (session_id, entry_seq) WHERE session_id = $1",
            session_id,
        )
        for response in responses:  # bound to the entry's new digest
            bound = hashlib.sha256(response["digest"] + response["response_id"].encode()).digest()
            await connection.execute(
                "UPDATE contract_responses SET digest = $3 WHERE session_id = $1"
                " AND entry_seq = $2",
                session_id,
                response["entry_seq"],
                bound,
            )
    finally:
        await connection.close()


async def test_the_ledger_is_purged_by_its_own_period_and_still_verifies(
    ledger: PostgresStorage, database_url: URL
) -> None:
    kept = {t: await ledger.read_contract("s", t) for t in ("t5", "t6", "t7")}
    await backdate(database_url, "s", through=3, days=40)
    await backdate(database_url, "other", through=2, days=40)
    assert (await verify_ledger(ledger)).intact
    await place_hold(ledger, "session", "other", reason="matter 7", placed_by="legal")
    await set_period(ledger, "ledger", timedelta(days=30), set_by="dpo")
    dry = await purge_store(ledger, show=False, dry_run=True)
    assert (dry.kinds["ledger"].removed, dry.kinds["ledger"].held) == (3, 2)
    assert len(await ledger.list_contracts("s")) == 6  # a dry run deletes nothing
    report = await purge_store(ledger, show=False)
    assert (report.kinds["ledger"].removed, report.kinds["ledger"].held) == (3, 2)
    assert "ledger: removed 3 older than 30 days (2 kept under a legal hold)" in report.summary()
    assert [e.entry_seq for e in await ledger.list_contracts("s")] == [4, 5, 6]
    assert len(await ledger.list_contracts("other")) == 2
    for turn, recorded in kept.items():
        found = await ledger.read_contract("s", turn)
        assert found is not None and recorded is not None and found.text == recorded.text
    assert await ledger.read_contract("s", "t2") is None
    verified = await verify_ledger(ledger)
    assert verified.intact and verified.entries == 5, verified.findings
    unused = await sql(
        database_url,
        "SELECT count(*) FROM contract_pieces AS p WHERE p.session_id = 's' AND NOT EXISTS"
        " (SELECT FROM contract_entries AS e WHERE e.session_id = 's'"
        " AND p.piece_no = ANY(SELECT abs(n) FROM unnest(e.frame) AS n))",
    )
    assert unused[0][0] == 0
    await ContextBuilder(ledger, record=True).build_json("s", "t9", "还疼吗")
    assert (await verify_ledger(ledger)).intact  # the chain goes on from where it was
    await sql(database_url, "DELETE FROM contract_entries WHERE session_id = 's' AND entry_seq = 4")
    named = {(f.entry_seq, f.kind) for f in (await verify_ledger(ledger)).findings}
    assert named == {(4, "removed")}


async def test_provenance_in_any_text_verifies(database_url: URL) -> None:
    """The database serializes an entry's provenance for verify as the recorder did."""
    async with PostgresStorage.from_url(database_url) as storage:
        await storage.save("会话/😀", TURN, user_id="u")
        builder = ContextBuilder(storage, record=True)
        await builder.build_json("会话/😀", "轮次-𝄞", "还疼吗", model='模型 "x"\n')
        await builder.build_json("会话/😀", "t2", "还疼吗")
        report = await verify_ledger(storage)
    assert report.intact and report.entries == 2, report.findings


async def test_a_session_given_its_user_later_is_erased_with_them(database_url: URL) -> None:
    async with PostgresStorage.from_url(database_url) as storage:
        builder = ContextBuilder(storage, record=True)
        await storage.save("anonymous-first", TURN)
        await builder.build_json("anonymous-first", "t1", "还疼吗")
        await storage.append("anonymous-first", TURN, user_id="late")
        await builder.build_json("anonymous-first", "t2", "还疼吗")
        await storage.delete("anonymous-first")  # the ledger outlives the session
        await storage.erase_user("late")
        with pytest.raises(DataKeyDestroyedError):
            await storage.read_contract("anonymous-first", "t1")


async def test_the_ledger_commands_verify_list_and_show(
    ledger: PostgresStorage, database_url: URL
) -> None:
    intact = cli(database_url, "ledger", "verify", "--all")
    assert intact.returncode == 0, intact.stderr
    assert intact.stdout.startswith("ledger intact: 8 entries in 2 chains")
    assert "verifying the ledger" in intact.stderr  # the progress bar
    listed = cli(database_url, "ledger", "list", "s")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 6
    assert "turn t3" in listed.stdout and "response resp-3" in listed.stdout
    recorded = await ledger.read_contract("s", "t4")
    shown = cli(database_url, "ledger", "show", "s", "t4")
    assert recorded is not None and shown.returncode == 0
    assert shown.stdout.startswith("session s, entry 3, turn t4\n")
    assert shown.stdout.endswith("\n\n" + recorded.text + "\n")  # the exact text, last
    missing = cli(database_url, "ledger", "show", "s", "no-such-turn")
    assert missing.returncode == 1 and "no entry for turn no-such-turn" in missing.stderr
    await sql(database_url, "DELETE FROM contract_entries WHERE session_id = 's' AND entry_seq = 2")
    tampered = cli(database_url, "ledger", "verify", "--session", "s", "--quiet")
    assert tampered.returncode == 1 and tampered.stderr == ""
    assert tampered.stdout.splitlines()[0] == "session s, entry 2: removed: entry 2 is missing"
