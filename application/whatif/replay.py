"""What-if re-release: a finished diagnosis's release run again over what the run recorded.

The run's events up to its release rebuild a copy of the run; the release pipeline itself
(:func:`application.guards.release`, the code a live run uses) then runs on that copy, over the
run's recorded draft, collection and tool results: no tool is called, and no model unless a
judge is given (:mod:`application.whatif.answers`). Both decisions are summarised by the same
function (:mod:`application.whatif.decision`) and compared. The run's stream is only read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from application.diagnosis import Completed, ControlledStop
from application.drafts import DraftError, validate_draft
from application.explain.log import read_streams
from application.guards import NoSafeContent, release
from application.proposals import recorded_draft
from application.run_aborted import RunAborted
from application.whatif.answers import RECORDED, Answers
from application.whatif.context import ReplayContext, ReplayJournal
from application.whatif.decision import Decision, decide, differences, draft_texts
from domain.catalogue import GUARD_EVENTS
from domain.errors import UnknownAggregateError
from domain.grounding import GroundingRules
from domain.run import Run
from domain.states import DraftOutcome, Intent, ModelStepPurpose
from domain.tool_states import DiagnosisStopReason

if TYPE_CHECKING:
    from collections.abc import Sequence
    from uuid import UUID

    from application.explain.log import RunStreams
    from application.ports import ModelProvider
    from application.store import HarnessStore


class ReplayError(Exception):
    """Why a run cannot be replayed, in one line."""


@dataclass(frozen=True)
class ReplayOptions:
    """What a replay changes: the excerpt rules, the judge (nothing: replayed as recorded)."""

    rules: GroundingRules | None = None
    """Rules to apply whole (the configured ones, say); None: the run's recorded rules."""
    min_words: int | None = None
    min_chars: int | None = None
    judge: ModelProvider | None = None
    """A judge to ask again; None: the recorded answers."""
    judge_label: str = RECORDED
    timeout_s: float = 30.0


@dataclass(frozen=True)
class Replayed:
    """A run's recorded decision and its replay's, and what differs."""

    run_id: UUID
    changes: dict[str, str]
    original: Decision
    replay: Decision
    differences: tuple[str, ...] = field(default=())
    answered_by: dict[str, str] = field(default_factory=dict)
    """Who answered each model call of the replay (``judge``: ``recorded answer``, …)."""


def replay_release(store: HarnessStore, run_id: UUID, options: ReplayOptions) -> Replayed:
    """Run ``run_id``'s release again under ``options``; raises ReplayError why it cannot."""
    try:
        streams = read_streams(store, run_id)
    except UnknownAggregateError:
        raise ReplayError(f"no run {run_id} in this log") from None
    prefix, recorded = _split(streams)
    recorded_rules = _recorded_rules(recorded)
    rules = _rules(recorded_rules, options)
    copy = _rebuild(prefix)
    collection = streams.collection
    assert collection is not None  # _split: a diagnosis that reached its release has one
    answers = Answers(recorded, options.judge, options.timeout_s)
    ctx = ReplayContext(
        ReplayJournal(copy, collection),
        {inv.id: inv for inv, _ in streams.invocations},
        store,
        answers,
    )
    try:
        release(ctx, _ending(prefix, collection.stop_reason), collection, rules)
    except (NoSafeContent, RunAborted):
        pass  # nothing released: the summary says NONE, as the run's would
    texts = _texts(prefix, collection.facts)
    original = decide(recorded, texts)
    replay = decide(list(copy.collect_events()), texts)
    return Replayed(
        run_id,
        _changes(recorded_rules, rules, options),
        original,
        replay,
        tuple(differences(original, replay)),
        {purpose.value.lower(): source for purpose, source in answers.sources.items()},
    )


def _split(streams: RunStreams) -> tuple[list[Any], list[Any]]:
    """The run's events before its release and from it on; ReplayError when it has none."""
    run = streams.run
    if not run.is_finished:
        raise ReplayError(f"run {run.id} has not finished: replay it once it has")
    if run.intent is not Intent.DIAGNOSIS:
        routed = f"routed {run.intent.value}" if run.intent is not None else "never routed"
        raise ReplayError(f"run {run.id} was {routed}: only a diagnosis has a release to replay")
    events = streams.run_events
    cut = next((i for i, e in enumerate(events) if isinstance(e, GUARD_EVENTS)), None)
    if cut is None or streams.collection is None:
        ended = run.termination.state.value if run.termination is not None else "unfinished"
        raise ReplayError(f"run {run.id} ended {ended} before its release: nothing to replay")
    return events[:cut], events[cut:]


def _rebuild(events: Sequence[Any]) -> Run:
    run: Any = None
    for event in events:
        run = event.mutate(run)
    assert isinstance(run, Run)
    return run


def _recorded_rules(recorded: Sequence[Any]) -> GroundingRules:
    initial = next(e for e in recorded if isinstance(e, Run.EvidenceGuardInitial))
    return GroundingRules(min_words=initial.min_words, min_chars=initial.min_chars)


def _rules(recorded: GroundingRules, options: ReplayOptions) -> GroundingRules:
    rules = options.rules or recorded
    if options.min_words is not None:
        rules = replace(rules, min_words=options.min_words)
    if options.min_chars is not None:
        rules = replace(rules, min_chars=options.min_chars)
    return rules


def _agent_draft(prefix: Sequence[Any]) -> dict[str, Any] | None:
    """The agent's last draft, when it was valid (the run's release then had a Completed)."""
    drafts = [
        e
        for e in prefix
        if isinstance(e, Run.DraftProposed) and e.purpose is ModelStepPurpose.AGENT
    ]
    if not drafts or drafts[-1].outcome is not DraftOutcome.VALID:
        return None
    if len(drafts[-1].text) != drafts[-1].length:
        raise ReplayError(
            "the run's draft was kept cut short (an older log): it cannot be replayed"
        )
    return recorded_draft(drafts[-1].text)


def _ending(prefix: Sequence[Any], stop: DiagnosisStopReason | None) -> Completed | ControlledStop:
    data = _agent_draft(prefix)
    if data is None:
        return ControlledStop(stop or DiagnosisStopReason.INFORMATION_SATURATED)
    try:
        return Completed(validate_draft(dict(data)))
    except DraftError as error:
        raise ReplayError(f"the run's recorded draft does not validate today: {error}") from None


def _texts(prefix: Sequence[Any], progress: Sequence[Any]) -> dict[str, str]:
    data = _agent_draft(prefix)
    texts = draft_texts(data) if data is not None else {}
    texts.update({f"progress {n}": fact.statement for n, fact in enumerate(progress, start=1)})
    return texts


def _changes(
    recorded: GroundingRules, rules: GroundingRules, options: ReplayOptions
) -> dict[str, str]:
    changes: dict[str, str] = {}
    if rules.min_words != recorded.min_words:
        changes["excerpt_min_words"] = f"{recorded.min_words} -> {rules.min_words}"
    if rules.min_chars != recorded.min_chars:
        changes["excerpt_min_chars"] = f"{recorded.min_chars} -> {rules.min_chars}"
    if options.judge is not None:
        changes["judge"] = options.judge_label
    return changes
