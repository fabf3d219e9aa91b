"""Prometheus metrics of the service (prometheus-client, the reference Python client).

Requests are counted and timed by route template (``/v1/sessions/{session_id}/messages``,
never the path with its ids), method and status.  With several worker processes
``ctxstore serve`` sets ``PROMETHEUS_MULTIPROC_DIR`` and every worker's samples are
summed at scrape time (prometheus-client's multiprocess mode), whichever worker answers.
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
#: Seconds: a turn's append takes milliseconds, a context build of a long session tens.
BUCKETS = (0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Metrics:
    def __init__(self) -> None:
        self._multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        # Multiprocess mode: samples go to files, read back by the collector at scrape.
        registry = None if self._multiprocess else CollectorRegistry(auto_describe=True)
        self._registry = registry
        labels = ("route", "method", "status")
        self._children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}
        self.requests = Counter(
            "ctxstore_http_requests",
            "HTTP requests answered, by route template, method and status",
            labels,
            registry=registry,
        )
        self.duration = Histogram(
            "ctxstore_http_request_duration_seconds",
            "Time from a request's arrival to its response's last byte",
            labels,
            buckets=BUCKETS,
            registry=registry,
        )
        self.conflicts = Counter(
            "ctxstore_http_conflicts",
            "Writes refused for a version conflict (409, 412), by route template",
            ("route",),
            registry=registry,
        )
        self.storage_errors = Counter(
            "ctxstore_http_storage_errors",
            "Requests the storage failed (5xx), by problem type",
            ("type",),
            registry=registry,
        )

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        found = self._children.get(key)
        if found is None:
            # A label set's samples, looked up once: labels() takes a lock and builds its
            # key on every call.  Routes, methods and statuses are few.
            code = str(status)
            found = self._children[key] = (
                self.requests.labels(route, method, code),
                self.duration.labels(route, method, code),
            )
        requests, duration = found
        requests.inc()
        duration.observe(seconds)

    def render(self) -> bytes:
        if self._registry is not None:
            return generate_latest(self._registry)
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return generate_latest(registry)
