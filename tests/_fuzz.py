"""Hypothesis settings of the fuzz tests: few fixed examples in CI, many random ones on demand."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

MORE = "FUZZ_EXAMPLES"
"""Environment variable: run this many random examples per property instead of the fixed few."""


def fuzz_settings(examples: int) -> settings:
    """``examples`` per property, the same ones every run (a finding is never a flake).

    With ``FUZZ_EXAMPLES=N`` each property runs N examples drawn at random, and hypothesis keeps
    what fails in its example database (``.hypothesis/``) to try first next time.
    """
    more = os.environ.get(MORE, "").strip()
    return settings(
        max_examples=int(more) if more else examples,
        derandomize=not more,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
