"""``harness model check``: what the configured OpenAI-compatible provider can do, probed.

Each capability the harness relies on is one line: the server is reachable, knows the model
(``GET /models`` when the server lists models, else a small call), accepts every strict schema
the harness sends (:data:`application.prompts.SCHEMAS`), accepts tools, and how long a small call
took. Calls go through the provider, with its retries and timeout, as a run's would.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import openai

from application.ports import Message, ModelError, ModelRequest, ToolSpec
from application.prompts import SCHEMAS
from domain.states import ModelStepPurpose
from infrastructure.model_openai import OpenAICompatibleProvider

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from infrastructure.settings import Settings

PROBE_TOOL = ToolSpec(
    name="get_time",
    description="The current time (a probe: the answer is not used).",
    parameters={
        "type": "object",
        "properties": {"zone": {"type": "string"}},
        "required": ["zone"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True)
class Capability:
    """One probed capability: its name, whether it passed, and what was seen."""

    name: str
    passed: bool
    detail: str


def check_configured(settings: Settings) -> list[Capability] | None:
    """Probe the configured provider; None when the model is in-process (nothing to check).

    Raises:
        ValueError: the provider's configuration is wrong (the message says what to set).
    """
    if settings.model != "openai":
        return None
    with OpenAICompatibleProvider.from_settings(settings) as provider:
        return check_provider(provider, SCHEMAS)


def check_provider(
    provider: OpenAICompatibleProvider, schemas: Mapping[str, Mapping[str, Any]]
) -> list[Capability]:
    """Probe ``provider``: reachable and model known first; the rest only if those pass."""
    found = _model_known(provider)
    if not all(c.passed for c in found):
        return found
    found.append(_small_call(provider))
    found += [_structured(provider, name, schema) for name, schema in schemas.items()]
    found.append(_tools(provider))
    return found


def _ask(content: str, **fields: Any) -> ModelRequest:
    messages = (Message("user", content),)
    return ModelRequest(ModelStepPurpose.ANSWER, messages, **fields)


def _model_known(provider: OpenAICompatibleProvider) -> list[Capability]:
    """Reachable, and the model listed by ``GET /models`` (or answering, without a list)."""
    try:
        listed = [model.id for model in provider.client.models.list()]
    except openai.APIConnectionError as error:
        return [Capability("reachable", False, f"{provider.where}: {error.message}")]
    except openai.APIStatusError:
        listed = None  # no model list here (many local servers): a small call decides
    reached = Capability("reachable", True, provider.where)
    if listed is None:
        small = _small_call(provider)
        return [reached, Capability("model known", small.passed, small.detail)]
    if provider.model not in listed:
        shown = ", ".join(listed[:10]) or "none"
        why = f"{provider.model!r} is not among the server's models ({shown});"
        why += " check HARNESS_OPENAI_MODEL"
        return [reached, Capability("model known", False, why)]
    return [reached, Capability("model known", True, f"{provider.model!r} is listed")]


def _small_call(provider: OpenAICompatibleProvider) -> Capability:
    started = time.monotonic()
    try:
        provider.complete(_ask("Answer OK."))
    except ModelError as error:
        return Capability("small call", False, str(error))
    return Capability(
        "small call", True, f"answered in {(time.monotonic() - started) * 1000:.0f} ms"
    )


def _structured(
    provider: OpenAICompatibleProvider, name: str, schema: Mapping[str, Any]
) -> Capability:
    label = f"structured output ({name})"
    try:
        text = provider.complete(_ask("Answer with any valid value.", json_schema=schema)).text
    except ModelError as error:
        return Capability(label, False, str(error))
    try:
        answer = json.loads(text)
    except ValueError:
        return Capability(label, False, f"the answer is not JSON ({len(text)} characters)")
    if not isinstance(answer, dict):
        return Capability(label, False, "the answer is not a JSON object")
    return Capability(label, True, "strict json_schema accepted")


def _tools(provider: OpenAICompatibleProvider) -> Capability:
    try:
        response = provider.complete(_ask("What time is it in UTC?", tools=(PROBE_TOOL,)))
    except ModelError as error:
        return Capability("tool calling", False, str(error))
    called = any(call.name == PROBE_TOOL.name for call in response.tool_calls)
    return Capability("tool calling", True, "tools accepted" + (", and called" if called else ""))
