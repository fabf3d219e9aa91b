"""The crypto of encryption at rest, without a database."""

from __future__ import annotations

import asyncio
import base64
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxstore.encryption import (
    MIN_PADDED,
    DataKey,
    Keyring,
    bound_message_aad,
    chain_key_id,
    document_aad,
    message_aad,
    message_aad_prefix,
    pack_message,
    pad,
    padded_size,
    unpack_message,
    unpad,
)
from ctxstore.errors import ConfigurationError, CorruptDataError, EncryptionKeyError


def key(key_id: int = 1) -> DataKey:
    return DataKey(key_id, "u:alice", os.urandom(32))


def test_seal_round_trip_and_every_seal_differs() -> None:
    data_key = key()
    first = data_key.seal("膝盖疼".encode(), b"aad")
    second = data_key.seal("膝盖疼".encode(), b"aad")
    assert first != second  # fresh nonce each time
    assert "膝盖疼".encode() not in first
    assert data_key.open(first, b"aad").decode() == "膝盖疼"


def test_another_data_key_does_not_open_it() -> None:
    sealed = key().seal(b"secret", b"aad")
    with pytest.raises(CorruptDataError, match="integrity"):
        key().open(sealed, b"aad", session_id="s1")


@pytest.mark.parametrize("position", [0, 1, 13, -1])
def test_any_flipped_byte_is_refused(position: int) -> None:
    data_key = key()
    sealed = bytearray(data_key.seal(b"secret text", b"aad"))
    sealed[position] ^= 0x01
    with pytest.raises(CorruptDataError) as raised:
        data_key.open(bytes(sealed), b"aad", session_id="s1")
    assert "s1" in str(raised.value)


def test_associated_data_binds_the_value_to_its_session() -> None:
    data_key = key()
    sealed = data_key.seal(b"secret", message_aad("s1"))
    with pytest.raises(CorruptDataError):
        data_key.open(sealed, message_aad("s2"))
    with pytest.raises(CorruptDataError):  # nor to another kind of row
        data_key.open(sealed, document_aad("summary", "s1"))


def test_message_payload_round_trip() -> None:
    core = os.urandom(32)
    packed = pack_message("内容\ud800", {"k": ["v", 1]}, core)
    assert unpack_message(packed, "s") == ("内容\ud800", {"k": ["v", 1]}, core, None)
    assert unpack_message(pack_message("", None, core), "s") == ("", None, core, None)
    named = pack_message("hi", {"k": 1}, core, "王医生")
    assert unpack_message(named, "s") == ("hi", {"k": 1}, core, "王医生")
    assert unpack_message(pack_message("", None, core, ""), "s") == ("", None, core, "")
    with pytest.raises(CorruptDataError, match="malformed"):
        unpack_message(core + b"\x04", "s")  # a flag this layout doesn't know


def test_a_layout_1_value_still_opens() -> None:
    """Values sealed before padding (layout 1: nonce, then the bare plaintext) read as
    they always did."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415

    from ctxstore.encryption import _derive  # noqa: PLC0415

    material, nonce = os.urandom(32), os.urandom(12)
    data_key = DataKey(1, "u:alice", material)
    aead = AESGCM(_derive(material, b"ctxstore seal v1"))
    old = b"\x01" + nonce + aead.encrypt(nonce, b"old text", b"aad")
    assert data_key.open(old, b"aad") == b"old text"
    assert data_key.seal(b"new", b"aad")[:1] == b"\x02"


@given(st.binary(max_size=5000))
def test_padding_round_trips_and_hides_the_length(plaintext: bytes) -> None:
    padded = pad(plaintext)
    assert unpad(padded) == plaintext
    assert len(padded) == padded_size(len(plaintext) + 4) >= MIN_PADDED
    framed = len(plaintext) + 4
    if framed <= 1024:  # a power of two, at least 64
        assert len(padded) == max(MIN_PADDED, 1 << (framed - 1).bit_length())
    else:  # Padme: at most 12% more
        assert len(padded) <= framed * 1.12


def test_padding_puts_texts_of_nearby_lengths_in_one_bucket() -> None:
    sizes = {len(key().seal(b"x" * length, b"")) for length in range(0, 60)}
    assert len(sizes) == 1  # 0..59 bytes all seal to 64 + 29
    assert {padded_size(length) for length in range(65, 129)} == {128}
    buckets = {padded_size(length) for length in range(3000, 3300)}
    assert len(buckets) <= 3
    with pytest.raises(ValueError, match="shorter"):
        unpad(b"\x00\x00\x01\x00" + bytes(60))


def test_a_message_is_bound_to_its_role_turn_and_time() -> None:
    data_key, prefix = key(), message_aad_prefix("s1")
    stamp = datetime(2026, 11, 29, 8, 15, 2, 123000, tzinfo=timezone(timedelta(hours=8)))
    same_instant = stamp.astimezone(UTC)  # as PostgreSQL hands it back
    assert bound_message_aad(prefix, "user", "t1", stamp, 28800) == bound_message_aad(
        prefix, "user", "t1", same_instant, 28800
    )
    sealed = data_key.seal(b"text", bound_message_aad(prefix, "user", "t1", stamp, 28800))
    assert data_key.open(sealed, bound_message_aad(prefix, "user", "t1", stamp, 28800))
    for changed in (
        bound_message_aad(prefix, "system", "t1", stamp, 28800),
        bound_message_aad(prefix, "user", "t2", stamp, 28800),
        bound_message_aad(prefix, "user", None, stamp, 28800),
        bound_message_aad(prefix, "user", "t1", stamp + timedelta(microseconds=1), 28800),
        bound_message_aad(prefix, "user", "t1", None, 28800),
        bound_message_aad(prefix, "user", "t1", stamp, 0),
        bound_message_aad(message_aad_prefix("s2"), "user", "t1", stamp, 28800),
    ):
        with pytest.raises(CorruptDataError):
            data_key.open(sealed, changed)


def test_digests_and_hashes_are_keyed() -> None:
    one, two, digest = key(), key(2), os.urandom(32)
    assert one.mac(digest) != two.mac(digest) != digest
    assert one.mac(digest) == one.mac(digest)
    a, b = os.urandom(32), os.urandom(32)
    hasher = one.hasher(a)
    copy = hasher.copy()
    copy.update(b)
    assert copy.digest() == one.hasher(a + b).digest() != hasher.digest()
    assert one.hasher(a + b).digest() != two.hasher(a + b).digest()
    with pytest.raises(ValueError, match="32-byte"):
        hasher.update(b"a")


def test_the_content_hash_chain_resumes_from_its_stored_value() -> None:
    """An append that has not read the session extends the stored hash alone; order,
    truncation and another key all give another value."""
    data_key, digests = key(7), [os.urandom(32) for _ in range(4)]
    stored = data_key.hasher(b"".join(digests[:3])).digest()
    assert chain_key_id(stored) == 7 and chain_key_id(os.urandom(32)) is None
    resumed = data_key.resume(stored)
    assert resumed is not None and key(8).resume(stored) is None
    resumed.update(digests[3])
    whole = data_key.hasher(b"".join(digests)).digest()
    assert resumed.digest() == whole
    swapped = [digests[1], digests[0], *digests[2:]]
    assert data_key.hasher(b"".join(swapped)).digest() != whole
    assert data_key.hasher(b"".join(digests[:3])).digest() != whole
    assert data_key.hasher().digest() != data_key.hasher(digests[0]).digest()


def test_keyring_wraps_under_its_first_key_and_binds_the_owner() -> None:
    old, new = os.urandom(32), os.urandom(32)
    ring = Keyring({"new": new, "old": old})
    material = os.urandom(32)
    master_id, wrapped = asyncio.run(ring.wrap(material, "u:alice"))
    assert master_id == "new"
    assert asyncio.run(ring.unwrap("new", wrapped, "u:alice")) == material
    with pytest.raises(EncryptionKeyError, match="does not open"):
        asyncio.run(ring.unwrap("new", wrapped, "u:bob"))
    with pytest.raises(EncryptionKeyError, match="does not open"):
        asyncio.run(Keyring({"new": old}).unwrap("new", wrapped, "u:alice"))
    with pytest.raises(EncryptionKeyError, match="not in the keyring"):
        asyncio.run(Keyring({"other": new}).unwrap("new", wrapped, "u:alice"))


def test_keyring_parsing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = Keyring.generate_entry("a"), Keyring.generate_entry("b")
    assert Keyring.parse(f"{a}, {b}").key_ids == ("a", "b")
    assert Keyring.parse(f"{b}\n{a}\n").current_key_id == "b"
    secret = base64.b64encode(os.urandom(16)).decode()
    with pytest.raises(EncryptionKeyError, match="32 bytes") as short:
        Keyring.parse(f"a:{secret}")
    assert secret not in str(short.value)
    with pytest.raises(EncryptionKeyError, match="not base64"):
        Keyring.parse("a:!!!")
    with pytest.raises(EncryptionKeyError, match="twice"):
        Keyring.parse(f"{a},{a}")
    monkeypatch.delenv("CTXSTORE_MASTER_KEYS", raising=False)
    monkeypatch.delenv("CTXSTORE_MASTER_KEYS_FILE", raising=False)
    with pytest.raises(EncryptionKeyError, match="no master key is set"):
        Keyring.from_environment()
    path = tmp_path / "keys"
    path.write_text(a + "\n")
    path.chmod(0o600)
    monkeypatch.setenv("CTXSTORE_MASTER_KEYS_FILE", str(path))
    assert Keyring.from_environment().key_ids == ("a",)
    with pytest.raises(EncryptionKeyError, match="cannot read"):
        Keyring.from_file(tmp_path / "missing")
    assert issubclass(EncryptionKeyError, ConfigurationError)


def test_a_key_file_open_to_others_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(Keyring.generate_entry("a") + "\n")
    for mode in (0o640, 0o604, 0o660):
        path.chmod(mode)
        with pytest.raises(EncryptionKeyError, match="chmod 600") as refused:
            Keyring.from_file(path)
        assert path.read_text().split(":")[1].strip() not in str(refused.value)
    path.chmod(0o600)
    assert Keyring.from_file(path).key_ids == ("a",)
    path.chmod(0o400)
    assert Keyring.from_file(path).key_ids == ("a",)


PROVIDER_MODULE = """
import os
from ctxstore.encryption import KeyProvider, Keyring

class CountingKms(KeyProvider):
    wraps = 0
    def __init__(self):
        self._ring = Keyring.parse(os.environ["TEST_KMS_ENTRY"])
    @property
    def current_key_id(self):
        return self._ring.current_key_id
    async def wrap(self, data_key, owner):
        type(self).wraps += 1
        return await self._ring.wrap(data_key, owner)
    async def unwrap(self, master_key_id, wrapped, owner):
        return await self._ring.unwrap(master_key_id, wrapped, owner)

def make():
    return CountingKms()

def broken():
    raise RuntimeError("no credentials for the KMS")

not_a_provider = dict
number = 3
"""


def test_a_key_provider_named_in_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ctxstore import Encryption as Exported  # noqa: PLC0415
    from ctxstore import Keyring as ExportedKeyring  # noqa: PLC0415
    from ctxstore.encryption import Encryption  # noqa: PLC0415
    from ctxstore.encryption import KeyProvider as ExportedProvider  # noqa: PLC0415
    from ctxstore.settings import Settings  # noqa: PLC0415

    assert Exported is Encryption and ExportedKeyring is Keyring
    (tmp_path / "fake_kms_provider.py").write_text(PROVIDER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TEST_KMS_ENTRY", Keyring.generate_entry("kms-1"))
    settings = Settings(key_provider="fake_kms_provider:make")
    assert settings.encryption_configured
    provider = Encryption.from_settings(settings).provider
    assert isinstance(provider, ExportedProvider) and type(provider).__name__ == "CountingKms"
    wrapped = asyncio.run(provider.wrap(b"k" * 32, "u:a"))
    assert asyncio.run(provider.unwrap(*wrapped, "u:a")) == b"k" * 32
    assert type(provider).wraps == 1  # type: ignore[attr-defined]
    refusals = {
        "fake_kms_provider": "not module:factory",
        "no_such_module_here:make": "cannot import",
        "fake_kms_provider:missing": "has no 'missing'",
        "fake_kms_provider:number": "not callable",
        "fake_kms_provider:not_a_provider": "returned dict, not a ctxstore.encryption.KeyProvider",
        "fake_kms_provider:broken": "failed: RuntimeError: no credentials",
    }
    for path, reason in refusals.items():
        with pytest.raises(ConfigurationError, match=reason):
            Encryption.from_settings(Settings(key_provider=path))
    both = Settings(key_provider="fake_kms_provider:make", master_keys="a:b")
    with pytest.raises(ConfigurationError, match="both set"):
        Encryption.from_settings(both)
