"""Every draft the model proposes is an event (design §10.1): its text, whole, and how it parsed.

The agent's final answer and the repair's answer are drafts. Each is recorded as
``DRAFT_PROPOSED`` right after the model step that produced it, whether it parsed or not, so
the log shows what the model proposed and what was withheld, and why, without guessing.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from application.drafts import DraftError, loads_json, validate_draft
from domain.states import DraftOutcome

if TYPE_CHECKING:
    from application.drafts import DiagnosisDraft
    from application.release_context import ReleaseContext
    from domain.states import ModelStepPurpose

EMPTY = "the model answered with an empty text"


def outcome_of(result: DiagnosisDraft | DraftError) -> tuple[DraftOutcome, str]:
    """How a parse went, as recorded: VALID and no detail, or the failure's kind and detail."""
    if not isinstance(result, DraftError):
        return DraftOutcome.VALID, ""
    detail = str(result).removeprefix(f"{result.kind.value}: ")
    return result.kind, detail or result.kind.value


def propose(
    ctx: ReleaseContext, purpose: ModelStepPurpose, text: str, result: DiagnosisDraft | DraftError
) -> None:
    """Record ``DRAFT_PROPOSED`` for ``text``, which parsed to ``result``.

    It is committed with the next external call or the run's end (:mod:`application.run_journal`).

    Raises:
        RunAborted: the run had already ended (its events are committed at once then, and may
            conflict with a cancel).
    """
    outcome, detail = outcome_of(result)
    ctx.run.propose_draft(purpose, text, outcome, detail)
    ctx.journal.record()


def parse_draft(text: str) -> DiagnosisDraft | DraftError:
    """A model's answer that is the draft itself (the repair's): the draft or why it is not one."""
    if not text.strip():
        return DraftError(DraftOutcome.EMPTY_DRAFT, EMPTY)
    try:
        return validate_draft(text)
    except DraftError as error:
        return error


def record_draft(
    ctx: ReleaseContext, purpose: ModelStepPurpose, text: str
) -> DiagnosisDraft | DraftError:
    """Parse ``text`` as a draft, record it (``DRAFT_PROPOSED``) and return the parse's result.

    For an answer that is the draft itself, such as the repair's:
    ``record_draft(ctx, ModelStepPurpose.REPAIR, ctx.call_model(request).text)``.

    Raises:
        RunAborted: the run ended meanwhile; nothing more may be recorded.
    """
    result = parse_draft(text)
    propose(ctx, purpose, text, result)
    return result


def recorded_draft(text: str) -> dict[str, Any] | None:
    """The draft object a recorded text holds (an agent's answer wraps it in ``draft``), or None.

    None when the text does not parse (a failed draft, or a valid one cut short, as logs
    written before the size limit hold them).
    """
    try:
        data = loads_json(text)
    except json.JSONDecodeError:
        return None
    if isinstance(data, dict) and isinstance(data.get("draft"), dict):
        data = data["draft"]
    return data if isinstance(data, dict) else None
