"""The drafts a run's model proposed: each recorded whole with how it parsed, or refused whole.

The agent's final answer and the repair's answer are drafts (``DRAFT_PROPOSED``); the verifier
derives every guard decision again from them (design §10.1).
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.run_core import RunCore
from domain.run_steps import text_sha256
from domain.states import MAX_MODEL_OUTPUT_CHARS, DraftOutcome, ModelStepPurpose


class RunDrafts(RunCore):
    """The draft commands of a run and their event."""

    LEGACY_DRAFT_CHARS = 8000
    """How much of a draft's text its event kept before the size limit (older logs hold cuts)."""

    MAX_DRAFT_DETAIL = 300
    """How much of a failed draft's parse failure its event keeps."""

    DRAFT_PURPOSES = (ModelStepPurpose.AGENT, ModelStepPurpose.REPAIR)
    """The model steps that propose a draft: the agent's final answer and the repair."""

    class DraftProposed(Aggregate.Event):
        """The model proposed a draft: its text (whole), length, hash and how it parsed."""

        class_version = 1
        purpose: ModelStepPurpose
        text: str
        """The draft's text, whole; '' when refused TOO_LARGE (older logs: the first
        :data:`LEGACY_DRAFT_CHARS` characters)."""
        length: int
        """The full text's length in characters."""
        sha256: str
        """The hex SHA-256 of the full text, UTF-8 encoded."""
        outcome: DraftOutcome
        detail: str
        """Why it failed to parse, bounded ('' when VALID)."""

    def propose_draft(
        self, purpose: ModelStepPurpose, text: str, outcome: DraftOutcome, detail: str = ""
    ) -> None:
        """Record a draft the model proposed and how it parsed (``DRAFT_PROPOSED``).

        The text is kept whole, with its length and SHA-256, so an auditor sees what was
        proposed and re-derives every guard decision from it. A text over
        :data:`MAX_MODEL_OUTPUT_CHARS` is never cut here: it is refused (:meth:`refuse_draft`).
        """
        self.check_active()
        self._refuse_if(self.release is not None, "the release was already decided")
        self._invalid_if(
            purpose not in self.DRAFT_PURPOSES,
            f"only {' or '.join(p.value for p in self.DRAFT_PURPOSES)} propose a draft, "
            f"not {purpose.value}",
        )
        self._invalid_if(
            len(text) > MAX_MODEL_OUTPUT_CHARS or outcome is DraftOutcome.TOO_LARGE,
            f"a draft over {MAX_MODEL_OUTPUT_CHARS} characters is refused whole (refuse_draft)",
        )
        failed = outcome is not DraftOutcome.VALID
        self._invalid_if(failed != bool(detail), "a failed draft says why, a valid one nothing")
        self.trigger_event(
            self.DraftProposed,
            purpose=purpose,
            text=text,
            length=len(text),
            sha256=text_sha256(text),
            outcome=outcome,
            detail=detail[: self.MAX_DRAFT_DETAIL],
        )

    def refuse_draft(self, purpose: ModelStepPurpose, length: int, sha256: str) -> None:
        """Record a draft refused whole as TOO_LARGE (``DRAFT_PROPOSED``): no text, no prefix.

        ``length`` and ``sha256`` are the refused text's (an auditor can match it against the
        model's answer kept elsewhere); the text itself is never recorded, cut or whole.
        """
        self.check_active()
        self._refuse_if(self.release is not None, "the release was already decided")
        self._invalid_if(purpose not in self.DRAFT_PURPOSES, f"{purpose.value} proposes no draft")
        self._invalid_if(
            length <= MAX_MODEL_OUTPUT_CHARS,
            f"only a draft over {MAX_MODEL_OUTPUT_CHARS} characters is refused as TOO_LARGE",
        )
        self._invalid_if(not _is_sha256(sha256), "give the refused text's hex SHA-256")
        self.trigger_event(
            self.DraftProposed,
            purpose=purpose,
            text="",
            length=length,
            sha256=sha256,
            outcome=DraftOutcome.TOO_LARGE,
            detail=too_large_detail(length),
        )


def too_large_detail(length: int) -> str:
    """Why a model answer of ``length`` characters was refused, in the harness's words."""
    return f"{length} characters, over the {MAX_MODEL_OUTPUT_CHARS} a model answer may have"


def _is_sha256(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)
