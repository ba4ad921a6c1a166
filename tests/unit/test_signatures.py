"""Signatures as a verifier meets them: whatever a hostile log puts there is named, never raised.

A checkpoint's or an export's ``signature`` is data an attacker controls: any JSON value, a key
id that is not given, a value that is not base64, a signature of something else. Each is a
problem in words; only the signature of exactly the message, with a given key, is none.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

from application.audit.signatures import PublicKeys, Signer, key_id
from domain.checkpoint import checkpoint_message

PRIVATE = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
SIGNER = Signer(PRIVATE)
KEYS = PublicKeys.of([PRIVATE.public_key()])
MESSAGE = checkpoint_message(2, 40, {"s": 3}, {"s": "sha256:ab"})

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(signature=json_values)
def test_any_value_as_a_signature_is_a_problem_in_words(signature: Any) -> None:
    problem = KEYS.problem(signature, MESSAGE)
    assert isinstance(problem, str) and problem


@given(value=st.text(max_size=120))
def test_a_forged_value_with_the_right_key_id_does_not_verify(value: str) -> None:
    forged = {"alg": "ed25519", "key_id": SIGNER.key_id, "value": value}
    problem = KEYS.problem(forged, MESSAGE)
    assert problem is not None and SIGNER.key_id in problem


def test_only_the_signature_of_the_very_message_verifies() -> None:
    signature = SIGNER.sign(MESSAGE)
    assert KEYS.problem(signature, MESSAGE) is None
    assert KEYS.problem(signature, checkpoint_message(3, 40, {"s": 3}, {"s": "sha256:ab"}))
    assert KEYS.problem(signature, checkpoint_message(2, 41, {"s": 3}, {"s": "sha256:ab"}))
    assert KEYS.problem(signature, checkpoint_message(2, 40, {"s": 3}, {"s": "sha256:ac"}))


def test_a_signer_shows_its_key_id_and_never_its_key() -> None:
    assert repr(SIGNER) == f"Signer({key_id(PRIVATE.public_key())})"
    assert SIGNER.key_id.startswith("ed25519:") and len(SIGNER.key_id) == len("ed25519:") + 16
