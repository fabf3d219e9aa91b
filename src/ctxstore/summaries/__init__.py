"""Summaries in the background: a job per session, leased to one worker at a time.

``SummarizeInBackground`` (a compression strategy) enqueues; ``SummaryWorker`` (the
``ctxstore summarize-worker`` command, or in-process) claims and runs your summarizer.
"""

from __future__ import annotations

from ctxstore.summaries.queue import Lease, QueueCounts, SummaryQueue
from ctxstore.summaries.strategy import SummarizeInBackground
from ctxstore.summaries.worker import Backoff, SummaryWorker, WorkerStats

__all__ = [
    "Backoff",
    "Lease",
    "QueueCounts",
    "SummarizeInBackground",
    "SummaryQueue",
    "SummaryWorker",
    "WorkerStats",
]
