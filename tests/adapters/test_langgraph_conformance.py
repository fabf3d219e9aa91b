"""LangGraph's own conformance suite for checkpointers, run on CtxstoreSaver over PostgreSQL.

``langgraph-checkpoint-conformance`` checks every base capability (put, put_writes,
get_tuple, list, delete_thread) and every extended one a saver overrides (delete_for_runs,
copy_thread, prune); the report is printed, and every capability must pass in full.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import URL

pytest.importorskip("langgraph.checkpoint.conformance", reason="needs the dev extra")

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from ctxstore.adapters.langgraph import CtxstoreSaver
from ctxstore.storage.postgres import PostgresStorage


async def test_every_capability_of_the_conformance_suite_passes(module_database_url: URL) -> None:
    @checkpointer_test(name="CtxstoreSaver")
    async def ctxstore_saver() -> AsyncIterator[CtxstoreSaver]:
        async with PostgresStorage.from_url(module_database_url) as storage:
            yield CtxstoreSaver(storage)

    report = await validate(ctxstore_saver, progress=ProgressCallbacks.verbose())
    report.print_report()
    assert report.passed_all_base(), "a base capability failed (see the report above)"
    assert {name for name, result in report.results.items() if result.detected} == {
        c.value for c in ALL_CAPABILITIES
    }, "every extended capability is implemented, so detected"
    assert report.passed_all(), "an extended capability failed (see the report above)"
    assert all(r.tests_failed == 0 and r.tests_passed > 0 for r in report.results.values())
