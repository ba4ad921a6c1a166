"""The model's answers in a replay: what the recorded run was told, or a judge asked again.

A replay calls no tool, and no model unless asked: the repair is answered with the repair the
run recorded (its ``DRAFT_PROPOSED``), the judge with the answer the run recorded when it is
asked about exactly the statements it ruled on then. When the replay's statements differ (other
excerpt rules let fewer through), each is given the verdict the recorded judge gave it, if it
ruled on it; a statement it never saw has no verdict, and the judge is then unavailable, saying
so. With a judge model given (``--judge-model``) the judge is asked again, for real.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from application.judge import numbered
from application.ports import (
    ModelError,
    ModelOutputTooLarge,
    ModelRequest,
    ModelResponse,
    ModelUnavailableError,
    Usage,
    model_name,
)
from domain.run import Run
from domain.states import DraftOutcome, ModelStepOutcome, ModelStepPurpose
from domain.values import Fact

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.ports import ModelProvider

RECORDED = "recorded"
"""The judge setting that answers from the recording (the default)."""


@dataclass(frozen=True)
class Answered:
    """A replayed model call's answer, and who gave it."""

    response: ModelResponse
    source: str
    """``recorded answer``, ``recorded verdicts``, or ``asked PROVIDER/MODEL``."""
    step: Run.AgentModelStep | None = None
    """The recorded step it replays (its tokens and latency are charged again)."""


class Answers:
    """Answers a replay's REPAIR and JUDGE calls; anything else was not part of a release."""

    def __init__(
        self, recorded: Sequence[Any], judge: ModelProvider | None, timeout_s: float
    ) -> None:
        """``recorded``: the run's events from its release on; ``judge``: a model to ask again."""
        self.recorded = list(recorded)
        self.judge = judge
        self.timeout_s = timeout_s
        self.sources: dict[ModelStepPurpose, str] = {}

    def answer(self, request: ModelRequest) -> Answered:
        """The answer to ``request``; raises the ModelError the recorded call met, or why none."""
        if request.purpose is ModelStepPurpose.REPAIR:
            found = self._repair()
        elif request.purpose is ModelStepPurpose.JUDGE:
            found = self._judged(request)
        else:
            raise ModelUnavailableError(f"a release makes no {request.purpose.value} call")
        self.sources[request.purpose] = found.source
        return found

    def _step(self, purpose: ModelStepPurpose) -> Run.AgentModelStep | None:
        steps = [
            e for e in self.recorded if isinstance(e, Run.AgentModelStep) and e.purpose is purpose
        ]
        return steps[-1] if steps else None

    def _repair(self) -> Answered:
        step = self._step(ModelStepPurpose.REPAIR)
        drafts = [
            e
            for e in self.recorded
            if isinstance(e, Run.DraftProposed) and e.purpose is ModelStepPurpose.REPAIR
        ]
        if step is not None and step.outcome is ModelStepOutcome.FAILED:
            self.sources[ModelStepPurpose.REPAIR] = "recorded failure"
            raise recorded_failure(step.detail)
        if not drafts:
            self.sources[ModelStepPurpose.REPAIR] = "none recorded"
            raise ModelUnavailableError(
                "no repair answer was recorded (none asked, or none came): the replay has none"
            )
        draft = drafts[-1]
        if draft.outcome is DraftOutcome.TOO_LARGE:
            self.sources[ModelStepPurpose.REPAIR] = "recorded answer"
            raise ModelOutputTooLarge(draft.length, draft.sha256)
        if len(draft.text) != draft.length:
            raise ModelUnavailableError("the recorded repair was kept cut short (an older log)")
        return Answered(_response(draft.text, step), "recorded answer", step)

    def _judged(self, request: ModelRequest) -> Answered:
        if self.judge is not None:
            return self._ask(request)
        step = self._step(ModelStepPurpose.JUDGE)
        decision = _last(self.recorded, Run.SemanticGuardDecision)
        asked = json.loads(request.messages[-1].content)["statements"]
        if step is None or decision is None:
            self.sources[ModelStepPurpose.JUDGE] = "none recorded"
            raise ModelUnavailableError("the recorded run asked no judge: give --judge-model")
        ruled = numbered([Fact(j.statement, tuple(j.citations)) for j in decision.judged])
        if _same(asked, ruled):
            return self._recorded_judge(step)
        verdicts = {_key(s): j.verdict for s, j in zip(ruled, decision.judged, strict=True)}
        missing = [s["statement"] for s in asked if verdicts.get(_key(s)) is None]
        if missing:
            self.sources[ModelStepPurpose.JUDGE] = "recorded verdicts"
            raise ModelUnavailableError(
                f"the recorded judge gave no verdict on statement {missing[0]}: give --judge-model"
            )
        answer = {
            "verdicts": [
                {"statement": s["statement"], "verdict": str(verdicts[_key(s)].value)}
                for s in asked
            ]
        }
        return Answered(_response(json.dumps(answer), None), "recorded verdicts")

    def _recorded_judge(self, step: Run.AgentModelStep) -> Answered:
        self.sources[ModelStepPurpose.JUDGE] = "recorded answer"
        if step.outcome is ModelStepOutcome.FAILED:
            raise recorded_failure(step.detail)
        if step.outcome is ModelStepOutcome.TOO_LARGE:
            raise ModelOutputTooLarge(step.length, step.sha256)
        return Answered(_response(step.text, step), "recorded answer", step)

    def _ask(self, request: ModelRequest) -> Answered:
        judge = self.judge
        assert judge is not None
        source = f"asked {judge.name}/{model_name(judge)}"
        self.sources[ModelStepPurpose.JUDGE] = source
        return Answered(judge.complete(replace(request, timeout_s=self.timeout_s)), source)


def recorded_failure(detail: str) -> ModelError:
    """The failure a model step recorded (``Class: message``), raised again as that class."""
    name, _, message = detail.partition(": ")
    kinds = {kind.__name__: kind for kind in _kinds(ModelError)}
    kind = kinds.get(name)
    if kind is not None and kind is not ModelOutputTooLarge:
        try:
            return kind(message)
        except TypeError:  # a provider's own kind, made otherwise: named in the message
            pass
    return ModelUnavailableError(detail or "the recorded call failed")


def _kinds(base: type[ModelError]) -> list[type[ModelError]]:
    return [base, *(k for sub in base.__subclasses__() for k in _kinds(sub))]


def _response(text: str, step: Run.AgentModelStep | None) -> ModelResponse:
    usage = Usage(step.tokens_in, step.tokens_out) if step is not None else Usage()
    return ModelResponse(text=text, usage=usage)


def _last(events: Sequence[Any], cls: type[Any]) -> Any | None:
    found = [e for e in events if isinstance(e, cls)]
    return found[-1] if found else None


def _key(statement: dict[str, Any]) -> str:
    """A statement as judged, without its number: its text and citations."""
    return json.dumps([statement["text"], statement["citations"]])


def _same(asked: list[dict[str, Any]], ruled: list[dict[str, Any]]) -> bool:
    return asked == ruled
