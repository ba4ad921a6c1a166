"""What a run records while it works: routing, status, model steps, charges, rejections.

Model steps and tool charges count against the run's budget: the one that takes it over a limit
ends the run BUDGET_EXHAUSTED (:meth:`domain.run_termination.RunTermination.exhaust_budget`).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate

from domain.run_termination import RunTermination
from domain.states import (
    MAX_MODEL_OUTPUT_CHARS,
    BudgetKind,
    ChatApplicationStatus,
    Intent,
    ModelStepOutcome,
    ModelStepPurpose,
)
from domain.values import ModelCall

if TYPE_CHECKING:
    from domain.tool_states import ToolRejectionCode
    from domain.values import ModelAttempt


class RunSteps(RunTermination):
    """The routing, status, model-step and budget commands of a run, and their events."""

    class RoutingAttempt(Aggregate.Event):
        """The router was asked to classify the query."""

        class_version = 1
        attempt: int

        def apply(self, aggregate: RunSteps) -> None:
            """Count the attempt."""
            aggregate.routing_attempts = self.attempt

    class RoutingDecision(Aggregate.Event):
        """The router decided an intent, or failed with an error."""

        class_version = 1
        intent: Intent | None
        error: str

        def apply(self, aggregate: RunSteps) -> None:
            """Remember the intent."""
            aggregate.routing_decided = True
            aggregate.intent = self.intent

    class ApplicationStatusChanged(Aggregate.Event):
        """A user-visible phase began (the SSE ``status``)."""

        class_version = 1
        status: ChatApplicationStatus

        def apply(self, aggregate: RunSteps) -> None:
            """Remember the last phase."""
            aggregate.status = self.status

    class AgentModelStep(Aggregate.Event):
        """One model call with its purpose, usage, latency and outcome; charges the budget."""

        class_version = 6
        purpose: ModelStepPurpose
        tokens_in: int
        tokens_out: int
        latency_ms: int
        outcome: ModelStepOutcome
        detail: str
        bound_ms: int
        """The longest the harness would wait for this answer (0: not recorded, before v2)."""
        provider: str
        """The model provider's name (e.g. ``offline``; '' when not recorded, before v3)."""
        model: str
        """The model requested ('' when not recorded, before v3)."""
        finish_reason: str
        """Why the model stopped, as it said (``stop``, ``tool_calls``; '' when it failed)."""
        text: str
        """The answer whole when :data:`KEPT_ANSWERS` names the purpose and it was read ('')."""
        length: int
        """The answer's length in characters (0 when none came, or before v4)."""
        sha256: str
        """The hex SHA-256 of the whole answer, UTF-8 ('' when none came, or before v4)."""
        attempts: tuple[ModelAttempt, ...]
        """The attempts that failed and were tried again, in order, with the wait after each
        (the last attempt is the step itself; none before v5). Their time is in ``latency_ms``."""
        call: ModelCall
        """The server called, the response's id and model, the failure's class (for the trace;
        all empty before v6)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 did not record the bound of the wait."""
            state["bound_ms"] = 0

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Version 2 did not record the provider, the model or the finish reason."""
            state.update(provider="", model="", finish_reason="")

        @staticmethod
        def upcast_v3_v4(state: dict[str, Any]) -> None:
            """Version 3 did not record the answer, its length or its hash."""
            state.update(text="", length=0, sha256="")

        @staticmethod
        def upcast_v4_v5(state: dict[str, Any]) -> None:
            """Version 4 did not record retried attempts (none were made before v5)."""
            state["attempts"] = ()

        @staticmethod
        def upcast_v5_v6(state: dict[str, Any]) -> None:
            """Version 5 did not record the server, the response's ids or the failure's class."""
            state["call"] = ModelCall()

        def apply(self, aggregate: RunSteps) -> None:
            """Charge one model call and its tokens."""
            tokens = self.tokens_in + self.tokens_out
            aggregate.usage = aggregate.usage.add(model_calls=1, tokens=tokens)

    class BudgetCharged(Aggregate.Event):
        """A tool call or tool-output bytes were charged to the run's budget."""

        class_version = 1
        kind: BudgetKind
        amount: int
        ref: str

        def apply(self, aggregate: RunSteps) -> None:
            """Add the charge to the usage."""
            aggregate.usage = aggregate.usage.plus(self.kind, self.amount)

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
        *,
        provider: str = "",
        model: str = "",
        finish_reason: str = "",
        answer: str = "",
        attempts: tuple[ModelAttempt, ...] = (),
        call: ModelCall | None = None,
    ) -> None:
        """Record one model call and charge it (``AGENT_MODEL_STEP``); exhaust if over budget.

        ``bound_ms`` is the longest the harness would wait: an auditor sees no late answer used.
        ``provider``, ``model`` and ``finish_reason`` say who answered and why it stopped;
        ``answer``, ``attempts`` and ``call`` are recorded as :meth:`_answer_fields` says.
        """
        least = min(tokens_in, tokens_out, latency_ms, bound_ms)
        self._check_model_step(outcome, answer, least, (latency_ms, attempts))
        self.trigger_event(
            self.AgentModelStep,
            purpose=purpose,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_ms=latency_ms,
            outcome=outcome,
            detail=detail,
            bound_ms=bound_ms,
            provider=provider,
            model=model,
            finish_reason=finish_reason,
            **self._answer_fields(purpose, outcome, answer, (attempts, call)),
        )
        self._exhaust_if_over()

    def _answer_fields(
        self,
        purpose: ModelStepPurpose,
        outcome: ModelStepOutcome,
        answer: str,
        tried: tuple[tuple[ModelAttempt, ...], ModelCall | None],
    ) -> dict[str, Any]:
        """The answer as a model step records it, the attempts tried before it, the wire's word.

        The answer's text if kept, its length and its hash; the failed attempts tried again
        before it (their waits are within the step's ``latency_ms``); what the wire told of the
        call (:class:`~domain.values.ModelCall`, empty when not given).

        The text is kept whole for the purposes in :data:`KEPT_ANSWERS`; an answer over
        :data:`MAX_MODEL_OUTPUT_CHARS` is recorded only as TOO_LARGE, never read nor cut.
        """
        kept = outcome is ModelStepOutcome.OK and purpose in self.KEPT_ANSWERS
        came = outcome in (ModelStepOutcome.OK, ModelStepOutcome.TOO_LARGE)
        attempts, call = tried
        return {
            "text": answer if kept else "",
            "length": len(answer),
            "sha256": text_sha256(answer) if came else "",
            "attempts": tuple(attempts),
            "call": call or ModelCall(),
        }

    def _check_model_step(
        self,
        outcome: ModelStepOutcome,
        answer: str,
        least: int,
        timed: tuple[int, tuple[ModelAttempt, ...]],
    ) -> None:
        latency_ms, attempts = timed
        self.check_active()
        self._refuse_if(self.release is not None, "the release was already decided")
        self._invalid_if(min((least, *(a.wait_ms for a in attempts))) < 0, "must be >= 0")
        waits = sum(a.wait_ms for a in attempts)
        self._invalid_if(waits > latency_ms, "the waits between attempts exceed the latency")
        too_large = len(answer) > MAX_MODEL_OUTPUT_CHARS
        self._invalid_if(
            too_large != (outcome is ModelStepOutcome.TOO_LARGE),
            f"an answer over {MAX_MODEL_OUTPUT_CHARS} characters is TOO_LARGE, and only such",
        )

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

    KEPT_ANSWERS = (ModelStepPurpose.ROUTE, ModelStepPurpose.ANSWER, ModelStepPurpose.JUDGE)
    """The model steps whose answer text ``AGENT_MODEL_STEP`` keeps whole (drafts: their own)."""

    # -- helpers -------------------------------------------------------------------------------

    def _exhaust_if_over(self) -> None:
        kind = self.usage.first_exceeded(self.limits)
        if kind is not None:
            self.exhaust_budget(kind)


def text_sha256(text: str) -> str:
    """The hex SHA-256 of ``text`` encoded UTF-8 (a lone surrogate too), as the events record."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
