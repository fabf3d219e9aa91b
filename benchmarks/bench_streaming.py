"""Peak memory of reading a session at the limit: load() against iter_messages().

One session holds ``Limits.max_messages`` (200,000) messages.  A fresh process reads it
once with ``load`` (every message at once) and once with ``iter_messages`` (batches of
1,000, from one snapshot); each reports its peak RSS growth (VmHWM after a reset) and
time.  Linux only (/proc/self/clear_refs).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from sqlalchemy import URL

from benchmarks.common import bench_database, table
from ctxstore import Limits, Message, PostgresStorage

MESSAGES = Limits().max_messages
CHUNK = 5_000

PROBE = r"""
import asyncio, json, sys, time
from ctxstore import PostgresStorage

def status(field):
    with open("/proc/self/status") as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith(field))

async def main(url, kind):
    async with PostgresStorage.from_url(url, operation_timeout=600) as storage:
        await storage.version("big")
        with open("/proc/self/clear_refs", "w") as control:
            control.write("5")  # VmHWM := VmRSS
        before = status("VmRSS:")
        started = time.perf_counter()
        if kind == "load":
            count = len(await storage.load("big"))
        else:
            count = 0
            async for _ in storage.iter_messages("big", batch_size=1000):
                count += 1
        seconds = time.perf_counter() - started
        print(json.dumps({"count": count, "peak_mib": (status("VmHWM:") - before) / 1024,
                          "seconds": seconds}))

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


async def fill(url: URL) -> None:
    async with PostgresStorage.from_url(url, operation_timeout=600) as storage:
        for start in range(0, MESSAGES, CHUNK):
            await storage.append(
                "big",
                [
                    Message(role="user" if i % 2 == 0 else "assistant", content=f"消息 {i} " * 8)
                    for i in range(start, start + CHUNK)
                ],
            )


def probe(url: URL, kind: str) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-c", PROBE, url.render_as_string(hide_password=False), kind],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(output)
    return result


def main() -> None:
    with bench_database() as url:
        asyncio.run(fill(url))
        rows = []
        for kind in ("load", "iter_messages"):
            result = probe(url, kind)
            rows.append(
                (
                    kind,
                    f"{result['count']:,.0f}",
                    f"{result['peak_mib']:.1f}",
                    f"{result['seconds']:.2f}",
                )
            )
    print(f"\nreading a session of {MESSAGES:,} messages (the default limit)")
    print(table(rows, ("reader", "messages", "peak RSS growth MiB", "seconds")))


if __name__ == "__main__":
    main()
