"""Ed25519 signatures anyone can check: of audit checkpoints and of exports.

A chain link proves an event unchanged only to whoever trusts the links: a rewrite that
recomputes every later link passes, and an HMAC key that makes links unforgeable also lets
whoever holds it forge them. A signature made with a private key that only the log's writer
holds is checked with its public key alone: the checkpoints it signs pin every stream head up
to a position, and an export's last line signs everything in the file, so a run rewritten and
relinked, or a file cut short, shows to anyone with the public key.

A signature is ``{"alg": "ed25519", "key_id": …, "value": <base64>}``; the key id is derived
from the public key (``ed25519:`` and 16 hex digits of its SHA-256), so a verifier given several
public keys (after a rotation) picks the one each signature names. The private key is never
written anywhere but its own file, and no message or error here contains it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

if TYPE_CHECKING:
    from collections.abc import Iterable

    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

ALG = "ed25519"


def key_id(public: Ed25519PublicKey) -> str:
    """A public key's id: ``ed25519:`` and the first 16 hex digits of its raw bytes' SHA-256."""
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return f"{ALG}:{hashlib.sha256(raw).hexdigest()[:16]}"


class Signer:
    """Signs with a private key; shows only its key id (``repr`` included)."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        """Sign with ``private``."""
        self._private = private
        self.key_id = key_id(private.public_key())

    def sign(self, message: bytes) -> dict[str, str]:
        """The signature of ``message``, naming this key."""
        value = base64.b64encode(self._private.sign(message)).decode("ascii")
        return {"alg": ALG, "key_id": self.key_id, "value": value}

    def public_keys(self) -> PublicKeys:
        """This key's public half, to check what it signed (the service's own verification)."""
        return PublicKeys.of([self._private.public_key()])

    def __repr__(self) -> str:
        """The key id only: a signer printed or logged never shows its key."""
        return f"Signer({self.key_id})"


@dataclass(frozen=True)
class PublicKeys:
    """The public keys a verifier trusts, by key id (several after a rotation)."""

    keys: dict[str, Ed25519PublicKey]

    @classmethod
    def of(cls, keys: Iterable[Ed25519PublicKey]) -> PublicKeys:
        """The given keys by their ids."""
        return cls({key_id(key): key for key in keys})

    def problem(self, signature: Any, message: bytes) -> str | None:
        """Why ``signature`` does not sign ``message`` with one of these keys; None if it does."""
        if signature is None:
            return "it carries no signature"
        if not isinstance(signature, dict) or signature.get("alg") != ALG:
            return f"its signature is not an {ALG} signature ({str(signature)[:60]!r})"
        named = str(signature.get("key_id", ""))
        public = self.keys.get(named)
        if public is None:
            given = ", ".join(sorted(self.keys)) or "none"
            return f"it is signed with key {named[:40]!r}, not one of the keys given ({given})"
        try:
            public.verify(base64.b64decode(str(signature.get("value", "")), validate=True), message)
        except (InvalidSignature, ValueError):
            return f"its signature does not verify with key {named}: what it signs was changed"
        return None


def export_message(digest: str, events: int, first: int, last: int) -> bytes:
    """What an export's signature covers: the digest of its lines, their count and positions."""
    content = {
        "kind": "harness-audit-export",
        "events": events,
        "first_position": first,
        "last_position": last,
        "sha256": digest,
    }
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode()


class LinesDigest:
    """The SHA-256 of an export's event lines, exactly as written (each with its newline)."""

    def __init__(self) -> None:
        """Nothing read yet."""
        self._hash = hashlib.sha256()
        self.events = 0
        self.first = 0
        self.last = 0

    def add(self, line: str, position: int) -> None:
        """Take one event line (with its newline) of the event at log ``position``."""
        self._hash.update(line.encode("utf-8"))
        self.events += 1
        self.first = self.first or position
        self.last = position

    def message(self) -> bytes:
        """:func:`export_message` of the lines taken."""
        return export_message(self._hash.hexdigest(), self.events, self.first, self.last)

    def trailer(self, signer: Signer) -> dict[str, Any]:
        """The export's last line: what it signs, and the signature."""
        signed = json.loads(self.message())
        return {"signed": signed, "signature": signer.sign(self.message())}
