"""Given/when/then tests of the Collection aggregate: gain, violations, saturation, stop."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import pytest

from domain.collection import Collection, collection_id
from domain.errors import (
    CollectionClosedError,
    ControlledStopError,
    IllegalTransitionError,
    InvalidCommandError,
)
from domain.grounding import Citation
from domain.tool_states import CollectionState, DiagnosisStopReason, GainSource, InformationGain
from domain.values import Fact
from tests.unit.gwt import Payloads, replay, then_events, then_refused

RUN_ID = UUID("00000000-0000-4000-8000-000000000001")
INVOCATION_ID = UUID("00000000-0000-4000-8000-0000000000a1")
FACT = Fact("checkout p99 rose to 850ms at 10:02", (Citation(str(INVOCATION_ID), "p99=850ms"),))

Step = Callable[[Collection], object]


def given(*steps: Step, no_gain_threshold: int = 3, violation_threshold: int = 2) -> Collection:
    """A collection rebuilt from the events of starting it and then taking ``steps``."""
    collection = Collection.start(RUN_ID, no_gain_threshold, violation_threshold)
    for step in steps:
        step(collection)
    return replay(Collection, collection.collect_events())


def gained(collection: Collection) -> None:
    collection.record_gain(InformationGain.GAINED, GainSource.AGENT, (FACT,))


def no_gain(collection: Collection) -> None:
    collection.record_gain(InformationGain.NO_GAIN, GainSource.AGENT)


def harness_no_gain(collection: Collection) -> None:
    collection.record_gain(InformationGain.NO_GAIN, GainSource.HARNESS)


def violation(collection: Collection) -> None:
    collection.record_violation("no progress report")


def stop_for_budget(collection: Collection) -> None:
    collection.stop_for_budget()


def deliver(collection: Collection) -> None:
    collection.deliver_stop_required()


def progress(gain: InformationGain, source: GainSource, facts: tuple[Fact, ...] = ()) -> Payloads:
    return [
        (
            Collection.ToolProgress,
            {"invocation_id": None, "gain": gain, "source": source, "facts": facts},
        )
    ]


def stopped(reason: DiagnosisStopReason) -> Payloads:
    return [(Collection.CollectionStop, {"stop_reason": reason})]


SATURATED_BY_NO_GAIN: list[Step] = [no_gain, no_gain, no_gain]
SATURATED_BY_VIOLATIONS: list[Step] = [violation, violation]
SATURATIONS = {"no-gain": SATURATED_BY_NO_GAIN, "violations": SATURATED_BY_VIOLATIONS}


# -- start ---------------------------------------------------------------------------------------


def test_start_records_the_default_thresholds_under_the_runs_collection_id() -> None:
    collection = Collection.start(RUN_ID)

    assert then_events(collection) == [
        (
            Collection.CollectionStarted,
            {
                "run_id": RUN_ID,
                "no_gain_threshold": 3,
                "violation_threshold": 2,
                "known_services": (),
            },
        )
    ]
    assert collection.id == collection_id(RUN_ID)
    assert collection.state is CollectionState.COLLECTING
    assert collection.is_open
    assert collection.stop_reason is None
    assert not collection.stop_required_delivered


def test_start_records_explicit_thresholds() -> None:
    collection = Collection.start(RUN_ID, no_gain_threshold=5, violation_threshold=1)

    assert then_events(collection) == [
        (
            Collection.CollectionStarted,
            {
                "run_id": RUN_ID,
                "no_gain_threshold": 5,
                "violation_threshold": 1,
                "known_services": (),
            },
        )
    ]


def test_the_collection_id_is_stable_per_run_and_distinct_between_runs() -> None:
    other_run = UUID("00000000-0000-4000-8000-000000000002")

    assert collection_id(RUN_ID) == collection_id(UUID(str(RUN_ID)))
    assert collection_id(RUN_ID) != collection_id(other_run)
    assert collection_id(RUN_ID) != RUN_ID


@pytest.mark.parametrize(
    ("no_gain_threshold", "violation_threshold"),
    [(0, 2), (3, 0), (-1, 2), (3, -1)],
    ids=["no-gain-zero", "violations-zero", "no-gain-negative", "violations-negative"],
)
def test_start_refuses_a_threshold_below_one(
    no_gain_threshold: int, violation_threshold: int
) -> None:
    with pytest.raises(InvalidCommandError) as caught:
        Collection.start(RUN_ID, no_gain_threshold, violation_threshold)

    assert caught.value.aggregate_id == collection_id(RUN_ID)
    assert repr(collection_id(RUN_ID)) in str(caught.value)


# -- gain ----------------------------------------------------------------------------------------


def test_record_gain_records_tool_progress_with_its_facts() -> None:
    collection = given()

    collection.record_gain(
        InformationGain.GAINED, GainSource.AGENT, (FACT,), invocation_id=INVOCATION_ID
    )

    assert then_events(collection) == [
        (
            Collection.ToolProgress,
            {
                "invocation_id": INVOCATION_ID,
                "gain": InformationGain.GAINED,
                "source": GainSource.AGENT,
                "facts": (FACT,),
            },
        )
    ]
    assert collection.facts == (FACT,)
    assert collection.consecutive_no_gain == 0


@pytest.mark.parametrize("source", list(GainSource), ids=lambda s: s.value)
def test_a_no_gain_below_the_threshold_only_counts(source: GainSource) -> None:
    collection = given(no_gain)

    collection.record_gain(InformationGain.NO_GAIN, source)

    assert then_events(collection) == progress(InformationGain.NO_GAIN, source)
    assert collection.consecutive_no_gain == 2
    assert collection.state is CollectionState.COLLECTING


def test_gained_resets_the_consecutive_no_gain_count() -> None:
    collection = given(no_gain, harness_no_gain)

    gained(collection)

    assert then_events(collection) == progress(InformationGain.GAINED, GainSource.AGENT, (FACT,))
    assert collection.consecutive_no_gain == 0


def test_after_a_gain_the_no_gain_count_starts_again() -> None:
    collection = given(no_gain, no_gain, gained, no_gain)

    no_gain(collection)

    assert [type(e) for e in collection.collect_events()] == [Collection.ToolProgress]
    assert collection.state is CollectionState.COLLECTING
    assert collection.consecutive_no_gain == 2


@pytest.mark.parametrize("source", list(GainSource), ids=lambda s: s.value)
def test_the_no_gain_reaching_the_threshold_saturates(source: GainSource) -> None:
    collection = given(no_gain, harness_no_gain)

    collection.record_gain(InformationGain.NO_GAIN, source)

    assert then_events(collection) == [
        *progress(InformationGain.NO_GAIN, source),
        *stopped(DiagnosisStopReason.INFORMATION_SATURATED),
    ]
    assert collection.state is CollectionState.SATURATED
    assert collection.stop_reason is DiagnosisStopReason.INFORMATION_SATURATED
    assert not collection.is_open
    assert not collection.stop_required_delivered


def test_a_no_gain_threshold_of_one_saturates_on_the_first_no_gain() -> None:
    collection = given(no_gain_threshold=1)

    harness_no_gain(collection)

    assert then_events(collection) == [
        *progress(InformationGain.NO_GAIN, GainSource.HARNESS),
        *stopped(DiagnosisStopReason.INFORMATION_SATURATED),
    ]


def test_the_harness_never_records_gained() -> None:
    collection = given()

    then_refused(
        collection,
        InvalidCommandError,
        lambda c: c.record_gain(InformationGain.GAINED, GainSource.HARNESS),
    )


# -- progress-protocol violations ----------------------------------------------------------------


def test_a_violation_below_the_threshold_only_counts() -> None:
    collection = given()

    collection.record_violation("malformed progress report")

    assert then_events(collection) == [
        (Collection.ProgressProtocolViolation, {"detail": "malformed progress report"})
    ]
    assert collection.consecutive_violations == 1
    assert collection.state is CollectionState.COLLECTING


def test_consecutive_violations_reaching_the_threshold_saturate() -> None:
    collection = given(violation)

    collection.record_violation("missing progress report")

    assert then_events(collection) == [
        (Collection.ProgressProtocolViolation, {"detail": "missing progress report"}),
        *stopped(DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED),
    ]
    assert collection.state is CollectionState.SATURATED
    assert collection.stop_reason is DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED


@pytest.mark.parametrize("report", [gained, no_gain], ids=["gained", "no-gain"])
def test_an_agents_valid_report_resets_the_violation_count(report: Step) -> None:
    collection = given(violation, report)

    violation(collection)

    assert [type(e) for e in collection.collect_events()] == [Collection.ProgressProtocolViolation]
    assert collection.consecutive_violations == 1
    assert collection.state is CollectionState.COLLECTING


@pytest.mark.parametrize("report", [gained, no_gain], ids=["gained", "no-gain"])
def test_an_agents_report_clears_the_violations_it_follows(report: Step) -> None:
    collection = given(violation)

    report(collection)

    assert [type(e) for e in collection.collect_events()] == [Collection.ToolProgress]
    assert collection.consecutive_violations == 0


def test_a_harness_no_gain_does_not_reset_the_violation_count() -> None:
    collection = given(violation)

    harness_no_gain(collection)

    assert then_events(collection) == progress(InformationGain.NO_GAIN, GainSource.HARNESS)
    assert collection.consecutive_violations == 1
    assert collection.consecutive_no_gain == 1
    assert collection.state is CollectionState.COLLECTING


def test_a_violation_after_a_harness_no_gain_still_counts_consecutively() -> None:
    collection = given(violation, harness_no_gain)

    collection.record_violation("missing progress report")

    assert then_events(collection) == [
        (Collection.ProgressProtocolViolation, {"detail": "missing progress report"}),
        *stopped(DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED),
    ]
    assert collection.state is CollectionState.SATURATED
    assert collection.stop_reason is DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED


def test_only_an_agents_report_breaks_a_run_of_violations() -> None:
    collection = given(violation, harness_no_gain, harness_no_gain, gained, no_gain_threshold=5)

    violation(collection)

    assert [type(e) for e in collection.collect_events()] == [Collection.ProgressProtocolViolation]
    assert collection.consecutive_violations == 1
    assert collection.state is CollectionState.COLLECTING


# -- budget stop ---------------------------------------------------------------------------------


def test_stop_for_budget_stops_collection_without_saturating() -> None:
    collection = given(no_gain, violation)

    collection.stop_for_budget()

    assert then_events(collection) == stopped(DiagnosisStopReason.BUDGET_LIMIT_REACHED)
    assert collection.state is CollectionState.COLLECTING
    assert collection.stop_reason is DiagnosisStopReason.BUDGET_LIMIT_REACHED
    assert not collection.is_open


def test_stop_for_budget_is_idempotent() -> None:
    collection = given(stop_for_budget)

    collection.stop_for_budget()

    assert collection.collect_events() == []
    assert collection.state is CollectionState.COLLECTING
    assert collection.stop_reason is DiagnosisStopReason.BUDGET_LIMIT_REACHED


@pytest.mark.parametrize("saturation", list(SATURATIONS))
def test_stop_for_budget_after_saturation_changes_nothing(saturation: str) -> None:
    collection = given(*SATURATIONS[saturation])
    reason, version = collection.stop_reason, collection.version

    collection.stop_for_budget()

    assert collection.collect_events() == []
    assert collection.version == version
    assert collection.state is CollectionState.SATURATED
    assert collection.stop_reason is reason


# -- stop required -------------------------------------------------------------------------------


@pytest.mark.parametrize("saturation", list(SATURATIONS))
def test_deliver_stop_required_once_saturated(saturation: str) -> None:
    collection = given(*SATURATIONS[saturation])

    collection.deliver_stop_required()

    assert then_events(collection) == [(Collection.StopRequiredDelivered, {})]
    assert collection.stop_required_delivered
    assert collection.state is CollectionState.SATURATED


@pytest.mark.parametrize(
    "steps",
    [[], [no_gain, no_gain], [stop_for_budget]],
    ids=["collecting", "below-threshold", "budget-stopped"],
)
def test_deliver_stop_required_is_refused_unless_saturated(steps: list[Step]) -> None:
    collection = given(*steps)

    then_refused(collection, IllegalTransitionError, deliver)
    assert not collection.stop_required_delivered


def test_deliver_stop_required_only_once() -> None:
    collection = given(*SATURATED_BY_NO_GAIN, deliver)

    then_refused(collection, CollectionClosedError, deliver)


# -- admitting tool requests ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "steps",
    [[], [no_gain, no_gain], [violation], [gained]],
    ids=["started", "below-no-gain-threshold", "below-violation-threshold", "gained"],
)
def test_admit_tool_request_passes_while_collecting(steps: list[Step]) -> None:
    collection = given(*steps)

    collection.admit_tool_request()

    assert collection.collect_events() == []


@pytest.mark.parametrize(
    "steps",
    [SATURATED_BY_NO_GAIN, SATURATED_BY_VIOLATIONS, [stop_for_budget]],
    ids=["saturated-by-no-gain", "saturated-by-violations", "budget-stopped"],
)
def test_admit_tool_request_is_refused_once_stopped(steps: list[Step]) -> None:
    collection = given(*steps)

    then_refused(collection, CollectionClosedError, lambda c: c.admit_tool_request())


@pytest.mark.parametrize("saturation", list(SATURATIONS))
def test_a_tool_request_after_the_stop_instruction_is_a_controlled_stop(saturation: str) -> None:
    collection = given(*SATURATIONS[saturation], deliver)

    then_refused(collection, ControlledStopError, lambda c: c.admit_tool_request())


# -- nothing is recorded once stopped ------------------------------------------------------------

LATE_RECORDS: dict[str, Step] = {
    "gained": gained,
    "no-gain": no_gain,
    "harness-no-gain": harness_no_gain,
    "violation": violation,
}
STOPPED: dict[str, list[Step]] = {
    "saturated-by-no-gain": SATURATED_BY_NO_GAIN,
    "saturated-by-violations": SATURATED_BY_VIOLATIONS,
    "budget-stopped": [stop_for_budget],
    "stop-delivered": [*SATURATED_BY_NO_GAIN, deliver],
}


@pytest.mark.parametrize("record", list(LATE_RECORDS))
@pytest.mark.parametrize("stopped_by", list(STOPPED))
def test_nothing_is_recorded_once_collection_stopped(stopped_by: str, record: str) -> None:
    collection = given(*STOPPED[stopped_by])
    counts = (collection.consecutive_no_gain, collection.consecutive_violations)

    then_refused(collection, CollectionClosedError, LATE_RECORDS[record])
    assert (collection.consecutive_no_gain, collection.consecutive_violations) == counts


# -- replay --------------------------------------------------------------------------------------


def test_replaying_the_events_reproduces_the_collection() -> None:
    collection = Collection.start(RUN_ID)
    gained(collection)
    violation(collection)
    harness_no_gain(collection)
    collection.record_gain(InformationGain.GAINED, GainSource.AGENT, (FACT, FACT))
    no_gain(collection)
    no_gain(collection)
    no_gain(collection)
    collection.deliver_stop_required()
    events = collection.collect_events()

    replayed = replay(Collection, events)

    assert replayed == collection
    assert replayed.version == len(events)
    assert replayed.state is CollectionState.SATURATED
    assert replayed.stop_required_delivered
    assert replayed.facts == (FACT, FACT, FACT)
    assert replayed.consecutive_no_gain == 3
    assert replayed.consecutive_violations == 0
