"""Keys and authenticated encryption for dpcore's state and release files (one place for both).

A stateful service's file holds noise (the GPService state stores the exact normals ``ξ`` next to
the answers, so the non-private predictions come back from the file alone) and the budget it has
used: it is **as secret as the training data**, and whoever can edit it must not be able to hand a
budget back or loosen a calibration. Three modes, chosen by the public ``state_key`` parameter:

``"keyfile"`` (default)
    A 256-bit random key in a file beside the state (``<state>.key``), created with mode 0600 when
    the state is created and required (mode 0600, same owner) when it is loaded. Protects against
    anyone who can read or write the state file but not read the key file (a shared or backed-up
    directory, a copy of the state alone).
``bytes`` (at least 32 bytes) or a path to a key file
    A key the user keeps elsewhere (a secrets manager, another disk): the state file alone is then
    useless to whoever can read or write the directory, key file included.
``"unauthenticated"``
    The explicit opt-out: a plain JSON document with an unkeyed SHA-256 checksum (detects accidents,
    not forgery) — for a directory only the curator can read and write. Still created 0600.

Sealed format: ``MAGIC ‖ nonce (12 bytes) ‖ ChaCha20-Poly1305(key, nonce, payload, aad = MAGIC ‖ fmt)``
(RFC 8439 AEAD from the ``cryptography`` package; the nonce is fresh OS randomness per write, 96
bits, so a nonce repeats with probability < 2⁻³² after 2³² writes under one key). The format name
is authenticated, so a PINP state cannot be loaded as a GPService state or a release. A wrong key,
a flipped bit, a truncation or a recomputed checksum all fail the tag: :class:`StateAuthenticationError`.

Key derivation: the user's key material ``K`` is never used directly; the AEAD key is
``HMAC-SHA256(K, "dpcore/aead/v1")`` and the fingerprint key ``HMAC-SHA256(K, "dpcore/fingerprint/v1")``
(HMAC as a PRF, as in HKDF-Expand with one block).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from typing import Optional, Union

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

from dpcore.exceptions import StateAuthenticationError

__all__ = ["KEYFILE", "UNAUTHENTICATED", "StateKeyLike", "SealingKey", "resolve_key", "seal", "unseal",
           "is_sealed", "KEY_BYTES"]

KEYFILE = "keyfile"
UNAUTHENTICATED = "unauthenticated"
#: Bytes of key material: 256 bits, the AEAD's key size.
KEY_BYTES = 32
MAGIC = b"DPCORE-SEALED-1\n"  # 16 bytes
_NONCE = 12
#: A key file is at most this large (hex text of 32 bytes plus a newline; anything larger is not a dpcore key).
_KEYFILE_MAX = 4096

StateKeyLike = Union[str, bytes, "os.PathLike[str]"]


class SealingKey:
    """Derived keys of one state or release (never printed; ``repr`` shows only where it came from)."""

    __slots__ = ("aead", "fingerprint", "source")

    def __init__(self, material: bytes, source: str):
        self.aead = hmac.new(material, b"dpcore/aead/v1", hashlib.sha256).digest()
        self.fingerprint = hmac.new(material, b"dpcore/fingerprint/v1", hashlib.sha256).digest()
        self.source = source

    def __repr__(self) -> str:
        return f"SealingKey(<secret>, from {self.source})"

    def __reduce__(self):
        raise TypeError("a state key cannot be pickled")


def _check_key_bytes(raw: bytes, where: str) -> bytes:
    if len(raw) < KEY_BYTES:
        raise ValueError(f"{where} must hold at least {KEY_BYTES} bytes of key material, got {len(raw)}")
    return bytes(raw)


def _read_key_file(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"state_key: key file {path!r} not found (a state created with a key needs the same key to be "
            "loaded; pass state_key=)") from None
    except OSError as exc:
        raise ValueError(f"state_key: cannot open key file {path!r} ({exc.strerror}; symbolic links are "
                         "refused)") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"state_key: {path!r} is not a regular file")
        if st.st_mode & 0o077:
            raise ValueError(f"state_key: key file {path!r} is accessible by group or others "
                             f"(mode {stat.S_IMODE(st.st_mode):04o}); run chmod 600 on it")
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            raise ValueError(f"state_key: key file {path!r} belongs to another user (uid {st.st_uid})")
        if st.st_size > _KEYFILE_MAX:
            raise ValueError(f"state_key: {path!r} is not a dpcore key file ({st.st_size} bytes)")
        raw = os.read(fd, _KEYFILE_MAX + 1)
    finally:
        os.close(fd)
    text = raw.strip()
    try:
        material = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"state_key: key file {path!r} is not hex text") from None
    return _check_key_bytes(material, f"state_key (key file {path!r})")


def _create_key_file(path: str) -> bytes:
    material = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        return _read_key_file(path)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, material.hex().encode("ascii") + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    dfd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return material


def resolve_key(state_key, state_path: str, *, create: bool) -> Optional[SealingKey]:
    """The :class:`SealingKey` of ``state_key`` for the state at ``state_path`` (``None``: unauthenticated).

    ``create``: a key file that does not exist yet is created (0600) — only when a state is created.
    """
    if isinstance(state_key, (bytes, bytearray, memoryview)):
        return SealingKey(_check_key_bytes(bytes(state_key), "state_key"), "bytes")
    if isinstance(state_key, str) and state_key == UNAUTHENTICATED:
        return None
    if isinstance(state_key, str) and state_key == KEYFILE:
        path = state_path + ".key"
    elif isinstance(state_key, (str, os.PathLike)):
        path = os.path.realpath(os.fspath(state_key))
    else:
        raise TypeError(f"state_key must be 'keyfile', 'unauthenticated', bytes or a key file path, "
                        f"got {type(state_key).__name__}")
    material = _create_key_file(path) if create else _read_key_file(path)
    return SealingKey(material, f"key file {path!r}")


def is_sealed(blob: bytes) -> bool:
    return blob[: len(MAGIC)] == MAGIC


def seal(payload: bytes, key: SealingKey, fmt: str) -> bytes:
    """``MAGIC ‖ nonce ‖ AEAD(payload)`` with the format name authenticated."""
    nonce = secrets.token_bytes(_NONCE)
    return MAGIC + nonce + ChaCha20Poly1305(key.aead).encrypt(nonce, payload, MAGIC + fmt.encode())


def unseal(blob: bytes, key: Optional[SealingKey], fmt: str, where: str) -> bytes:
    """The payload of a sealed blob; :class:`StateAuthenticationError` unless it authenticates under ``key``."""
    if not is_sealed(blob):
        if key is None:
            return blob
        raise StateAuthenticationError(
            f"{where} is not an authenticated (sealed) file, but a state_key was given: refusing an "
            "unauthenticated document (it may have been forged; load it with state_key='unauthenticated' only "
            "if you wrote it that way yourself)")
    if key is None:
        raise StateAuthenticationError(f"{where} is sealed: pass the state_key it was written with")
    if len(blob) < len(MAGIC) + _NONCE + 16:
        raise StateAuthenticationError(f"{where} is truncated (shorter than a sealed header)")
    nonce = blob[len(MAGIC): len(MAGIC) + _NONCE]
    try:
        return ChaCha20Poly1305(key.aead).decrypt(nonce, blob[len(MAGIC) + _NONCE:], MAGIC + fmt.encode())
    except InvalidTag:
        raise StateAuthenticationError(
            f"{where} fails authentication: it was edited, truncated or forged, belongs to another kind of "
            "state, or state_key is not the key it was written with") from None


def keyed_digest(key: Optional[SealingKey], salt: bytes, *parts: bytes) -> str:
    """HMAC-SHA256 of ``parts`` under the fingerprint key (or, unauthenticated, under the stored random ``salt``)."""
    h = hmac.new(key.fingerprint if key is not None else salt, digestmod=hashlib.sha256)
    for p in parts:
        h.update(len(p).to_bytes(8, "little"))
        h.update(p)
    return h.hexdigest()
