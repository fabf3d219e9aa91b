"""Everything held about a user as one bundle: written by ``export_user``, read back by
``import_user`` (docs/storage-contract.md, "Export and import").

A bundle is JSON lines in UTF-8, one record a line: the header, the profile (if any),
then each session, newest first, as its session record, its messages in order, every
summary version, its current state and every state change; the manifest last.  The
modules, each importing only those after it in this list:

- opening.py: a bundle's bytes, in chunks of any size, cut into lines; the header read;
- reader.py: the lines read back into records, each checked, the manifest at the end;
- export.py: a store's reads written out as lines, streamed in chunks;
- fields.py: the checks of one record's fields, each failure a BundleError naming its line;
- records.py: what a bundle holds, as the backends' import hooks receive it, and the
  receipt of an import;
- format.py: the layout: the header's names, canonical JSON lines, times as written,
  the manifest's counts and digests.
"""

from __future__ import annotations

from ctxstore.storage.bundle.export import Exported, export_bundle, message_document
from ctxstore.storage.bundle.format import FORMAT, FORMAT_VERSION, KINDS, canonical, store_time
from ctxstore.storage.bundle.opening import BundleImport, lines_of, open_bundle
from ctxstore.storage.bundle.reader import BundleReader
from ctxstore.storage.bundle.records import (
    Bundled,
    BundledMessages,
    BundledSession,
    BundledState,
    BundledStateChange,
    BundledSummary,
    ImportReceipt,
)

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "KINDS",
    "BundleImport",
    "BundleReader",
    "Bundled",
    "BundledMessages",
    "BundledSession",
    "BundledState",
    "BundledStateChange",
    "BundledSummary",
    "Exported",
    "ImportReceipt",
    "canonical",
    "export_bundle",
    "lines_of",
    "message_document",
    "open_bundle",
    "store_time",
]
