"""``ctxstore summarize-worker``: run your summarizer for the summary jobs of a database."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import signal
import sys
import time
from typing import TYPE_CHECKING, Any

from ctxstore.cli.maintenance import open_store
from ctxstore.cli.options import Commands, add_database_url, positive_int
from ctxstore.errors import ConfigurationError

if TYPE_CHECKING:
    from ctxstore.context.compression import Summarizer
    from ctxstore.settings import Settings


def positive_seconds(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = 0.0
    if not 0 < number < 86_400:
        raise argparse.ArgumentTypeError(f"must be seconds between 0 and 86400, not {value!r}")
    return number


def register(commands: Commands) -> None:
    worker = commands.add_parser(
        "summarize-worker",
        help="run your summarizer for the summary jobs SummarizeInBackground enqueues "
        "(stops gracefully on SIGTERM or Ctrl-C)",
    )
    worker.add_argument(
        "--summarizer",
        help="the async summarizer(messages, previous_summary) -> str, as module:name; "
        "module:name() calls a factory that returns one (e.g. "
        "ctxstore.context.compression:extractive_summarizer())",
    )
    worker.add_argument(
        "--concurrency",
        type=positive_int,
        default=4,
        help="summarizers running at once (default: %(default)s)",
    )
    worker.add_argument(
        "--lease-seconds",
        type=positive_seconds,
        default=60.0,
        help="how long a claimed job stays this worker's without a renewal; renewed every "
        "third of it while the summarizer runs (default: %(default)s)",
    )
    worker.add_argument(
        "--max-attempts",
        type=positive_int,
        default=5,
        help="attempts before a job is dead (default: %(default)s)",
    )
    worker.add_argument(
        "--poll-seconds",
        type=positive_seconds,
        default=1.0,
        help="how often to look for due jobs when idle (default: %(default)s)",
    )
    worker.add_argument(
        "--status",
        action="store_true",
        help="run nothing: print the jobs queued, running and dead, and the oldest's wait",
    )
    worker.add_argument(
        "--requeue-dead",
        action="store_true",
        help="run nothing: give every dead job its attempts back (after fixing the summarizer)",
    )
    add_database_url(worker)
    worker.set_defaults(func=summarize_worker)


def load_summarizer(spec: str) -> Summarizer:
    """``module:name`` (the summarizer) or ``module:name()`` (a factory returning one)."""
    module_name, _, attribute = spec.partition(":")
    call = attribute.endswith("()")
    attribute = attribute.removesuffix("()")
    if not module_name or not attribute.isidentifier():
        raise ConfigurationError(
            f"--summarizer {spec!r}: use module:name or module:name() (a factory)"
        )
    try:
        found: Any = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"--summarizer {spec!r}: {error}") from error
    if call:
        found = found()
    if not (
        inspect.iscoroutinefunction(found) or inspect.iscoroutinefunction(type(found).__call__)
    ):
        raise ConfigurationError(
            f"--summarizer {spec!r} is not an async function of (messages, previous_summary)"
        )
    summarizer: Summarizer = found
    return summarizer


def summarize_worker(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.summaries import SummaryQueue, SummaryWorker  # noqa: PLC0415

    summarizer = None
    if not (args.status or args.requeue_dead):
        if not args.summarizer:
            raise ConfigurationError("summarize-worker needs --summarizer module:name")
        summarizer = load_summarizer(args.summarizer)

    async def run() -> int:
        async with open_store(args, settings) as storage:
            queue = SummaryQueue(storage)
            if args.requeue_dead:
                print(f"requeued {await queue.requeue_dead():,} dead summary jobs")
                return 0
            if summarizer is None:
                counts = await queue.counts()
                print(
                    f"summary jobs: {counts.queued:,} queued, {counts.running:,} running, "
                    f"{counts.dead:,} dead; the oldest to run has waited {counts.oldest:.1f} s"
                )
                return 0
            worker = SummaryWorker(
                queue,
                summarizer,
                concurrency=args.concurrency,
                lease_seconds=args.lease_seconds,
                max_attempts=args.max_attempts,
                poll_seconds=args.poll_seconds,
            )
            started = time.monotonic()
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(signum, stop.set)
            print(
                f"summarize-worker: running {args.summarizer}, {args.concurrency} at a time "
                "(SIGTERM or Ctrl-C stops it after the jobs in flight)",
                file=sys.stderr,
                flush=True,
            )
            await worker.run(stop)
            stats = worker.stats
            print(
                f"summarize-worker stopped after {time.monotonic() - started:.1f} s: "
                f"{stats.summarized:,} summarized, {stats.superseded:,} needed no call, "
                f"{stats.retried:,} retried, {stats.dead:,} dead"
            )
            return 0

    return asyncio.run(run())
