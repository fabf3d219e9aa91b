"""``export-user`` and ``import-user``: everything held about a user as one bundle file
(ctxstore.storage.bundle), written and restored through the library."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url, open_keyed_store

if TYPE_CHECKING:
    from ctxstore.settings import Settings


def register(commands: Commands) -> None:
    export = commands.add_parser(
        "export-user",
        help="write everything held about a user (profile, sessions, messages, summaries, "
        "states) to one bundle file, in plaintext: it needs the master keys",
    )
    export.add_argument("user_id", help="the user id the sessions were saved with")
    export.add_argument("--out", required=True, help="the bundle file to write (JSON lines)")
    export.set_defaults(func=export_user)
    imported = commands.add_parser(
        "import-user",
        help="restore an export-user bundle into this database, exactly (nothing is written "
        "if it is damaged or the user already exists)",
    )
    imported.add_argument("file", help="the bundle file export-user wrote")
    imported.set_defaults(func=import_user)
    for sub in (export, imported):
        add_database_url(sub)


def export_user(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.progress import Progress  # noqa: PLC0415

    async def run() -> str:
        started = time.monotonic()
        digest, size, last = hashlib.sha256(), 0, b""
        progress = Progress(f"export {args.user_id}", None)
        async with open_keyed_store(args, settings) as storage:
            with open(args.out, "wb") as out:  # noqa: ASYNC230 - one command, nothing else runs
                async for chunk in storage.export_user(args.user_id):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
                    last = chunk
                    progress.advance(chunk.count(b"\n"))
        progress.finish()
        counts = json.loads(last.splitlines()[-1])["counts"]  # the manifest
        return (
            f"exported user {args.user_id!r} to {args.out}: {counts['session']:,} sessions, "
            f"{counts['message']:,} messages, {size:,} bytes in "
            f"{time.monotonic() - started:.1f} s, sha256 {digest.hexdigest()}"
        )

    print(asyncio.run(run()))
    return 0


def import_user(args: argparse.Namespace, settings: Settings) -> int:
    async def run() -> str:
        async with open_keyed_store(args, settings) as storage:
            with open(args.file, "rb") as bundle:  # noqa: ASYNC230 - one command
                receipt = await storage.import_user(iter(lambda: bundle.read(1 << 20), b""))
        return receipt.summary()

    print(asyncio.run(run()))
    return 0
