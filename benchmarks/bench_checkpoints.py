"""bench_checkpoints: CtxstoreSaver against langgraph-checkpoint-postgres's PostgresSaver.

On threads of 10, 1,000 and 10,000 messages, in one run, contenders round-robin, the
median of TRIALS:

- **write a turn's checkpoint**: ``aput`` of the next checkpoint, whose ``messages``
  channel is the thread's messages plus a user and an assistant message (as
  ``add_messages`` leaves it: the same message objects, two new ones after them), and a
  small ``notes`` channel;
- **read the latest state**: ``aget_tuple`` of the thread (what every ``invoke`` does
  first), by the saver that wrote it;
- **cold read**: the same by a new saver (ctxstore: nothing of the thread held; the peer
  has nothing to hold).

PostgresSaver (AsyncPostgresSaver on one psycopg connection, its own tables made by its
``setup()``) writes the whole ``messages`` list as a new blob at every checkpoint; ctxstore
appends the two new messages to the session and reads the latest state with one version
check while it holds the thread.  Both on one database of $CTXSTORE_BENCH_DATABASE_URL's
server (else the embedded one), dropped after.  Needs the `bench` extra.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from sqlalchemy import URL

from benchmarks.bench_adapters import psycopg_conninfo
from benchmarks.common import bench_database, interleaved_medians, table
from ctxstore import PostgresStorage
from ctxstore.adapters.langgraph import CtxstoreSaver

SIZES = (10, 1_000, 10_000)
TRIALS = int(os.environ.get("CTXSTORE_BENCH_TRIALS", "30"))


def turn(i: int) -> list[BaseMessage]:
    return [
        HumanMessage(
            content=f"Message {i}: my knee feels unstable on stairs. 膝盖不稳。",
            id=str(uuid.uuid4()),
        ),
        AIMessage(content=f"Reply {i}: does it swell after activity?", id=str(uuid.uuid4())),
    ]


class Thread:
    """One thread of a saver: its messages as the graph holds them, and its head."""

    def __init__(self, saver: BaseCheckpointSaver[Any], size: int) -> None:
        self.saver = saver
        self.id = f"bench-{uuid.uuid4().hex[:10]}"
        self.messages: list[BaseMessage] = [m for i in range(size // 2) for m in turn(i)]
        self.step = 0
        self.config: dict[str, Any] = {"configurable": {"thread_id": self.id, "checkpoint_ns": ""}}

    async def put(self) -> None:
        """The next checkpoint: two more messages, the same objects before them."""
        self.step += 1
        if self.step > 1:
            self.messages = [*self.messages, *turn(len(self.messages))]
        checkpoint = empty_checkpoint()
        checkpoint["id"] = str(uuid6(clock_seq=-1))
        checkpoint["channel_values"] = {"messages": self.messages, "notes": f"step {self.step}"}
        versions = {"messages": self.step, "notes": self.step}
        checkpoint["channel_versions"] = versions
        metadata: Any = {"source": "loop", "step": self.step, "parents": {}}
        self.config = await self.saver.aput(self.config, checkpoint, metadata, dict(versions))

    async def read(self, saver: BaseCheckpointSaver[Any] | None = None) -> None:
        found = await (saver or self.saver).aget_tuple(
            {"configurable": {"thread_id": self.id, "checkpoint_ns": ""}}
        )
        assert found is not None and len(found.checkpoint["channel_values"]["messages"]) == len(
            self.messages
        )


async def measure(url: URL) -> list[tuple[str, ...]]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: PLC0415

    rows: list[tuple[str, ...]] = []
    async with (
        PostgresStorage.from_url(url) as storage,
        AsyncPostgresSaver.from_conn_string(psycopg_conninfo(url)) as peer,
    ):
        await peer.setup()
        ours = CtxstoreSaver(storage)
        for size in SIZES:
            mine, theirs = Thread(ours, size), Thread(peer, size)
            await mine.put()
            await theirs.put()
            actions: dict[str, Callable[[], Awaitable[object]]] = {
                "ctxstore write": mine.put,
                "peer write": theirs.put,
            }
            writes = await interleaved_medians(
                actions, TRIALS, progress=f"write, {size:,} messages"
            )
            reads = await interleaved_medians(
                {
                    "ctxstore read": mine.read,
                    "peer read": theirs.read,
                    "ctxstore cold": lambda mine=mine: mine.read(CtxstoreSaver(storage)),
                    "peer cold": theirs.read,
                },
                TRIALS,
                progress=f"read, {size:,} messages",
            )
            for what, ctx, peer_ms in (
                ("write a turn's checkpoint", writes["ctxstore write"], writes["peer write"]),
                ("read the latest state", reads["ctxstore read"], reads["peer read"]),
                ("read it with a new saver", reads["ctxstore cold"], reads["peer cold"]),
            ):
                rows.append(
                    (f"{size:,}", what, f"{ctx:.2f}", f"{peer_ms:.2f}", f"{peer_ms / ctx:.1f}x")
                )
    return rows


def main() -> None:
    with bench_database() as url:
        rows = asyncio.run(measure(url))
    print(
        table(
            rows,
            (
                "messages",
                "operation",
                "ctxstore ms",
                "PostgresSaver ms",
                "PostgresSaver / ctxstore",
            ),
        )
    )


if __name__ == "__main__":
    main()
