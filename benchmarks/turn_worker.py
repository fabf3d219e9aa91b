"""One side of bench_turn: a process that times contenders on command, one sample at a time.

bench_turn starts one worker per ctxstore checkout (run by that checkout's own Python, so
its own ``ctxstore`` is imported) and one for the peers (langchain-postgres and the raw
floor), then drives them round by round over stdin/stdout, one JSON object a line.  So
the code before and after a redesign is timed in the same minutes on the same server.

This module imports only ctxstore's public API (``Message``, ``PostgresStorage``,
``ContextManager``), asyncpg and psycopg: whatever a redesign moves inside ctxstore, an
old and a new checkout both run it.  Schema migrations are the checkout's own CLI
(``ctxstore db upgrade``), run by bench_turn.

Commands: ``{"op": "setup", "url": ..., "ctxstore_url": ..., "kind": "ctxstore" |
"peers"}`` answers the
contender names by group; ``{"op": "run", "name": ..., "count": n}`` answers n
samples in microseconds; ``{"op": "close"}`` ends the process.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg

Action = Callable[[], Awaitable[object]]
STORED = 1_000  # messages in a session a turn is appended to
LARGE = 10_000  # the larger load, and the sessions the two saves extend
# The columns bench_core and bench_compare fetch raw: what a load returns.
RAW_COLUMNS = "seq, role, content, turn_id, ts, ts_offset, name, metadata, digest, format_version"


def text(i: int) -> str:
    """A message of a knee consultation's length (as bench_compare's)."""
    if i % 2 == 0:
        return f"第{i}条：膝盖走路时有下坠感，上下楼梯更明显，大约一周了。"
    return f"第{i}条：是否伴随疼痛或肿胀？之前有没有扭伤过？请描述一下具体的感觉。"


class Timed:
    """A contender: ``prepare`` runs untimed before each timed ``run``."""

    def __init__(self, run: Action, prepare: Action | None = None) -> None:
        self.run, self.prepare = run, prepare

    async def sample(self) -> float:
        if self.prepare is not None:
            await self.prepare()
        started = time.perf_counter()
        await self.run()
        return (time.perf_counter() - started) * 1e6


class CtxstoreSide:
    """The contenders of one ctxstore checkout, on a database its own migrations made."""

    async def setup(self, url: str, ctxstore_url: str) -> dict[str, list[str]]:
        from ctxstore import ContextManager, Message, PostgresStorage  # noqa: PLC0415

        self.message = Message
        self.storage = PostgresStorage.from_url(ctxstore_url)
        self.manager = ContextManager(self.storage)
        self.raw = await asyncpg.connect(url)
        self.n = 0
        for sid, size in (
            ("append", STORED),
            ("manager", STORED),
            ("load-1000", STORED),
            ("load-10000", LARGE),
            ("plain", LARGE),
            ("loaded", LARGE),
        ):
            await self.storage.save(sid, self.history(size))
        columns = await self.raw.fetchval(
            "SELECT array_agg(column_name::text) FROM information_schema.columns"
            " WHERE table_name = 'messages' AND table_schema = current_schema()"
        )
        wanted = [c.strip() for c in RAW_COLUMNS.split(",")]
        # After a schema change, the columns that are still there, else all but the key.
        chosen = [c for c in wanted if c in columns] if set(wanted) <= set(columns) else None
        listed = ", ".join(chosen or [c for c in columns if c != "session_id"])
        self.raw_select = f"SELECT {listed} FROM messages WHERE session_id = $1 ORDER BY seq"
        import ctxstore  # noqa: PLC0415

        return {
            "ctxstore": [ctxstore.__file__ or ""],
            "turn": ["append", "add_messages"],
            # apart: what a 10,000-row load leaves behind slows whatever runs next
            "load 1,000": ["load 1,000", "raw fetch 1,000"],
            "load 10,000": ["load 10,000", "raw fetch 10,000"],
            "save": ["save plain list 10,000", "save History 10,000"],
        }

    def history(self, count: int) -> list[Any]:
        return [
            self.message(
                role="user" if i % 2 == 0 else "assistant",
                content=text(i),
                turn_id=f"turn_{i // 2:05d}",
                timestamp="2026-11-29T08:15:02.123+08:00",
            )
            for i in range(count)
        ]

    def turn(self) -> list[Any]:
        self.n += 1
        return [
            self.message(role="user", content=text(self.n), turn_id=f"new_{self.n}"),
            self.message(role="assistant", content=text(self.n + 1), turn_id=f"new_{self.n}"),
        ]

    def contenders(self) -> dict[str, Timed]:
        loaded: dict[str, Any] = {}

        async def append() -> None:
            await self.storage.append("append", self.turn())

        async def add_messages() -> None:
            await self.manager.add_messages("manager", self.turn())

        def load(sid: str, size: int) -> Action:
            async def run() -> None:
                assert len(await self.storage.load(sid)) >= size

            return run

        def fetch(sid: str, size: int) -> Action:
            async def run() -> None:
                assert len(await self.raw.fetch(self.raw_select, sid)) >= size

            return run

        def load_into(sid: str) -> Action:
            async def run() -> None:
                loaded[sid] = await self.storage.load(sid)

            return run

        async def save_plain() -> None:
            messages = loaded["plain"] + self.turn()  # a History + a list is a plain list
            assert type(messages) is list
            await self.storage.save("plain", messages)

        async def save_history() -> None:
            loaded["loaded"].extend(self.turn())
            await self.storage.save("loaded", loaded["loaded"])

        return {
            "append": Timed(append),
            "add_messages": Timed(add_messages),
            "load 1,000": Timed(load("load-1000", STORED)),
            "raw fetch 1,000": Timed(fetch("load-1000", STORED)),
            "load 10,000": Timed(load("load-10000", LARGE)),
            "raw fetch 10,000": Timed(fetch("load-10000", LARGE)),
            "save plain list 10,000": Timed(save_plain, load_into("plain")),
            "save History 10,000": Timed(save_history, load_into("loaded")),
        }

    async def close(self) -> None:
        await self.storage.close()
        await self.raw.close()


class PeersSide:
    """langchain-postgres ``add_messages`` and the floor: one round trip committing a
    prepared 1-row INSERT (asyncpg, autocommit), on a database of their own."""

    async def setup(self, url: str, ctxstore_url: str) -> dict[str, list[str]]:
        import psycopg  # noqa: PLC0415
        from langchain_core.messages import AIMessage, HumanMessage  # noqa: PLC0415
        from langchain_postgres import PostgresChatMessageHistory  # noqa: PLC0415

        self.human, self.ai = HumanMessage, AIMessage
        self.pg = await psycopg.AsyncConnection.connect(url, autocommit=True)
        await PostgresChatMessageHistory.acreate_tables(self.pg, "lc_messages")
        self.lc = PostgresChatMessageHistory(
            "lc_messages", str(uuid.uuid4()), async_connection=self.pg
        )
        await self.lc.aadd_messages(
            [(HumanMessage if i % 2 == 0 else AIMessage)(content=text(i)) for i in range(STORED)]
        )
        self.raw = await asyncpg.connect(url)
        await self.raw.execute(
            "CREATE TABLE floor_rows (session_id text, seq int, content text,"
            " PRIMARY KEY (session_id, seq))"
        )
        self.n = 0
        return {"turn": ["langchain add_messages", "floor"]}

    def contenders(self) -> dict[str, Timed]:
        async def langchain() -> None:
            self.n += 1
            await self.lc.aadd_messages(
                [self.human(content=text(self.n)), self.ai(content=text(self.n + 1))]
            )

        async def floor() -> None:
            self.n += 1
            await self.raw.execute(
                "INSERT INTO floor_rows VALUES ($1, $2, $3)", "floor", self.n, text(self.n)
            )

        return {"langchain add_messages": Timed(langchain), "floor": Timed(floor)}

    async def close(self) -> None:
        await self.pg.close()
        await self.raw.close()


async def serve() -> None:
    # Answers go to the real stdout; anything a library prints goes to stderr.
    answers, sys.stdout = sys.stdout, sys.stderr
    loop = asyncio.get_running_loop()
    side: CtxstoreSide | PeersSide | None = None
    contenders: dict[str, Timed] = {}
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        command = json.loads(line)
        answer: Any = None
        if command["op"] == "setup":
            side = CtxstoreSide() if command["kind"] == "ctxstore" else PeersSide()
            answer = await side.setup(command["url"], command["ctxstore_url"])
            contenders = side.contenders()
        elif command["op"] == "run":
            contender = contenders[command["name"]]
            answer = [await contender.sample() for _ in range(command["count"])]
        elif command["op"] == "close":
            if side is not None:
                await side.close()
            answer = "closed"
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
        if command["op"] == "close":
            return


if __name__ == "__main__":
    asyncio.run(serve())
