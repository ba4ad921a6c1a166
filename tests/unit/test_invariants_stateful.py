"""SPEC §16 over random interleavings: one run, its collection and its tool invocations.

A rule-based state machine drives random command sequences over one in-memory Run, its Collection
and several ToolInvocations (domain objects only, no store). Any command may be illegal in the
current state: a refused command must raise a DomainError and append nothing. Every appended
event goes into a per-aggregate log stamped with a global sequence number (the store's log
position), and after every step the invariants are checked on those logs and on the aggregates.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar, cast
from uuid import UUID

from eventsourcing.domain import Aggregate, CanMutateAggregate
from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from domain.collection import Collection
from domain.errors import (
    ControlledStopError,
    DomainError,
    InvalidCommandError,
    InvocationClosedError,
)
from domain.grounding import Citation, citation_problem
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import (
    BudgetKind,
    CancellationReason,
    ChatApplicationStatus,
    CompletionReason,
    FailureCode,
    Intent,
    ModelStepOutcome,
    ModelStepPurpose,
    RunState,
    TerminationReason,
    state_for_reason,
)
from domain.tool_invocation import ReadyEvidence, ToolInvocation
from domain.tool_states import (
    CollectionState,
    DiagnosisStopReason,
    EvidenceStatus,
    GainSource,
    InformationGain,
    InvocationStatus,
    ToolRejectionCode,
)
from domain.values import Budget, Fact, Termination

Event = CanMutateAggregate[UUID]
Logged = tuple[int, Event]
E = TypeVar("E")
Domain = Run | Collection | ToolInvocation

T0 = datetime(2030, 1, 1, tzinfo=UTC)
DEADLINE = T0 + timedelta(seconds=60)
LIMITS = Budget(model_calls=4, tool_calls=3, tokens=500, bytes=400)
NO_GAIN_THRESHOLD, VIOLATION_THRESHOLD = 3, 2

SPEC_STATE_FOR_REASON: dict[TerminationReason, RunState] = {
    CancellationReason.CLIENT_DISCONNECTED: RunState.CANCELLED,
    CancellationReason.USER_REQUESTED: RunState.CANCELLED,
    CancellationReason.DEADLINE_EXCEEDED: RunState.TIMED_OUT,
    CancellationReason.BUDGET_EXHAUSTED: RunState.BUDGET_EXHAUSTED,
    CancellationReason.INTERNAL_FAILURE: RunState.FAILED,
    **dict.fromkeys(FailureCode, RunState.FAILED),
    CompletionReason.COMPLETED: RunState.SUCCESS,
}
"""SPEC §5 written out literally: an oracle independent of ``state_for_reason``."""

LATE_CANCELLATION = (CancellationReason.DEADLINE_EXCEEDED, CancellationReason.BUDGET_EXHAUSTED)
SATURATING = (
    DiagnosisStopReason.INFORMATION_SATURATED,
    DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED,
)
FOUND, EMPTY = EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE
READY_EVIDENCE: list[ReadyEvidence] = [EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE]

# Recording these needs an active run (SPEC §5: check_active at every model/tool/guard boundary).
ACTIVE_ONLY = (
    Run.RoutingAttempt,
    Run.RoutingDecision,
    Run.AgentModelStep,
    Run.BudgetCharged,
    Run.EvidenceRepair,
    Run.SemanticGuardAttempt,
)
# Only the budget path may still release a fallback after its termination (SPEC §10).
RELEASE_WINDOW_ONLY = (
    Run.ApplicationStatusChanged,
    Run.EvidenceGuardInitial,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardDecision,
    Run.ReleaseDecision,
)
GUARD_CHAIN = (
    Run.EvidenceRepair,
    Run.EvidenceGuardRecheck,
    Run.SemanticGuardAttempt,
    Run.SemanticGuardDecision,
)

Release = tuple[ReleaseOutcome, FallbackType | None]
SEMANTIC_RELEASE: dict[SemanticVerdict | None, Release] = {
    SemanticVerdict.SUPPORTED: (ReleaseOutcome.SUCCESS, None),
    SemanticVerdict.UNSUPPORTED: (ReleaseOutcome.FALLBACK, FallbackType.SEMANTIC_UNSUPPORTED),
    None: (ReleaseOutcome.FALLBACK, FallbackType.SEMANTIC_UNAVAILABLE),
}
RELEASABLE = (RunState.RUNNING, RunState.BUDGET_EXHAUSTED)

INDEX = st.integers(min_value=0, max_value=1_000)
CITED = st.lists(INDEX, max_size=3)
VERDICTS = st.sampled_from([SemanticVerdict.SUPPORTED, SemanticVerdict.UNSUPPORTED, None])
ANSWER_TOKENS = st.integers(min_value=0, max_value=600)
TOOLS = st.sampled_from(["logs", "metrics", "deployments"])
SCOPES = st.sampled_from(["svc-a", "svc-b"])
CONTENT = st.text(alphabet="ab \n", min_size=1, max_size=160)
TERMINATIONS = st.one_of(
    st.sampled_from(CancellationReason),
    st.just("deadline"),
    st.sampled_from(BudgetKind),
    st.sampled_from(FailureCode),
)
RELEASES = st.sampled_from(
    [(ReleaseOutcome.SUCCESS, None)]
    + [(ReleaseOutcome.FALLBACK, kind) for kind in FallbackType]
    + [
        (ReleaseOutcome.FALLBACK, None),
        (ReleaseOutcome.SUCCESS, FallbackType.INSUFFICIENT_EVIDENCE),
        (ReleaseOutcome.FAILED, None),
        (ReleaseOutcome.CANCELLED, None),
    ]
)


@dataclass(frozen=True)
class ToolStep:
    """One agent tool step: the request, the backend's result, and the agent's next report."""

    tool: str
    scope: str
    evidence: ReadyEvidence
    content: str
    report: InformationGain | str
    cited: tuple[int, ...]


@dataclass(frozen=True)
class Draft:
    """What the agent's draft claims, as far as the guards are concerned."""

    has_conclusion: bool
    cited: tuple[int, ...]
    missing: bool
    repaired: tuple[int, ...]
    verdict: SemanticVerdict | None


TOOL_STEPS = st.builds(
    ToolStep,
    tool=TOOLS,
    scope=SCOPES,
    evidence=st.sampled_from(READY_EVIDENCE),
    content=CONTENT,
    report=st.sampled_from([*InformationGain, "violation"]),
    cited=CITED.map(tuple),
)
DRAFTS = st.builds(
    Draft,
    has_conclusion=st.booleans(),
    cited=CITED.map(tuple),
    missing=st.booleans(),
    repaired=CITED.map(tuple),
    verdict=VERDICTS,
)


def _fallback(kind: FallbackType) -> Release:
    return ReleaseOutcome.FALLBACK, kind


def _terminate(run: Run, by: CancellationReason | BudgetKind | FailureCode | str) -> Termination:
    if isinstance(by, CancellationReason):
        return run.cancel(by)
    if isinstance(by, BudgetKind):
        return run.exhaust_budget(by)
    if isinstance(by, FailureCode):
        return run.fail(by)
    assert run.deadline_passed(DEADLINE + timedelta(seconds=1))
    return run.time_out()


def _pick(items: Sequence[E], index: int) -> E:
    return items[index % len(items)]


def _of(log: Sequence[Logged], cls: type[E]) -> list[tuple[int, E]]:
    return [(seq, e) for seq, e in log if isinstance(e, cls)]


def _replay(log: Sequence[Logged]) -> Aggregate | None:
    aggregate: Aggregate | None = None
    for _, e in log:
        aggregate = e.mutate(aggregate)
    return aggregate


def _usage_from_events(log: Sequence[Logged]) -> Budget:
    used = dict.fromkeys(BudgetKind, 0)
    for _, e in log:
        if isinstance(e, Run.AgentModelStep):
            used[BudgetKind.MODEL_CALLS] += 1
            used[BudgetKind.TOKENS] += e.tokens_in + e.tokens_out
        elif isinstance(e, Run.BudgetCharged):
            used[e.kind] += e.amount
    return Budget(
        model_calls=used[BudgetKind.MODEL_CALLS],
        tool_calls=used[BudgetKind.TOOL_CALLS],
        tokens=used[BudgetKind.TOKENS],
        bytes=used[BudgetKind.BYTES],
    )


def _saturation_trigger(log: Sequence[Logged]) -> tuple[int, DiagnosisStopReason] | None:
    """Index of the event after which SPEC §9 says the collection saturates, and why."""
    no_gain = violations = 0
    for index, (_, e) in enumerate(log):
        if isinstance(e, Collection.ToolProgress):
            no_gain = no_gain + 1 if e.gain is InformationGain.NO_GAIN else 0
            if e.source is GainSource.AGENT:  # only the agent's valid report ends a violation run
                violations = 0
            if no_gain >= NO_GAIN_THRESHOLD:
                return index, DiagnosisStopReason.INFORMATION_SATURATED
        elif isinstance(e, Collection.ProgressProtocolViolation):
            violations += 1
            if violations >= VIOLATION_THRESHOLD:
                return index, DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED
    return None


def check_one_termination(run: Run, log: Sequence[Logged]) -> None:
    """SPEC §16 inv. 1 on the run log: one termination, one finish, nothing after the finish."""
    terminated = _of(log, Run.RunTerminated)
    finished = _of(log, Run.RunFinished)
    assert len(terminated) <= 1, "more than one RUN_TERMINATED"
    assert len(finished) <= 1, "more than one RUN_FINISHED"
    assert len(_of(log, Run.CancellationRequested)) <= 1, "more than one CANCELLATION_REQUESTED"
    assert len(_of(log, Run.BudgetExhausted)) <= 1
    if finished:
        assert terminated and terminated[0][0] < finished[0][0], "RUN_FINISHED before termination"
        assert log[-1][1] is finished[0][1], "an event was appended after RUN_FINISHED"
        assert finished[0][1].usage == run.usage
    assert run.is_finished == bool(finished)
    assert run.is_active == (not terminated)


def check_reason_to_state(run: Run, log: Sequence[Logged]) -> None:
    """SPEC §5: the termination's state follows from its reason; cancellation agrees with it."""
    terminated = _of(log, Run.RunTerminated)
    for _, term in terminated:
        assert term.state is state_for_reason(term.reason)
        assert term.state is SPEC_STATE_FOR_REASON[term.reason]
        assert run.termination == Termination(state=term.state, reason=term.reason)
    budget_events = _of(log, Run.BudgetExhausted)
    assert bool(budget_events) == (run.state is RunState.BUDGET_EXHAUSTED)
    for seq, budget in budget_events:
        assert budget.stop_reason is DiagnosisStopReason.BUDGET_LIMIT_REACHED
        assert terminated and terminated[0][0] == seq + 1, "BUDGET_EXHAUSTED must terminate at once"
    for seq, cancel in _of(log, Run.CancellationRequested):
        assert terminated, "a cancellation was requested but the run did not terminate"
        term_seq, term = terminated[0]
        assert cancel.reason is term.reason, "cancellation and termination disagree"
        assert run.cancellation is cancel.reason
        # deadline and budget paths finish first, then cancel (SPEC §5); others cancel first
        finishes_first = cancel.reason in LATE_CANCELLATION
        assert seq == (term_seq + 1 if finishes_first else term_seq - 1)


def check_no_work_after_termination(run: Run, log: Sequence[Logged]) -> None:
    """SPEC §5: check_active refuses model, tool and guard work once the run terminated."""
    terminated = _of(log, Run.RunTerminated)
    if not terminated:
        return
    after = [e for seq, e in log if seq > terminated[0][0]]
    late = [type(e).__name__ for e in after if isinstance(e, ACTIVE_ONLY)]
    assert not late, f"work recorded after the termination: {late}"
    if run.state is not RunState.BUDGET_EXHAUSTED:
        late = [type(e).__name__ for e in after if isinstance(e, RELEASE_WINDOW_ONLY)]
        assert not late, f"guard or release recorded after a {run.state.value} termination: {late}"


def check_guard_chain(run: Run, log: Sequence[Logged]) -> None:
    """SPEC §10, §16 inv. 7/8: a diagnosis is released through the guards, in their order."""
    initial = _of(log, Run.EvidenceGuardInitial)
    chain = [(seq, e) for seq, e in log if isinstance(e, GUARD_CHAIN)]
    assert len(initial) <= 1
    proposed = _of(log, Run.AnswerProposed)  # a knowledge answer's judge: after it parsed
    if chain and proposed:
        assert not initial and proposed[0][1].refusal is None, "judged no parsed answer"
        assert proposed[0][0] < chain[0][0]
    elif chain:
        assert initial and initial[0][1].has_conclusion, "guard chain ran without a conclusion"
        assert initial[0][0] < chain[0][0]
    decisions = _of(log, Run.ReleaseDecision)
    assert len(decisions) <= 1
    for seq, decision in decisions:
        assert decision.outcome in (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)
        if run.intent is not Intent.DIAGNOSIS:
            continue
        assert initial and initial[0][0] < seq, "a diagnosis was released without the guard"
        if decision.outcome is ReleaseOutcome.SUCCESS:
            verdicts = [e.verdict for _, e in _of(log, Run.SemanticGuardDecision)]
            assert verdicts == [SemanticVerdict.SUPPORTED], "SUCCESS without a SUPPORTED verdict"


def _table_outcome(run: Run) -> ReleaseOutcome:
    """The ReleaseOutcome SPEC §10's table gives a terminated run."""
    released = run.release
    if run.state is RunState.CANCELLED:
        return ReleaseOutcome.CANCELLED
    if run.state is RunState.SUCCESS:
        assert released is not None, "SUCCESS without a release decision"
        return released[0]
    budget_fallback = (ReleaseOutcome.FALLBACK, FallbackType.INSUFFICIENT_EVIDENCE)
    if run.state is RunState.BUDGET_EXHAUSTED and released == budget_fallback:
        return ReleaseOutcome.FALLBACK  # the budget-fallback case keeps BUDGET_EXHAUSTED (§3.6)
    return ReleaseOutcome.FAILED


def check_outcome_table(run: Run, log: Sequence[Logged]) -> None:
    """SPEC §10, §16 inv. 9/10: RUN_FINISHED follows the table; FALLBACK is never FAILED."""
    terminated = _of(log, Run.RunTerminated)
    late = [e for seq, e in _of(log, Run.ReleaseDecision) if terminated and seq > terminated[0][0]]
    for decision in late:  # the budget-fallback case is the only release after termination
        assert run.state is RunState.BUDGET_EXHAUSTED
        assert decision.fallback_type is FallbackType.INSUFFICIENT_EVIDENCE
    for _, finished in _of(log, Run.RunFinished):
        assert finished.release_outcome is _table_outcome(run)
        if finished.release_outcome is ReleaseOutcome.FALLBACK:
            assert run.state in (RunState.SUCCESS, RunState.BUDGET_EXHAUSTED)


def check_invocation(invocation: ToolInvocation, log: Sequence[Logged]) -> None:
    """SPEC §8 and §16 inv. 4: one begin, at most one final event, READY carries evidence."""
    events = [e for _, e in log]
    assert isinstance(events[0], ToolInvocation.ToolInvocationStarted)
    final = [
        i
        for i, e in enumerate(events)
        if isinstance(e, ToolInvocation.ToolInvocationReady | ToolInvocation.ToolInvocationFailed)
    ]
    assert final in ([], [len(events) - 1]), "an invocation changed after READY or ERROR"
    for _, ready in _of(log, ToolInvocation.ToolInvocationReady):
        assert ready.evidence_status in (FOUND, EMPTY), "READY without EVIDENCE_FOUND/NO_EVIDENCE"
        assert invocation.status is InvocationStatus.READY
        assert invocation.evidence_status is ready.evidence_status
    if not final:
        assert invocation.status is InvocationStatus.PROJECTING
        assert invocation.evidence_status is None


def check_collection(collection: Collection, run: Run, log: Sequence[Logged]) -> None:
    """SPEC §9: one stop; budget never saturates; STOP_REQUIRED only after saturation."""
    stops = _of(log, Collection.CollectionStop)
    delivered = _of(log, Collection.StopRequiredDelivered)
    assert len(stops) <= 1 and len(delivered) <= 1
    assert collection.stop_reason == (stops[0][1].stop_reason if stops else None)
    reason = collection.stop_reason
    if reason is None or reason is DiagnosisStopReason.BUDGET_LIMIT_REACHED:
        assert collection.state is CollectionState.COLLECTING, (
            "budget made the collection SATURATED"
        )
    else:
        assert collection.state is CollectionState.SATURATED
    if reason is DiagnosisStopReason.BUDGET_LIMIT_REACHED:
        assert run.state is RunState.BUDGET_EXHAUSTED
    if run.state is RunState.BUDGET_EXHAUSTED:
        assert reason is not None, "the run's budget is exhausted but collection goes on"
    if delivered:
        assert reason in SATURATING and stops[0][0] < delivered[0][0]
    assert collection.stop_required_delivered == bool(delivered)


def check_saturation(log: Sequence[Logged]) -> None:
    """SPEC §9: saturation happens exactly when a consecutive count reaches its threshold."""
    trigger = _saturation_trigger(log)
    saturating = [
        (index, e.stop_reason)
        for index, (_, e) in enumerate(log)
        if isinstance(e, Collection.CollectionStop) and e.stop_reason in SATURATING
    ]
    if trigger is None:
        assert not saturating, "saturated before any threshold was reached"
    else:
        assert saturating == [(trigger[0] + 1, trigger[1])], "threshold reached, no saturation"


@settings(max_examples=400, stateful_step_count=40, deadline=None)
class RunInvariantsMachine(RuleBasedStateMachine):
    """Random interleavings of every run, collection and invocation command."""

    def __init__(self) -> None:
        super().__init__()
        self.seq = 0
        self.logs: dict[UUID, list[Logged]] = {}
        self.invocations: list[ToolInvocation] = []
        self.accepted_refs: list[tuple[int, str]] = []
        self.first_termination: Termination | None = None
        self.run = Run.start("session-1", "why is checkout slow?", DEADLINE, LIMITS)
        self._record(self.run)
        self.collection = Collection.start(self.run.id, NO_GAIN_THRESHOLD, VIOLATION_THRESHOLD)
        self._record(self.collection)

    # -- helpers -------------------------------------------------------------------------------

    def _record(self, aggregate: Domain) -> None:
        events = aggregate.collect_events()
        log = self.logs.setdefault(aggregate.id, [])
        for e in events:
            self.seq += 1
            log.append((self.seq, e))
        if any(isinstance(e, Run.BudgetExhausted) for e in events):
            self.collection.stop_for_budget()  # as the store does, in the same save
            self._record(self.collection)

    def _attempt(self, aggregate: Domain, command: Callable[[], object]) -> bool:
        """Run a command that may be illegal now; a refusal must append nothing."""
        assert not aggregate.pending_events
        version, before = aggregate.version, dict(vars(aggregate))
        try:
            command()
        except DomainError:
            assert not aggregate.pending_events, "a refused command appended events"
            assert aggregate.version == version, "a refused command moved the version"
            assert vars(aggregate) == before, "a refused command changed the aggregate"
            return False
        self._record(aggregate)
        return True

    def _expect_refusal(
        self, aggregate: Domain, command: Callable[[], object], error: type[DomainError]
    ) -> None:
        """Run a command that must be refused with ``error``, appending nothing."""
        version, before = aggregate.version, dict(vars(aggregate))
        try:
            command()
        except error:
            pass
        else:
            raise AssertionError(f"{command} was not refused with {error.__name__}")
        assert not aggregate.pending_events and aggregate.version == version
        assert vars(aggregate) == before

    def _terminal(self, command: Callable[[], Termination]) -> None:
        """First terminal wins: once terminated, every terminal command is a reporting no-op."""
        before, version = self.run.termination, self.run.version
        results: list[Termination] = []
        done = self._attempt(self.run, lambda: results.append(command()))
        if before is not None:
            assert done and results == [before] and self.run.version == version
        elif done:
            assert results == [self.run.termination]

    def _release_window_open(self) -> bool:
        """Running, or exhausted by budget and not finished: the only states that publish."""
        return not self.run.is_finished and self.run.state in RELEASABLE

    def _with_status(self, status: InvocationStatus) -> list[ToolInvocation]:
        return [i for i in self.invocations if i.status is status]

    def _harness_no_gain_candidates(self) -> list[ToolInvocation]:
        """READY results the harness judges itself: NO_EVIDENCE, or an exact repeat."""
        seen: set[tuple[str, str]] = set()
        found: list[ToolInvocation] = []
        for invocation in self.invocations:
            key = (invocation.tool, invocation.normalized_scope)
            ready = invocation.status is InvocationStatus.READY
            if ready and (invocation.evidence_status is EMPTY or key in seen):
                found.append(invocation)
            seen.add(key)
        return found

    def _cite(self, cited: Sequence[int]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The model cites only invocations it knows; returns (cited, invalid) references."""
        if not self.invocations:
            return (), ()
        found = [i for i in self.invocations if i.evidence_status is FOUND]
        known = found * 3 + self.invocations  # mostly the evidence it found, sometimes not
        refs = tuple(str(_pick(known, i).id) for i in cited)
        valid = {str(i.id) for i in found}
        return refs, tuple(ref for ref in refs if ref not in valid)

    def _verified_facts(self) -> int:
        """Facts whose every citation proves an informative excerpt of a READY + FOUND result."""
        by_id = {str(i.id): i for i in self.invocations}

        def proves(citation: Citation) -> bool:
            source = by_id.get(citation.reference)
            if source is None or source.evidence_status is not FOUND:
                return False
            return citation_problem(citation, source.content) is None

        def verified(fact: Fact) -> bool:
            return bool(fact.citations) and all(proves(c) for c in fact.citations)

        return sum(1 for fact in self.collection.facts if verified(fact))

    def _guard_check(self, has_conclusion: bool, cited: Sequence[int], recheck: bool) -> bool:
        """Record an EvidenceGuard check of the cited references; True when they are valid."""
        refs, invalid = self._cite(cited)
        valid = not invalid and (bool(refs) or not has_conclusion)
        if recheck:
            done = self._attempt(self.run, lambda: self.run.recheck_evidence(valid, invalid))
        else:
            check, verified = self.run.check_evidence, self._verified_facts()
            done = self._attempt(self.run, lambda: check(has_conclusion, valid, invalid, verified))
        if done and valid:
            self.accepted_refs.extend((self.seq, ref) for ref in refs)
        return done and valid

    # -- routing, status and model steps -------------------------------------------------------

    @initialize(
        intent=st.sampled_from([*[Intent.DIAGNOSIS] * 4, *Intent, None]),
        answer_tokens=ANSWER_TOKENS,
    )
    def start(self, intent: Intent | None, answer_tokens: int) -> None:
        """Most runs start routed, mostly to DIAGNOSIS; None leaves routing to the random rules.

        A chat run answers at once, sometimes with more tokens than its whole budget.
        """
        if intent is not None and self._attempt(self.run, self.run.attempt_routing):
            self._attempt(self.run, lambda: self.run.decide_routing(intent))
        if intent in (Intent.SYSTEM_CHAT, Intent.KNOWLEDGE_QUERY):
            self.chat_answer(answer_tokens, then_complete=False)

    @rule(
        attempt=st.booleans(),
        intent=st.sampled_from([Intent.DIAGNOSIS, *Intent, None]),
        error=st.sampled_from(["", "router unavailable"]),
    )
    def routing(self, attempt: bool, intent: Intent | None, error: str) -> None:
        """Routing at any moment: often illegal (twice, too late, or intent and error both)."""
        if attempt:
            self._attempt(self.run, self.run.attempt_routing)
        self._attempt(self.run, lambda: self.run.decide_routing(intent, error))

    @rule(status=st.sampled_from(ChatApplicationStatus))
    def change_status(self, status: ChatApplicationStatus) -> None:
        self._attempt(self.run, lambda: self.run.change_status(status))

    @rule(
        purpose=st.sampled_from(ModelStepPurpose),
        tokens_in=st.integers(min_value=-30, max_value=200),
        tokens_out=st.integers(min_value=0, max_value=100),
        outcome=st.sampled_from(ModelStepOutcome),
    )
    def model_step(
        self, purpose: ModelStepPurpose, tokens_in: int, tokens_out: int, outcome: ModelStepOutcome
    ) -> None:
        step = self.run.record_model_step
        self._attempt(self.run, lambda: step(purpose, tokens_in, tokens_out, 10, outcome))

    @rule(tokens_in=ANSWER_TOKENS, then_complete=st.booleans())
    def chat_answer(self, tokens_in: int, then_complete: bool) -> None:
        """A SYSTEM_CHAT / KNOWLEDGE_QUERY answer: one model call, then release it as is."""
        step = self.run.record_model_step
        if self._attempt(self.run, lambda: step(ModelStepPurpose.ANSWER, tokens_in, 100, 10)):
            done = self._release(ReleaseOutcome.SUCCESS, None)
            if done and then_complete:
                self._terminal(self.run.complete)

    # -- tools ---------------------------------------------------------------------------------

    def _request_tool(self, tool: str, scope: str) -> ToolInvocation | None:
        """The runtime's tool boundary: admit, check_active, charge the call, then begin."""
        if not self._attempt(self.collection, self.collection.admit_tool_request):
            return None
        if not self._attempt(self.run, self.run.check_active):
            return None
        if not self._attempt(self.run, lambda: self.run.charge(BudgetKind.TOOL_CALLS, 1, tool)):
            return None  # refused, e.g. once the release was decided
        if not self.run.is_active:  # this call exhausted the budget: rejected at preflight
            reject = self.run.reject_tool_request
            self._attempt(self.run, lambda: reject(tool, ToolRejectionCode.BUDGET, "budget"))
            return None
        invocation = ToolInvocation.begin(self.run.id, tool, scope, {"scope": scope})
        self._record(invocation)
        self.invocations.append(invocation)
        return invocation

    def _tool_result(
        self, invocation: ToolInvocation, evidence: ReadyEvidence, content: str
    ) -> None:
        """Charge the output bytes, then READY; a dropped or over-budget result is an ERROR."""
        size = len(content.encode("utf-8"))
        charge = self.run.charge
        charged = self._attempt(self.run, lambda: charge(BudgetKind.BYTES, size, "result"))
        if charged and self.run.is_active:
            self._attempt(invocation, lambda: invocation.mark_ready(evidence, content))
        else:
            code = "BUDGET" if charged else "RUN_NOT_ACTIVE"
            self._attempt(invocation, lambda: invocation.fail(code, "result dropped"))

    def _agent_report(
        self, invocation: ToolInvocation, gain: InformationGain, cited: Sequence[int]
    ) -> None:
        """The agent's progress report: facts cite only READY invocations it has seen."""
        ready = [invocation] * 2 + self._with_status(InvocationStatus.READY)
        facts = tuple(
            Fact(f"seen in {cite.tool}", (Citation(str(cite.id), cite.content[:8]),))
            for cite in (_pick(ready, i) for i in cited)
        )
        record = self.collection.record_gain
        if self._attempt(
            self.collection, lambda: record(gain, GainSource.AGENT, facts, invocation.id)
        ):
            assert self.collection.facts[len(self.collection.facts) - len(facts) :] == facts

    @rule(tool=TOOLS, scope=SCOPES)
    def request_tool(self, tool: str, scope: str) -> None:
        self._request_tool(tool, scope)

    @rule(step=TOOL_STEPS)
    def agent_tool_step(self, step: ToolStep) -> None:
        self._tool_step(step)

    def _tool_step(self, step: ToolStep) -> None:
        """A whole agent tool step: boundary, result, then what SPEC §9 records for it."""
        invocation = self._request_tool(step.tool, step.scope)
        if invocation is None:
            return
        self._tool_result(invocation, step.evidence, step.content)
        if invocation.status is not InvocationStatus.READY:
            return  # technical failures produce no gain record
        if invocation in self._harness_no_gain_candidates():
            record = self.collection.record_gain
            self._attempt(
                self.collection,
                lambda: record(InformationGain.NO_GAIN, GainSource.HARNESS, (), invocation.id),
            )
        elif isinstance(step.report, InformationGain):
            self._agent_report(invocation, step.report, step.cited)
        else:
            violation = self.collection.record_violation
            self._attempt(self.collection, lambda: violation("malformed progress report"))

    @rule(code=st.sampled_from(ToolRejectionCode))
    def reject_tool_request(self, code: ToolRejectionCode) -> None:
        reject = self.run.reject_tool_request
        self._attempt(self.run, lambda: reject("kubectl-delete", code, "refused at preflight"))

    @precondition(lambda self: bool(self._with_status(InvocationStatus.PROJECTING)))
    @rule(index=INDEX, evidence=st.sampled_from(READY_EVIDENCE), content=CONTENT)
    def tool_result(self, index: int, evidence: ReadyEvidence, content: str) -> None:
        invocation = _pick(self._with_status(InvocationStatus.PROJECTING), index)
        self._tool_result(invocation, evidence, content)

    @precondition(lambda self: bool(self._with_status(InvocationStatus.PROJECTING)))
    @rule(index=INDEX, code=st.sampled_from(["EXECUTION", "PROJECTION", "SIZE", " "]))
    def tool_failure(self, index: int, code: str) -> None:
        invocation = _pick(self._with_status(InvocationStatus.PROJECTING), index)
        self._attempt(invocation, lambda: invocation.fail(code, "backend error"))

    @rule(index=INDEX, ready=st.booleans())
    def illegal_invocation_command(self, index: int, ready: bool) -> None:
        """Begin without a tool, READY with ERROR evidence, or close a closed invocation."""
        if not self.invocations:
            begin = ToolInvocation.begin
            self._expect_refusal(
                self.run, lambda: begin(self.run.id, " ", "a", {}), InvalidCommandError
            )
            return
        invocation = _pick(self.invocations, index)
        if invocation.status is InvocationStatus.PROJECTING:
            bad = cast(ReadyEvidence, EvidenceStatus.ERROR)  # what the Literal type rules out
            mark = invocation.mark_ready
            self._expect_refusal(invocation, lambda: mark(bad, "x"), InvalidCommandError)
            return
        command = (
            (lambda: invocation.mark_ready(EvidenceStatus.EVIDENCE_FOUND, "x"))
            if ready
            else (lambda: invocation.fail("EXECUTION", "again"))
        )
        self._expect_refusal(invocation, command, InvocationClosedError)

    # -- collection ----------------------------------------------------------------------------

    @precondition(lambda self: bool(self._harness_no_gain_candidates()))
    @rule(
        index=INDEX, gain=st.sampled_from([InformationGain.NO_GAIN] * 3 + [InformationGain.GAINED])
    )
    def harness_gain(self, index: int, gain: InformationGain) -> None:
        invocation = _pick(self._harness_no_gain_candidates(), index)
        record = self.collection.record_gain
        done = self._attempt(
            self.collection, lambda: record(gain, GainSource.HARNESS, (), invocation.id)
        )
        assert not (done and gain is InformationGain.GAINED), "the harness recorded GAINED"

    @precondition(lambda self: bool(self._with_status(InvocationStatus.READY)))
    @rule(index=INDEX, gain=st.sampled_from(InformationGain), cited=CITED)
    def agent_progress(self, index: int, gain: InformationGain, cited: list[int]) -> None:
        invocation = _pick(self._with_status(InvocationStatus.READY), index)
        self._agent_report(invocation, gain, cited)

    @rule(detail=st.sampled_from(["missing report", "malformed report"]))
    def protocol_violation(self, detail: str) -> None:
        self._attempt(self.collection, lambda: self.collection.record_violation(detail))

    @rule()
    def deliver_stop_required(self) -> None:
        self._attempt(self.collection, self.collection.deliver_stop_required)

    @precondition(lambda self: self.collection.stop_required_delivered)
    @rule()
    def request_tool_after_delivery(self) -> None:
        admit = self.collection.admit_tool_request
        self._expect_refusal(self.collection, admit, ControlledStopError)

    # -- guards and release --------------------------------------------------------------------

    @rule(has_conclusion=st.booleans(), cited=CITED)
    def check_evidence(self, has_conclusion: bool, cited: list[int]) -> None:
        self._guard_check(has_conclusion, cited, recheck=False)

    @rule()
    def repair_evidence(self) -> None:
        self._attempt(self.run, lambda: self.run.repair_evidence("cite READY invocations"))

    @rule(cited=CITED)
    def recheck_evidence(self, cited: list[int]) -> None:
        self._guard_check(True, cited, recheck=True)

    @rule()
    def attempt_semantic_guard(self) -> None:
        self._attempt(self.run, self.run.attempt_semantic_guard)

    @rule(
        verdict=VERDICTS,
        unavailable=st.sampled_from(["", "judge unavailable"]),
    )
    def decide_semantic_guard(self, verdict: SemanticVerdict | None, unavailable: str) -> None:
        decide = self.run.decide_semantic_guard
        self._attempt(self.run, lambda: decide(verdict, unavailable))

    @rule(release=RELEASES)
    def decide_release(self, release: tuple[ReleaseOutcome, FallbackType | None]) -> None:
        outcome, fallback = release
        self._release(outcome, fallback)

    @precondition(lambda self: self.run.release is None and self._release_window_open())
    @rule(
        steps=st.lists(TOOL_STEPS, max_size=3),
        draft=DRAFTS,
        tokens=st.integers(min_value=0, max_value=120),
        then_complete=st.booleans(),
    )
    def agent_loop(
        self, steps: list[ToolStep], draft: Draft, tokens: int, then_complete: bool
    ) -> None:
        """A few tool steps, then the draft through the guards, the SPEC §10 table as oracle."""
        for step in steps:
            self._tool_step(step)
        run = self.run
        legal = self._release_window_open() and run.intent is Intent.DIAGNOSIS
        legal = legal and run.guards.stage is GuardStage.NONE
        release = self._run_guards(draft, tokens)
        if release is None:
            return  # no safe content: the application fails the run instead
        outcome, fallback = release
        done = self._release(outcome, fallback)
        if legal:
            assert done, f"the domain refused the release SPEC §10 prescribes: {release}"
        if done and then_complete:
            self._terminal(run.complete)

    def _run_guards(self, draft: Draft, tokens: int) -> Release | None:
        """Record the guard steps a draft calls for; return what SPEC §10 says to release."""
        verified = self._verified_facts()
        valid = self._guard_check(draft.has_conclusion, draft.cited, recheck=False)
        release: Release | None
        if draft.has_conclusion:
            release = self._conclusion_guards(draft, valid, tokens)
        elif verified:
            release = _fallback(FallbackType.INSUFFICIENT_EVIDENCE)
        else:
            release = _fallback(FallbackType.MISSING_REQUIRED_CONTEXT) if draft.missing else None
        if self.run.state is RunState.BUDGET_EXHAUSTED:  # only verified progress is published
            return _fallback(FallbackType.INSUFFICIENT_EVIDENCE) if verified else None
        return release

    def _conclusion_guards(self, draft: Draft, valid: bool, tokens: int) -> Release:
        """EvidenceGuard, the one repair and recheck, then the SemanticGuard."""
        step = self.run.record_model_step
        if not valid:
            self._attempt(self.run, lambda: step(ModelStepPurpose.REPAIR, tokens, 20, 10))
            self._attempt(self.run, lambda: self.run.repair_evidence("cite READY invocations"))
            if not self._guard_check(True, draft.repaired, recheck=True):
                return _fallback(FallbackType.EVIDENCE_VALIDATION_FAILED)
        self._attempt(self.run, self.run.attempt_semantic_guard)
        self._attempt(self.run, lambda: step(ModelStepPurpose.JUDGE, tokens, 5, 10))
        why = "" if draft.verdict else "judge unavailable"
        self._attempt(self.run, lambda: self.run.decide_semantic_guard(draft.verdict, why))
        return SEMANTIC_RELEASE[draft.verdict]

    def _release(self, outcome: ReleaseOutcome, fallback: FallbackType | None) -> bool:
        decide = self.run.decide_release
        return self._attempt(self.run, lambda: decide(outcome, fallback, {"summary": "safe"}))

    # -- termination ---------------------------------------------------------------------------

    @rule(by=TERMINATIONS)
    def terminate(self, by: CancellationReason | BudgetKind | FailureCode | str) -> None:
        """Cancel with any reason, time out at the deadline, exhaust a budget, or fail."""
        self._terminal(lambda: _terminate(self.run, by))

    @rule()
    def complete(self) -> None:
        self._terminal(self.run.complete)

    @rule(elapsed_ms=st.integers(min_value=0, max_value=90_000))
    def finish(self, elapsed_ms: int) -> None:
        now = self.run.created_on + timedelta(milliseconds=elapsed_ms)
        self._attempt(self.run, lambda: self.run.finish(now))

    # -- invariants ----------------------------------------------------------------------------

    @invariant()
    def run_has_one_termination(self) -> None:
        log = self.logs[self.run.id]
        check_one_termination(self.run, log)
        check_reason_to_state(self.run, log)
        check_no_work_after_termination(self.run, log)
        check_guard_chain(self.run, log)
        check_outcome_table(self.run, log)
        if self.first_termination is None:
            self.first_termination = self.run.termination
        assert self.run.termination == self.first_termination, "a terminal state changed"

    @invariant()
    def usage_is_derivable_from_events(self) -> None:
        usage = _usage_from_events(self.logs[self.run.id])
        assert usage == self.run.usage
        if usage.first_exceeded(LIMITS) is not None:
            assert self.run.state is RunState.BUDGET_EXHAUSTED, "over budget but not exhausted"

    @invariant()
    def replay_rebuilds_every_aggregate(self) -> None:
        replayed = _replay(self.logs[self.run.id])
        assert isinstance(replayed, Run)
        assert replayed.state is self.run.state
        assert replayed.termination == self.run.termination
        assert replayed.usage == self.run.usage
        for aggregate in (self.run, self.collection, *self.invocations):
            assert _replay(self.logs[aggregate.id]) == aggregate

    @invariant()
    def invocations_close_once(self) -> None:
        for invocation in self.invocations:
            assert invocation.run_id == self.run.id
            check_invocation(invocation, self.logs[invocation.id])

    @invariant()
    def collection_stops_by_spec(self) -> None:
        log = self.logs[self.collection.id]
        check_collection(self.collection, self.run, log)
        check_saturation(log)

    @invariant()
    def only_ready_invocations_are_referenced(self) -> None:
        ready_at = {
            str(invocation.id): seq
            for invocation in self.invocations
            for seq, _ in _of(self.logs[invocation.id], ToolInvocation.ToolInvocationReady)
        }
        for seq, progress in _of(self.logs[self.collection.id], Collection.ToolProgress):
            assert progress.invocation_id is not None
            assert ready_at.get(str(progress.invocation_id), seq) < seq
            if progress.source is GainSource.AGENT:
                refs = [ref for fact in progress.facts for ref in fact.references]
                assert all(ready_at.get(ref, seq) < seq for ref in refs), "cited a non-READY id"
        for seq, ref in self.accepted_refs:
            assert ready_at.get(ref, seq) < seq, f"the evidence guard accepted {ref}"
            assert _find(self.invocations, ref).evidence_status is FOUND

    @invariant()
    def no_tool_runs_after_stop(self) -> None:
        collection_log = self.logs[self.collection.id]
        barriers = {
            "saturation": [
                seq
                for seq, stop in _of(collection_log, Collection.CollectionStop)
                if stop.stop_reason in SATURATING
            ],
            "STOP_REQUIRED": [
                seq for seq, _ in _of(collection_log, Collection.StopRequiredDelivered)
            ],
            "termination": [seq for seq, _ in _of(self.logs[self.run.id], Run.RunTerminated)],
        }
        started = [self.logs[i.id][0][0] for i in self.invocations]
        for name, seqs in barriers.items():
            late = [seq for seq in started for barrier in seqs if seq > barrier]
            assert not late, f"a tool invocation began after {name}"

    def teardown(self) -> None:
        """Coverage notes for ``pytest --hypothesis-show-statistics``."""
        event(f"run state {self.run.state.value}, finished={self.run.is_finished}")
        reason = self.collection.stop_reason
        event(f"collection stop {reason.value if reason else None}")
        event(f"stop required delivered={self.collection.stop_required_delivered}")
        event(f"release {self.run.release}")


def _find(invocations: Sequence[ToolInvocation], ref: str) -> ToolInvocation:
    return next(i for i in invocations if str(i.id) == ref)


TestRunInvariants = RunInvariantsMachine.TestCase


def test_spec_reason_table_is_the_domain_mapping() -> None:
    reasons: list[TerminationReason] = [*CancellationReason, *FailureCode, *CompletionReason]
    assert set(SPEC_STATE_FOR_REASON) == set(reasons)
    for reason in reasons:
        assert state_for_reason(reason) is SPEC_STATE_FOR_REASON[reason]
