"""Failure causes are redacted and bounded before the log records them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.redaction import CAUSE_LIMIT, describe_error, failure_cause, redact

CASES = [
    (
        "connect postgresql://bob:s3cr3t@db:5432/x failed",
        "connect postgresql://***@db:5432/x failed",
    ),
    ("clone https://ghp_tok@github.com/x", "clone https://***@github.com/x"),
    ("GET /v1?api_key=abc123&q=1 -> 500", "GET /v1?api_key=***&q=1 -> 500"),
    ("Authorization: Bearer eyJhbGci.x-y", "Authorization: Bearer ***"),
    ("token=xyz; password = 'p w'", "token=***; password = ***"),
    ('{"password": "hunter 2", "user": "bob"}', '{"password": ***, "user": "bob"}'),
    ("{'client_secret': 'zz'}", "{'client_secret': ***}"),
    ("key sk-proj-abcdefghijkl leaked", "key sk-*** leaked"),
    ("KeyError: 'intent'", "KeyError: 'intent'"),
    ("password authentication failed for user bob", "password authentication failed for user bob"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_what_looks_like_a_credential_is_hidden(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_a_cause_names_the_exception_on_one_bounded_line() -> None:
    assert describe_error(KeyError("intent")) == "KeyError: 'intent'"
    assert describe_error(RuntimeError()) == "RuntimeError"
    long = describe_error(ValueError("line one\nline two " + "x" * 5000))
    assert long.startswith("ValueError: line one line two x") and long.endswith("…")
    assert len(long) == CAUSE_LIMIT


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_an_exception_that_cannot_be_printed_is_still_named() -> None:
    assert describe_error(Unprintable()) == "Unprintable: (its message could not be read)"


@given(st.text(alphabet=st.sampled_from("ab =:'\"@/&?*.-_kpetoyswrdBbearsk\n"), max_size=700))
def test_a_cause_is_what_recording_it_again_gives(text: str) -> None:
    cause = failure_cause(text)
    assert len(cause) <= CAUSE_LIMIT and "\n" not in cause
    assert failure_cause(cause) == cause  # so the verifier can tell a forged cause


@given(st.text(max_size=60), st.text(alphabet="abcdef0123456789", min_size=6, max_size=20))
def test_a_password_in_any_message_is_never_recorded(before: str, secret: str) -> None:
    cause = failure_cause(f"{before} password={secret} https://u:{secret}@h/")
    assert f"={secret}" not in cause and f":{secret}@" not in cause
