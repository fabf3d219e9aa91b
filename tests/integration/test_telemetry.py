"""Telemetry (ctxstore.telemetry): spans and metrics of storage calls, read back from the
OpenTelemetry SDK's in-memory exporter and metric reader."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import URL

from ctxstore import EngineSettings, MemoryStorage, Message, PostgresStorage, telemetry
from ctxstore.encryption import Encryption, Keyring
from ctxstore.errors import ConfigurationError, ConflictError, StorageUnavailableError
from ctxstore.settings import load_settings
from ctxstore.storage.fallback import FallbackStorage
from tests.faults import TcpProxy, socket_target, through

try:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, StatusCode
except ImportError:  # pragma: no cover - the dev extra installs it
    pytest.skip(
        "opentelemetry-sdk is not installed (pip install -e '.[dev]' brings it)",
        allow_module_level=True,
    )

# Ids that must never reach an exporter as they are.
SESSION = "session-CLEARTEXT-4417"
USER = "user-CLEARTEXT-9981"


def turn(text: str = "膝盖疼") -> list[Message]:
    return [Message(role="user", content=text)]


@dataclass
class Exported:
    tracer_provider: TracerProvider
    spans_exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    active: telemetry.Telemetry

    def spans(self) -> list[ReadableSpan]:
        return list(self.spans_exporter.get_finished_spans())

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """The data points of metric ``name`` (attributes, point), collected now."""
        found = []
        data = self.reader.get_metrics_data()
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found += [(dict(p.attributes), p) for p in metric.data.data_points]
        return found

    def value(self, name: str, **attributes: str) -> Any:
        """The one point of ``name`` whose attributes include ``attributes``."""
        matching = [
            point
            for found, point in self.points(name)
            if all(found.get(key.replace("_", ".")) == v for key, v in attributes.items())
        ]
        assert len(matching) == 1, (name, attributes, self.points(name))
        return matching[0]


@pytest.fixture
def exported() -> Iterator[Exported]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    active = telemetry.enable(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        yield Exported(tracer_provider, spans, reader, active)
    finally:
        telemetry.disable()
        tracer_provider.shutdown()
        meter_provider.shutdown()


def assert_no_id_in_clear(spans: list[ReadableSpan]) -> None:
    for span in spans:
        everything = repr((span.name, dict(span.attributes or {}), span.events, span.status))
        assert SESSION not in everything and USER not in everything, everything


EVERY_CALL = {
    "save",
    "append",
    "load",
    "version",
    "exists",
    "save_summary",
    "load_summary",
    "save_state",
    "load_state",
    "state_history",
    "save_profile",
    "load_profile",
    "snapshot",
    "reader",
    "list_sessions",
    "delete",
    "delete_profile",
    "erase_user",
}


async def every_call(storage: Any) -> None:
    await storage.save(SESSION, turn(), user_id=USER)
    await storage.append(SESSION, turn("还在疼"), user_id=USER)
    assert len(await storage.load(SESSION)) == 2
    assert await storage.version(SESSION) == 2
    assert await storage.exists(SESSION)
    await storage.save_summary(SESSION, "knee pain", covers_until=1)
    assert await storage.load_summary(SESSION) is not None
    await storage.save_state(SESSION, {"stage": "intake"})
    assert await storage.load_state(SESSION) is not None
    assert len(await storage.state_history(SESSION)) == 1
    await storage.save_profile(USER, {"age": 40})
    assert await storage.load_profile(USER) is not None
    assert (await storage.snapshot(SESSION)).version == 2
    assert [item.session_id for item in (await storage.list_sessions(USER)).items] == [SESSION]
    assert [m.content async for m in storage.iter_messages(SESSION, batch_size=1)] == [
        "膝盖疼",
        "还在疼",
    ]
    await storage.delete(SESSION)
    await storage.delete_profile(USER)
    assert (await storage.erase_user(USER)).sessions == 0


async def test_every_call_has_a_span_and_a_duration_without_ids_in_clear(
    storage: MemoryStorage | PostgresStorage, exported: Exported
) -> None:
    with exported.tracer_provider.get_tracer("app").start_as_current_span("turn") as turn_span:
        await every_call(storage)
    *spans, app_span = exported.spans()
    assert app_span.name == "turn"
    # each call is a child of the application's span (and the driver's spans nest in it)
    assert {span.parent.span_id for span in spans if span.parent} == {
        turn_span.get_span_context().span_id
    }
    assert all(span.parent for span in spans)
    system = "memory" if isinstance(storage, MemoryStorage) else "postgresql"
    assert {span.name for span in spans} == {f"ctxstore.{name}" for name in EVERY_CALL}
    session_hash = exported.active.pseudonym(SESSION)
    user_hash = exported.active.pseudonym(USER)
    for span in spans:
        attributes = dict(span.attributes or {})
        assert attributes["db.system.name"] == system
        assert attributes["ctxstore.result"] == "ok"
        assert attributes["ctxstore.retries"] == 0
        assert span.status.status_code is StatusCode.UNSET
        assert span.kind is (SpanKind.INTERNAL if system == "memory" else SpanKind.CLIENT)
        subject = attributes.get("ctxstore.session.hash", attributes.get("ctxstore.user.hash"))
        assert subject in {session_hash, user_hash}, attributes
    assert_no_id_in_clear(spans)
    for name in EVERY_CALL:
        point = exported.value(
            "ctxstore.operation.duration", db_operation_name=name, ctxstore_result="ok"
        )
        assert point.count == 1  # each call once, timed
        assert point.sum > 0


async def test_a_conflict_is_counted_and_is_no_error(
    pg_storage: PostgresStorage, exported: Exported
) -> None:
    await pg_storage.append(SESSION, turn())
    for _ in range(2):
        with pytest.raises(ConflictError):
            await pg_storage.append(SESSION, turn(), expected_version=7)
    with pytest.raises(ConflictError):
        await pg_storage.save_state(SESSION, {"stage": "intake"}, expected_version=3)
    conflicted = [s for s in exported.spans() if s.attributes["ctxstore.result"] == "conflict"]
    assert [s.name for s in conflicted] == ["ctxstore.append"] * 2 + ["ctxstore.save_state"]
    for span in conflicted:
        assert span.attributes["error.type"] == "ConflictError"
        assert span.status.status_code is StatusCode.UNSET  # expected under optimistic locking
        assert span.events == ()  # no exception event: its message quotes the session id
    assert exported.value("ctxstore.conflicts", db_operation_name="append").value == 2
    assert exported.value("ctxstore.conflicts", db_operation_name="save_state").value == 1
    assert_no_id_in_clear(exported.spans())


async def test_a_failure_is_an_error_span_naming_the_class_only(
    proxied: tuple[TcpProxy, URL], exported: Exported
) -> None:
    proxy, url = proxied
    async with PostgresStorage.from_url(url, operation_timeout=5) as storage:
        await storage.save(SESSION, turn())
        proxy.refuse()
        with pytest.raises(StorageUnavailableError):
            await storage.load(SESSION)
    failed = exported.spans()[-1]
    assert failed.name == "ctxstore.load"
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description is None  # the message could quote an id
    assert failed.attributes["error.type"] == "StorageUnavailableError"
    assert failed.attributes["ctxstore.result"] == "error"
    assert failed.attributes["ctxstore.retries"] == 1  # a dead connection: read once more
    assert_no_id_in_clear(exported.spans())
    errors = exported.value(
        "ctxstore.operation.duration", db_operation_name="load", ctxstore_result="error"
    )
    assert errors.count == 1


class CutOnce(TcpProxy):
    """Cuts the connection that sends the next query (its socket looked alive), then
    forwards again: a connection that died between two calls."""

    def cut_next(self) -> None:
        self.mode = "refuse"  # existing connections stay open until they send something

    async def _pump(
        self, source: asyncio.StreamReader, target: asyncio.StreamWriter, *, replies: bool = False
    ) -> None:
        with contextlib.suppress(ConnectionError, OSError, asyncio.CancelledError):
            while data := await source.read(65536):
                if self.mode == "refuse":
                    self.mode = "forward"
                    return
                target.write(data)
                await target.drain()


async def test_a_read_retried_on_a_dead_connection_says_so(
    database_url: URL, exported: Exported
) -> None:
    proxy = CutOnce(**socket_target(database_url))
    url = through(await proxy.start(), database_url)
    try:  # no ping at checkout: the read meets the cut, and is retried
        async with PostgresStorage.from_url(url) as storage:
            await storage.save(SESSION, turn())
            proxy.cut_next()
            assert await storage.load(SESSION) == turn()
            assert storage.read_retries == 1
    finally:
        await proxy.stop()
    load = exported.spans()[-1]
    assert load.name == "ctxstore.load" and load.attributes["ctxstore.result"] == "ok"
    assert load.attributes["ctxstore.retries"] == 1
    assert load.attributes["ctxstore.retry.reasons"] == ("connection",)
    counted = exported.value(
        "ctxstore.retries", ctxstore_retry_reason="connection", db_operation_name="load"
    )
    assert counted.value == 1


async def test_a_write_resealed_after_a_key_erased_elsewhere_counts_a_retry(
    database_url: URL, exported: Exported
) -> None:
    encryption = Encryption(Keyring({"k1": os.urandom(32)}))
    async with (
        PostgresStorage.from_url(database_url, encryption=encryption) as sealed,
        PostgresStorage.from_url(database_url, encryption=encryption) as other,
    ):
        await sealed.save("before", turn(), user_id=USER)
        await other.erase_user(USER)  # sealed still caches the user's destroyed key
        await sealed.append(SESSION, turn(), user_id=USER)
    append = next(s for s in exported.spans() if s.name == "ctxstore.append")
    assert append.attributes["ctxstore.result"] == "ok"
    assert append.attributes["ctxstore.retries"] == 1
    assert append.attributes["ctxstore.retry.reasons"] == ("destroyed_key",)
    counted = exported.value(
        "ctxstore.retries", ctxstore_retry_reason="destroyed_key", db_operation_name="append"
    )
    assert counted.value == 1


async def test_the_pool_reports_connections_in_use_and_callers_waiting(
    database_url: URL, exported: Exported
) -> None:
    settings = EngineSettings(pool_size=1)
    async with PostgresStorage.from_url(database_url, settings=settings) as storage:
        await storage.save(SESSION, turn())
        url = storage.engine.url  # host:port/database (docs/telemetry.md); no user
        pool = f"{url.host or 'local'}:{url.port or 5432}/{url.database}"

        def gauges() -> tuple[int, int]:
            labels = {"db_client_connection_pool_name": pool}
            return (
                exported.value("ctxstore.pool.in_use", **labels).value,
                exported.value("ctxstore.pool.waiting", **labels).value,
            )

        assert gauges() == (0, 0)
        async with storage.driver():  # the pool's one connection, held
            loads = [asyncio.create_task(storage.load(SESSION)) for _ in range(3)]
            for _ in range(200):  # until the three queue (a few loop turns)
                if gauges()[1] == 3:
                    break
                await asyncio.sleep(0.01)
            assert gauges() == (1, 3)
        assert [len(found) for found in await asyncio.gather(*loads)] == [1, 1, 1]
        assert gauges() == (0, 0)


async def test_a_fallback_reports_its_mode(
    proxied: tuple[TcpProxy, URL], exported: Exported
) -> None:
    proxy, url = proxied
    journal = f"telemetry-{uuid.uuid4().hex[:8]}"
    primary = PostgresStorage.from_url(url, operation_timeout=5)
    async with FallbackStorage(primary, MemoryStorage(), journal_name=journal) as fallback:

        def modes() -> dict[str, int]:
            return {
                mode: exported.value(
                    "ctxstore.fallback.state",
                    ctxstore_fallback_journal=journal,
                    ctxstore_fallback_mode=mode,
                ).value
                for mode in telemetry.MODES
            }

        await fallback.append(SESSION, turn())
        assert modes() == {"healthy": 1, "degraded": 0, "recovering": 0}
        proxy.refuse()
        await fallback.append(SESSION, turn("still here"))  # served by the secondary
        assert modes() == {"healthy": 0, "degraded": 1, "recovering": 0}
        proxy.forward()
        await fallback.reconcile()
        assert modes() == {"healthy": 1, "degraded": 0, "recovering": 0}
        for figure in ("ctxstore.fallback.journal_at_risk", "ctxstore.fallback.lost"):
            # a journal in this process: not "at risk" (it is lost with the process)
            assert exported.value(figure, ctxstore_fallback_journal=journal).value == 0
        assert await fallback.load(SESSION) == [*turn(), *turn("still here")]
    spans = exported.spans()
    refused = [s for s in spans if s.attributes["ctxstore.result"] == "error"]
    assert refused and refused[0].attributes["db.system.name"] == "postgresql"
    served = [s for s in spans if s.attributes["db.system.name"] == "memory"]
    assert any(s.name == "ctxstore.append" for s in served)
    assert_no_id_in_clear(spans)


async def test_a_stream_closed_early_is_no_error(exported: Exported) -> None:
    async with MemoryStorage() as storage:
        await storage.save(SESSION, [*turn("one"), *turn("two")])
        stream = storage.iter_messages(SESSION, batch_size=1)
        assert (await anext(stream)).content == "one"
        await stream.aclose()
    reader = exported.spans()[-1]
    assert reader.name == "ctxstore.reader"
    assert reader.attributes["ctxstore.result"] == "ok"
    assert reader.status.status_code is StatusCode.UNSET


async def test_off_means_no_span(exported: Exported) -> None:
    telemetry.disable()
    async with MemoryStorage() as storage:
        await storage.append(SESSION, turn())
        assert await storage.load(SESSION) == turn()
    assert exported.spans() == []
    assert exported.points("ctxstore.operation.duration") == []


def test_a_configured_key_is_stable_and_bad_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = os.urandom(16)
    try:
        first = telemetry.enable(key=key).pseudonym(SESSION)
        monkeypatch.setenv(telemetry.KEY_ENV, key.hex())
        configured = load_settings().telemetry_key_bytes
        assert telemetry.enable(key=configured).pseudonym(SESSION) == first
        monkeypatch.delenv(telemetry.KEY_ENV)
        assert telemetry.enable().pseudonym(SESSION) != first  # random per process
        with pytest.raises(ConfigurationError, match="at least 16 bytes"):
            telemetry.enable(key=b"short")
        with pytest.raises(ConfigurationError, match="at least 16 bytes"):
            telemetry.enable(key="a text, not bytes, long enough")  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="must have get_tracer"):
            telemetry.enable(tracer_provider="stdout")  # type: ignore[arg-type]
        monkeypatch.setenv(telemetry.KEY_ENV, "not-hex-SECRETVALUE")
        with pytest.raises(ConfigurationError, match="hex") as refused:
            load_settings()
        assert "SECRETVALUE" not in str(refused.value)
    finally:
        telemetry.disable()


def test_the_environment_switches_it_on_and_refuses_a_typo(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        monkeypatch.setenv(telemetry.ENV, "maybe")
        with pytest.raises(ConfigurationError, match="CTXSTORE_TELEMETRY"):
            load_settings()
        monkeypatch.setenv(telemetry.ENV, "1")
        MemoryStorage()
        assert telemetry.active is None  # a store never reads the environment
        telemetry.from_settings(load_settings())  # what an entry point does
        assert telemetry.active is not None
    finally:
        telemetry.disable()


def test_enabling_without_opentelemetry_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if not installed
    with pytest.raises(ConfigurationError, match=r"ctxstore\[telemetry\]"):
        telemetry.enable()
    assert telemetry.active is None


def test_off_by_default_and_opentelemetry_never_imported() -> None:
    script = (
        "import asyncio, sys\n"
        "from ctxstore import MemoryStorage, Message, telemetry\n"
        "async def main():\n"
        "    async with MemoryStorage() as s:\n"
        "        await s.append('s', [Message(role='user', content='hi')])\n"
        "        assert len(await s.load('s')) == 1\n"
        "asyncio.run(main())\n"
        "print(telemetry.active is None, 'opentelemetry' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXSTORE_TELEMETRY")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]
