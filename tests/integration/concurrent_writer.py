"""A process of concurrent writers for the cross-process ContextManager test.

Run as: python -m tests.integration.concurrent_writer URL SESSION PROCESS WRITERS TURNS
Prints the number of successful writes (every failure would end the process).
"""

from __future__ import annotations

import asyncio
import sys

from ctxstore import ContextManager, Message, PostgresStorage


def turn_messages(process: int, writer: int, turn: int) -> list[Message]:
    tag = {"process": process, "writer": writer, "turn": turn}
    return [
        Message(role="user", content=f"p{process} w{writer} 问题 {turn}", metadata=tag),
        Message(role="assistant", content=f"p{process} w{writer} 回答 {turn}", metadata=tag),
    ]


async def run_writers(
    manager: ContextManager, session_id: str, process: int, writers: int, turns: int
) -> int:
    async def writer(index: int) -> int:
        written = 0
        for turn in range(turns):
            await manager.add_messages(session_id, turn_messages(process, index, turn))
            written += 1
        return written

    return sum(await asyncio.gather(*(writer(index) for index in range(writers))))


async def main(url: str, session_id: str, process: int, writers: int, turns: int) -> None:
    async with PostgresStorage.from_url(url) as storage:
        manager = ContextManager(storage)
        written = await run_writers(manager, session_id, process, writers, turns)
    print(written)


if __name__ == "__main__":
    url, session, process, writers, turns = sys.argv[1:6]
    asyncio.run(main(url, session, int(process), int(writers), int(turns)))
