"""The Run aggregate: one request's lifecycle, budget, cancellation, guards and release."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from domain.errors import IllegalTransitionError, InvalidCommandError, RunNotActiveError
from domain.grounding import DEFAULT_RULES, GroundingRules, JudgedStatement, RejectedCitation
from domain.guard_stages import guard_step_refusal
from domain.published_reader import published_conclusion
from domain.redaction import failure_cause
from domain.release import GuardProgress, final_outcome, release_refusal
from domain.states import (
    BudgetKind,
    CancellationReason,
    ChatApplicationStatus,
    CompletionReason,
    DiagnosisStopReason,
    DraftOutcome,
    FailureCode,
    FallbackType,
    GuardStage,
    Intent,
    ModelStepOutcome,
    ModelStepPurpose,
    ReleaseOutcome,
    RunState,
    SemanticVerdict,
    ToolRejectionCode,
)
from domain.values import DEFAULT_LIMITS, Budget, Termination

if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime

_P = ParamSpec("_P")


def _first_terminal_wins(
    command: Callable[Concatenate[Run, _P], Termination],
) -> Callable[Concatenate[Run, _P], Termination]:
    """Make ``command`` a terminal command under SPEC §4 "first terminal wins".

    On a run that already has its one termination the command returns that termination and
    appends nothing; its own checks are not even run. This is the one place the rule is kept.
    """

    @functools.wraps(command)
    def decided_once(run: Run, /, *args: _P.args, **kwargs: _P.kwargs) -> Termination:
        if run.termination is not None:
            return run.termination
        return command(run, *args, **kwargs)

    return decided_once


class Run(Aggregate):
    """One request's execution: identity, deadline, budget and exactly one termination."""

    class RunStarted(Aggregate.Created):
        """A run started RUNNING with its identity, owner, query, deadline, budget and worker."""

        class_version = 3
        session_id: str
        query: str
        deadline: datetime
        limits: Budget
        owner: str
        """Who asked: the API principal's name ('' when the caller is not identified)."""
        worker: str
        """The worker process executing it (its lease id; '' when none was recorded)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Runs started before owners were recorded belong to no one."""
            state["owner"] = ""

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Runs started before workers were recorded name none."""
            state["worker"] = ""

        def apply(self, aggregate: Run) -> None:
            """Set the run's identity, owner, limits and worker."""
            aggregate.session_id = self.session_id
            aggregate.query = self.query
            aggregate.deadline = self.deadline
            aggregate.limits = self.limits
            aggregate.owner = self.owner
            aggregate.worker = self.worker

    class RoutingAttempt(Aggregate.Event):
        """The router was asked to classify the query."""

        class_version = 1
        attempt: int

        def apply(self, aggregate: Run) -> None:
            """Count the attempt."""
            aggregate.routing_attempts = self.attempt

    class RoutingDecision(Aggregate.Event):
        """The router decided an intent, or failed with an error."""

        class_version = 1
        intent: Intent | None
        error: str

        def apply(self, aggregate: Run) -> None:
            """Remember the intent."""
            aggregate.routing_decided = True
            aggregate.intent = self.intent

    class ApplicationStatusChanged(Aggregate.Event):
        """A user-visible phase began (the SSE ``status``)."""

        class_version = 1
        status: ChatApplicationStatus

        def apply(self, aggregate: Run) -> None:
            """Remember the last phase."""
            aggregate.status = self.status

    class AgentModelStep(Aggregate.Event):
        """One model call with its purpose, usage, latency and outcome; charges the budget."""

        class_version = 2
        purpose: ModelStepPurpose
        tokens_in: int
        tokens_out: int
        latency_ms: int
        outcome: ModelStepOutcome
        detail: str
        bound_ms: int
        """The longest the harness would wait for this answer (0: not recorded, before v2)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 did not record the bound of the wait."""
            state["bound_ms"] = 0

        def apply(self, aggregate: Run) -> None:
            """Charge one model call and its tokens."""
            tokens = self.tokens_in + self.tokens_out
            aggregate.usage = aggregate.usage.add(model_calls=1, tokens=tokens)

    class BudgetCharged(Aggregate.Event):
        """A tool call or tool-output bytes were charged to the run's budget."""

        class_version = 1
        kind: BudgetKind
        amount: int
        ref: str

        def apply(self, aggregate: Run) -> None:
            """Add the charge to the usage."""
            aggregate.usage = aggregate.usage.plus(self.kind, self.amount)

    class BudgetExhausted(Aggregate.Event):
        """A hard budget was exceeded; the run terminates BUDGET_EXHAUSTED."""

        class_version = 1
        kind: BudgetKind
        limit: int
        used: int
        stop_reason: DiagnosisStopReason

    class ToolRequestRejected(Aggregate.Event):
        """A tool request failed preflight; there is no invocation record (SPEC §8)."""

        class_version = 2
        tool: str
        code: ToolRejectionCode
        detail: str

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 had no ``detail``; old rejections read as having none."""
            state["detail"] = ""

    class EvidenceGuardInitial(Aggregate.Event):
        """The EvidenceGuard checked every citation of the draft and of the progress."""

        class_version = 2
        has_conclusion: bool
        valid: bool
        invalid_references: tuple[str, ...]
        verified_facts: int
        rejected: tuple[RejectedCitation, ...]
        """Each citation that failed, which statement made it and why (design §10.1)."""
        min_words: int
        min_chars: int
        """The excerpt rules in force (0: recorded before the grounding rules existed)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 checked references only: no rejected citations, no excerpt rules."""
            state.update(rejected=(), min_words=0, min_chars=0)

        def apply(self, aggregate: Run) -> None:
            """Open the guard chain."""
            aggregate._advance_guards(
                stage=GuardStage.EVIDENCE_CHECKED,
                has_conclusion=self.has_conclusion,
                evidence_valid=self.valid,
                verified_facts=self.verified_facts,
            )

    class EvidenceRepair(Aggregate.Event):
        """The one repair of a conclusion whose evidence was invalid."""

        class_version = 1
        detail: str

        def apply(self, aggregate: Run) -> None:
            """Advance to REPAIRED."""
            aggregate._advance_guards(stage=GuardStage.REPAIRED)

    class EvidenceGuardRecheck(Aggregate.Event):
        """The EvidenceGuard checked every citation of the repaired draft."""

        class_version = 2
        valid: bool
        invalid_references: tuple[str, ...]
        rejected: tuple[RejectedCitation, ...]

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 checked references only."""
            state["rejected"] = ()

        def apply(self, aggregate: Run) -> None:
            """Advance to RECHECKED."""
            aggregate._advance_guards(stage=GuardStage.RECHECKED, evidence_valid=self.valid)

    class SemanticGuardAttempt(Aggregate.Event):
        """The semantic judge was asked whether the evidence supports the conclusion."""

        class_version = 1

        def apply(self, aggregate: Run) -> None:
            """Advance to SEMANTIC_ATTEMPTED."""
            aggregate._advance_guards(stage=GuardStage.SEMANTIC_ATTEMPTED)

    class SemanticGuardDecision(Aggregate.Event):
        """The judge's verdict on the conclusion, on each statement it saw, or why none."""

        class_version = 2
        verdict: SemanticVerdict | None
        unavailable: str
        judged: tuple[JudgedStatement, ...]
        """Every statement exactly as the judge saw it, conclusion first, with its verdict."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 judged the conclusion alone and did not record its text."""
            state["judged"] = ()

        def apply(self, aggregate: Run) -> None:
            """Remember the verdict."""
            aggregate._advance_guards(
                stage=GuardStage.SEMANTIC_DECIDED,
                verdict=self.verdict,
                semantic_unavailable=self.verdict is None,
            )

    class ReleaseDecision(Aggregate.Event):
        """Release decided SUCCESS or FALLBACK and the safe content to publish."""

        class_version = 1
        outcome: ReleaseOutcome
        fallback_type: FallbackType | None
        content: dict[str, Any]

        def apply(self, aggregate: Run) -> None:
            """Remember the decision."""
            aggregate.release = (self.outcome, self.fallback_type)
            aggregate.published = self.content
            aggregate._advance_guards(stage=GuardStage.DECIDED)

    class CancellationRequested(Aggregate.Event):
        """The run was asked to stop; the first reason wins."""

        class_version = 1
        reason: CancellationReason

        def apply(self, aggregate: Run) -> None:
            """Remember the first reason."""
            aggregate.cancellation = aggregate.cancellation or self.reason

    class RunTerminated(Aggregate.Event):
        """The run's one termination: its final state, reason and, for a failure, its cause."""

        class_version = 2
        state: RunState
        reason: CancellationReason | FailureCode | CompletionReason
        cause: str
        """What failed, as recorded when it happened (exception type and message, redacted and
        bounded by :func:`domain.redaction.failure_cause`); '' when none is known."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Terminations recorded before causes were name none."""
            state["cause"] = ""

        def apply(self, aggregate: Run) -> None:
            """Set the termination and its cause."""
            aggregate.termination = Termination(state=self.state, reason=self.reason)
            aggregate.failure_cause = self.cause

    class RunFinished(Aggregate.Event):
        """The run's result was persisted: release outcome, usage against budget, duration."""

        class_version = 1
        release_outcome: ReleaseOutcome
        usage: Budget
        limits: Budget
        duration_ms: int

        def apply(self, aggregate: Run) -> None:
            """Close the run."""
            aggregate.finished_outcome = self.release_outcome

    def __init__(self) -> None:
        """Fields are assigned by the events' ``apply`` methods."""
        self.session_id = ""
        self.owner = ""
        self.worker = ""
        self.query = ""
        self.deadline: datetime
        self.limits = DEFAULT_LIMITS
        self.usage = Budget()
        self.routing_attempts = 0
        self.routing_decided = False
        self.intent: Intent | None = None
        self.status: ChatApplicationStatus | None = None
        self.guards = GuardProgress()
        self.release: tuple[ReleaseOutcome, FallbackType | None] | None = None
        self.published: dict[str, Any] | None = None
        self.cancellation: CancellationReason | None = None
        self.termination: Termination | None = None
        self.failure_cause = ""
        """Why the run failed, as recorded with its termination ('' when no cause is known)."""
        self.finished_outcome: ReleaseOutcome | None = None

    # -- creation and queries ------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        session_id: str,
        query: str,
        deadline: datetime,
        limits: Budget = DEFAULT_LIMITS,
        run_id: UUID | None = None,
        owner: str = "",
        worker: str = "",
    ) -> Run:
        """Start a RUNNING run (``RUN_STARTED``) for ``owner``, executed by ``worker``."""
        run_key = run_id or uuid4()
        if not session_id.strip() or not query.strip():
            raise InvalidCommandError(
                run_key, f"run {run_key!r}: session_id and query are required"
            )
        if deadline.tzinfo is None:
            raise InvalidCommandError(
                run_key, f"run {run_key!r}: the deadline must be timezone-aware"
            )
        if limits.is_negative():
            raise InvalidCommandError(run_key, f"run {run_key!r}: budget limits must be >= 0")
        return cls._create(
            cls.RunStarted,
            id=run_key,
            session_id=session_id,
            query=query,
            deadline=deadline,
            limits=limits,
            owner=owner,
            worker=worker,
        )

    @property
    def state(self) -> RunState:
        """RUNNING until the one termination, then its state."""
        return self.termination.state if self.termination else RunState.RUNNING

    @property
    def is_active(self) -> bool:
        """True while no termination exists: work may still be recorded."""
        return self.termination is None

    @property
    def is_finished(self) -> bool:
        """True once ``RUN_FINISHED`` was recorded; nothing may follow it."""
        return self.finished_outcome is not None

    @property
    def previous_turn(self) -> str | None:
        """What this run carries into the next turn of its session (SPEC §1 PreviousTurn).

        Only the published result of a DIAGNOSIS run whose ReleaseOutcome is SUCCESS; a fallback,
        an answer or a failure never becomes context.
        """
        diagnosed = self.intent is Intent.DIAGNOSIS and self.published is not None
        if not (diagnosed and self.finished_outcome is ReleaseOutcome.SUCCESS):
            return None
        assert self.published is not None
        return published_conclusion(self.published) or None

    def deadline_passed(self, now: datetime) -> bool:
        """Whether ``now`` is at or after the run's deadline."""
        return now >= self.deadline

    def would_exceed(self, kind: BudgetKind, amount: int) -> bool:
        """Whether charging ``amount`` of ``kind`` would take the run over its limit."""
        return self.usage.get(kind) + amount > self.limits.get(kind)

    def check_active(self) -> None:
        """Raise :class:`RunNotActiveError` when the run already has a termination."""
        if self.termination is not None:
            raise RunNotActiveError(
                self.id,
                f"run {self.id!r} is already {self.termination.state.value} "
                f"({self.termination.reason.value}); no further work is accepted",
            )

    # -- routing, status and model steps -------------------------------------------------------

    def attempt_routing(self) -> None:
        """Record a routing attempt (``ROUTING_ATTEMPT``)."""
        self.check_active()
        self._refuse_if(self.routing_decided, "routing was already decided")
        self.trigger_event(self.RoutingAttempt, attempt=self.routing_attempts + 1)

    def decide_routing(self, intent: Intent | None, error: str = "") -> None:
        """Record the router's intent or its error (``ROUTING_DECISION``)."""
        self.check_active()
        self._refuse_if(self.routing_attempts == 0, "no routing attempt was recorded")
        self._refuse_if(self.routing_decided, "routing was already decided")
        self._invalid_if((intent is None) == (not error), "give exactly one of intent and error")
        self.trigger_event(self.RoutingDecision, intent=intent, error=error)

    def change_status(self, status: ChatApplicationStatus) -> None:
        """Record a user-visible phase (``APPLICATION_STATUS_CHANGED``)."""
        if not (status is ChatApplicationStatus.SAFETY_VALIDATING and self._in_release_window()):
            self.check_active()
        self._refuse_if(self.is_finished, "the run is finished")
        self.trigger_event(self.ApplicationStatusChanged, status=status)

    def record_model_step(
        self,
        purpose: ModelStepPurpose,
        tokens_in: int,
        tokens_out: int,
        latency_ms: int,
        outcome: ModelStepOutcome = ModelStepOutcome.OK,
        detail: str = "",
        bound_ms: int = 0,
    ) -> None:
        """Record one model call and charge it (``AGENT_MODEL_STEP``); exhaust if over budget.

        ``bound_ms`` is the longest the harness waited for it (the model timeout or the
        deadline, whichever came first), so an auditor can see no late answer was used.
        """
        self.check_active()
        self._refuse_if(self.release is not None, "the release was already decided")
        self._invalid_if(min(tokens_in, tokens_out, latency_ms, bound_ms) < 0, "must be >= 0")
        self.trigger_event(
            self.AgentModelStep,
            purpose=purpose,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_ms=latency_ms,
            outcome=outcome,
            detail=detail,
            bound_ms=bound_ms,
        )
        self._exhaust_if_over()

    def charge(self, kind: BudgetKind, amount: int, ref: str = "") -> None:
        """Charge a tool call or tool-output bytes (``BUDGET_CHARGED``); exhaust if over budget."""
        self.check_active()
        self._refuse_if(self.release is not None, "the release was already decided")
        self._invalid_if(amount < 0, "a charge must be >= 0")
        self.trigger_event(self.BudgetCharged, kind=kind, amount=amount, ref=ref)
        self._exhaust_if_over()

    def reject_tool_request(self, tool: str, code: ToolRejectionCode, detail: str) -> None:
        """Audit a preflight rejection (``TOOL_REQUEST_REJECTED``); no invocation record exists."""
        self._refuse_if(self.is_finished, "the run is finished")
        self.trigger_event(self.ToolRequestRejected, tool=tool, code=code, detail=detail)

    # -- guards and release --------------------------------------------------------------------

    def check_evidence(
        self,
        has_conclusion: bool,
        valid: bool,
        invalid_references: tuple[str, ...] = (),
        verified_facts: int = 0,
        rejected: tuple[RejectedCitation, ...] = (),
        rules: GroundingRules = DEFAULT_RULES,
    ) -> None:
        """Record the initial EvidenceGuard result (``EVIDENCE_GUARD_INITIAL``).

        ``verified_facts`` counts the facts whose every citation proved its excerpt in a READY +
        EVIDENCE_FOUND invocation of this run; ``rejected`` lists every citation that did not.
        """
        self._check_guard_step(GuardStage.EVIDENCE_CHECKED)
        self._invalid_if(verified_facts < 0, "verified_facts must be >= 0")
        self.trigger_event(
            self.EvidenceGuardInitial,
            has_conclusion=has_conclusion,
            valid=valid,
            invalid_references=tuple(invalid_references),
            verified_facts=verified_facts,
            rejected=tuple(rejected),
            min_words=rules.min_words,
            min_chars=rules.min_chars,
        )

    def repair_evidence(self, detail: str = "") -> None:
        """Record the one EvidenceRepair of an invalid conclusion (``EVIDENCE_REPAIR``)."""
        self.check_active()
        self._check_guard_step(GuardStage.REPAIRED)
        self._refuse_if(not self.guards.has_conclusion, "only a conclusion is repaired")
        self._refuse_if(self.guards.evidence_valid, "the evidence is already valid")
        self.trigger_event(self.EvidenceRepair, detail=detail)

    def recheck_evidence(
        self,
        valid: bool,
        invalid_references: tuple[str, ...] = (),
        rejected: tuple[RejectedCitation, ...] = (),
    ) -> None:
        """Record the EvidenceGuard recheck after the repair (``EVIDENCE_GUARD_RECHECK``)."""
        self._check_guard_step(GuardStage.RECHECKED)
        self.trigger_event(
            self.EvidenceGuardRecheck,
            valid=valid,
            invalid_references=tuple(invalid_references),
            rejected=tuple(rejected),
        )

    def attempt_semantic_guard(self) -> None:
        """Record the start of the semantic check (``SEMANTIC_GUARD_ATTEMPT``)."""
        self.check_active()
        self._check_guard_step(GuardStage.SEMANTIC_ATTEMPTED)
        self._refuse_if(
            not (self.guards.has_conclusion and self.guards.evidence_valid),
            "the semantic guard runs only on a conclusion whose evidence is valid",
        )
        self.trigger_event(self.SemanticGuardAttempt)

    def decide_semantic_guard(
        self,
        verdict: SemanticVerdict | None,
        unavailable: str = "",
        judged: tuple[JudgedStatement, ...] = (),
    ) -> None:
        """Record the judge's verdicts, or why it was unavailable (``SEMANTIC_GUARD_DECISION``).

        ``verdict`` is the conclusion's: the first of ``judged`` when statements were judged.
        """
        self._check_guard_step(GuardStage.SEMANTIC_DECIDED)
        self._invalid_if((verdict is None) == (not unavailable), "give a verdict or a reason")
        self._invalid_if(
            bool(judged) and judged[0].verdict is not verdict,
            "the verdict is the conclusion's, the first statement judged",
        )
        self.trigger_event(
            self.SemanticGuardDecision, verdict=verdict, unavailable=unavailable, judged=judged
        )

    def decide_release(
        self,
        outcome: ReleaseOutcome,
        fallback_type: FallbackType | None,
        content: dict[str, Any],
    ) -> None:
        """Record what is published (``RELEASE_DECISION``), checked against SPEC §10."""
        self._check_release_window()
        refusal = release_refusal(
            self.intent,
            self.guards,
            outcome,
            fallback_type,
            budget_exhausted=self.state is RunState.BUDGET_EXHAUSTED,
        )
        self._refuse_if(refusal is not None, refusal or "")
        self.trigger_event(
            self.ReleaseDecision, outcome=outcome, fallback_type=fallback_type, content=content
        )

    # -- termination (first terminal wins: see _first_terminal_wins) ---------------------------

    @_first_terminal_wins
    def cancel(self, reason: CancellationReason) -> Termination:
        """Cancel: record the reason and terminate by it; a no-op once terminated (SPEC §5).

        DEADLINE_EXCEEDED takes the deadline path (:meth:`time_out`); BUDGET_EXHAUSTED must name
        the budget, so it is only recorded through :meth:`exhaust_budget`.
        """
        if reason is CancellationReason.DEADLINE_EXCEEDED:
            return self.time_out()
        self._invalid_if(
            reason is CancellationReason.BUDGET_EXHAUSTED,
            "budget exhaustion names its budget: use exhaust_budget(kind)",
        )
        self.trigger_event(self.CancellationRequested, reason=reason)
        return self._terminate(reason)

    @_first_terminal_wins
    def complete(self) -> Termination:
        """Terminate SUCCESS after a release decision; a no-op once terminated."""
        self._refuse_if(self.release is None, "a run completes only after its release decision")
        return self._terminate(CompletionReason.COMPLETED)

    @_first_terminal_wins
    def fail(self, code: FailureCode, cause: str = "") -> Termination:
        """Terminate FAILED with a failure code; a no-op once terminated.

        ``cause`` says what failed (e.g. an exception's type and message); it is recorded
        redacted and bounded (:func:`domain.redaction.failure_cause`).
        """
        return self._terminate(code, failure_cause(cause) if cause else "")

    @_first_terminal_wins
    def time_out(self) -> Termination:
        """Terminate TIMED_OUT, then cancel to stop further work; a no-op once terminated."""
        termination = self._terminate(CancellationReason.DEADLINE_EXCEEDED)
        self.trigger_event(self.CancellationRequested, reason=CancellationReason.DEADLINE_EXCEEDED)
        return termination

    @_first_terminal_wins
    def exhaust_budget(self, kind: BudgetKind) -> Termination:
        """Terminate BUDGET_EXHAUSTED naming the budget, then cancel; a no-op once terminated."""
        self.trigger_event(
            self.BudgetExhausted,
            kind=kind,
            limit=self.limits.get(kind),
            used=self.usage.get(kind),
            stop_reason=DiagnosisStopReason.BUDGET_LIMIT_REACHED,
        )
        termination = self._terminate(CancellationReason.BUDGET_EXHAUSTED)
        self.trigger_event(self.CancellationRequested, reason=CancellationReason.BUDGET_EXHAUSTED)
        return termination

    def finish(self, now: datetime) -> ReleaseOutcome:
        """Record ``RUN_FINISHED`` with the release outcome, usage against budget and duration."""
        self._refuse_if(self.termination is None, "a run finishes only after its termination")
        self._refuse_if(self.is_finished, "the run is already finished")
        outcome = final_outcome(self.state, self.release)
        duration_ms = max(0, int((now - self.created_on).total_seconds() * 1000))
        self.trigger_event(
            self.RunFinished,
            release_outcome=outcome,
            usage=self.usage,
            limits=self.limits,
            duration_ms=duration_ms,
        )
        return outcome

    def end_orphaned(self, now: datetime) -> Termination:
        """End a run whose worker was lost: its termination, then ``RUN_FINISHED``.

        TIMED_OUT when the deadline has passed at ``now``, else FAILED with WORKER_LOST. First
        terminal wins: a run its worker (or a cancel) already terminated keeps that termination
        and only gets the ``RUN_FINISHED`` it is missing; a finished run is left as it is.
        """
        if self.termination is None:
            if self.deadline_passed(now):
                self.time_out()
            else:
                self.fail(FailureCode.WORKER_LOST)
        if not self.is_finished:
            self.finish(now)
        assert self.termination is not None
        return self.termination

    # -- drafts the model proposed ------------------------------------------------------------

    MAX_DRAFT_CHARS = 8000
    """How much of a proposed draft's text its event keeps (length and hash cover all of it)."""
    MAX_DRAFT_DETAIL = 300
    """How much of a failed draft's parse failure its event keeps."""
    DRAFT_PURPOSES = (ModelStepPurpose.AGENT, ModelStepPurpose.REPAIR)
    """The model steps that propose a draft: the agent's final answer and the repair."""

    class DraftProposed(Aggregate.Event):
        """The model proposed a draft: its text (bounded), length, hash and how it parsed."""

        class_version = 1
        purpose: ModelStepPurpose
        text: str
        """The draft's text, its first ``MAX_DRAFT_CHARS`` characters."""
        length: int
        """The full text's length in characters."""
        sha256: str
        """The hex SHA-256 of the full text, UTF-8 encoded."""
        outcome: DraftOutcome
        detail: str
        """Why it failed to parse, bounded ('' when VALID)."""

    def propose_draft(
        self, purpose: ModelStepPurpose, text: str, outcome: DraftOutcome, detail: str = ""
    ) -> None:
        """Record a draft the model proposed and how it parsed (``DRAFT_PROPOSED``).

        The text is kept bounded, with the full text's length and SHA-256, so an auditor sees
        what was proposed, and what was withheld, without the log holding unbounded text.
        """
        self.check_active()
        self._refuse_if(self.release is not None, "the release was already decided")
        self._invalid_if(
            purpose not in self.DRAFT_PURPOSES,
            f"only {' or '.join(p.value for p in self.DRAFT_PURPOSES)} propose a draft, "
            f"not {purpose.value}",
        )
        failed = outcome is not DraftOutcome.VALID
        self._invalid_if(failed != bool(detail), "a failed draft says why, a valid one nothing")
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        self.trigger_event(
            self.DraftProposed,
            purpose=purpose,
            text=text[: self.MAX_DRAFT_CHARS],
            length=len(text),
            sha256=digest,
            outcome=outcome,
            detail=detail[: self.MAX_DRAFT_DETAIL],
        )

    # -- helpers -------------------------------------------------------------------------------

    def _terminate(
        self, reason: CancellationReason | FailureCode | CompletionReason, cause: str = ""
    ) -> Termination:
        termination = Termination.for_reason(reason)
        self.trigger_event(self.RunTerminated, state=termination.state, reason=reason, cause=cause)
        return termination

    def _exhaust_if_over(self) -> None:
        kind = self.usage.first_exceeded(self.limits)
        if kind is not None:
            self.exhaust_budget(kind)

    def _in_release_window(self) -> bool:
        """Active, or exhausted by budget (the one terminal state that may still publish)."""
        return not self.is_finished and self.state in (RunState.RUNNING, RunState.BUDGET_EXHAUSTED)

    def _check_release_window(self) -> None:
        if not self._in_release_window():
            self.check_active()
            self._refuse_if(True, "the run is finished")

    def _check_guard_step(self, step: GuardStage) -> None:
        """Refuse the guard event that records ``step`` unless the guard table allows it now."""
        self._check_release_window()
        self._refuse_if(self.intent is not Intent.DIAGNOSIS, "guards run only for a DIAGNOSIS")
        refusal = guard_step_refusal(self.guards.stage, step)
        self._refuse_if(refusal is not None, refusal or "")

    def _refuse_if(self, condition: bool, why: str) -> None:
        if condition:
            error = RunNotActiveError if self.is_finished else IllegalTransitionError
            raise error(self.id, f"run {self.id!r}: {why}")

    def _invalid_if(self, condition: bool, why: str) -> None:
        if condition:
            raise InvalidCommandError(self.id, f"run {self.id!r}: {why}")

    def _advance_guards(self, **changes: Any) -> None:
        self.guards = replace(self.guards, **changes)
