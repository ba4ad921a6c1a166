"""``record_draft``: an answer that is the draft itself (the repair's) is parsed and recorded."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import pytest

from application.drafts import DiagnosisDraft, DraftError
from application.proposals import record_draft, recorded_draft
from domain.run import Run
from domain.states import DraftOutcome, Intent, ModelStepPurpose
from tests.unit.gwt import then_events

if TYPE_CHECKING:
    from application.run_context import RunContext

VALID = {
    "conclusion": {
        "statement": "The pool is too small.",
        "citations": [{"reference": "inv-1", "excerpt": "connection pool 95% used"}],
    },
    "facts": [],
    "missing_info": [{"kind": "SERVICE"}],
}


@dataclass
class FakeJournal:
    """Counts what a run's journal was asked to record."""

    records: int = 0

    def record(self) -> None:
        self.records += 1


@dataclass
class FakeContext:
    """The two things ``record_draft`` uses of a RunContext: the run and its journal."""

    run: Run
    journal: FakeJournal = field(default_factory=FakeJournal)


def _context() -> FakeContext:
    run = Run.start("session-1", "why?", datetime(2030, 1, 1, tzinfo=UTC))
    run.attempt_routing()
    run.decide_routing(Intent.DIAGNOSIS)
    run.collect_events()
    return FakeContext(run)


def _record(ctx: FakeContext, text: str) -> DiagnosisDraft | DraftError:
    return record_draft(cast("RunContext", ctx), ModelStepPurpose.REPAIR, text)


def test_a_valid_repair_draft_is_returned_and_recorded_valid() -> None:
    ctx, text = _context(), json.dumps(VALID)

    result = _record(ctx, text)

    assert isinstance(result, DiagnosisDraft) and result.conclusion is not None
    ((event, payload),) = then_events(ctx.run)
    assert event is Run.DraftProposed
    assert payload["purpose"] is ModelStepPurpose.REPAIR
    assert (payload["outcome"], payload["detail"], payload["text"]) == (
        DraftOutcome.VALID,
        "",
        text,
    )
    assert ctx.journal.records == 1


@pytest.mark.parametrize(
    ("text", "outcome", "detail"),
    [
        ("  ", DraftOutcome.EMPTY_DRAFT, "the model answered with an empty text"),
        ('{"conclusion": ', DraftOutcome.INVALID_JSON, "Expecting value at column 16"),
        ('{"conclusion": "x"}', DraftOutcome.SCHEMA_INVALID, "conclusion: Input should be"),
        ("{}", DraftOutcome.EMPTY_DRAFT, "no conclusion, facts or missing_info"),
    ],
    ids=["blank", "invalid-json", "schema", "nothing-drafted"],
)
def test_a_broken_repair_draft_is_returned_as_its_error_and_recorded(
    text: str, outcome: DraftOutcome, detail: str
) -> None:
    ctx = _context()

    result = _record(ctx, text)

    assert isinstance(result, DraftError) and result.kind is outcome
    ((_, payload),) = then_events(ctx.run)
    assert payload["outcome"] is outcome and payload["text"] == text
    assert payload["detail"].startswith(detail)
    assert ctx.journal.records == 1


@pytest.mark.parametrize(
    ("text", "found"),
    [
        (json.dumps({"draft": VALID}), VALID),
        (json.dumps({"progress": {"gain": "GAINED"}, "draft": VALID}), VALID),
        (json.dumps(VALID), VALID),
        ('{"draft": ', None),
        ("[1, 2]", None),
    ],
    ids=["agent-answer", "with-progress", "bare-draft", "cut-short", "not-an-object"],
)
def test_the_recorded_text_is_read_back_as_the_draft_it_holds(
    text: str, found: dict[str, Any] | None
) -> None:
    assert recorded_draft(text) == found
