"""SPEC §16 over a stored log: the checks every randomly driven run must pass.

Shared by the property tests that drive ``ChatService.ask`` with random scripted scenarios
(``test_runtime_properties``) and with fuzzed model and tool output (``test_fuzz_outputs``).
:func:`check_run` reads every event of the log once and checks, for the run under test:

- invariants 1 and 3-9 on the run, tool-invocation and collection streams together (the
  ``check_*`` functions below, which see the whole log: references to other runs' invocations);
- the aggregate-level checks of ``tests/unit/test_invariants_stateful.py`` on each stored stream
  (the same functions the state machine runs on in-memory logs);
- that the run ended on a row of the SPEC §10 table, every invocation it began was closed, and
  no unexpected exception ended it (INTERNAL_ERROR).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

from application.published import FALLBACK_MESSAGES, MISSING_QUESTIONS
from domain.collection import Collection, collection_id
from domain.grounding import Citation, citation_problem
from domain.release_states import FallbackType, ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import ChatApplicationStatus, FailureCode, Intent, RunState, state_for_reason
from domain.tool_invocation import ToolInvocation
from domain.tool_states import DiagnosisStopReason, EvidenceStatus
from tests.unit.test_invariants_stateful import (
    check_collection,
    check_guard_chain,
    check_invocation,
    check_no_work_after_termination,
    check_outcome_table,
    check_reason_to_state,
)
from tests.unit.test_invariants_stateful import (
    check_one_termination as check_run_stream_termination,
)

if TYPE_CHECKING:
    from application.chat import ChatResult
    from application.store import HarnessStore

STOP_REASONS_CLOSING = (
    DiagnosisStopReason.INFORMATION_SATURATED,
    DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED,
)
PUBLISHED = (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
OUTCOME_TABLE: frozenset[tuple[RunState, ReleaseOutcome, FallbackType | None]] = frozenset(
    {
        (RunState.SUCCESS, ReleaseOutcome.SUCCESS, None),
        *((RunState.SUCCESS, ReleaseOutcome.FALLBACK, kind) for kind in FallbackType),
        (RunState.BUDGET_EXHAUSTED, ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE),
        (RunState.TIMED_OUT, ReleaseOutcome.FAILED, None),
        (RunState.BUDGET_EXHAUSTED, ReleaseOutcome.FAILED, None),
        (RunState.FAILED, ReleaseOutcome.FAILED, None),
        (RunState.CANCELLED, ReleaseOutcome.CANCELLED, None),
    }
)
"""SPEC §10's table as (RunState, ReleaseOutcome, FallbackType) rows."""


def read_events(store: HarnessStore) -> list[Any]:
    """Every event of the log, in log order."""
    notifications = store.recorder.select_notifications(start=1, limit=100_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


# -- reading the log -------------------------------------------------------------------------------


@dataclass
class Invocation:
    """One tool invocation as the log tells it, with the positions of its events."""

    run_id: UUID
    started: int
    ready: int | None = None
    evidence: EvidenceStatus | None = None
    content: str = ""
    tool: str = ""
    scope: str = ""


@dataclass
class Log:
    """The whole log, read for one run: indexes stand for log positions."""

    run_id: UUID
    events: list[Any]
    invocations: dict[UUID, Invocation] = field(default_factory=dict)
    streams: set[UUID] = field(default_factory=set)

    @classmethod
    def read(cls, run_id: UUID, events: list[Any]) -> Log:
        log = cls(run_id, events, streams={run_id, collection_id(run_id)})
        for index, event in enumerate(events):
            if isinstance(event, ToolInvocation.ToolInvocationStarted):
                log.invocations[event.originator_id] = Invocation(
                    event.run_id, index, tool=event.tool, scope=event.normalized_scope
                )
                if event.run_id == run_id:
                    log.streams.add(event.originator_id)
            elif isinstance(event, ToolInvocation.ToolInvocationReady):
                invocation = log.invocations[event.originator_id]
                invocation.ready = index
                invocation.evidence = event.evidence_status
                invocation.content = event.content
        return log

    def stream(self, stream_id: UUID) -> list[tuple[int, Any]]:
        """One stream's events with their versions, in order."""
        return [(e.originator_version, e) for e in self.events if e.originator_id == stream_id]

    def own(self) -> list[tuple[int, Any]]:
        """This run's events (run, collection and invocation streams), in log order."""
        return [(i, e) for i, e in enumerate(self.events) if e.originator_id in self.streams]

    def where(self, kind: type[Any]) -> list[tuple[int, Any]]:
        return [(i, e) for i, e in self.own() if isinstance(e, kind)]

    def one(self, kind: type[Any]) -> tuple[int, Any]:
        found = self.where(kind)
        assert len(found) == 1, (kind.__name__, len(found))
        return found[0]

    def usable(self, reference: str, before: int, evidence: EvidenceStatus) -> Invocation | None:
        """The invocation of this run a reference names, if READY with ``evidence`` by then.

        A reference names an invocation by its id as the log writes it: ``{…}``, ``urn:uuid:…``
        or upper case are other strings, which a reader matching ids would not find.
        """
        try:
            key = UUID(reference)
        except ValueError:
            return None
        invocation = self.invocations.get(key) if str(key) == reference else None
        if invocation is None or invocation.run_id != self.run_id:
            return None
        ready = invocation.ready is not None and invocation.ready < before
        return invocation if ready and invocation.evidence is evidence else None


# -- the invariants ------------------------------------------------------------------------------


def check_one_termination(log: Log, result: ChatResult) -> None:
    """1: exactly one RUN_TERMINATED and one RUN_FINISHED, the last event of the run stream."""
    terminated_at, terminated = log.one(Run.RunTerminated)
    finished_at, finished = log.one(Run.RunFinished)
    run_stream = [e for _, e in log.own() if e.originator_id == log.run_id]
    assert run_stream[-1] is finished, type(run_stream[-1]).__name__
    assert terminated_at < finished_at
    assert terminated.state is state_for_reason(terminated.reason), terminated
    assert result.termination.state is terminated.state
    assert result.termination.reason is terminated.reason
    assert result.release_outcome is finished.release_outcome


def _published_facts(content: dict[str, Any]) -> list[dict[str, Any]]:
    key = "facts" if content["kind"] == "diagnosis" else "verified_facts"
    found: list[dict[str, Any]] = content.get(key, [])
    return found


def check_references(log: Log) -> None:
    """3 and 5: published references name READY + EVIDENCE_FOUND invocations of this run."""
    for index, decision in log.where(Run.ReleaseDecision):
        content = decision.content
        if content.get("kind") not in ("diagnosis", "fallback"):
            continue
        references = list(content.get("references", []))
        statements = _published_facts(content)
        if content.get("kind") == "diagnosis":
            statements = [{"citations": content["citations"]}, *statements]
        for fact in statements:
            assert fact["citations"], ("a statement without citations published", fact)
            for citation in fact["citations"]:
                references.append(citation["reference"])
                source = log.usable(citation["reference"], index, EvidenceStatus.EVIDENCE_FOUND)
                assert source is not None, ("unverified citation published", fact)
                proof = Citation(citation["reference"], citation["excerpt"])
                assert citation_problem(proof, source.content) is None, ("unproven", fact)
        for reference in references:
            found = log.usable(reference, index, EvidenceStatus.EVIDENCE_FOUND)
            never = log.usable(reference, index, EvidenceStatus.NO_EVIDENCE)
            assert never is None, ("a NO_EVIDENCE invocation was cited", reference)
            assert found is not None, ("published reference does not resolve", reference)


def check_published_is_judged(log: Log) -> None:
    """Design §10.1: a report holds only what the judge supported, as judged; a fallback holds
    nothing the judge rejected, nothing restating the conclusion, and no model prose."""
    judged = [e.judged for _, e in log.where(Run.SemanticGuardDecision)]
    for index, decision in log.where(Run.ReleaseDecision):
        content = decision.content
        if content.get("kind") == "diagnosis":
            assert judged and judged[-1], ("a report without judged statements", content)
            supported = {
                (j.statement, tuple((c.reference, c.excerpt) for c in j.citations))
                for j in judged[-1]
                if j.verdict is SemanticVerdict.SUPPORTED
            }
            statements = [{"statement": content["conclusion"], "citations": content["citations"]}]
            for fact in [*statements, *content["facts"]]:
                key = (
                    fact["statement"],
                    tuple((c["reference"], c["excerpt"]) for c in fact["citations"]),
                )
                assert key in supported, ("published text the judge did not support", fact)
            for fact in [*statements, *content["facts"]]:
                excerpts = {" ".join(c["excerpt"].split()) for c in fact["citations"]}
                for quoted in _double_quoted(fact["statement"]):
                    assert " ".join(quoted.split()) in excerpts, ("a quote not cited", fact)
        if content.get("kind") != "fallback":
            continue
        check_fallback_is_the_harnesss(log, index, content)


def _double_quoted(statement: str) -> list[str]:
    """Spans between straight or curly double quotes (an unclosed one runs to the end)."""
    spans, at = [], 0
    pairs = {'"': '"', "\u201c": "\u201d"}
    while at < len(statement):
        if statement[at] in pairs:
            end = statement.find(pairs[statement[at]], at + 1)
            spans.append(statement[at + 1 :] if end == -1 else statement[at + 1 : end])
            if end == -1:
                break
            at = end
        at += 1
    return spans


def _assert_scope_shown(shown: str, scope: str) -> None:
    """Every value a shown scope holds verbatim is in the call's scope; the rest is measured."""
    for part in filter(None, shown.split(", ")):
        value = part.partition("=")[2] if "=" in part else part
        measured = value.startswith("‹") and value.endswith(" characters›")
        assert measured or value in scope, (shown, scope)


def check_fallback_is_the_harnesss(log: Log, index: int, content: dict[str, Any]) -> None:
    """Design §10.1: a fallback holds no statement of the model's, only the harness's words.

    Its message is its type's; each observation is a whole line of a READY + EVIDENCE_FOUND
    result of this run, with that call's tool and scope, in time order; each question is the
    harness's.
    """
    assert content["verified_facts"] == [], ("the model's statements in a fallback", content)
    assert content["message"] == FALLBACK_MESSAGES[FallbackType(content["fallback_type"])]
    times = []
    for observed in content["observations"]:
        source = log.usable(observed["reference"], index, EvidenceStatus.EVIDENCE_FOUND)
        assert source is not None, ("an observation of no evidence", observed)
        lines = [" ".join(line.split()) for line in source.content.splitlines()]
        record = observed["record"]
        assert record in lines or record in " ".join(source.content.split()), observed
        assert observed["tool"] == source.tool, observed
        _assert_scope_shown(observed["scope"], source.scope)
        assert observed["text"].endswith(f'returned "{record}"'), observed
        if observed["at"] is not None:
            assert record.startswith(observed["at"]), observed
            times.append(observed["at"])
        else:
            times.append("~")  # undated records come last
    assert times == sorted(times), ("observations out of time order", times)
    for question in content["missing_info"]:
        assert any(question.startswith(q) for q in MISSING_QUESTIONS.values()), question


def check_ready_evidence(log: Log) -> None:
    """4: every TOOL_INVOCATION_READY carries EVIDENCE_FOUND (with content) or NO_EVIDENCE."""
    for _, ready in log.where(ToolInvocation.ToolInvocationReady):
        assert ready.evidence_status in (EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE)
        if ready.evidence_status is EvidenceStatus.EVIDENCE_FOUND:
            assert ready.content.strip(), "EVIDENCE_FOUND with empty content"


def check_no_evidence_scoped(log: Log) -> None:
    """5: a fallback's NO_EVIDENCE entries each name the non-empty scope of such an invocation."""
    for index, decision in log.where(Run.ReleaseDecision):
        content = decision.content
        if content.get("kind") != "fallback":
            continue
        assert "conclusion" not in content, "a fallback carried the unverified conclusion"
        tools = [
            i.tool
            for i in log.invocations.values()
            if i.run_id == log.run_id
            and i.evidence is EvidenceStatus.NO_EVIDENCE
            and i.ready is not None
            and i.ready < index
        ]
        for entry in content["no_evidence"]:
            # the tool that came back empty, and its scope as the harness shows it
            assert any(entry.startswith(f"No matching records from {t} for ") for t in tools), (
                "unscoped NO_EVIDENCE",
                entry,
            )


def check_no_tool_after_stop(log: Log) -> None:
    """6: no TOOL_INVOCATION_STARTED after saturation, the stop instruction or the termination."""
    closed_by: str | None = None
    for _, event in log.own():
        if isinstance(event, Collection.CollectionStop) and event.stop_reason in (
            STOP_REASONS_CLOSING
        ):
            closed_by = closed_by or f"COLLECTION_STOP {event.stop_reason.value}"
        elif isinstance(event, Collection.StopRequiredDelivered):
            closed_by = closed_by or "STOP_REQUIRED_DELIVERED"
        elif isinstance(event, Run.RunTerminated):
            closed_by = closed_by or f"RUN_TERMINATED {event.state.value}"  # SPEC §5
        elif isinstance(event, ToolInvocation.ToolInvocationStarted):
            assert closed_by is None, f"a tool invocation started after {closed_by}"


def check_stop_goes_through_release(log: Log, intent: Intent | None) -> None:
    """7: published diagnosis content (after a stop or not) comes from Release after the guard."""
    _, terminated = log.one(Run.RunTerminated)
    _, finished = log.one(Run.RunFinished)
    stops = log.where(Collection.CollectionStop)
    guards = [i for i, _ in log.where(Run.EvidenceGuardInitial)]
    if stops and terminated.state in (RunState.SUCCESS, RunState.BUDGET_EXHAUSTED):
        # Release ran, whatever it then published (a budget may also run out during Release).
        assert guards, ("a stop without Release", [e.stop_reason for _, e in stops])
    if finished.release_outcome not in PUBLISHED or (intent is not Intent.DIAGNOSIS and not stops):
        return
    decided_at, _ = log.one(Run.ReleaseDecision)
    assert any(i < decided_at for i in guards), "a RELEASE_DECISION without a guard before it"
    assert all(i < decided_at for i, _ in stops), "a COLLECTION_STOP after the RELEASE_DECISION"


def check_chain_needs_conclusion(log: Log) -> None:
    """8: repair, recheck and the semantic guard only after an initial check with a conclusion.

    A knowledge answer has no evidence check: its judge runs after an answer that parsed.
    """
    initial = [(i, e.has_conclusion) for i, e in log.where(Run.EvidenceGuardInitial)]
    initial += [(i, e.refusal is None) for i, e in log.where(Run.AnswerProposed)]
    assert not (log.where(Run.EvidenceGuardInitial) and log.where(Run.AnswerProposed))
    chain = (
        Run.EvidenceRepair,
        Run.EvidenceGuardRecheck,
        Run.SemanticGuardAttempt,
        Run.SemanticGuardDecision,
    )
    for kind in chain:
        for index, _ in log.where(kind):
            assert any(i < index and has for i, has in initial), kind.__name__


def check_fallback_is_not_failure(log: Log, result: ChatResult) -> None:
    """9: FALLBACK is a normal published outcome, never a FAILED run; FAILED publishes nothing."""
    _, terminated = log.one(Run.RunTerminated)
    _, finished = log.one(Run.RunFinished)
    decisions = [e for _, e in log.where(Run.ReleaseDecision)]
    if finished.release_outcome is ReleaseOutcome.FALLBACK:
        assert terminated.state in (RunState.SUCCESS, RunState.BUDGET_EXHAUSTED), terminated
    if any(d.outcome is ReleaseOutcome.FALLBACK for d in decisions):
        assert terminated.state is not RunState.FAILED, ("a FALLBACK ended FAILED", terminated)
        assert finished.release_outcome is ReleaseOutcome.FALLBACK, finished.release_outcome
    if finished.release_outcome in PUBLISHED:
        assert len(decisions) == 1 and decisions[0].outcome is finished.release_outcome
        assert result.content == decisions[0].content
    else:
        assert result.content is None, "a run that did not publish returned content"
        assert not decisions, ("a run that did not publish recorded a RELEASE_DECISION", finished)


# -- all of them ---------------------------------------------------------------------------------


def check_run(result: ChatResult, events: list[Any]) -> Log:
    """Every check above on the run ``result`` reports, over ``events`` (the whole log)."""
    log = Log.read(result.run_id, events)
    decisions = [e for _, e in log.where(Run.RoutingDecision)]
    intent = decisions[0].intent if decisions else None

    check_one_termination(log, result)
    check_references(log)
    check_published_is_judged(log)
    check_ready_evidence(log)
    check_no_evidence_scoped(log)
    check_no_tool_after_stop(log)
    check_stop_goes_through_release(log, intent)
    check_chain_needs_conclusion(log)
    check_fallback_is_not_failure(log, result)
    check_streams(log)
    check_outcome_row(log)
    assert result.termination.reason is not FailureCode.INTERNAL_ERROR, "an unexpected exception"
    return log


def check_streams(log: Log) -> None:
    """The aggregate-level checks of the unit state machine, on each stored stream of the run.

    The sequence numbers are the events' versions in their stream; the aggregates are rebuilt
    from the stored events.
    """
    run_log = log.stream(log.run_id)
    run = _replay(run_log)
    for check in (
        check_run_stream_termination,
        check_reason_to_state,
        check_no_work_after_termination,
        check_guard_chain,
        check_outcome_table,
    ):
        check(run, run_log)
    collection_log = log.stream(collection_id(log.run_id))
    if collection_log and not _budget_spent_in_release(run_log):
        check_collection(_replay(collection_log), run, collection_log)
    for invocation_id in log.streams - {log.run_id, collection_id(log.run_id)}:
        invocation_log = log.stream(invocation_id)
        invocation = _replay(invocation_log)
        check_invocation(invocation, invocation_log)
        assert invocation.status.value != "PROJECTING", ("an invocation was left open", invocation)


def check_outcome_row(log: Log) -> None:
    """The run ended on a row of SPEC §10's table."""
    _, terminated = log.one(Run.RunTerminated)
    _, finished = log.one(Run.RunFinished)
    decisions = [e for _, e in log.where(Run.ReleaseDecision)]
    kind = decisions[0].fallback_type if decisions else None
    row = (terminated.state, finished.release_outcome, kind)
    assert row in OUTCOME_TABLE, ("not a row of the SPEC §10 table", row)


def _budget_spent_in_release(run_log: list[tuple[int, Any]]) -> bool:
    """Whether the budget ran out after the agent loop had ended (then no collection stops).

    The state machine has no Release window: there, an exhausted budget always stops the
    collection; in the runtime a budget spent by the repair or the judge is no reason why the
    agent stopped collecting (``test_runtime_paths`` has the scenario).
    """
    validating = [
        v
        for v, e in run_log
        if isinstance(e, Run.ApplicationStatusChanged)
        and e.status is ChatApplicationStatus.SAFETY_VALIDATING
    ]
    exhausted = [v for v, e in run_log if isinstance(e, Run.BudgetExhausted)]
    return bool(validating and exhausted and exhausted[0] > validating[0])


def _replay(stream: list[tuple[int, Any]]) -> Any:
    aggregate = None
    for _, event in stream:
        aggregate = event.mutate(aggregate)
    return aggregate
