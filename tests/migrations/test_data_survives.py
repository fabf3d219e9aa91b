"""Data written at an earlier revision survives upgrades (and the way back down)."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest
from sqlalchemy import URL, text
from sqlalchemy.exc import DBAPIError

from ctxstore import CtxStoreError, Message, PostgresStorage
from ctxstore.db import migrations
from ctxstore.db.engine import create_engine

SEEDED = [
    Message(
        role="user", content="我膝盖有下坠感", turn_id="t1", timestamp="2026-11-29T08:15:02+08:00"
    ),
    Message(role="assistant", content="是否伴随疼痛或肿胀？", turn_id="t1"),
    Message(role="user", content="没有肿胀", metadata={"channel": "app"}),
]


STATE_DOCUMENT = '{"stage": "assessing", "chief_complaint": "膝盖下坠感"}'


def seed_at_revision_0001(url: URL) -> None:
    """Rows exactly as revision 0001's code wrote them, by plain SQL."""

    async def seed() -> None:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.begin() as conn:
                digests = [m.digest() for m in SEEDED]
                await conn.execute(
                    text(
                        "INSERT INTO sessions (session_id, user_id, version, message_count, "
                        "content_hash) VALUES ('old', 'u1', 4, 3, :h)"
                    ),
                    {"h": hashlib.sha256(b"".join(digests)).digest()},
                )
                for seq, message in enumerate(SEEDED):
                    stamp = message.timestamp
                    await conn.execute(
                        text(
                            "INSERT INTO messages (session_id, seq, role, content, turn_id, ts, "
                            "ts_offset, name, metadata, digest, format_version) VALUES "
                            "('old', :seq, :role, :content, :turn, :ts, :off, NULL, "
                            "CAST(:meta AS jsonb), :digest, 2)"
                        ),
                        {
                            "seq": seq,
                            "role": message.role,
                            "content": message.content,
                            "turn": message.turn_id,
                            "ts": stamp,
                            "off": int(stamp.utcoffset().total_seconds()) if stamp else None,
                            "meta": '{"channel": "app"}' if message.metadata else None,
                            "digest": message.core_digest(),
                        },
                    )
        finally:
            await engine.dispose()

    asyncio.run(seed())


def test_sessions_seeded_at_0001_survive_the_upgrade_and_back(empty_database_url: URL) -> None:
    migrations.upgrade(empty_database_url, "0001")
    seed_at_revision_0001(empty_database_url)
    migrations.upgrade(empty_database_url, "head")

    async def use_after_upgrade() -> None:
        async with PostgresStorage.from_url(empty_database_url) as storage:
            assert await storage.load("old") == SEEDED
            assert await storage.version("old") == 4
            snapshot = await storage.snapshot("old")
            assert (snapshot.user_id, snapshot.summary_version, snapshot.state_version) == (
                "u1",
                0,
                0,
            )
            extra = Message(role="assistant", content="好的")
            assert await storage.save("old", [*SEEDED, extra]) == 5
            await storage.save_summary("old", "总结", covers_until=3)
        async with PostgresStorage.from_url(empty_database_url) as cold:
            # a process that never saw the hash: the append leaves it NULL for the next save
            assert await cold.append("old", [Message(role="user", content="还有")]) == 6

    asyncio.run(use_after_upgrade())
    migrations.downgrade(empty_database_url, "0001")

    async def use_after_downgrade_and_upgrade() -> None:
        async with PostgresStorage.from_url(empty_database_url) as storage:
            loaded = await storage.load("old")
            assert [m.content for m in loaded][-2:] == ["好的", "还有"]
            edited = [*loaded[:2], Message(role="user", content="改了")]
            await storage.save("old", edited)
            assert await storage.load("old") == edited

    migrations.upgrade(empty_database_url, "head")
    asyncio.run(use_after_downgrade_and_upgrade())


def test_consultations_seeded_at_0007_survive_0008_and_back(empty_database_url: URL) -> None:
    """0008 replaces the analytics views and moves the roles: the data stays, the views
    turn pseudonymous and back."""
    url = empty_database_url
    migrations.upgrade(url, "0007")
    seed_at_revision_0001(url)  # the session 'old', three messages

    async def seed_states() -> None:
        engine = create_engine(url, pooled=False)
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    text("INSERT INTO sessions (session_id, user_id) VALUES ('k2', 'u-k2')")
                )
                for session_id in ("old", "k2"):
                    for table in ("consultation_states", "consultation_state_history"):
                        await conn.execute(
                            text(
                                f"INSERT INTO {table} (session_id, version, stage, "
                                "chief_complaint, document, format_version) "
                                "VALUES (:s, 1, 'assessing', '膝盖下坠感', CAST(:d AS jsonb), 2)"
                            ),
                            {"s": session_id, "d": STATE_DOCUMENT},
                        )
        finally:
            await engine.dispose()

    asyncio.run(seed_states())
    old_views = "SELECT session_id, user_id, chief_complaint FROM analytics_consultations"
    before = sorted(asyncio.run(rows(url, old_views)))
    assert before == [("k2", "u-k2", "膝盖下坠感"), ("old", "u1", "膝盖下坠感")]
    migrations.upgrade(url, "0008")
    consultations = asyncio.run(
        rows(url, "SELECT consultation, stage, message_count FROM analytics_consultations")
    )
    assert sorted(row[1:] for row in consultations) == [("assessing", 0), ("assessing", 3)]
    assert all(len(str(row[0])) == 64 for row in consultations)  # hex HMAC-SHA256
    # two consultations share the complaint: fewer than k = 5, not shown
    assert asyncio.run(rows(url, "SELECT * FROM analytics_complaint_frequencies")) == []
    migrations.upgrade(url, "head")

    async def load() -> None:
        async with PostgresStorage.from_url(url) as storage:
            assert await storage.load("old") == SEEDED
            state = await storage.load_state("k2")
            assert state is not None and state.value.chief_complaint == "膝盖下坠感"

    asyncio.run(load())
    migrations.downgrade(url, "0007")
    assert sorted(asyncio.run(rows(url, old_views))) == before
    migrations.upgrade(url, "head")
    assert len(asyncio.run(rows(url, "SELECT * FROM analytics_consultations"))) == 2


async def rows(url: URL, sql: str) -> list[tuple[object, ...]]:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.connect() as conn:
            return [tuple(row) for row in await conn.execute(text(sql))]
    finally:
        await engine.dispose()


async def committed(url: URL, sql: str) -> None:
    engine = create_engine(url, pooled=False)
    try:
        async with engine.begin() as conn:
            await conn.execute(text(sql))
    finally:
        await engine.dispose()


def test_plain_rows_seeded_at_0008_survive_0009_and_sealed_rows_block_its_downgrade(
    empty_database_url: URL,
) -> None:
    import os  # noqa: PLC0415

    import pytest  # noqa: PLC0415

    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415
    from ctxstore.errors import MigrationError  # noqa: PLC0415

    migrations.upgrade(empty_database_url, "0008")
    seed_at_revision_0001(empty_database_url)
    # the store's writes call the functions of 0011: written at head, then back to 0009
    migrations.upgrade(empty_database_url, "head")
    # the seeded rows predate encryption: read as such only when accepted explicitly
    encryption = Encryption(Keyring({"k": os.urandom(32)}), accept_plaintext=True)

    async def read_plain_then_seal() -> None:
        async with PostgresStorage.from_url(empty_database_url, encryption=encryption) as storage:
            assert await storage.load("old") == SEEDED
            await storage.save("new", SEEDED, user_id="u2")

    asyncio.run(read_plain_then_seal())
    migrations.downgrade(empty_database_url, "0009")
    with pytest.raises(MigrationError, match="sealed rows"):
        migrations.downgrade(empty_database_url, "0008")
    assert migrations.current(empty_database_url) == "0009"

    async def delete_sealed() -> None:
        async with PostgresStorage.from_url(empty_database_url, encryption=encryption) as storage:
            await storage.delete("new")

    migrations.upgrade(empty_database_url, "head")
    asyncio.run(delete_sealed())
    migrations.downgrade(empty_database_url, "0008")
    migrations.upgrade(empty_database_url, "head")

    async def still_there() -> None:
        async with PostgresStorage.from_url(empty_database_url) as storage:
            assert await storage.load("old") == SEEDED

    asyncio.run(still_there())


def test_0010_references_keys_from_sealed_rows_and_tolerates_rows_of_destroyed_keys(
    empty_database_url: URL,
) -> None:
    """Sealed rows seeded at 0009, some under a key destroyed before 0010 existed (the race
    0010 closes): the upgrade keeps every row, validates the tables it can and leaves the
    rest enforced for new rows only; down and up again keep the data."""
    import os  # noqa: PLC0415

    import pytest  # noqa: PLC0415

    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415

    url = empty_database_url
    # the store's writes call the functions of 0011: written at head, then back to 0009
    migrations.upgrade(url, "head")
    encryption = Encryption(Keyring({"k": os.urandom(32)}))

    async def seal() -> None:
        async with PostgresStorage.from_url(url, encryption=encryption) as storage:
            await storage.save("kept", SEEDED, user_id="u1")
            await storage.save_state("kept", {"stage": "intake"})
            await storage.save("orphaned", SEEDED, user_id="u2")

    asyncio.run(seal())
    migrations.downgrade(url, "0009")
    asyncio.run(committed(url, "DELETE FROM data_keys WHERE owner = 'u:u2'"))
    counts = "SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM consultation_states)"
    before = asyncio.run(rows(url, counts))
    migrations.upgrade(url, "0010")
    assert asyncio.run(rows(url, counts)) == before
    validated = dict(
        asyncio.run(
            rows(
                url,
                "SELECT conname, convalidated FROM pg_constraint "
                "WHERE conname LIKE 'fk_%_key_id_data_keys'",
            )
        )
    )
    assert validated == {
        "fk_messages_key_id_data_keys": False,  # u2's rows: enforced for new rows only
        "fk_summaries_key_id_data_keys": True,
        "fk_consultation_states_key_id_data_keys": True,
        "fk_consultation_state_history_key_id_data_keys": True,
        "fk_user_profiles_key_id_data_keys": True,
    }
    with pytest.raises(Exception, match="fk_messages_key_id_data_keys"):
        asyncio.run(
            committed(url, "UPDATE messages SET key_id = -1 WHERE session_id = 'kept' AND seq = 0")
        )
    migrations.upgrade(url, "head")

    async def still_readable() -> None:
        async with PostgresStorage.from_url(url, encryption=encryption) as storage:
            assert await storage.load("kept") == SEEDED

    asyncio.run(still_readable())
    migrations.downgrade(url, "0009")
    assert asyncio.run(rows(url, counts)) == before
    assert not asyncio.run(
        rows(url, "SELECT conname FROM pg_constraint WHERE conname LIKE 'fk_%_key_id_data_keys'")
    )
    migrations.upgrade(url, "head")
    asyncio.run(still_readable())


WINDOWS = [None, datetime(2020, 1, 1, tzinfo=UTC), datetime(2999, 1, 1, tzinfo=UTC)]
Answers = dict[tuple[str, object], list[tuple[object, ...]]]


async def sql_reports(url: URL, sql_of: Callable[[str, object], str]) -> Answers:
    """Every report as the SQL ``sql_of(report, since)``, for each window."""
    from ctxstore.analytics import REPORTS  # noqa: PLC0415

    engine = create_engine(url, pooled=False)
    found: Answers = {}
    try:
        async with engine.connect() as conn:
            for name in REPORTS:
                for since in WINDOWS:
                    values = {"since": since, "until": None, "bucket": "day", "limit": 20}
                    result = await conn.execute(text(sql_of(name, since)), values)
                    found[name, since] = [tuple(row) for row in result]
    finally:
        await engine.dispose()
    return found


async def reports_over_the_views(url: URL) -> Answers:
    """Every report's SQL as of revision 0011 (the views read directly), for each window."""
    from tests.analytics_reports_0011 import ALL_TIME_SQL, REPORT_SQL  # noqa: PLC0415

    return await sql_reports(
        url,
        lambda name, since: (
            ALL_TIME_SQL.get(name, REPORT_SQL[name]) if since is None else REPORT_SQL[name]
        ),
    )


async def reports(url: URL) -> Answers:
    """Every report as ``run_report`` runs it, for each window (the funnel's rows without
    the shares it adds, in name order)."""
    from ctxstore.analytics import REPORTS, run_report  # noqa: PLC0415

    engine = create_engine(url, pooled=False)
    found: Answers = {}
    try:
        for name in REPORTS:
            for since in WINDOWS:
                rows = (await run_report(engine, name, since=since)).rows
                found[name, since] = sorted(r[:3] for r in rows) if name == "funnel" else rows
    finally:
        await engine.dispose()
    return found


async def reports_v1(url: URL) -> Answers:
    """Every report through its function of revision 0012 (``analytics_*_v1``), as
    ``run_report`` called them until revision 0016, for each window (the funnel sorted)."""
    from ctxstore.analytics import REPORT_SQL  # noqa: PLC0415

    found = await sql_reports(
        url, lambda name, _: REPORT_SQL[name].replace("_v2(", "_v1(").replace("_v3(", "_v1(")
    )
    return {key: sorted(rows) if key[0] == "funnel" else rows for key, rows in found.items()}


async def reports_v2(url: URL) -> Answers:
    """Every report as ``run_report`` called it at revisions 0016 and 0017 (free text
    counted from the state rows by ``analytics_frequencies_v2``)."""
    from ctxstore.analytics import REPORT_SQL  # noqa: PLC0415

    found = await sql_reports(url, lambda name, _: REPORT_SQL[name].replace("_v3(", "_v2("))
    return {key: sorted(rows) if key[0] == "funnel" else rows for key, rows in found.items()}


async def write_state_v1(storage: PostgresStorage, session_id: str, document: object) -> None:
    """A state written as revisions 0011-0017 write it (ctxstore_write_state_v1)."""
    from ctxstore.models import ConsultationState  # noqa: PLC0415
    from ctxstore.storage.postgres import rows  # noqa: PLC0415

    values = rows.state_values(ConsultationState.model_validate(document))
    written = [value for column, value in values.items() if column not in COUNT_COLUMNS]
    async with storage.driver() as driver:
        await driver.execute(
            "SELECT ctxstore_write_state_v1($1, NULL, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
            "$11, $12)",
            session_id,
            *written,
        )


COUNT_COLUMNS = (
    "red_flag_count",
    "symptom_count",
    "body_part_count",
    "has_chief_complaint",
    "has_symptom_duration",
)


async def seed_consultations(url: URL) -> None:
    state = {"chief_complaint": "膝盖下坠感", "symptoms": ["酸"]}
    async with PostgresStorage.from_url(url) as storage:
        for index in range(12):
            await storage.save(f"c{index}", SEEDED, user_id=f"u{index % 4}")
            for stage in ("greeting", "assessing", ("advising", "completed")[index % 2]):
                await write_state_v1(storage, f"c{index}", {**state, "stage": stage})


@contextmanager
def seeded_with_an_analyst(url: URL, revision: str) -> Iterator[URL]:
    """``url`` seeded (seed_consultations) and migrated down to ``revision``; a login in
    its analytics role, dropped after.  Seeded at the head: this code writes through the
    functions of the latest revision."""
    from tests.integration.test_deidentified_analytics import (  # noqa: PLC0415
        create_login,
        drop_login,
        read_roles,
    )

    migrations.upgrade(url, "head")
    asyncio.run(seed_consultations(url))
    migrations.downgrade(url, revision)
    login, password = asyncio.run(create_login(url, asyncio.run(read_roles(url)).analytics))
    try:
        yield url.set(username=login, password=password)
    finally:
        asyncio.run(drop_login(url, login))


def test_reports_on_data_seeded_at_0011_answer_the_same_through_0012_and_back(
    empty_database_url: URL,
) -> None:
    """0012 makes each report a SECURITY DEFINER function: an analytics login gets from it
    exactly what the report's SQL over the views gave at 0011, all time and windowed; back
    at 0011 the functions are gone and the views answer as before."""
    url = empty_database_url
    with seeded_with_an_analyst(url, "0011") as analyst:
        before = asyncio.run(reports_over_the_views(analyst))
        assert before["complaints", None] == [("膝盖下坠感", 12)]
        assert before["overview", None][0][0] == 12
        before["funnel", None] = sorted(before["funnel", None])
        for since in WINDOWS[1:]:
            before["funnel", since] = sorted(before["funnel", since])
        migrations.upgrade(url, "0012")
        after = asyncio.run(reports_v1(analyst))
        assert after == before
        migrations.downgrade(url, "0011")
        assert asyncio.run(rows(url, "SELECT to_regproc('analytics_overview_v1')")) == [(None,)]
        with pytest.raises(DBAPIError):
            asyncio.run(reports_v1(analyst))
        migrations.upgrade(url, "0015")
        assert asyncio.run(reports_v1(analyst)) == after


def test_reports_on_data_seeded_at_0015_through_0016_and_back(empty_database_url: URL) -> None:
    """0016: the analytics role's reports take whole days and suppress a value all but
    fewer than k lack; its old reports are refused it; its per-consultation view holds
    the day and a duration bucket.  Back at 0015 everything answers as before."""
    from ctxstore.analytics import FREQUENCY_REPORTS  # noqa: PLC0415

    url = empty_database_url
    columns = (
        "SELECT string_agg(column_name, ',' ORDER BY column_name) FROM "
        "information_schema.columns WHERE table_name = 'analytics_consultations'"
    )
    with seeded_with_an_analyst(url, "0015") as analyst:
        before = asyncio.run(reports_v1(analyst))
        assert before["complaints", None] == [("膝盖下坠感", 12)]
        view_before = asyncio.run(rows(analyst, columns))
        assert "duration_seconds" in str(view_before)

        migrations.upgrade(url, "0016")
        after = asyncio.run(reports_v2(analyst))
        for (name, since), answer in after.items():
            if name in FREQUENCY_REPORTS:
                # all 12 have 膝盖下坠感 and 酸: none without them, so suppressed now
                assert answer == [], (name, since)
            else:
                assert answer == before[name, since], (name, since)
        with pytest.raises(DBAPIError, match="permission denied"):
            asyncio.run(reports_v1(analyst))
        # the owner still runs them (a process of the previous release): the three that read
        # the exact columns now read them where they moved
        owner_v1 = asyncio.run(reports_v1(url))
        for name in ("overview", "durations", "red-flags", "funnel", "transitions"):
            for since in WINDOWS:
                assert owner_v1[name, since] == before[name, since], (name, since)
        consultations = asyncio.run(
            rows(analyst, "SELECT first_day, duration_bucket FROM analytics_consultations")
        )
        assert len(consultations) == 12
        assert {day for day, _ in consultations} == {datetime(2026, 11, 29, tzinfo=UTC).date()}
        buckets = {"under 5 min", "5-15 min", "15-60 min", "1-24 h", "over 1 day"}
        assert {bucket for _, bucket in consultations} <= buckets
        history = asyncio.run(
            rows(analyst, "SELECT DISTINCT first_activity FROM analytics_stage_history")
        )
        assert history == [(datetime(2026, 11, 29, tzinfo=UTC),)]

        migrations.downgrade(url, "0015")
        assert asyncio.run(rows(url, "SELECT to_regproc('analytics_overview_v2')")) == [(None,)]
        assert asyncio.run(reports_v1(analyst)) == before
        assert asyncio.run(rows(analyst, columns)) == view_before
        with pytest.raises(CtxStoreError):
            asyncio.run(reports(analyst))
        migrations.upgrade(url, "head")
        at_head = asyncio.run(reports(analyst))
        for (name, since), answer in after.items():
            if name not in ("overview", "red-flags"):
                assert at_head[name, since] == answer, (name, since)
        # 0019: none of the 12 has red flags, fewer than k: the red-flag figures are hidden
        for since in WINDOWS:
            assert all(row[3] is None for row in at_head["overview", since])
            assert all(row[2] is None for row in at_head["red-flags", since])


def test_sealed_sessions_written_at_head_survive_0017_down_and_up(empty_database_url: URL) -> None:
    """Revision 0017 adds ctxstore_append_v5 only: sealed sessions appended through it
    keep every row and their chained content hash back at 0016 (where v4 answers) and
    up again, and append on."""
    import os  # noqa: PLC0415

    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "head")
    encryption = Encryption(Keyring({"k": os.urandom(32)}))

    async def write(session_id: str, count: int) -> None:
        async with (
            PostgresStorage.from_url(url, encryption=encryption) as one,
            PostgresStorage.from_url(url, encryption=encryption) as two,
        ):
            for n in range(count):  # writers in turn: refusals carry the session's facts
                writer = (one, two)[n % 2]
                await writer.append(session_id, [Message(role="user", content=f"第{n}问")])

    async def load(session_id: str) -> list[str]:
        async with PostgresStorage.from_url(url, encryption=encryption) as storage:
            return [m.content for m in await storage.load(session_id)]

    asyncio.run(write("s", 6))
    state = "SELECT message_count, content_hash FROM sessions ORDER BY session_id"
    before = asyncio.run(rows(url, state))
    migrations.downgrade(url, "0016")
    assert asyncio.run(rows(url, state)) == before
    assert asyncio.run(
        rows(url, "SELECT count(*) FROM pg_proc WHERE proname = 'ctxstore_append_v5'")
    ) == [(0,)]
    migrations.upgrade(url, "head")
    assert asyncio.run(load("s")) == [f"第{n}问" for n in range(6)]
    asyncio.run(write("s", 2))
    assert len(asyncio.run(load("s"))) == 8


def test_states_of_0017_lose_their_free_text_when_sealed_at_0018_and_keep_it_plain(
    empty_database_url: URL,
) -> None:
    """0018: a sealed state written before it (the free text beside the ciphertext, as
    0017's ctxstore_write_state_v1 stored it) keeps its document and loses the plaintext
    text; counts come from the text it had; a plaintext state keeps its text.  The
    refresh then counts both.  Down to 0017 and up again, every state still loads."""
    import os  # noqa: PLC0415

    from ctxstore.aggregates import refresh_aggregates  # noqa: PLC0415
    from ctxstore.analytics import run_report  # noqa: PLC0415
    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415

    url = empty_database_url
    encryption = Encryption(Keyring({"k": os.urandom(32)}), accept_plaintext=True)
    day = datetime(2026, 11, 20, 9, tzinfo=UTC)
    state = {"stage": "assessing", "chief_complaint": "膝盖 zq", "red_flags": ["发热 zq"]}
    messages = [Message(role="user", content="hi", timestamp=day)]
    migrations.upgrade(url, "head")

    async def seal() -> None:
        async with PostgresStorage.from_url(url, encryption=encryption) as storage:
            for index in range(6):
                await storage.save(f"sealed{index}", messages, user_id=f"u{index}")
                await storage.save_state(f"sealed{index}", state)
        async with PostgresStorage.from_url(url) as storage:
            for index in range(6):
                await storage.save(f"plain{index}", messages, user_id=f"p{index}")
                await storage.save_state(f"plain{index}", {**state, "chief_complaint": "腰痛"})

    asyncio.run(seal())
    migrations.downgrade(url, "0017")
    # what 0017's write stored beside a sealed document
    for table in ("consultation_states", "consultation_state_history"):
        asyncio.run(
            committed(
                url,
                f"UPDATE {table} SET chief_complaint = '膝盖 zq', red_flags = ARRAY['发热 zq'] "
                "WHERE key_id IS NOT NULL",
            )
        )
    everything = (
        "SELECT (SELECT string_agg(t::text, ' ') FROM consultation_states AS t "
        "WHERE key_id IS NOT NULL) || (SELECT string_agg(t::text, ' ') "
        "FROM consultation_state_history AS t WHERE key_id IS NOT NULL)"
    )
    assert "zq" in str(asyncio.run(rows(url, everything)))

    migrations.upgrade(url, "0018")
    sealed_rows = asyncio.run(
        rows(
            url,
            "SELECT chief_complaint, red_flags, red_flag_count, has_chief_complaint "
            "FROM consultation_state_history WHERE key_id IS NOT NULL",
        )
    )
    assert sealed_rows == [(None, [], 1, True)] * 6
    assert "zq" not in str(asyncio.run(rows(url, everything)))
    plain_rows = asyncio.run(
        rows(
            url,
            "SELECT chief_complaint, red_flag_count FROM consultation_states WHERE key_id IS NULL",
        )
    )
    assert plain_rows == [("腰痛", 1)] * 6

    async def refreshed() -> dict[str, int]:
        async with PostgresStorage.from_url(url, encryption=encryption) as storage:
            report = await refresh_aggregates(storage, encryption, show=False)
            assert report.failed == [] and report.consultations == 12
            loaded = await storage.load_state("sealed0")
            assert loaded is not None and loaded.value.chief_complaint == "膝盖 zq"
            found = await run_report(storage.engine, "complaints")
            return {row["chief_complaint"]: row["consultations"] for row in found.as_dicts()}

    assert asyncio.run(refreshed()) == {"膝盖 zq": 6, "腰痛": 6}
    migrations.downgrade(url, "0017")
    assert asyncio.run(rows(url, "SELECT to_regclass('analytics_value_cells')")) == [(None,)]
    migrations.upgrade(url, "head")
    assert asyncio.run(refreshed()) == {"膝盖 zq": 6, "腰痛": 6}


def test_red_flags_of_sealed_states_count_again_at_0019_and_back(empty_database_url: URL) -> None:
    """0018 emptied the red-flag text of sealed states, which the red-flag views counted:
    at 0019 they count ``red_flag_count`` and show a count where k have red flags and k
    don't.  Back at 0018 the views are 0008's again."""
    import os  # noqa: PLC0415

    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "head")  # this code writes through the latest functions
    day = datetime(2026, 11, 23, 9, tzinfo=UTC)
    encryption = Encryption(Keyring({"k": os.urandom(32)}))

    async def seed() -> None:
        async with PostgresStorage.from_url(url, encryption=encryption) as storage:
            for index in range(10):
                moment = day.replace(minute=index)
                session_id = f"f{index}"
                await storage.save(
                    session_id, [Message(role="user", content="hi", timestamp=moment)]
                )
                flags = ["发热"] if index < 5 else []
                await storage.save_state(session_id, {"stage": "assessing", "red_flags": flags})

    asyncio.run(seed())
    migrations.downgrade(url, "0018")
    daily = "SELECT consultations, with_red_flags FROM analytics_red_flags_daily"
    assert asyncio.run(rows(url, daily)) == [(10, 0)]  # the text is sealed: none counted
    migrations.upgrade(url, "0019")
    assert asyncio.run(rows(url, daily)) == [(10, 5)]  # 5 with, 5 without: k = 5
    asyncio.run(committed(url, "UPDATE ctxstore_analytics_settings SET min_group_size = 6"))
    assert asyncio.run(rows(url, daily)) == [(10, None)]
    migrations.downgrade(url, "0018")
    assert asyncio.run(rows(url, daily)) == [(10, 0)]
    assert asyncio.run(rows(url, "SELECT to_regproc('analytics_overview_v3')")) == [(None,)]
    migrations.upgrade(url, "head")
    assert asyncio.run(rows(url, daily)) == [(10, None)]


def test_write_ids_of_0020_are_recorded_beside_data_of_0019_and_go_back(
    empty_database_url: URL,
) -> None:
    """0020 adds the tables of applied journal write ids; the sessions of 0019 are
    untouched, writes carrying ids record them, and the downgrade drops only the ids."""
    from ctxstore.storage.write_ids import carrying, new_write_id  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "head")  # this code writes through the latest functions
    write_id = new_write_id()

    async def seed() -> None:
        async with PostgresStorage.from_url(url) as storage:
            await storage.save("w0", [Message(role="user", content="before 0020")])

    async def write_and_ask() -> frozenset[str] | None:
        async with PostgresStorage.from_url(url) as storage:
            assert await storage.load("w0") == [Message(role="user", content="before 0020")]
            with carrying([write_id]):
                await storage.append("w0", [Message(role="user", content="at 0020")])
            return await storage.applied_writes("w0", [write_id])

    asyncio.run(seed())
    migrations.downgrade(url, "0019")
    migrations.upgrade(url, "head")
    assert asyncio.run(write_and_ask()) == {write_id}
    migrations.downgrade(url, "0019")
    assert asyncio.run(rows(url, "SELECT to_regclass('applied_session_writes')")) == [(None,)]
    assert asyncio.run(rows(url, "SELECT message_count FROM sessions")) == [(2,)]
    migrations.upgrade(url, "head")


def test_go_times_keep_their_nanoseconds_from_0021_and_rows_before_read_unchanged(
    empty_database_url: URL,
) -> None:
    """0021 adds ``messages.ts_nanos``: a row written before it reads as it was written,
    a Go time written after it reads back to the nanosecond, and the downgrade keeps
    every row with its time to the microsecond."""
    from ctxstore.timestamps import go_timestamp  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "head")
    before = [Message(role="user", content="µs", timestamp="2026-12-03T08:00:00.123456+08:00")]
    go = [Message(role="user", content="ns", timestamp="2026-12-03T08:00:00.123456789+08:00")]

    async def save(session_id: str, messages: list[Message]) -> None:
        async with PostgresStorage.from_url(url) as storage:
            await storage.save(session_id, messages)

    async def load(session_id: str) -> list[Message]:
        async with PostgresStorage.from_url(url) as storage:
            return await storage.load(session_id)

    asyncio.run(save("before", before))
    migrations.downgrade(url, "0020")  # as a database of 0020 holds it
    migrations.upgrade(url, "head")
    assert asyncio.run(load("before")) == before
    asyncio.run(save("go", go))
    (loaded,) = asyncio.run(load("go"))
    assert go_timestamp(loaded.timestamp) == "2026-12-03T08:00:00.123456789+08:00"  # type: ignore[arg-type]
    migrations.downgrade(url, "0020")
    assert asyncio.run(rows(url, "SELECT to_regproc('ctxstore_append_v6')")) == [(None,)]
    times = "SELECT session_id, ts FROM messages ORDER BY session_id"
    assert asyncio.run(rows(url, times)) == [
        ("before", before[0].timestamp),
        ("go", go[0].timestamp),  # the instant to the microsecond
    ]
    migrations.upgrade(url, "head")


def test_0022_lets_the_app_role_read_the_revision_and_takes_it_back(
    empty_database_url: URL,
) -> None:
    """Readiness runs as the app role: 0022 grants it SELECT on alembic_version only."""
    url = empty_database_url
    migrations.upgrade(url, "head")
    asyncio.run(_seed_one(url))
    can_read = (
        "SELECT has_table_privilege(role_name, 'alembic_version', 'SELECT'), "
        "has_table_privilege(role_name, 'alembic_version', 'UPDATE') "
        "FROM ctxstore_roles WHERE kind = 'app'"
    )
    assert asyncio.run(rows(url, can_read)) == [(True, False)]
    migrations.downgrade(url, "0021")
    assert asyncio.run(rows(url, can_read)) == [(False, False)]
    assert asyncio.run(rows(url, "SELECT message_count FROM sessions")) == [(1,)]
    migrations.upgrade(url, "head")
    assert asyncio.run(rows(url, can_read)) == [(True, False)]


async def _seed_one(url: URL) -> None:
    async with PostgresStorage.from_url(url) as storage:
        await storage.save("seeded", [Message(role="user", content="before 0022")])


def test_summary_jobs_of_0023_queue_beside_data_of_0022_and_go_back(
    empty_database_url: URL,
) -> None:
    """0023 adds the summary jobs table: the sessions of 0022 are untouched, a job is
    enqueued and claimed once, and the downgrade drops only the jobs."""
    from ctxstore.summaries import SummaryQueue  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "head")
    history = [Message(role="user", content=f"turn {n}") for n in range(5)]

    async def seed() -> None:
        async with PostgresStorage.from_url(url) as storage:
            await storage.save("j0", history)

    async def enqueue_and_claim() -> tuple[int | None, int | None]:
        async with PostgresStorage.from_url(url) as storage:
            assert await storage.load("j0") == history
            queue = SummaryQueue(storage)
            await queue.enqueue("j0", 2)
            await queue.enqueue("j0", 1)  # a waiting job only reaches further
            first = await queue.claim(30)
            second = await queue.claim(30)
            return (first.until if first else None), (second.until if second else None)

    asyncio.run(seed())
    migrations.downgrade(url, "0022")
    migrations.upgrade(url, "head")
    assert asyncio.run(enqueue_and_claim()) == (2, None)
    migrations.downgrade(url, "0022")
    assert asyncio.run(rows(url, "SELECT to_regclass('summary_jobs')")) == [(None,)]
    assert asyncio.run(rows(url, "SELECT message_count FROM sessions")) == [(5,)]
    migrations.upgrade(url, "head")


def test_graph_checkpoints_of_0024_hang_off_the_sessions_of_0023_and_go_back(
    empty_database_url: URL,
) -> None:
    """0024 adds LangGraph's checkpoint tables: the sessions of 0023 are untouched, a
    graph's checkpoint lands beside one of them, and the downgrade drops only the
    checkpoints (their thread's messages stay the session's)."""
    pytest.importorskip("langgraph", reason="needs the langgraph extra")
    from langgraph.checkpoint.base import empty_checkpoint  # noqa: PLC0415

    from ctxstore.adapters.langgraph import CtxstoreSaver  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "0023")
    history = [Message(role="user", content=f"turn {n}") for n in range(3)]

    async def seed() -> None:
        async with PostgresStorage.from_url(url) as storage:
            await storage.save("g0", history)

    async def checkpoint() -> list[str]:
        async with PostgresStorage.from_url(url) as storage:
            assert await storage.load("g0") == history
            saver = CtxstoreSaver(storage)
            config = {"configurable": {"thread_id": "g0", "checkpoint_ns": ""}}
            made = empty_checkpoint()
            made["channel_values"] = {"notes": "seen"}
            made["channel_versions"] = {"notes": 1}
            await saver.aput(config, made, {"source": "input", "step": -1}, {"notes": 1})
            found = await saver.aget_tuple(config)
            assert found is not None
            return [m.content for m in await storage.load("g0")] + [
                found.checkpoint["channel_values"]["notes"]
            ]

    asyncio.run(seed())
    migrations.upgrade(url, "head")
    assert asyncio.run(checkpoint()) == ["turn 0", "turn 1", "turn 2", "seen"]
    migrations.downgrade(url, "0023")
    assert asyncio.run(rows(url, "SELECT to_regclass('graph_checkpoints')")) == [(None,)]
    assert asyncio.run(rows(url, "SELECT message_count FROM sessions")) == [(3,)]
    migrations.upgrade(url, "head")


def test_appends_of_0025_take_rows_beside_sessions_of_0024_and_go_back(
    empty_database_url: URL,
) -> None:
    """0025's append takes one array of rows: every field of a message goes through it
    (a name, metadata, a Go time with its offset and nanoseconds, none), to a session of
    0024 (its fast path), a new one and a refused one (through v6), sealed or not; the
    downgrade drops the function and its type and keeps every row."""
    from ctxstore import ConflictError  # noqa: PLC0415
    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "0024")
    encryption = Encryption(Keyring({"k": os.urandom(32)}))
    turn = [
        Message(role="user", content="膝盖疼", turn_id="t2", name="患者", metadata={"app": 1}),
        Message(
            role="assistant",
            content="多久了？",
            turn_id="t2",
            timestamp="2026-12-04T08:00:00.123456789+08:00",
        ),
        Message(role="user", content="no turn, no time"),
    ]

    async def seed() -> None:
        for sealed in (None, encryption):
            async with PostgresStorage.from_url(url, encryption=sealed) as storage:
                await storage.save(f"r0-{sealed is not None}", SEEDED)

    async def append() -> list[list[Message]]:
        loaded = []
        for sealed in (None, encryption):
            async with PostgresStorage.from_url(url, encryption=sealed) as storage:
                old, new = f"r0-{sealed is not None}", f"r1-{sealed is not None}"
                assert await storage.append(old, turn) == 2
                assert await storage.append(new, turn) == 1
                with pytest.raises(ConflictError):
                    await storage.append(new, turn, expected_version=7)
                loaded += [await storage.load(old), await storage.load(new)]
        return loaded

    asyncio.run(seed())
    migrations.upgrade(url, "head")
    assert asyncio.run(append()) == [[*SEEDED, *turn], turn] * 2
    migrations.downgrade(url, "0024")
    gone = "SELECT to_regproc('ctxstore_append_v7'), to_regtype('ctxstore_message_row_v1')"
    assert asyncio.run(rows(url, gone)) == [(None, None)]
    counts = "SELECT message_count FROM sessions ORDER BY session_id"
    assert asyncio.run(rows(url, counts)) == [(6,), (6,), (3,), (3,)]
    migrations.upgrade(url, "head")


def test_sealed_appends_of_0026_resume_a_chain_rotated_under_sessions_of_0025(
    empty_database_url: URL,
) -> None:
    """At 0025 an append known from before `rotate-keys --reencrypt` stored no hash and
    the session stopped opening; from 0026 the same append commits and it opens.  The
    downgrade restores 0025's function and keeps every row."""
    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415
    from ctxstore.errors import CorruptDataError  # noqa: PLC0415
    from ctxstore.rotate_keys import rotate_keys  # noqa: PLC0415

    url = empty_database_url
    encryption = Encryption(Keyring({"k": os.urandom(32)}))
    turn = [Message(role="user", content="还疼", turn_id="t9")]

    async def append_after_rotation(session_id: str) -> list[Message]:
        async with PostgresStorage.from_url(url, encryption=encryption) as storage:
            await storage.save(session_id, SEEDED, user_id="u1")  # known to this process
            async with storage.driver() as driver:
                await rotate_keys(driver, encryption, reencrypt=True, show=False)
            await storage.append(session_id, turn, user_id="u1")
        async with PostgresStorage.from_url(url, encryption=encryption) as cold:
            return await cold.load(session_id)

    migrations.upgrade(url, "0025")
    with pytest.raises(CorruptDataError, match="no content hash"):
        asyncio.run(append_after_rotation("at-0025"))
    migrations.upgrade(url, "head")
    assert asyncio.run(append_after_rotation("at-0026")) == [*SEEDED, *turn]
    migrations.downgrade(url, "0025")
    counts = "SELECT session_id, message_count FROM sessions ORDER BY session_id"
    assert asyncio.run(rows(url, counts)) == [("at-0025", 4), ("at-0026", 4)]
    migrations.upgrade(url, "head")


def test_0026_applies_and_goes_back_under_eight_sealed_writers(empty_database_url: URL) -> None:
    """0026 replaces functions only (no table is locked, rewritten or scanned): eight
    writers appending to sealed sessions across its upgrade and downgrade lose and fail
    nothing."""
    from ctxstore.encryption import Encryption, Keyring  # noqa: PLC0415

    url = empty_database_url
    migrations.upgrade(url, "0025")
    encryption = Encryption(Keyring({"k": os.urandom(32)}))

    async def write_across(*steps: Callable[[], None]) -> tuple[list[int], list[str]]:
        stop, acknowledged, failed = asyncio.Event(), [0] * 8, []

        async def writer(number: int, storage: PostgresStorage) -> None:
            while not stop.is_set():
                turn = [Message(role="user", content=f"第{acknowledged[number]}问")]
                try:
                    await storage.append(f"w{number}", turn, user_id=f"u{number}")
                    acknowledged[number] += 1
                except CtxStoreError as error:
                    failed.append(repr(error))

        stores = [PostgresStorage.from_url(url, encryption=encryption) for _ in range(8)]
        tasks = [asyncio.create_task(writer(n, s)) for n, s in enumerate(stores)]
        try:
            for step in steps:
                await asyncio.sleep(0.3)
                await asyncio.to_thread(step)
            await asyncio.sleep(0.3)
        finally:
            stop.set()
            await asyncio.gather(*tasks)
            for number, storage in enumerate(stores):
                assert len(await storage.load(f"w{number}")) == acknowledged[number]
                await storage.close()
        return acknowledged, failed

    acknowledged, failed = asyncio.run(
        write_across(
            lambda: migrations.upgrade(url, "0026"),
            lambda: migrations.downgrade(url, "0025"),
            lambda: migrations.upgrade(url, "0026"),
        )
    )
    assert failed == [] and min(acknowledged) > 0
