"""What the model proposed as its drafts, read back from ``DRAFT_PROPOSED``, never guessed.

A failed draft is named with its failure kind and detail (nothing from it was published); a
valid one with what its recorded text holds: a conclusion or not, its facts, its missing items.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, assert_never

from application.proposals import recorded_draft
from domain.run import Run
from domain.states import DraftOutcome, ModelStepPurpose

if TYPE_CHECKING:
    from application.explain.log import RunStreams
    from application.explain.model import FieldValue

_FAILED = {
    DraftOutcome.EMPTY_DRAFT: "empty",
    DraftOutcome.INVALID_JSON: "not valid JSON",
    DraftOutcome.SCHEMA_INVALID: "invalid against the draft schema",
    DraftOutcome.TOO_LARGE: "refused whole for its size, unread",
}
"""A failed draft's outcome in words."""


def _last_draft(
    log: RunStreams, purpose: ModelStepPurpose = ModelStepPurpose.AGENT
) -> Run.DraftProposed | None:
    """The latest draft proposed for ``purpose`` (the agent's final answer by default)."""
    drafts = [d for d in log.of(Run.DraftProposed) if d.purpose is purpose]
    return drafts[-1] if drafts else None


def _failed(draft: Run.DraftProposed | None) -> bool:
    return draft is not None and draft.outcome is not DraftOutcome.VALID


def _proposed(draft: Run.DraftProposed) -> str:
    """``the model proposed a draft (N characters) …``: what it held, or why it was discarded."""
    who = "the model" if draft.purpose is ModelStepPurpose.AGENT else "the repair"
    said = f"{who} proposed a draft ({draft.length} characters)"
    match draft.outcome:
        case DraftOutcome.VALID:
            return f"{said} {_contents(draft)}"
        case (
            DraftOutcome.EMPTY_DRAFT
            | DraftOutcome.INVALID_JSON
            | DraftOutcome.SCHEMA_INVALID
            | DraftOutcome.TOO_LARGE
        ):
            why = _FAILED[draft.outcome]
            return f"{said} that was {why} ({draft.detail}), so nothing from it was published"
        case _:
            assert_never(draft.outcome)


def _contents(draft: Run.DraftProposed) -> str:
    whole = len(draft.text) == draft.length
    data = recorded_draft(draft.text) if whole else None
    if data is None:
        return f"that was valid (only its first {len(draft.text)} characters were recorded)"
    facts, missing = _count(data.get("facts")), _count(data.get("missing_info"))
    counts = f"{facts} fact(s) and {missing} missing item(s)"
    if data.get("conclusion") is not None:
        return f"with a conclusion, {counts}"
    return f"without a conclusion, with {counts}"


def _count(items: object) -> int:
    return len(items) if isinstance(items, list) else 0


def _draft_fields(log: RunStreams) -> dict[str, FieldValue]:
    """The agent's last draft as recorded: its outcome, length and parse failure."""
    draft = _last_draft(log)
    return {
        "draft_outcome": draft.outcome.value if draft else None,
        "draft_length": draft.length if draft else None,
        "draft_detail": (draft.detail or None) if draft else None,
    }
