"""A call's scope as a reader sees it: the harness's words, the model's measured."""

from __future__ import annotations

import pytest

from domain.scopes import measured, shown_scope

QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"


@pytest.mark.parametrize(
    ("scope", "shown"),
    [
        (  # the built-in tools' canonical scope: every value vouched for
            "service=checkout;start=2026-11-29T08:00:00Z;end=2026-11-29T12:00:00Z;level=ERROR;limit=20",
            "service=checkout, start=2026-11-29T08:00:00Z, end=2026-11-29T12:00:00Z, level=ERROR,"
            " limit=20",
        ),
        ("service=checkout;contains=timeout", "service=checkout, contains=timeout"),
        ("service=checkout;metric=latency_p99", "service=checkout, metric=latency_p99"),
        (  # a phrase of the model's is measured, whatever it says
            "service=checkout;contains=the v2.14.0 deploy caused the outage",
            "service=checkout, contains=‹36 characters›",
        ),
        (  # a service neither the question nor the catalogue names
            "service=checkout-is-down-because-of-v2.14.0",
            "service=‹35 characters›",
        ),
        ('{"service": "payments", "q": 3}', "service=payments, q=3"),  # the catalogue knows it
        ('{"The deploy broke it": true}', "‹19 characters›=true"),  # a key of the model's
        ("checkout slow", "checkout slow"),  # one value, in the operator's own words
        ("checkout slow because of the deploy", "‹35 characters›"),
        ("", ""),
    ],
)
def test_a_scope_shows_only_what_the_harness_can_vouch_for(scope: str, shown: str) -> None:
    assert shown_scope(scope, QUESTION, ("payments",)) == shown


def test_measured_says_the_length_only() -> None:
    assert measured("the deploy broke it") == "‹19 characters›"
