"""A run's release pipeline: the EvidenceGuard, the one repair, the semantic judge, the release.

Each guard step is recorded by one event, and only where the guard stage table allows it
(:func:`domain.guard_stages.guard_step_refusal`); the release decision is checked against the
rules of SPEC §10 (:func:`domain.release.release_refusal`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from eventsourcing.domain import Aggregate

from domain.answer_rules import answer_verdict
from domain.grounding import DEFAULT_RULES, GroundingRules, JudgedStatement, RejectedCitation
from domain.guard_stages import guard_step_refusal
from domain.release import release_refusal
from domain.release_states import FallbackType, GuardStage, ReleaseOutcome, SemanticVerdict
from domain.run_core import RunCore
from domain.states import Intent, RunState


class RunGuards(RunCore):
    """The guard and release commands of a run and the events that record them."""

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

        def apply(self, aggregate: RunGuards) -> None:
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

        def apply(self, aggregate: RunGuards) -> None:
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

        def apply(self, aggregate: RunGuards) -> None:
            """Advance to RECHECKED."""
            aggregate._advance_guards(stage=GuardStage.RECHECKED, evidence_valid=self.valid)

    class SemanticGuardAttempt(Aggregate.Event):
        """The judge was asked whether the evidence (or the cited passages) supports each claim."""

        class_version = 1

        def apply(self, aggregate: RunGuards) -> None:
            """Advance to SEMANTIC_ATTEMPTED."""
            aggregate._advance_guards(stage=GuardStage.SEMANTIC_ATTEMPTED)

    class SemanticGuardDecision(Aggregate.Event):
        """The judge's verdict on the conclusion (or answer), on each statement, or why none."""

        class_version = 2
        verdict: SemanticVerdict | None
        unavailable: str
        judged: tuple[JudgedStatement, ...]
        """Every statement exactly as the judge saw it, conclusion first, with its verdict."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 judged the conclusion alone and did not record its text."""
            state["judged"] = ()

        def apply(self, aggregate: RunGuards) -> None:
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

        def apply(self, aggregate: RunGuards) -> None:
            """Remember the decision."""
            aggregate.release = (self.outcome, self.fallback_type)
            aggregate.published = self.content
            aggregate._advance_guards(stage=GuardStage.DECIDED)

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
        """Record the start of the semantic check (``SEMANTIC_GUARD_ATTEMPT``).

        A diagnosis's judge rules on a conclusion whose evidence is valid; a knowledge
        answer's on the statements of an answer that parsed.
        """
        self.check_active()
        self._check_guard_step(GuardStage.SEMANTIC_ATTEMPTED)
        if self.intent is Intent.KNOWLEDGE_QUERY:
            self._refuse_if(
                self.answer_parsed is not True,
                "the semantic guard runs only on a knowledge answer that parsed",
            )
        else:
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

        ``verdict`` is the conclusion's: the first of ``judged`` when statements were judged. A
        knowledge answer's is SUPPORTED only when every statement of ``judged`` is
        (:func:`domain.answer_rules.answer_verdict`).
        """
        self._check_guard_step(GuardStage.SEMANTIC_DECIDED)
        self._invalid_if((verdict is None) == (not unavailable), "give a verdict or a reason")
        if self.intent is Intent.KNOWLEDGE_QUERY:
            self._invalid_if(not judged, "a knowledge answer's statements are recorded as judged")
            self._invalid_if(
                verdict is not None and answer_verdict(judged) is not verdict,
                "the verdict is the answer's: SUPPORTED only when every statement is",
            )
        else:
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

    # -- helpers -------------------------------------------------------------------------------

    def _check_release_window(self) -> None:
        if not self._in_release_window():
            self.check_active()
            self._refuse_if(True, "the run is finished")

    def _check_guard_step(self, step: GuardStage) -> None:
        """Refuse the guard event that records ``step`` unless the guard table allows it now."""
        self._check_release_window()
        self._refuse_if(
            self.intent not in (Intent.DIAGNOSIS, Intent.KNOWLEDGE_QUERY),
            "guards run only for a DIAGNOSIS or a KNOWLEDGE_QUERY answer",
        )
        assert self.intent is not None  # for the type checker: refused above
        refusal = guard_step_refusal(self.guards.stage, step, self.intent)
        self._refuse_if(refusal is not None, refusal or "")

    def _advance_guards(self, **changes: Any) -> None:
        self.guards = replace(self.guards, **changes)
