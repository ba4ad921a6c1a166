"""The guard chain table of SPEC §10: each guard event's allowed prior stages, and its one check.

The Run's own refusals of out-of-order guard events are in ``test_run_guards.py``
(GUARD_REFUSALS); these tests hold the table itself to the shape of a chain.
"""

from __future__ import annotations

import pytest

from domain.guard_stages import GUARD_STEPS, KNOWLEDGE_STEPS, STEPS_OF, guard_step_refusal
from domain.release_states import GuardStage
from domain.states import Intent

ORDER = list(GuardStage)
"""The stages in the order the chain reaches them (their declaration order)."""


def test_every_stage_but_none_is_recorded_by_a_guard_event() -> None:
    assert set(GUARD_STEPS) == set(GuardStage) - {GuardStage.NONE}


def test_every_stage_is_reachable_from_none() -> None:
    reached = {GuardStage.NONE}
    while True:
        more = {step for step, after in GUARD_STEPS.items() if reached & set(after)} - reached
        if not more:
            break
        reached |= more

    assert reached == set(GuardStage)


@pytest.mark.parametrize("step", list(GUARD_STEPS), ids=lambda s: s.value)
def test_the_chain_only_goes_forward(step: GuardStage) -> None:
    # so no guard event can be recorded twice, nor after a later one
    assert all(ORDER.index(before) < ORDER.index(step) for before in GUARD_STEPS[step])


@pytest.mark.parametrize("current", list(GuardStage), ids=lambda s: s.value)
@pytest.mark.parametrize("step", list(GUARD_STEPS), ids=lambda s: s.value)
def test_the_check_allows_exactly_the_table(step: GuardStage, current: GuardStage) -> None:
    refusal = guard_step_refusal(current, step)

    assert (refusal is None) == (current in GUARD_STEPS[step])


def test_a_refusal_names_the_stage_and_what_was_expected() -> None:
    refusal = guard_step_refusal(GuardStage.REPAIRED, GuardStage.SEMANTIC_ATTEMPTED)

    assert refusal == "guard stage is REPAIRED, expected EVIDENCE_CHECKED or RECHECKED"


def test_a_stage_no_event_records_is_always_refused() -> None:
    assert guard_step_refusal(GuardStage.NONE, GuardStage.NONE) == (
        "guard stage is NONE, expected nothing (no event records it)"
    )


# -- the other routes' tables --------------------------------------------------------------------


@pytest.mark.parametrize("current", list(GuardStage), ids=lambda s: s.value)
@pytest.mark.parametrize("step", list(GuardStage), ids=lambda s: s.value)
def test_a_knowledge_answer_is_judged_once_and_released_before_or_after_it(
    step: GuardStage, current: GuardStage
) -> None:
    allowed = {
        (GuardStage.SEMANTIC_ATTEMPTED, GuardStage.NONE),
        (GuardStage.SEMANTIC_DECIDED, GuardStage.SEMANTIC_ATTEMPTED),
        (GuardStage.DECIDED, GuardStage.NONE),
        (GuardStage.DECIDED, GuardStage.SEMANTIC_DECIDED),
    }
    refusal = guard_step_refusal(current, step, Intent.KNOWLEDGE_QUERY)

    assert (refusal is None) == ((step, current) in allowed)
    assert set(KNOWLEDGE_STEPS) == {s for s, _ in allowed}


@pytest.mark.parametrize("current", list(GuardStage), ids=lambda s: s.value)
def test_a_system_chat_answer_runs_no_guard(current: GuardStage) -> None:
    for step in GuardStage:
        allowed = (step, current) == (GuardStage.DECIDED, GuardStage.NONE)
        assert (guard_step_refusal(current, step, Intent.SYSTEM_CHAT) is None) == allowed


def test_every_route_has_its_table() -> None:
    assert set(STEPS_OF) == set(Intent)
