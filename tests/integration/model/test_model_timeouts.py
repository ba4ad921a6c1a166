"""Every model call is bounded by HARNESS_MODEL_TIMEOUT: route, agent, repair and judge alike.

Each scenario makes one call answer after ``{delay: 2.5}`` while the model timeout is 1 s. The
late answer would have decided a SUCCESS; instead the call ends as a timed-out model step and the
run takes the path SPEC §3, §7 and §10 give for a model failure at that point. The runtime is
built from ``Settings`` (``HARNESS_MODEL=scripted:PATH``, ``HARNESS_MODEL_TIMEOUT=1``), so the
wiring from the setting to every call is what is tested. Outcomes and events only, no timings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from application.chat import ChatConfig, ChatResult
from application.ports import ModelRequest, ModelResponse
from application.store import HarnessStore
from bootstrap.composition import Overrides, Services, bootstrap
from domain.catalogue import event_type_name
from domain.release_states import FallbackType, ReleaseOutcome
from domain.run import Run
from domain.states import FailureCode, ModelStepOutcome, ModelStepPurpose, RunState
from infrastructure.model_scripted import ScriptedProvider
from infrastructure.settings import Settings
from tests.helpers import scripted

QUERY = "why is checkout slow?"
LATE = 2.5
"""Seconds the slow call takes: well past the 1 s model timeout, far within the run deadline."""
LOG_LINE = "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s"
VALID_DRAFT = {
    "conclusion": {
        "statement": "Upstream calls from checkout time out.",
        "citations": [{"reference": "$1", "excerpt": "upstream timeout after 30s"}],
    },
    "facts": [],
    "missing_info": [],
}
BROKEN_DRAFT = {
    "conclusion": {
        "statement": "Upstream calls from checkout time out.",
        "citations": [{"reference": "a-wrong-id", "excerpt": "upstream timeout after 30s"}],
    },
    "facts": [],
    "missing_info": [],
}


def _diagnosis(**overrides: Any) -> dict[str, Any]:
    """One tool call then a draft the guards pass, unless ``overrides`` says otherwise."""
    scenario: dict[str, Any] = {
        "route": "DIAGNOSIS",
        "deadline_s": 60,
        "tools": {"search_logs": {"lines": [LOG_LINE]}},
        "steps": [
            {"tool": "search_logs", "arguments": {"service": "checkout"}},
            {"draft": VALID_DRAFT},
        ],
        "judge": "SUPPORTED",
    }
    return scenario | overrides


def _ask(
    settings: Settings, store: HarnessStore, tmp_path: Path, scenario: dict[str, Any]
) -> tuple[ChatResult, list[Any]]:
    """Run ``scenario`` once with a 1 s model timeout; its result and every event of the log."""
    file = tmp_path / "scenario.yaml"
    file.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    configured = settings.model_copy(update={"model": f"scripted:{file}", "model_timeout": 1.0})
    with bootstrap(configured, overrides=Overrides(store=store)) as services:
        result = services.chat.ask("session-1", QUERY)
    notifications = store.recorder.select_notifications(start=1, limit=10_000)
    return result, [store.mapper.to_domain_event(n) for n in notifications]


def _steps(events: list[Any], purpose: ModelStepPurpose) -> list[Run.AgentModelStep]:
    return [e for e in events if isinstance(e, Run.AgentModelStep) and e.purpose is purpose]


def _assert_timed_out(step: Run.AgentModelStep) -> None:
    assert step.outcome is ModelStepOutcome.FAILED
    assert step.detail.startswith("ModelTimeoutError"), step.detail


def _assert_fallback(result: ChatResult, kind: FallbackType) -> None:
    assert result.termination.state is RunState.SUCCESS
    assert result.release_outcome is ReleaseOutcome.FALLBACK
    assert result.content is not None and result.content["fallback_type"] == kind.value
    assert "conclusion" not in result.content


def test_a_late_route_fails_routing(
    settings: Settings, store: HarnessStore, tmp_path: Path
) -> None:
    route = {"delay": LATE, "json": {"intent": "DIAGNOSIS"}}
    result, events = _ask(settings, store, tmp_path, _diagnosis(route=route))

    assert result.termination.state is RunState.FAILED
    assert result.termination.reason is FailureCode.ROUTING_FAILED
    assert result.release_outcome is ReleaseOutcome.FAILED and result.content is None
    (step,) = _steps(events, ModelStepPurpose.ROUTE)
    _assert_timed_out(step)
    (decision,) = [e for e in events if isinstance(e, Run.RoutingDecision)]
    assert decision.intent is None and "ModelTimeoutError" in decision.error
    assert not _steps(events, ModelStepPurpose.AGENT)


def test_a_late_agent_step_is_a_model_failure(
    settings: Settings, store: HarnessStore, tmp_path: Path
) -> None:
    steps = [
        {
            "delay": LATE,
            "draft": {"conclusion": None, "facts": [], "missing_info": [{"kind": "SYMPTOM"}]},
        }
    ]
    result, events = _ask(settings, store, tmp_path, _diagnosis(steps=steps))

    # SPEC §7: a model call failure without progress → FAILED / FAILED (MODEL_FAILED); the late
    # draft would have published MISSING_REQUIRED_CONTEXT.
    assert result.termination.state is RunState.FAILED
    assert result.termination.reason is FailureCode.MODEL_FAILED
    assert result.release_outcome is ReleaseOutcome.FAILED and result.content is None
    (step,) = _steps(events, ModelStepPurpose.AGENT)
    _assert_timed_out(step)
    assert "RELEASE_DECISION" not in [event_type_name(type(e)) for e in events]


def test_a_late_repair_keeps_the_invalid_draft(
    settings: Settings, store: HarnessStore, tmp_path: Path
) -> None:
    steps = [
        {"tool": "search_logs", "arguments": {"service": "checkout"}},
        {"draft": BROKEN_DRAFT},
    ]
    repair = {"delay": LATE, "draft": VALID_DRAFT}  # would fix the citation had it come in time
    result, events = _ask(settings, store, tmp_path, _diagnosis(steps=steps, repair=repair))

    _assert_fallback(result, FallbackType.EVIDENCE_VALIDATION_FAILED)
    (step,) = _steps(events, ModelStepPurpose.REPAIR)
    _assert_timed_out(step)
    (recheck,) = [e for e in events if isinstance(e, Run.EvidenceGuardRecheck)]
    assert recheck.valid is False
    assert not _steps(events, ModelStepPurpose.JUDGE)


def test_a_late_judge_is_semantic_unavailable(
    settings: Settings, store: HarnessStore, tmp_path: Path
) -> None:
    judge = {"delay": LATE, "verdicts": "SUPPORTED"}
    result, events = _ask(settings, store, tmp_path, _diagnosis(judge=judge))

    _assert_fallback(result, FallbackType.SEMANTIC_UNAVAILABLE)
    (step,) = _steps(events, ModelStepPurpose.JUDGE)
    _assert_timed_out(step)
    (decision,) = [e for e in events if isinstance(e, Run.SemanticGuardDecision)]
    assert decision.verdict is None and decision.unavailable  # technically unavailable


@dataclass
class BoundsSeen:
    """A provider that records the ``timeout_s`` each request reaches it with (a port fake)."""

    inner: ScriptedProvider
    blocking: bool
    name: str = "bounds-seen"
    seen: dict[ModelStepPurpose, list[float]] = field(default_factory=dict)

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.seen.setdefault(request.purpose, []).append(request.timeout_s)
        return self.inner.complete(request)


@pytest.mark.parametrize("blocking", [True, False], ids=["blocking", "in-process"])
def test_every_call_reaches_the_provider_with_the_bound(services: Services, blocking: bool) -> None:
    """Route, agent, repair and judge requests carry the bound, so a provider can stop itself."""
    steps = [
        {"tool": "search_logs", "arguments": {"service": "checkout"}},
        {"draft": BROKEN_DRAFT},
    ]
    scenario = _diagnosis(steps=steps, repair={"draft": VALID_DRAFT})
    config = ChatConfig(deadline_s=60, model_timeout_s=1.0)
    with scripted(
        services, scenario, wrap=lambda inner: BoundsSeen(inner, blocking), config=config
    ) as made:
        result = made.service.ask("session-1", QUERY)
    provider = made.service.provider
    assert isinstance(provider, BoundsSeen)

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert set(provider.seen) == {
        ModelStepPurpose.ROUTE,
        ModelStepPurpose.AGENT,
        ModelStepPurpose.REPAIR,
        ModelStepPurpose.JUDGE,
    }
    bounds = [bound for purpose in provider.seen.values() for bound in purpose]
    assert all(0 < bound <= 1.0 for bound in bounds), provider.seen
