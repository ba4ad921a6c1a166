"""The scripted model provider and scripted tools: play a scenario file, deterministically.

A product feature, like pydantic-ai's ``TestModel``: every row of the SPEC §10 table can be driven
through the real runtime, the CLI and the API by writing a scenario (JSON or YAML; see README).
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from application.ports import (
    ModelRefusedError,
    ModelRequest,
    ModelResponse,
    ModelTimeoutError,
    ModelUnavailableError,
    ToolArgumentsError,
    ToolCall,
    ToolExecutionError,
    ToolOutput,
    Usage,
)
from domain.answers import ChatReply
from domain.states import ModelStepPurpose

if TYPE_CHECKING:
    from application.ports import JSON, Message
    from domain.values import Budget

_INVOCATION = re.compile(r"^invocation ([0-9a-f-]{36})")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_REPLIES = frozenset(reply.value for reply in ChatReply)
_ERRORS = {
    "timeout": ModelTimeoutError,
    "unavailable": ModelUnavailableError,
    "refused": ModelRefusedError,
}


class ScenarioError(ValueError):
    """The scenario file is malformed; the message names the place."""


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


@dataclass
class Play:
    """Which run the scenario is playing: every run's ROUTE request starts the next play.

    A run always routes first, so each run of a process plays the steps and the tools' results
    from the first. Runs executing at the same time in one process share the one cursor: play
    a scenario with one run at a time.
    """

    number: int = 0


@dataclass
class ScriptedProvider:
    """Answers requests from the scenario: route, answer, steps, repair and judge."""

    scenario: dict[str, Any]
    name: str = "scripted"
    blocking: bool = True  # delay and hang steps wait
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
        """The scripted answer for this request's purpose."""
        if request.purpose is ModelStepPurpose.ROUTE:
            self._start_play()
        spec = self._spec_for(request.purpose)
        if spec.get("hang"):
            self.hanging.set()
            self._released.wait()
        if "delay" in spec:
            time.sleep(float(spec["delay"]))  # a scripted slow provider, part of the scenario
        if "error" in spec:
            error = _ERRORS.get(str(spec["error"]), ModelUnavailableError)
            raise error(f"scripted {spec['error']} error")
        ids = _invocation_ids(request.messages)
        if request.purpose is ModelStepPurpose.JUDGE and "verdicts" in spec:
            spec = {"json": _verdicts(spec["verdicts"], request.messages[-1].content)}
        if request.purpose is ModelStepPurpose.REPAIR and "draft" in spec:
            spec = {**spec, "json": spec["draft"]}  # a repair answers with the draft itself
        text = _text(spec, ids)
        calls = _tool_calls(spec, ids, len(request.messages))
        usage = spec.get("usage") or {}
        return ModelResponse(
            text=text,
            tool_calls=calls,
            usage=Usage(
                int(usage.get("tokens_in", sum(len(m.content) for m in request.messages) // 4)),
                int(usage.get("tokens_out", len(text) // 4 + 1)),
            ),
        )

    def _start_play(self) -> None:
        with self._lock:
            self._next = 0
            self.play.number += 1

    def _spec_for(self, purpose: ModelStepPurpose) -> dict[str, Any]:
        key = {
            ModelStepPurpose.ROUTE: "route",
            ModelStepPurpose.ANSWER: "answer",
            ModelStepPurpose.REPAIR: "repair",
            ModelStepPurpose.JUDGE: "judge",
        }.get(purpose)
        if key is None:
            with self._lock:
                if self._next >= len(self._steps):
                    raise ModelUnavailableError(
                        f"the scripted scenario has no steps left: this run has played all"
                        f" {len(self._steps)} (each run plays them from the first)"
                    )
                self._next += 1
                return self._steps[self._next - 1]
        value = self.scenario.get(key)
        if value is None:
            raise ModelUnavailableError(f"the scripted scenario has no {key!r} answer")
        if key == "answer":
            return _answer_spec(value)
        if isinstance(value, dict):
            return value
        if key == "judge":  # a verdict for every statement, or one per statement in order
            return {"verdicts": value}
        field_name = {"route": "intent"}.get(key)
        return {"json": {field_name: value}} if field_name else {"text": str(value)}


def _verdicts(verdicts: Any, payload: str) -> dict[str, Any]:
    """The judge's answer: ``SUPPORTED`` for every statement, or a list in statement order."""
    count = len(json.loads(payload).get("statements", []))
    given = verdicts if isinstance(verdicts, list) else [verdicts] * count
    return {"verdicts": [{"statement": i, "verdict": str(v)} for i, v in enumerate(given)]}


def _answer_spec(value: Any) -> dict[str, Any]:
    """A SYSTEM_CHAT reply name, a KNOWLEDGE_QUERY ``{text, citations}``, a spec or raw text.

    A string naming a :class:`ChatReply` answers ``{"reply": name}``; a mapping with
    ``citations`` (or ``reply``) is answered as JSON; any other mapping is a spec like a step's
    (``text``, ``json``, ``error``, ``delay``, ``hang``); any other string is the raw answer.
    """
    if isinstance(value, dict):
        return {"json": value} if "citations" in value or "reply" in value else value
    if isinstance(value, str) and value in _REPLIES:
        return {"json": {"reply": value}}
    return {"text": str(value)}


def _invocation_ids(messages: tuple[Message, ...]) -> list[str]:
    """Ids for ``$N``: the conversation's tool results, or the ids a repair request lists."""
    ids = []
    for message in messages:
        if message.role == "tool":
            match = _INVOCATION.match(message.content)
            ids.append(match.group(1) if match else "none")
    if not ids and messages and messages[0].role == "system":
        ids = _UUID.findall(messages[0].content)
    return ids


def _resolve(value: Any, ids: list[str]) -> Any:
    """Replace ``$N`` with the id of the N-th tool result of the conversation."""
    if isinstance(value, str) and re.fullmatch(r"\$\d+", value):
        index = int(value[1:]) - 1
        return ids[index] if 0 <= index < len(ids) else value
    if isinstance(value, list):
        return [_resolve(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, ids) for k, v in value.items()}
    return value


def _text(spec: dict[str, Any], ids: list[str]) -> str:
    if "text" in spec:
        return str(spec["text"])
    if "json" in spec:
        return json.dumps(_resolve(spec["json"], ids))
    body = {k: _resolve(spec[k], ids) for k in ("progress", "draft") if k in spec}
    return json.dumps(body) if body else ""


def _tool_calls(spec: dict[str, Any], ids: list[str], salt: int) -> tuple[ToolCall, ...]:
    """The step's tool call (``tool`` + ``arguments``), or several (``calls: [...]``)."""
    specs = spec.get("calls") or ([spec] if "tool" in spec else [])
    calls = []
    for index, one in enumerate(specs):
        arguments = one.get("arguments", {})
        call_id = f"call_{salt}_{index}"
        if isinstance(arguments, str):
            calls.append(ToolCall(call_id, str(one["tool"]), {}, raw_arguments=arguments))
        else:
            calls.append(ToolCall(call_id, str(one["tool"]), _resolve(arguments, ids)))
    return tuple(calls)


@dataclass
class ScriptedTool:
    """A tool whose results come from the scenario's ``tools`` section, in call order."""

    name: str
    config: dict[str, Any]
    description: str = "A scripted tool."
    parameters: JSON = field(default_factory=lambda: {"type": "object"})
    read_only: bool = True
    required_scope: str = "ops:read"
    max_result_bytes: int = 8000
    blocking: bool = True  # delay and hang results wait
    play: Play | None = None
    """The provider's play: a new one (a new run) starts the results from the first again."""
    calls: int = 0
    _played: int = 0
    hanging: threading.Event = field(default_factory=threading.Event)
    """Set when a ``hang`` result has started waiting (lets a caller act while the tool runs)."""
    _released: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        """Take the declared capabilities from the scenario."""
        self.read_only = bool(self.config.get("read_only", True))
        self.required_scope = str(self.config.get("required_scope", "ops:read"))
        self.max_result_bytes = int(self.config.get("max_result_bytes", 8000))
        self.description = str(self.config.get("description", self.description))

    def normalize_scope(self, arguments: JSON) -> str:
        """Arguments as canonical JSON; anything but an object is invalid."""
        if not isinstance(arguments, dict):
            raise ToolArgumentsError("arguments must be a JSON object")
        missing = [k for k in self.config.get("required", []) if k not in arguments]
        if missing:
            raise ToolArgumentsError(f"missing required argument {missing[0]!r}")
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"))

    def release(self) -> None:
        """Unblock results that ``hang`` (a backend call that never answers on its own)."""
        self._released.set()

    def run(self, arguments: JSON) -> ToolOutput:
        """The next scripted result: lines, an error, a raise, a delay, a hang or a size.

        ``hang: true`` blocks until :meth:`release`, then goes on with the rest of the result.
        """
        if self.play is not None and self.play.number != self._played:
            self._played, self.calls = self.play.number, 0
        results = self.config.get("results") or [self.config]
        result = results[min(self.calls, len(results) - 1)]
        self.calls += 1
        if result.get("hang"):
            self.hanging.set()
            self._released.wait()
        if "delay" in result:
            time.sleep(float(result["delay"]))  # a scripted slow backend, part of the scenario
        if "raise" in result:
            raise RuntimeError(str(result["raise"]))
        if "error" in result:
            raise ToolExecutionError("BACKEND", str(result["error"]))
        lines = [str(line) for line in result.get("lines", [])]
        if "size" in result:
            lines = [f"{'x' * 99}" for _ in range(int(result["size"]) // 100 + 1)]
        scope = str(result.get("scope", f"{self.name} {self.normalize_scope(arguments)}"))
        return ToolOutput(tuple(lines), scope)


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


def scripted_tools(scenario: dict[str, Any], play: Play | None = None) -> dict[str, ScriptedTool]:
    """The scenario's tools by name (with ``play``, each run starts their results afresh)."""
    tools = scenario.get("tools", {})
    if not isinstance(tools, dict):
        raise ScenarioError("'tools' must be a mapping of tool name to its results")
    return {
        name: ScriptedTool(name, dict(config or {}), play=play) for name, config in tools.items()
    }
