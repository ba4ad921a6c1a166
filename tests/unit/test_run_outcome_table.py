"""The SPEC §10 outcome table, row by row, on the Run aggregate alone.

Given/when/then over the Run aggregate: a run rebuilt from earlier events, one command, then
the exact new events, or a typed DomainError naming the run with nothing appended."""

from __future__ import annotations

import pytest

from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import BudgetKind, CancellationReason, FailureCode, ModelStepPurpose, RunState
from tests.unit.run_steps import (
    EVF,
    FALLBACK,
    IE,
    LIMITS,
    MRC,
    NOTHING_VERIFIED,
    PROGRESS_ONLY,
    RECHECK_FAILED,
    ROUTE_DIAGNOSIS,
    SEM_UNAVAILABLE,
    SEM_UNSUPPORTED,
    SUCCESS,
    SUPPORTED,
    UNAVAILABLE,
    UNSUPPORTED,
    VERIFIED,
    Step,
    checked,
    complete,
    given,
    model_step,
    released,
    repair,
)

# -- the SPEC §10 outcome table, end to end ------------------------------------------------------

SPEC_SCENARIOS = (
    "conclusion, guards pass",
    "missing required context, zero tools, legal end",
    "limited checks, insufficient evidence",
    "saturated, safe progress",
    "protocol stop, safe progress",
    "EvidenceGuard finally fails",
    "SemanticGuard unsupported",
    "SemanticGuard unavailable",
    "budget exhausted, safe progress",
    "timed out, no safe content",
    "budget exhausted, no safe progress",
    "unrecoverable internal failure",
    "client disconnected",
)
"""The thirteen rows of the SPEC §10 outcome table, in order."""


def tool_call(run: Run) -> None:
    run.charge(BudgetKind.TOOL_CALLS, 1, "inv-1")
    run.charge(BudgetKind.BYTES, 100, "inv-1")


def over_tool_budget(run: Run) -> None:
    run.charge(BudgetKind.TOOL_CALLS, LIMITS.tool_calls + 1)


SPEC_TABLE: list[tuple[str, list[Step], RunState, ReleaseOutcome, FallbackType | None]] = [
    (
        "conclusion, guards pass",
        [ROUTE_DIAGNOSIS, model_step, tool_call, SUPPORTED, released(SUCCESS), complete],
        RunState.SUCCESS,
        SUCCESS,
        None,
    ),
    (
        "missing required context, zero tools, legal end",
        [ROUTE_DIAGNOSIS, model_step, NOTHING_VERIFIED, released(FALLBACK, MRC), complete],
        RunState.SUCCESS,
        FALLBACK,
        MRC,
    ),
    (
        "limited checks, insufficient evidence",
        [ROUTE_DIAGNOSIS, model_step, tool_call, PROGRESS_ONLY, released(FALLBACK, IE), complete],
        RunState.SUCCESS,
        FALLBACK,
        IE,
    ),
    (
        "saturated, safe progress",
        [ROUTE_DIAGNOSIS, tool_call, tool_call, PROGRESS_ONLY, released(FALLBACK, IE), complete],
        RunState.SUCCESS,
        FALLBACK,
        IE,
    ),
    (
        "protocol stop, safe progress",
        [
            ROUTE_DIAGNOSIS,
            model_step,
            tool_call,
            checked(False, False, 1),
            released(FALLBACK, IE),
            complete,
        ],
        RunState.SUCCESS,
        FALLBACK,
        IE,
    ),
    (
        "EvidenceGuard finally fails",
        [ROUTE_DIAGNOSIS, RECHECK_FAILED, released(FALLBACK, EVF), complete],
        RunState.SUCCESS,
        FALLBACK,
        EVF,
    ),
    (
        "SemanticGuard unsupported",
        [ROUTE_DIAGNOSIS, UNSUPPORTED, released(FALLBACK, SEM_UNSUPPORTED), complete],
        RunState.SUCCESS,
        FALLBACK,
        SEM_UNSUPPORTED,
    ),
    (
        "SemanticGuard unavailable",
        [ROUTE_DIAGNOSIS, UNAVAILABLE, released(FALLBACK, SEM_UNAVAILABLE), complete],
        RunState.SUCCESS,
        FALLBACK,
        SEM_UNAVAILABLE,
    ),
    (
        "budget exhausted, safe progress",
        [ROUTE_DIAGNOSIS, over_tool_budget, PROGRESS_ONLY, released(FALLBACK, IE), complete],
        RunState.BUDGET_EXHAUSTED,
        FALLBACK,
        IE,
    ),
    (
        "timed out, no safe content",
        [ROUTE_DIAGNOSIS, lambda r: r.time_out()],
        RunState.TIMED_OUT,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "budget exhausted, no safe progress",
        [
            ROUTE_DIAGNOSIS,
            over_tool_budget,
            NOTHING_VERIFIED,
            lambda r: r.fail(FailureCode.NO_SAFE_CONTENT),
        ],
        RunState.BUDGET_EXHAUSTED,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "unrecoverable internal failure",
        [ROUTE_DIAGNOSIS, lambda r: r.fail(FailureCode.MODEL_FAILED)],
        RunState.FAILED,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "client disconnected",
        [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.CLIENT_DISCONNECTED)],
        RunState.CANCELLED,
        ReleaseOutcome.CANCELLED,
        None,
    ),
    # -- variants of the rows above
    (
        "controlled stop, no verified facts",
        [ROUTE_DIAGNOSIS, NOTHING_VERIFIED, lambda r: r.fail(FailureCode.NO_SAFE_CONTENT)],
        RunState.FAILED,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "budget exhausted mid guard chain, safe progress",
        [
            ROUTE_DIAGNOSIS,
            checked(True, False, VERIFIED),
            repair,
            lambda r: r.record_model_step(ModelStepPurpose.REPAIR, 60, 50, 1),
            released(FALLBACK, IE),
            complete,
        ],
        RunState.BUDGET_EXHAUSTED,
        FALLBACK,
        IE,
    ),
    (
        "timed out by cancel(DEADLINE_EXCEEDED), no safe content",
        [ROUTE_DIAGNOSIS, PROGRESS_ONLY, lambda r: r.cancel(CancellationReason.DEADLINE_EXCEEDED)],
        RunState.TIMED_OUT,
        ReleaseOutcome.FAILED,
        None,
    ),
    (
        "user requested",
        [ROUTE_DIAGNOSIS, lambda r: r.cancel(CancellationReason.USER_REQUESTED)],
        RunState.CANCELLED,
        ReleaseOutcome.CANCELLED,
        None,
    ),
]


def test_the_outcome_table_covers_every_row_of_spec_section_10() -> None:
    assert len(SPEC_SCENARIOS) == 13
    assert [row[0] for row in SPEC_TABLE[: len(SPEC_SCENARIOS)]] == list(SPEC_SCENARIOS)


@pytest.mark.parametrize(
    ("steps", "state", "outcome", "fallback"),
    [row[1:] for row in SPEC_TABLE],
    ids=[row[0] for row in SPEC_TABLE],
)
def test_every_row_of_the_outcome_table(
    steps: list[Step],
    state: RunState,
    outcome: ReleaseOutcome,
    fallback: FallbackType | None,
) -> None:
    run = given(*steps)

    finished = run.finish(run.created_on)

    assert [type(e) for e in run.collect_events()] == [Run.RunFinished]
    assert finished is outcome
    assert run.finished_outcome is outcome
    assert run.state is state
    assert outcome is not FALLBACK or state is not RunState.FAILED
    published = outcome in (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
    assert run.release == ((outcome, fallback) if published else None)


def test_the_zero_tool_row_called_no_tool() -> None:
    run = given(*SPEC_TABLE[1][1])

    assert run.usage.tool_calls == 0
    assert run.guards.verified_facts == 0


@pytest.mark.parametrize(
    "row",
    [row for row in SPEC_TABLE if row[3] is FALLBACK and row[4] is IE],
    ids=lambda row: row[0],
)
def test_every_insufficient_evidence_row_rests_on_verified_facts(
    row: tuple[str, list[Step], RunState, ReleaseOutcome, FallbackType | None],
) -> None:
    run = given(*row[1])

    assert run.guards.verified_facts > 0
