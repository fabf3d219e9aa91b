"""Encryption at rest: AES-256-GCM under per-owner data keys, wrapped by a master key.

Envelope encryption.  Each owner (a user, or a session without one) has a random 256-bit
data key; the database holds it only wrapped (AES-256-GCM under a master key, the owner as
associated data, so a wrapped key moved to another owner fails to unwrap).  From a data key
HKDF derives two keys: one seals rows, one keys the HMAC-SHA256 digests that let delta saves
compare messages without decrypting them (a plain SHA-256 would tell who wrote the same
text, and confirm a guess of it).

The master key comes from a ``KeyProvider``: ``Keyring`` takes it from the settings
(``CTXSTORE_MASTER_KEYS``, or the file ``CTXSTORE_MASTER_KEYS_FILE`` names); a cloud KMS
is another provider (wrap and unwrap are its Encrypt and Decrypt, the owner its
encryption context), named by ``CTXSTORE_KEY_PROVIDER=module:factory`` so every command
uses it without code.  This module knows nothing of the database.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import stat
import struct
from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime
from importlib import import_module
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ctxstore.errors import (
    ConfigurationError,
    CorruptDataError,
    CtxStoreError,
    EncryptionKeyError,
)
from ctxstore.settings import Settings, load_settings

MASTER_KEYS_ENV = "CTXSTORE_MASTER_KEYS"
MASTER_KEYS_FILE_ENV = "CTXSTORE_MASTER_KEYS_FILE"
KEY_PROVIDER_ENV = "CTXSTORE_KEY_PROVIDER"

KEY_BYTES = 32
NONCE_BYTES = 12
# The first byte of every sealed value: its layout.  1: the plaintext as it is (read only,
# written before padding); 2: its length, the plaintext and zeros up to padded_size().
_SEALED_V1 = b"\x01"
_SEALED_V2 = b"\x02"
_WRAP_AAD = b"ctxstore data key\x00"


class KeyProvider(ABC):
    """Where master keys live: wraps and unwraps data keys, never hands out the master key.

    A KMS-backed provider implements the same three members: ``current_key_id`` names the
    key new data keys are wrapped under (e.g. a KMS key ARN), ``wrap`` is the KMS Encrypt
    call and ``unwrap`` its Decrypt, with ``owner`` as the encryption context.  Both may
    do I/O; unwrapped data keys are cached by the storage, so they run rarely.  Errors:
    ``EncryptionKeyError`` for a missing or wrong key.
    """

    @property
    @abstractmethod
    def current_key_id(self) -> str: ...

    @abstractmethod
    async def wrap(self, data_key: bytes, owner: str) -> tuple[str, bytes]:
        """(master key id, wrapped data key) under the current master key."""

    @abstractmethod
    async def unwrap(self, master_key_id: str, wrapped: bytes, owner: str) -> bytes:
        """The data key; EncryptionKeyError if the master key is unknown or wrong."""


class Keyring(KeyProvider):
    """Master keys held in memory: ``id:base64key[,id:base64key...]``, the first current.

    Rotation: put the new key first and keep the old ones until ``ctxstore rotate-keys``
    has re-wrapped every data key under the new one; then drop them.
    """

    def __init__(self, keys: Mapping[str, bytes]) -> None:
        if not keys:
            raise EncryptionKeyError("the master keyring is empty")
        for key_id, key in keys.items():
            if not key_id or len(key) != KEY_BYTES:
                raise EncryptionKeyError(
                    f"master key {key_id!r} must be {KEY_BYTES} bytes (base64 of 32 random bytes)"
                )
        self._keys = {key_id: AESGCM(key) for key_id, key in keys.items()}
        self._current = next(iter(keys))

    @classmethod
    def parse(cls, text: str, *, source: str = "keyring") -> Keyring:
        keys: dict[str, bytes] = {}
        for number, raw in enumerate(text.replace("\n", ",").split(","), start=1):
            entry = raw.strip()
            if not entry:
                continue
            key_id, separator, encoded = entry.partition(":")
            if not separator:
                raise EncryptionKeyError(f"{source}: entry {number} is not id:base64key")
            try:
                key = base64.b64decode(encoded.strip(), validate=True)
            except (binascii.Error, ValueError):
                # never echo the entry: it is a secret
                raise EncryptionKeyError(f"{source}: key {key_id!r} is not base64") from None
            if key_id.strip() in keys:
                raise EncryptionKeyError(f"{source}: key id {key_id!r} appears twice")
            keys[key_id.strip()] = key
        if not keys:
            raise EncryptionKeyError(f"{source} holds no master key")
        return cls(keys)

    @classmethod
    def from_settings(cls, settings: Settings) -> Keyring:
        """From ``CTXSTORE_MASTER_KEYS`` or, when it is unset, the file
        ``CTXSTORE_MASTER_KEYS_FILE`` names."""
        if settings.master_keys is not None:
            return cls.parse(settings.master_keys.get_secret_value(), source=MASTER_KEYS_ENV)
        if settings.master_keys_file is not None:
            return cls.from_file(settings.master_keys_file)
        raise EncryptionKeyError(
            f"encryption is on but no master key is set: set {MASTER_KEYS_ENV} "
            f"(id:base64key[,...]) or {MASTER_KEYS_FILE_ENV}"
        )

    @classmethod
    def from_environment(cls) -> Keyring:
        """:meth:`from_settings` of the environment's settings (for an application's own
        entry point)."""
        return cls.from_settings(load_settings())

    @classmethod
    def from_file(cls, path: str | Path) -> Keyring:
        """The keys in ``path``, which only its owner may read (as ssh refuses a private
        key others can read: a key file open to a group leaks every master key)."""
        try:
            with open(path, encoding="utf-8") as keyfile:
                mode = os.fstat(keyfile.fileno()).st_mode
                if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
                    raise EncryptionKeyError(
                        f"the master key file {str(path)!r} is open to its group or others "
                        f"(mode {stat.filemode(mode)}): run `chmod 600 {path}`"
                    )
                text = keyfile.read()
        except OSError as error:
            raise EncryptionKeyError(
                f"cannot read the master key file {str(path)!r}: {error.strerror}"
            ) from None
        except UnicodeDecodeError:
            raise EncryptionKeyError(f"the master key file {str(path)!r} is not UTF-8") from None
        return cls.parse(text, source=str(path))

    @staticmethod
    def generate_entry(key_id: str) -> str:
        """A new keyring entry ``id:base64key``."""
        return f"{key_id}:{base64.b64encode(os.urandom(KEY_BYTES)).decode()}"

    @property
    def current_key_id(self) -> str:
        return self._current

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(self._keys)

    async def wrap(self, data_key: bytes, owner: str) -> tuple[str, bytes]:
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._keys[self._current].encrypt(nonce, data_key, _wrap_aad(owner))
        return self._current, nonce + sealed

    async def unwrap(self, master_key_id: str, wrapped: bytes, owner: str) -> bytes:
        master = self._keys.get(master_key_id)
        if master is None:
            raise EncryptionKeyError(
                f"master key {master_key_id!r} is not in the keyring (it holds "
                f"{', '.join(repr(k) for k in self._keys)}): data keys wrapped under it "
                "can't be opened"
            )
        try:
            return master.decrypt(wrapped[:NONCE_BYTES], wrapped[NONCE_BYTES:], _wrap_aad(owner))
        except InvalidTag:
            raise EncryptionKeyError(
                f"the data key of {owner!r} does not open with master key {master_key_id!r}: "
                "wrong master key, or the wrapped key was altered"
            ) from None


def _wrap_aad(owner: str) -> bytes:
    return _WRAP_AAD + owner.encode("utf-8", "surrogatepass")


class Encryption:
    """The opt-in setting: ``PostgresStorage.from_url(url, encryption=Encryption(keyring))``.

    ``cache_seconds``: how long a process keeps using an owner's current data key before
    asking the database again (so keys rotated elsewhere are picked up).


    ``accept_plaintext``: read rows stored in plaintext as genuine.  Off (the default),
    a plaintext message, summary, state or profile read with encryption on is
    ``CorruptDataError``: anyone with write access to the tables, and no key, could have
    put it there (a forged ``system`` turn is a prompt injection).  Turn it on only while
    data written before encryption was enabled remains, until ``ctxstore rotate-keys
    --reencrypt --seal-plaintext`` has sealed it.
    """

    def __init__(
        self, provider: KeyProvider, *, cache_seconds: float = 60.0, accept_plaintext: bool = False
    ) -> None:
        self.provider = provider
        self.cache_seconds = cache_seconds
        self.accept_plaintext = accept_plaintext

    @classmethod
    def from_settings(cls, settings: Settings) -> Encryption:
        """With the provider ``CTXSTORE_KEY_PROVIDER`` names, else the master keys."""
        if settings.key_provider is not None:
            if settings.master_keys is not None or settings.master_keys_file is not None:
                raise ConfigurationError(
                    f"{KEY_PROVIDER_ENV} and {MASTER_KEYS_ENV}/{MASTER_KEYS_FILE_ENV} are "
                    "both set: set one, so it is clear which keys seal the data"
                )
            provider: KeyProvider = load_provider(settings.key_provider)
        else:
            provider = Keyring.from_settings(settings)
        return cls(provider, accept_plaintext=settings.accept_plaintext)

    @classmethod
    def from_environment(cls) -> Encryption:
        """:meth:`from_settings` of the environment's settings (a provider too)."""
        return cls.from_settings(load_settings())


def load_provider(path: str) -> KeyProvider:
    """The KeyProvider ``module:factory`` builds (the factory is called with no arguments;
    a KeyProvider class is a factory too)."""
    module_name, separator, attribute = path.strip().partition(":")
    if not separator or not module_name or not attribute:
        raise ConfigurationError(f"{KEY_PROVIDER_ENV}={path!r} is not module:factory")
    try:
        factory = getattr(import_module(module_name), attribute)
    except ImportError as error:
        raise ConfigurationError(
            f"{KEY_PROVIDER_ENV}: cannot import {module_name!r}: {error}"
        ) from None
    except AttributeError:
        raise ConfigurationError(
            f"{KEY_PROVIDER_ENV}: module {module_name!r} has no {attribute!r}"
        ) from None
    if not callable(factory):
        raise ConfigurationError(f"{KEY_PROVIDER_ENV}: {path!r} is not callable")
    try:
        provider = factory()
    except CtxStoreError:
        raise
    except Exception as error:  # the provider's own code: say whose failure it is
        raise ConfigurationError(
            f"{KEY_PROVIDER_ENV}: {path!r} failed: {type(error).__name__}: {error}"
        ) from error
    if not isinstance(provider, KeyProvider):
        raise ConfigurationError(
            f"{KEY_PROVIDER_ENV}: {path!r} returned {type(provider).__name__}, not a "
            "ctxstore.encryption.KeyProvider"
        )
    return provider


class DataKey:
    """An unwrapped data key: seals and opens values, and keys the message digests."""

    __slots__ = ("_aead", "_chain", "key_id", "mac_key", "owner")

    def __init__(self, key_id: int, owner: str, material: bytes) -> None:
        if len(material) != KEY_BYTES:
            raise EncryptionKeyError(f"data key {key_id} has the wrong length")
        self.key_id = key_id
        self.owner = owner
        self._aead = AESGCM(_derive(material, b"ctxstore seal v1"))
        self.mac_key = _derive(material, b"ctxstore digest v1")
        self._chain = hashlib.blake2s(key=_derive(material, b"ctxstore chain v1"))

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        """Layout 2: the plaintext padded (see padded_size), so the sealed size tells
        little of the text's."""
        nonce = os.urandom(NONCE_BYTES)
        return _SEALED_V2 + nonce + self._aead.encrypt(nonce, pad(plaintext), aad)

    def open(self, sealed: bytes, aad: bytes, *, session_id: str | None = None) -> bytes:
        """The plaintext; CorruptDataError if the value was altered or moved elsewhere."""
        layout = sealed[:1]
        if layout not in (_SEALED_V2, _SEALED_V1):
            raise CorruptDataError("sealed value of an unknown layout", session_id=session_id)
        try:
            plain = self._aead.decrypt(sealed[1 : 1 + NONCE_BYTES], sealed[1 + NONCE_BYTES :], aad)
            return plain if layout == _SEALED_V1 else unpad(plain)
        except (InvalidTag, ValueError, struct.error):
            raise CorruptDataError(
                f"sealed value fails its integrity check under data key {self.key_id} "
                "(altered, or copied from another row or place)",
                session_id=session_id,
            ) from None

    def opener(self) -> Any:
        """``decrypt(nonce, ciphertext, aad)`` of this key, for loops over many rows
        (the caller checks the layout byte and turns InvalidTag into its error)."""
        return self._aead.decrypt

    def mac(self, digest: bytes) -> bytes:
        """The stored form of a message digest: HMAC-SHA256 under this key's MAC key."""
        return hmac.new(self.mac_key, digest, hashlib.sha256).digest()

    def hasher(self, data: bytes = b"") -> ChainHasher:
        """The session content hash under this key, having taken ``data`` (digests)."""
        chain = self._chain.copy()
        chain.update(b"ctxstore chain start")
        hasher = ChainHasher(self._chain, self.key_id, chain.digest())
        hasher.update(data)
        return hasher

    def resume(self, stored: bytes) -> ChainHasher | None:
        """The hasher that produced ``stored`` (a content hash under this key), to take
        more digests: None when ``stored`` is not one of this key's."""
        if chain_key_id(stored) != self.key_id:
            return None
        return ChainHasher(self._chain, self.key_id, stored[_KEY_ID.size :])


_KEY_ID = struct.Struct(">q")
DIGEST_BYTES = 32


def chain_key_id(stored: bytes | None) -> int | None:
    """The data key a sealed session's content hash was made under (None: the hash is
    missing, or not a chain: plaintext, or written before chains)."""
    if stored is None or len(stored) != _KEY_ID.size + DIGEST_BYTES:
        return None
    return int(_KEY_ID.unpack_from(stored)[0])


class ChainHasher:
    """A sealed session's content hash: a keyed BLAKE2s chain, one link per message
    digest, stored as the key id and the last link.

    Unlike an HMAC of all digests, it resumes from the stored value alone, so a writer
    that has not read the session can still extend it (an append); a reader recomputes
    it over the digests sealed inside the rows, so rows swapped, dropped, put back to an
    older value or copied from another version no longer match.  hashlib's interface:
    ``update`` takes whole 32-byte digests.
    """

    __slots__ = ("_base", "_key_id", "_link")

    def __init__(self, base: Any, key_id: int, link: bytes) -> None:
        self._base, self._key_id, self._link = base, key_id, link

    def update(self, digests: bytes) -> None:
        if len(digests) % DIGEST_BYTES:
            raise ValueError("a content hash takes whole 32-byte digests")
        link, fresh = self._link, self._base.copy
        for start in range(0, len(digests), DIGEST_BYTES):
            chain = fresh()
            chain.update(link)
            chain.update(digests[start : start + DIGEST_BYTES])
            link = chain.digest()
        self._link = link

    def copy(self) -> ChainHasher:
        return ChainHasher(self._base, self._key_id, self._link)

    def digest(self) -> bytes:
        return _KEY_ID.pack(self._key_id) + self._link


class OpenedKeys(dict[int, DataKey]):
    """Unwrapped data keys by id, and the rule a reader applies to plaintext rows
    (``Encryption.accept_plaintext``)."""

    def __init__(self, accept_plaintext: bool) -> None:
        super().__init__()
        self.accept_plaintext = accept_plaintext


def _derive(material: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(material)


def new_data_key() -> bytes:
    return os.urandom(KEY_BYTES)


# -- padding ----------------------------------------------------------------------------------

_LENGTH = struct.Struct(">I")
MIN_PADDED = 64
#: Up to this size lengths round up to a power of two; above, by Padmé.
POWER_OF_TWO_UP_TO = 1024


def padded_size(length: int) -> int:
    """The size a plaintext of ``length`` bytes is padded to.  Short texts (a "yes", a
    diagnosis) say the most by their length, so up to 1 KiB they round up to a power of
    two, at least MIN_PADDED (at most 512 bytes added).  Longer ones use Padmé (Nikitin
    et al., "Reducing Metadata Leakage from Encrypted Files and Communication with
    PURBs", 2019): the low bits of the length cleared, so at most 12% is added and only
    O(log log n) bits of the length stay visible."""
    if length <= MIN_PADDED:
        return MIN_PADDED
    if length <= POWER_OF_TWO_UP_TO:
        return 1 << (length - 1).bit_length()
    exponent = length.bit_length() - 1
    low_bits = exponent - exponent.bit_length()
    mask = (1 << low_bits) - 1
    return (length + mask) & ~mask


def pad(plaintext: bytes) -> bytes:
    """Its length (4 bytes), the plaintext, then zeros up to padded_size."""
    framed = len(plaintext) + _LENGTH.size
    return b"".join((_LENGTH.pack(len(plaintext)), plaintext, bytes(padded_size(framed) - framed)))


def unpad(padded: bytes) -> bytes:
    """pad's plaintext; ValueError if the frame is inconsistent."""
    (length,) = _LENGTH.unpack_from(padded, 0)
    if length + _LENGTH.size > len(padded):
        raise ValueError("padded value is shorter than its length says")
    return padded[_LENGTH.size : _LENGTH.size + length]


# -- what a sealed row holds ----------------------------------------------------------------


def message_aad(session_id: str) -> bytes:
    """Layout 1's associated data: the session only."""
    return b"ctxstore message\x00" + session_id.encode("utf-8", "surrogatepass")


def message_aad_prefix(session_id: str) -> bytes:
    """The start of every layout-2 message's associated data in ``session_id``."""
    return b"ctxstore message v2\x00" + session_id.encode("utf-8", "surrogatepass")


_STAMPED = struct.Struct(">di")
_NO_OFFSET = 0x7FFFFFFF


def bound_message_aad(
    prefix: bytes,
    role: str,
    turn_id: str | None,
    stamp: datetime | None,
    offset: int | None,
    nanos: int = 0,
) -> bytes:
    """Layout 2's associated data: the session (``prefix``) and the plaintext columns a
    reader trusts, so a row whose role, turn id or time was changed fails to open.  The
    time as ``stamp.timestamp()`` (the same for every spelling of one instant, and cheap
    on the load path) with the UTC offset in seconds kept beside it, and the nanoseconds
    below its microsecond when there are any (revision 0021; none: the bytes of before)."""
    if stamp is None:
        when = b"N"
    else:
        when = b"T" + _STAMPED.pack(stamp.timestamp(), _NO_OFFSET if offset is None else offset)
        if nanos:
            when += b"n" + nanos.to_bytes(2, "big")
    return b"".join(
        (
            prefix,
            b"\x00",
            when,
            role.encode("utf-8", "surrogatepass"),
            b"\x00-" if turn_id is None else b"\x00+" + turn_id.encode("utf-8", "surrogatepass"),
        )
    )


def document_aad(kind: str, owner_id: str, version: int | None = None) -> bytes:
    """kind: summary, state (both per session) or profile (per user); ``version``: the
    document's version, bound in layout 2 (None: layout 1's associated data, without it)."""
    aad = f"ctxstore {kind}\x00".encode() + owner_id.encode("utf-8", "surrogatepass")
    return aad if version is None else aad + _KEY_ID.pack(version)


def opening_aad(sealed: bytes, kind: str, owner_id: str, version: int) -> bytes:
    """The associated data a stored document opens with: its layout says whether the
    version is bound (2) or not (1, sealed before versions were)."""
    return document_aad(kind, owner_id, None if sealed[:1] == _SEALED_V1 else version)


#: The flags byte after a sealed message's core digest.
HAS_METADATA = 1
HAS_NAME = 2


def pack_message(
    content: str, metadata: dict[str, Any] | None, core_digest: bytes, name: str | None = None
) -> bytes:
    """Core digest (32 bytes, so loads need not recompute it), a flags byte; with a name
    (HAS_NAME) its length and the name; then the content, or (HAS_METADATA) the content's
    length, the content and the metadata JSON."""
    text = content.encode("utf-8", "surrogatepass")
    flags = 0
    parts = [core_digest, b""]
    if name is not None:
        flags |= HAS_NAME
        encoded = name.encode("utf-8", "surrogatepass")
        parts += (_LENGTH.pack(len(encoded)), encoded)
    if metadata:
        flags |= HAS_METADATA
        tail = json.dumps(metadata, ensure_ascii=False).encode("utf-8", "surrogatepass")
        parts += (_LENGTH.pack(len(text)), text, tail)
    else:
        parts.append(text)
    parts[1] = bytes((flags,))
    return b"".join(parts)


def unpack_message(
    plain: bytes, session_id: str
) -> tuple[str, dict[str, Any] | None, bytes, str | None]:
    """(content, metadata, core digest, name) of pack_message's bytes."""
    try:
        flags, start, name, metadata = plain[32], 33, None, None
        if flags & ~(HAS_METADATA | HAS_NAME):
            raise ValueError(f"unknown flags {flags}")
        if flags & HAS_NAME:
            (length,) = _LENGTH.unpack_from(plain, start)
            start += 4 + length
            name = plain[start - length : start].decode("utf-8", "surrogatepass")
        if flags & HAS_METADATA:
            (length,) = _LENGTH.unpack_from(plain, start)
            end = start + 4 + length
            content = plain[start + 4 : end].decode("utf-8", "surrogatepass")
            metadata = json.loads(plain[end:])
            if not isinstance(metadata, dict):
                raise ValueError("its metadata is not an object")
        else:
            content = plain[start:].decode("utf-8", "surrogatepass")
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as error:
        raise CorruptDataError(
            f"sealed message is malformed: {error}", session_id=session_id
        ) from None
    return content, metadata, plain[:32], name
