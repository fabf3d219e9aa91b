"""A bundle's layout: what its first line names, its lines, and its manifest.

Each line is canonical JSON (keys sorted, no spaces, characters unescaped) and a newline,
so the same data always gives the same bytes: a bundle holds no export time, and its
times are the stored ones, in UTC to the microsecond.  The last line is the manifest: the
records counted by kind, the SHA-256 of each kind's lines, and the SHA-256 of every byte
before the manifest.  Export and import tally the lines the same way (``Tally``), so the
manifest an import expects is the one an export of the same records writes.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

#: What the first line says the file is, and the version of its layout.
FORMAT = "ctxstore.user-bundle"
FORMAT_VERSION = 1
#: The kinds of record between the first line and the manifest, in the manifest's order.
KINDS = ("profile", "session", "message", "summary", "state", "state_change")
#: The longest line a bundle may hold: a message at the size limits, escaped, fits well.
MAX_LINE_BYTES = 16 * 1024 * 1024


def canonical(record: dict[str, Any]) -> bytes:
    """One line of a bundle: the record as canonical JSON, then a newline."""
    text = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return (text + "\n").encode("utf-8")


def store_time(moment: datetime) -> str:
    """A time the store keeps (an instant, to the microsecond) as the bundle writes it."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


class Tally:
    """The manifest as lines go by: counts and digests by kind, and of the whole."""

    def __init__(self) -> None:
        self.whole = hashlib.sha256()
        self.digests = {kind: hashlib.sha256() for kind in KINDS}
        self.counts = dict.fromkeys(KINDS, 0)

    def add(self, kind: str, line: bytes) -> None:
        """``line`` of ``kind`` (the header counts in the whole only)."""
        self.whole.update(line)
        if kind in self.digests:
            self.digests[kind].update(line)
            self.counts[kind] += 1

    def manifest(self) -> dict[str, Any]:
        return {
            "kind": "manifest",
            "counts": self.counts,
            "sha256": {kind: digest.hexdigest() for kind, digest in self.digests.items()},
            "bundle_sha256": self.whole.hexdigest(),
        }
