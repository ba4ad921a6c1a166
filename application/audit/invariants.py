"""SPEC §16 and §10 checked on one run as the log tells it: pure functions over replayed streams.

Each check names the exact event that breaks its rule. They read only the log (the events' own
fields and the aggregates replayed from them) and the domain's own rules: the reason→state
mapping, the release rules and the outcome table. The public feed (invariant 2) is derived by a
function the caller gives, so that it is the read side's own logic and not a copy of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from application.audit.answer_checks import check_answers
from application.audit.bounds import check_model_bounds, check_model_sizes, check_reasons
from application.audit.evidence import check_evidence
from application.audit.grounding import check_grounding
from application.audit.integrity import Violation
from application.audit.replay import Entry, RunLog, mutate
from application.audit.rules import GUARD_CHAIN
from domain.redaction import failure_cause
from domain.release import OUTCOME_TABLE, PUBLISHED, final_outcome, is_legal_row, release_refusal
from domain.release_states import ReleaseOutcome
from domain.run import Run
from domain.states import FailureCode, Intent, RunState, state_for_reason

FeedOf = Callable[[str, Iterable[Any]], Sequence[tuple[Any, str, dict[str, Any]]]]
"""One run's public feed from its events: (event that wrote it, kind, data) per entry."""

KEEPS_FALLBACK = frozenset(
    s for s, outcome, _ in OUTCOME_TABLE if outcome is ReleaseOutcome.FALLBACK
)
"""The only states a run that published a FALLBACK can be in (SPEC §10, §16.9)."""


def check_run(log: RunLog, feed: FeedOf | None = None) -> list[Violation]:
    """Every SPEC §16 / §10 violation of one run (its feed too when ``feed`` is given)."""
    if log.run is None:
        first = log.entries()[0].record
        return [Violation("replay", f"belongs to run {log.run_id}, whose stream is missing", first)]
    return [
        *check_termination(log),
        *check_cause(log),
        *check_evidence(log),
        *check_answers(log),
        *check_grounding(log),
        *check_model_bounds(log),
        *check_model_sizes(log),
        *check_reasons(log),
        *check_release_path(log),
        *check_guard_chain(log),
        *check_outcome(log),
        *check_release_rules(log),
        *(check_feed(log, feed) if feed else ()),
    ]


def _run(log: RunLog) -> list[Entry]:
    return log.run.entries if log.run else []


def _all(entries: list[Entry], kind: type[Any] | tuple[type[Any], ...]) -> list[Entry]:
    return [entry for entry in entries if isinstance(entry.event, kind)]


def _first(entries: list[Entry], kind: type[Any]) -> Entry | None:
    found = _all(entries, kind)
    return found[0] if found else None


def check_termination(log: RunLog) -> list[Violation]:
    """§16.1: one termination, one ``RUN_FINISHED`` after it, and nothing after that (§4)."""
    entries = _run(log)
    ended, finished = _all(entries, Run.RunTerminated), _all(entries, Run.RunFinished)
    found = [
        Violation("SPEC §16.1", "a second termination of the run", e.record) for e in ended[1:]
    ]
    found += [Violation("SPEC §16.1", "a second RUN_FINISHED", e.record) for e in finished[1:]]
    if not finished:
        return found
    end = finished[0].record
    if not ended:
        found.append(Violation("SPEC §16.1", "the run finished without a termination", end))
    elif end.position < ended[0].record.position:
        found.append(Violation("SPEC §16.1", "comes before the run's termination", end))
    found += [
        Violation("SPEC §4", f"was recorded after the run finished (at {end.position})", e.record)
        for e in entries
        if e.record.position > end.position and not isinstance(e.event, Run.RunFinished)
    ]
    return found


def check_cause(log: RunLog) -> list[Violation]:
    """A termination's cause: only a failure has one, and only as the run records it."""
    found: list[Violation] = []
    for entry in _all(_run(log), Run.RunTerminated):
        cause = entry.event.cause
        if cause and not isinstance(entry.event.reason, FailureCode):
            why = f"records a cause for a {entry.event.state.value} termination: only a failure has"
            found.append(Violation("cause", f"{why} one", entry.record))
        elif cause and failure_cause(cause) != cause:
            why = "its cause is not as the harness records one (redacted, on one line, bounded)"
            found.append(Violation("cause", f"{why}: a secret may show in it", entry.record))
    return found


def check_release_path(log: RunLog) -> list[Violation]:
    """§16.7: published content comes from a RELEASE_DECISION, after the evidence guard ran."""
    entries = _run(log)
    finished, decision = _first(entries, Run.RunFinished), _first(entries, Run.ReleaseDecision)
    guard = _first(entries, Run.EvidenceGuardInitial)
    found: list[Violation] = []
    if finished and finished.event.release_outcome in PUBLISHED and decision is None:
        why = "publishes content without a RELEASE_DECISION: content only comes through Release"
        found.append(Violation("SPEC §16.7", why, finished.record))
    diagnosis = getattr(log.run and log.run.aggregate, "intent", None) is Intent.DIAGNOSIS
    if (
        decision
        and diagnosis
        and (guard is None or guard.record.position > decision.record.position)
    ):
        why = "releases a diagnosis the evidence guard did not check first"
        found.append(Violation("SPEC §16.7", why, decision.record))
    return found


def check_guard_chain(log: RunLog) -> list[Violation]:
    """§16.8: repair, recheck and the semantic guard run only on a conclusion.

    In a knowledge answer the semantic guard runs on the answer's statements instead: after an
    ``ANSWER_PROPOSED`` that parsed.
    """
    entries = _run(log)
    if getattr(log.run and log.run.aggregate, "intent", None) is Intent.KNOWLEDGE_QUERY:
        return _knowledge_guard_chain(entries)
    initial = _first(entries, Run.EvidenceGuardInitial)
    found: list[Violation] = []
    for entry in _all(entries, GUARD_CHAIN):
        if initial is None or initial.record.position > entry.record.position:
            found.append(Violation("SPEC §16.8", "runs before the evidence guard", entry.record))
        elif not initial.event.has_conclusion:
            why = f"runs without a conclusion (EVIDENCE_GUARD_INITIAL at {initial.record.position})"
            found.append(Violation("SPEC §16.8", why, entry.record))
    return found


def _knowledge_guard_chain(entries: list[Entry]) -> list[Violation]:
    proposed = _first(entries, Run.AnswerProposed)
    found: list[Violation] = []
    for entry in _all(entries, GUARD_CHAIN):
        if proposed is None or proposed.record.position > entry.record.position:
            why = "runs before the knowledge answer it judges was proposed"
            found.append(Violation("SPEC §16.8", why, entry.record))
        elif proposed.event.refusal is not None or isinstance(
            entry.event, (Run.EvidenceRepair, Run.EvidenceGuardRecheck)
        ):
            why = f"runs on no parsed answer (ANSWER_PROPOSED at {proposed.record.position})"
            found.append(Violation("SPEC §16.8", why, entry.record))
    return found


def check_outcome(log: RunLog) -> list[Violation]:
    """§16.9, §16.10 and the §10 table: state, reason, outcome and fallback agree."""
    entries = _run(log)
    found = [
        Violation(
            "SPEC §16.10", f"records {e.event.state.value} for {e.event.reason.value}", e.record
        )
        for e in _all(entries, Run.RunTerminated)
        if e.event.state is not state_for_reason(e.event.reason)
    ]
    ended, finished = _first(entries, Run.RunTerminated), _first(entries, Run.RunFinished)
    cancel = _first(entries, Run.CancellationRequested)
    if ended and cancel and cancel.event.reason is not ended.event.reason:
        why = f"cancels for {cancel.event.reason.value}; the run ended {ended.event.reason.value}"
        found.append(Violation("SPEC §16.10", why, cancel.record))
    if ended is None or finished is None:
        return found
    state, outcome = ended.event.state, finished.event.release_outcome
    decision = _first(entries, Run.ReleaseDecision)
    release = (decision.event.outcome, decision.event.fallback_type) if decision else None
    # The rule is the domain's (Run.finish records it); the audit re-derives it from the log's
    # own termination and release decision, so a RUN_FINISHED written or edited otherwise shows.
    expected = final_outcome(state, release)
    if outcome is not expected:
        why = f"says {outcome.value}; a {state.value} run with its release is {expected.value}"
        found.append(Violation("SPEC §16.10", why, finished.record))
    if outcome is ReleaseOutcome.FALLBACK and state not in KEEPS_FALLBACK:
        why = f"publishes a FALLBACK for a {state.value} run"
        found.append(Violation("SPEC §16.9", why, finished.record))
    fallback = release[1] if release and outcome is ReleaseOutcome.FALLBACK else None
    if not is_legal_row(state, outcome, fallback):
        row = f"({state.value}, {outcome.value}, {fallback.value if fallback else '-'})"
        found.append(Violation("SPEC §10", f"{row} is no row of the table", finished.record))
    return found


def check_release_rules(log: RunLog) -> list[Violation]:
    """§10: each RELEASE_DECISION is one the release rules allow at its point in the run."""
    run: Any = None
    found: list[Violation] = []
    for entry in _run(log):
        event = entry.event
        if isinstance(event, Run.ReleaseDecision) and run is not None:
            exhausted = run.state is RunState.BUDGET_EXHAUSTED
            if run.termination is not None and not exhausted:
                why = f"decides a release after the run ended {run.state.value}"
                found.append(Violation("SPEC §10", why, entry.record))
            refusal = release_refusal(
                run.intent,
                run.guards,
                event.outcome,
                event.fallback_type,
                budget_exhausted=exhausted,
            )
            if refusal:
                found.append(
                    Violation("SPEC §10", f"breaks a release rule: {refusal}", entry.record)
                )
        try:
            run = mutate(event, run)
        except Exception:  # the replay already reported what cannot be applied
            return found
    return found


def check_feed(log: RunLog, feed: FeedOf) -> list[Violation]:
    """§16.2 and §11 on the run's public feed, derived as the read side derives it."""
    entries = _run(log)
    record_of = {id(e.event): e.record for e in entries}
    written = feed(log.run_id, [e.event for e in entries])
    session = written[0][2].get("session_id") if written else None
    found: list[tuple[str, str, Any]] = []
    counts = {"content": 0, "failure": 0, "done": 0}
    for event, kind, data in written:
        counts[kind] = counts.get(kind, 0) + 1
        if kind in ("content", "failure") and counts["content"] + counts["failure"] > 1:
            found.append(("SPEC §16.2", f"would publish a second {kind}", event))
        if kind == "done" and counts["done"] > 1:
            found.append(("SPEC §16.2", "would publish a second done", event))
        if kind == "done" and data.get("release_outcome") == ReleaseOutcome.CANCELLED.value:
            found.append(("SPEC §11", "would publish a CANCELLED done", event))
        if data.get("run_id") != log.run_id or data.get("session_id") != session:
            found.append(("SPEC §11", f"its {kind} carries another run's identity", event))
    return [Violation(rule, why, record_of.get(id(event))) for rule, why, event in found]
