"""Opening a bundle for import: its bytes, given in chunks of any size, cut into lines,
and its header read (the user it is of) before any record is."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Iterable
from dataclasses import dataclass

from ctxstore.errors import BundleError
from ctxstore.storage.bundle.format import MAX_LINE_BYTES
from ctxstore.storage.bundle.reader import BundleReader
from ctxstore.storage.bundle.records import Bundled
from ctxstore.storage.rules import Limits


async def lines_of(source: AsyncIterable[bytes] | Iterable[bytes]) -> AsyncGenerator[bytes, None]:
    """The lines of a bundle given in chunks of any size (the last one may lack its
    newline: the reader then says the bundle is truncated)."""
    pending = b""
    async for chunk in _chunks(source):
        if not isinstance(chunk, bytes | bytearray | memoryview):
            raise BundleError(f"a bundle is bytes, not {type(chunk).__name__}")
        pending += bytes(chunk)
        start = 0
        while (end := pending.find(b"\n", start)) != -1:
            yield pending[start : end + 1]
            start = end + 1
        pending = pending[start:]
        if len(pending) > MAX_LINE_BYTES:
            raise BundleError(f"a line of the bundle is longer than {MAX_LINE_BYTES:,} bytes")
    if pending:
        yield pending


async def _chunks(source: AsyncIterable[bytes] | Iterable[bytes]) -> AsyncGenerator[bytes, None]:
    if isinstance(source, bytes | bytearray | str):
        raise BundleError(
            "import_user takes the bundle as chunks of bytes (an iterable), e.g. an open "
            "binary file"
        )
    if isinstance(source, AsyncIterable):
        async for chunk in source:
            yield chunk
    else:
        for chunk in source:
            yield chunk


@dataclass
class BundleImport:
    """An import in progress: the bundle's user, and its records as a backend writes them
    (reading them checks them; the last step checks the manifest)."""

    user_id: str
    records: AsyncGenerator[Bundled, None]
    reader: BundleReader


async def open_bundle(
    source: AsyncIterable[bytes] | Iterable[bytes], limits: Limits
) -> BundleImport:
    """The bundle's header read: its user, and its records to come."""
    reader = BundleReader(limits)
    lines = lines_of(source)
    user_id = await reader.header(lines)
    return BundleImport(user_id, reader.records(lines), reader)
