"""Audit signing keys in files: made by ``harness audit keygen``, read by the store and verify.

The private key is a PEM file (PKCS #8, unencrypted) only its owner may read (mode 0600: a key
others can read is refused, as ssh does); the public key is a PEM file to hand to auditors.
Errors name the file and what is wrong with it, never what it holds.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)

from application.audit.signatures import PublicKeys, Signer, key_id

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

PRIVATE_NAME, PUBLIC_NAME = "audit-signing.key", "audit-signing.pub"


class KeyFileError(ValueError):
    """A key file that cannot be used; the message names the file and why, never its content."""


def check_signing_key_file(path: Path | None) -> Path | None:
    """Settings validator: the file holds a usable private key (it is loaded to be sure)."""
    if path is not None:
        load_signer(path)
    return path


def configured_signer(path: Path | None) -> Signer | None:
    """The signer of ``HARNESS_AUDIT_SIGNING_KEY_FILE``'s key; None when none is configured."""
    return load_signer(path) if path is not None else None


def load_signer(path: Path) -> Signer:
    """The signer of the Ed25519 private key in ``path``."""
    data = _read(path, "private key")
    mode = os.stat(path).st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(
            f"the signing key {path} may be read by other users (mode {stat.S_IMODE(mode):04o}):"
            f" run `chmod 600 {path}`"
        )
    try:
        private = load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise KeyFileError(
            f"{path} holds no unencrypted private key in PEM (make one with `harness audit keygen`)"
        ) from None
    if not isinstance(private, Ed25519PrivateKey):
        raise KeyFileError(f"{path} holds a {type(private).__name__[1:]}, not an Ed25519 key")
    return Signer(private)


def load_public_keys(paths: Iterable[Path]) -> PublicKeys:
    """The Ed25519 public keys in ``paths`` (PEM), by key id."""
    keys = []
    for path in paths:
        data = _read(path, "public key")
        if b"PRIVATE KEY" in data:
            raise KeyFileError(
                f"{path} is a private key: give its public key ({PUBLIC_NAME}), and keep the"
                " private one with the log's writer only"
            )
        try:
            public = load_pem_public_key(data)
        except (ValueError, TypeError):
            raise KeyFileError(f"{path} holds no public key in PEM") from None
        if not isinstance(public, Ed25519PublicKey):
            raise KeyFileError(f"{path} holds a {type(public).__name__}, not an Ed25519 key")
        keys.append(public)
    return PublicKeys.of(keys)


def generate(directory: Path) -> tuple[Path, Path, str]:
    """Write a new key pair into ``directory``; the private key's path, the public's, the id.

    Refuses to replace an existing key (FileExistsError): a key that signed checkpoints must
    stay, its public key is what verifies them.
    """
    private = Ed25519PrivateKey.generate()
    pem = private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public_pem = private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    private_path, public_path = directory / PRIVATE_NAME, directory / PUBLIC_NAME
    for path in (private_path, public_path):
        if path.exists():
            raise FileExistsError(path)
    descriptor = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(pem)
    public_path.write_bytes(public_pem)
    return private_path, public_path, key_id(private.public_key())


def _read(path: Path, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise KeyFileError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    if len(data) > 64 * 1024:
        raise KeyFileError(f"{path} is too large for a {what} ({len(data)} bytes)")
    return data
