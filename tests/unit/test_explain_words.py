"""Every termination reason has words in the explanation (a new reason must get some)."""

from __future__ import annotations

from application.explain import _REASON_WORDS
from domain.states import CancellationReason, CompletionReason, FailureCode


def test_every_termination_reason_is_explained_in_words() -> None:
    reasons = [*CancellationReason, *FailureCode, *CompletionReason]
    missing = [reason for reason in reasons if not _REASON_WORDS.get(reason, "").strip()]
    assert not missing, f"no words for {missing}"
