"""After an erasure committed (PostgreSQL): ANALYZE and VACUUM of the tables it touched,
and what backups taken before it still hold.

Deleted rows are gone from every query at commit, but PostgreSQL keeps two traces of them:
the table statistics (``pg_stats``: most common values and histogram bounds of user ids,
session ids, complaint text, from a sample taken before) and the dead row versions, with
their index entries, until a VACUUM removes them.  ``vacuum_erased`` does both on every
table an erasure deletes from.  It can't run inside a transaction, and only the tables'
owner (or the database's, a superuser; MAINTAIN on PostgreSQL 17+) may run it: the app
role may not (db/roles.py), so the erasure stands and its receipt gives the statement for
the owner to run.  ANALYZE leaves a table it finds empty with the statistics of its last
rows: a superuser clears them (``clear_statistics``), anyone else is told to.

What VACUUM does not do: overwrite the bytes of the removed rows.  Their space is free for
new rows; until those fill it, the data files (and base backups, disk snapshots, WAL
archives) still hold the bytes, sealed under destroyed keys when encryption is on.
docs/threat-model.md, "Erasure epochs", says what that means for backups.
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from ctxstore.db.tables import (
    consultation_state_history,
    consultation_states,
    data_keys,
    graph_channel_values,
    graph_checkpoints,
    graph_writes,
    messages,
    sessions,
    summaries,
    user_profiles,
)
from ctxstore.errors import CtxStoreError
from ctxstore.storage.base import Backups, Erased, Vacuumed
from ctxstore.storage.postgres import sql
from ctxstore.storage.postgres.connection import Connections
from ctxstore.storage.postgres.statement import Driver

#: Every table an erasure deletes from (the sessions' children by cascade), as
#: ``vacuum_erased`` names them.
ERASED_TABLES = tuple(
    table.name
    for table in (
        sessions,
        messages,
        summaries,
        consultation_states,
        consultation_state_history,
        user_profiles,
        data_keys,
        graph_checkpoints,
        graph_channel_values,
        graph_writes,
    )
)

#: What an operator runs when the erasure could not, as the tables' owner.
VACUUM_COMMAND = " ".join(sql.VACUUM_ERASED.text.split()) + ";"
_LEFT = (
    "until it runs, pg_stats and dead row versions (with their index entries) still hold "
    "the erased user's ids and text"
)
_AS_OWNER = (
    f"as the tables' owner (a login granted the owner role), run: {VACUUM_COMMAND} "
    "(or `ctxstore erase-user` again for this user with that login: it erases nothing "
    "more, then vacuums)"
)


async def vacuum_after_erasure(connections: Connections, run: bool) -> Vacuumed:
    """ANALYZE and VACUUM of the erased tables on a pooled connection, outside any
    transaction; what happened.  Never raises a ctxstore error: the erasure stands."""
    if not run:
        return Vacuumed(False, f"not run (vacuum=False): {_LEFT}", _AS_OWNER)
    try:
        async with connections.call("vacuum after erasure") as driver:
            allowed = await sql.VACUUM_PRIVILEGES.fetchrow(driver, tables=list(ERASED_TABLES))
            if allowed["refused"]:
                refused = ", ".join(allowed["refused"])
                return Vacuumed(
                    False,
                    f"not run: this login may not VACUUM or ANALYZE {refused} (only their "
                    "owner, the database's owner, a superuser or, on PostgreSQL 17+, a role "
                    f"granted MAINTAIN may; the app role is none of these); {_LEFT}",
                    _AS_OWNER,
                )
            warnings = await _vacuum(driver)
            stale = await sql.STATISTICS_OF_EMPTIED_TABLES.fetch(driver, tables=list(ERASED_TABLES))
            stale_tables = [row["name"] for row in stale]
            if stale_tables and allowed["superuser"]:
                await sql.CLEAR_STATISTICS.execute(driver, tables=stale_tables)
                stale_tables = []
    except CtxStoreError as error:
        return Vacuumed(False, f"did not complete ({error}); {_LEFT}", _AS_OWNER)
    if warnings:
        return Vacuumed(
            False,
            f"ran, but PostgreSQL skipped or warned: {'; '.join(warnings)}; {_LEFT}",
            _AS_OWNER,
        )
    done = f"ANALYZE and VACUUM ran on {', '.join(ERASED_TABLES)}"
    if stale_tables:
        emptied = ", ".join(stale_tables)
        return Vacuumed(
            False,
            f"{done}, but the erasure emptied {emptied}, and ANALYZE keeps the statistics "
            "of a table it finds empty: their pg_stats still describe their last rows (the "
            "erased user's) until rows come back and are analyzed",
            "as a superuser, run: DELETE FROM pg_statistic WHERE starelid = "
            f"ANY({_array(stale_tables)}::regclass[]);",
        )
    return Vacuumed(
        True,
        f"{done}: pg_stats and dead row versions no longer hold the erased rows (their "
        "bytes stay in the tables' free space until new rows overwrite them)",
    )


async def _vacuum(driver: Driver) -> list[str]:
    """Run vacuum_erased; the warnings PostgreSQL sent meanwhile (a table skipped)."""
    warnings: list[str] = []

    def listen(_connection: Any, message: Any) -> None:
        severity = getattr(message, "severity_en", None) or getattr(message, "severity", "")
        if severity == "WARNING":
            warnings.append(str(getattr(message, "message", message)))

    driver.add_log_listener(listen)
    try:
        await sql.VACUUM_ERASED.execute(driver)
        await asyncio.sleep(0)  # the listener is called soon, not at once
    finally:
        driver.remove_log_listener(listen)
    return warnings


def _array(names: list[str]) -> str:
    return "'{" + ",".join(names) + "}'"


def backups_after_erasure(
    erased: Erased, erased_at: datetime, retention: timedelta | None
) -> Backups:
    """What backups taken before ``erased_at`` hold, and until when (by ``retention``:
    how long backups are kept; None: not known)."""
    before = f"Backups taken before {erased_at.isoformat(timespec='seconds')}"
    kinds = "(pg_dump, base backups, WAL archives, disk snapshots)"
    if erased.master_key_ids:
        masters = ", ".join(repr(key_id) for key_id in erased.master_key_ids)
        keys = "data key" if erased.data_keys == 1 else "data keys"
        held = (
            f"{before} {kinds} still hold the user's sealed rows and the "
            f"{erased.data_keys:,} {keys} the erasure destroyed, wrapped under master key "
            f"{masters} (in older backups: under the master key current then): the sealed "
            "rows stay readable in them while that master key exists, the rest of the "
            "user's rows (ids, times and whatever else is stored in plaintext) while the "
            "backups do"
        )
        ending = (
            'destroy the master key per docs/threat-model.md, "Erasure epochs", and no '
            "copy can open them"
        )
    elif erased.session_ids or erased.profile:
        held = (
            f"{before} {kinds} still hold the user's rows in plaintext (no data key of the "
            "user existed: nothing this erasure removed was sealed), readable by anyone "
            "who holds a copy"
        )
        ending = "only deleting those backups removes them"
    else:
        held = (
            "nothing of the user was left to erase (erased before, or never stored): "
            "what backups taken before that hold is on that erasure's receipt"
        )
        ending = 'see docs/threat-model.md, "Erasure epochs"'
    if retention is None:
        until = (
            "CTXSTORE_BACKUP_RETENTION_DAYS is not set, so no date can be given: they "
            "last as long as backups are kept"
        )
    else:
        until = (
            f"with backups kept {retention.days:,} days (CTXSTORE_BACKUP_RETENTION_DAYS), "
            f"the last of them expires by {(erased_at + retention).date().isoformat()}"
        )
    return Backups(
        f"{held}; {until}; {ending}",
        erased_at + retention if retention is not None else None,
    )
