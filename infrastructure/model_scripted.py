"""The scripted model provider: play a scenario file (JSON or YAML), deterministically.

A product feature, like pydantic-ai's ``TestModel``: every row of the SPEC §10 table can be driven
through the real runtime, the CLI and the API by writing a scenario (see README). The provider
plays ``route``, ``answer``, ``steps``, ``repair`` and ``judge`` (made into replies by
:mod:`infrastructure.scripted_replies`); the scenario's ``tools`` are scripted tools
(:mod:`infrastructure.scripted_tools`); ``budget`` and ``deadline_s`` set the run's limits.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from application.ports import ModelUnavailableError
from domain.states import ModelStepPurpose
from infrastructure.scripted_play import Play, ScenarioError, hold
from infrastructure.scripted_replies import scripted_reply, spec_of
from infrastructure.scripted_tools import ScriptedTool, scripted_tools

if TYPE_CHECKING:
    from application.ports import ModelRequest, ModelResponse
    from domain.values import Budget

_KEYS = {
    ModelStepPurpose.ROUTE: "route",
    ModelStepPurpose.ANSWER: "answer",
    ModelStepPurpose.REPAIR: "repair",
    ModelStepPurpose.JUDGE: "judge",
}
"""The scenario's key that answers each purpose; AGENT plays the next of ``steps``."""


def load_scenario(path: str | Path) -> dict[str, Any]:
    """Read a JSON or YAML scenario file into a mapping, with a clear error when malformed."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise ScenarioError(f"cannot read scenario {file}: {error.strerror}") from error
    try:
        data = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ScenarioError(
            f"scenario {file} is not valid {file.suffix[1:] or 'YAML'}: {error}"
        ) from error
    if not isinstance(data, dict):
        raise ScenarioError(f"scenario {file} must be a mapping with route/steps/tools keys")
    return data


def scenario_limits(
    scenario: dict[str, Any], limits: Budget, deadline_s: float
) -> tuple[Budget, float]:
    """The scenario's run limits (``budget``, ``deadline_s``) over the given defaults."""
    budget = scenario.get("budget") or {}
    if not isinstance(budget, dict):
        raise ScenarioError("'budget' must map model_calls/tool_calls/tokens/bytes to numbers")
    try:
        limits = replace(limits, **{k: int(v) for k, v in budget.items()})
    except TypeError as error:
        raise ScenarioError(f"unknown budget in scenario: {error}") from error
    return limits, float(scenario.get("deadline_s", deadline_s))


@dataclass
class ScriptedProvider:
    """Answers requests from the scenario: route, answer, steps, repair and judge."""

    scenario: dict[str, Any]
    name: str = "scripted"
    model: str = "scripted"
    blocking: bool = True  # delay and hang steps wait
    gated: bool = True
    """It stands in for a remote model: it waits at the request's send gate before anything."""
    play: Play = field(default_factory=Play)
    _steps: list[dict[str, Any]] = field(init=False)
    _next: int = field(init=False, default=0)
    _released: threading.Event = field(default_factory=threading.Event)
    hanging: threading.Event = field(default_factory=threading.Event)
    """Set when a ``hang`` step has started waiting (lets a caller act while the model hangs)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        """Validate the step list once."""
        steps = self.scenario.get("steps", [])
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise ScenarioError("'steps' must be a list of mappings")
        self._steps = list(steps)

    def tools(self) -> dict[str, ScriptedTool]:
        """The scenario's tools, whose results also start from the first with every run."""
        return scripted_tools(self.scenario, self.play)

    def release(self) -> None:
        """Unblock steps that ``hang`` (a provider call that never answers on its own)."""
        self._released.set()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """The scripted answer for this request's purpose (once the run let the request leave)."""
        if request.send_gate is not None:
            request.send_gate.wait()
        if request.purpose is ModelStepPurpose.ROUTE:
            self._start_play()
        spec = self._spec_for(request.purpose)
        hold(spec, self.hanging, self._released)
        return scripted_reply(spec, request)

    def _start_play(self) -> None:
        with self._lock:
            self._next = 0
            self.play.number += 1

    def _spec_for(self, purpose: ModelStepPurpose) -> dict[str, Any]:
        key = _KEYS.get(purpose)
        if key is None:
            return self._next_step()
        value = self.scenario.get(key)
        if value is None:
            raise ModelUnavailableError(f"the scripted scenario has no {key!r} answer")
        return spec_of(key, value)

    def _next_step(self) -> dict[str, Any]:
        with self._lock:
            if self._next >= len(self._steps):
                raise ModelUnavailableError(
                    f"the scripted scenario has no steps left: this run has played all"
                    f" {len(self._steps)} (each run plays them from the first)"
                )
            self._next += 1
            return self._steps[self._next - 1]
