"""The crypto of encryption at rest, without a database."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path

import pytest

from ctxstore.encryption import (
    DataKey,
    Keyring,
    document_aad,
    message_aad,
    pack_message,
    unpack_message,
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
    assert unpack_message(packed, "s") == ("内容\ud800", {"k": ["v", 1]}, core)
    assert unpack_message(pack_message("", None, core), "s") == ("", None, core)


def test_digests_and_hashes_are_keyed() -> None:
    one, two, digest = key(), key(), os.urandom(32)
    assert one.mac(digest) != two.mac(digest) != digest
    assert one.mac(digest) == one.mac(digest)
    hasher = one.hasher(b"a")
    copy = hasher.copy()
    copy.update(b"b")
    assert copy.digest() == one.hasher(b"ab").digest() != hasher.digest()


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
from ctxstore import KeyProvider, Keyring

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
    from ctxstore import KeyProvider as ExportedProvider  # noqa: PLC0415
    from ctxstore import Keyring as ExportedKeyring  # noqa: PLC0415
    from ctxstore.encryption import Encryption  # noqa: PLC0415
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
        "fake_kms_provider:not_a_provider": "returned dict, not a ctxstore.KeyProvider",
        "fake_kms_provider:broken": "failed: RuntimeError: no credentials",
    }
    for path, reason in refusals.items():
        with pytest.raises(ConfigurationError, match=reason):
            Encryption.from_settings(Settings(key_provider=path))
    both = Settings(key_provider="fake_kms_provider:make", master_keys="a:b")
    with pytest.raises(ConfigurationError, match="both set"):
        Encryption.from_settings(both)
