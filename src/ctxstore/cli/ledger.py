"""``ctxstore ledger verify | list | show``: the ledger of Context Contracts, checked and
read for an incident review (ctxstore.commands.ledger, storage/ledger.py)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import TYPE_CHECKING

from ctxstore.cli.options import Commands, add_database_url, open_keyed_store

if TYPE_CHECKING:
    from ctxstore.settings import Settings
    from ctxstore.storage.ledger import LedgerEntry


def register(commands: Commands) -> None:
    ledger = commands.add_parser(
        "ledger", help="the ledger of Context Contracts: verify its chains, read an entry"
    )
    actions = ledger.add_subparsers(dest="ledger_action", required=True, metavar="ACTION")
    verify = actions.add_parser(
        "verify", help="check every chain (or one session's), naming each tampering found"
    )
    which = verify.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", help="check this session's chain")
    which.add_argument("--all", action="store_true", help="check every chain")
    verify.add_argument("--quiet", action="store_true", help="no progress bar")
    verify.set_defaults(func=verify_ledger)
    listing = actions.add_parser("list", help="a session's entries, oldest first")
    listing.add_argument("session_id", help="the session whose entries to list")
    listing.set_defaults(func=list_entries)
    show = actions.add_parser(
        "show", help="one entry's provenance, then the exact contract the call received"
    )
    show.add_argument("session_id", help="the session the entry is in")
    show.add_argument("turn_id", help="the turn (its last entry, unless --entry)")
    show.add_argument("--entry", type=int, help="this entry of the session instead")
    show.set_defaults(func=show_entry)
    for sub in (verify, listing, show):
        add_database_url(sub)


def verify_ledger(args: argparse.Namespace, settings: Settings) -> int:
    from ctxstore.commands import ledger  # noqa: PLC0415 - asyncpg

    async def run() -> ledger.LedgerVerification:
        async with open_keyed_store(args, settings) as storage:
            return await ledger.verify_ledger(
                storage, session_id=args.session, show_progress=not args.quiet
            )

    result = asyncio.run(run())
    for finding in result.findings:
        print(finding.line())
    print(result.summary())
    return 0 if result.intact else 1


def list_entries(args: argparse.Namespace, settings: Settings) -> int:
    async def run() -> list[str]:
        async with open_keyed_store(args, settings) as storage:
            entries = await storage.list_contracts(args.session_id)
        return [_line(entry) for entry in entries] or [f"no entry for {args.session_id}"]

    print("\n".join(asyncio.run(run())))
    return 0


def _line(entry: LedgerEntry) -> str:
    p = entry.provenance
    response = f", response {entry.response_id}" if entry.response_id else ""
    return (
        f"{entry.entry_seq:>5}  {entry.recorded_at:%Y-%m-%d %H:%M:%S.%f UTC}  turn {p.turn_id}  "
        f"{p.token_count:,} tokens ({p.token_encoding}), model {p.model or '-'}{response}"
    )


def show_entry(args: argparse.Namespace, settings: Settings) -> int:
    async def run() -> str | None:
        async with open_keyed_store(args, settings) as storage:
            found = await storage.read_contract(args.session_id, args.turn_id, entry_seq=args.entry)
        if found is None:
            return None
        p, entry = found.entry.provenance, found.entry
        return "\n".join(
            [
                f"session {p.session_id}, entry {entry.entry_seq}, turn {p.turn_id}",
                f"recorded at {entry.recorded_at:%Y-%m-%d %H:%M:%S.%f UTC}",
                f"model {p.model or '-'}, {p.token_count:,} tokens ({p.token_encoding})",
                f"built from session version {p.session_version}, summary version "
                f"{p.summary_version}, state version {p.state_version}, profile version "
                f"{'-' if p.profile_version is None else p.profile_version}",
                f"response {entry.response_id or '-'}",
                f"digest {entry.digest}",
                "",
                found.text,
            ]
        )

    shown = asyncio.run(run())
    if shown is None:
        print(f"no entry for turn {args.turn_id} of session {args.session_id}", file=sys.stderr)
        return 1
    print(shown)
    return 0
