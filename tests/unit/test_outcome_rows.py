"""The SPEC §10 outcome table and ``final_outcome`` in the domain: the two agree, row by row.

``Run.finish`` records :func:`final_outcome`; the audit holds every finished run to it and to
:data:`OUTCOME_TABLE`. The rows as the Run reaches them are in ``test_run_outcome_table.py``
(SPEC_TABLE).
"""

from __future__ import annotations

from enum import Enum

import pytest

from domain.release import OUTCOME_TABLE, PUBLISHED, final_outcome, is_legal_row
from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import RunState

Release = tuple[ReleaseOutcome, FallbackType | None] | None

RELEASES: list[Release] = [
    None,
    (ReleaseOutcome.SUCCESS, None),
    *((ReleaseOutcome.FALLBACK, fallback) for fallback in FallbackType),
]
"""Every release decision a run can have recorded, and none."""

ENDINGS = [
    (state, release)
    for state in RunState
    if state is not RunState.RUNNING
    for release in RELEASES
    if not (state is RunState.SUCCESS and release is None)  # complete() needs a release
]


def _name(value: object) -> str:
    if isinstance(value, tuple):
        return "-".join(_name(part) for part in value)
    return value.value if isinstance(value, Enum) else "none"


@pytest.mark.parametrize("row", sorted(OUTCOME_TABLE, key=str), ids=_name)
def test_each_row_is_where_its_own_release_lands(
    row: tuple[RunState, ReleaseOutcome, FallbackType | None],
) -> None:
    state, outcome, fallback = row
    release = (outcome, fallback) if outcome in PUBLISHED else None

    assert final_outcome(state, release) is outcome


@pytest.mark.parametrize(("state", "release"), ENDINGS, ids=_name)
def test_every_ending_lands_on_a_row(state: RunState, release: Release) -> None:
    outcome = final_outcome(state, release)
    fallback = release[1] if release and outcome is ReleaseOutcome.FALLBACK else None

    assert is_legal_row(state, outcome, fallback)


def test_a_fallback_is_only_kept_by_a_success_or_a_budget_exhausted_run() -> None:
    keeps = {state for state, outcome, _ in OUTCOME_TABLE if outcome is ReleaseOutcome.FALLBACK}

    assert keeps == {RunState.SUCCESS, RunState.BUDGET_EXHAUSTED}


def test_a_running_run_is_no_row() -> None:
    assert not any(state is RunState.RUNNING for state, _, _ in OUTCOME_TABLE)
