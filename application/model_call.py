"""What a model step records of the wire, for its trace (:class:`domain.values.ModelCall`).

The server called, the response's ids, the failure's class.

The OpenTelemetry conventions want these on a model call's span (``server.address``,
``gen_ai.response.id``, ``error.type``, …); spans are derived from the log alone, so the step
records them. Every value is a short name or id the provider or the configuration gave, made
storable and cut: never content, never a credential (the adapter blanks its secrets out).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from application.ports import (
    ModelError,
    ModelOutputTooLarge,
    ModelRefusedError,
    ModelTimeoutError,
    ModelUnavailableError,
    model_server,
)
from application.storable import storable_text
from domain.states import ModelStepOutcome
from domain.values import ModelCall

if TYPE_CHECKING:
    from application.ports import ModelProvider, ModelRequest, ModelResponse

MAX_WIRE_TEXT = 128
"""The most characters of any one value recorded (an id, a model name, a class)."""

_CLASSES: tuple[tuple[type[ModelError], str], ...] = (
    (ModelTimeoutError, "timeout"),
    (ModelOutputTooLarge, "output_too_large"),
    (ModelRefusedError, "refused"),
    (ModelUnavailableError, "unavailable"),
)
"""The class of a failure whose adapter named none, by the port's error it raised."""


def error_type(error: ModelError) -> str:
    """The failure's low-cardinality class: the adapter's word, else the port error's kind."""
    if error.error_type:
        return _short(error.error_type)
    for kind, name in _CLASSES:
        if isinstance(error, kind):
            return name
    return "_OTHER"


def model_call(
    provider: ModelProvider,
    request: ModelRequest,
    outcome: ModelStepOutcome,
    response: ModelResponse | None = None,
    error: ModelError | None = None,
) -> ModelCall:
    """What the step records of a call to ``provider``: whom, what answered, how it failed.

    An answer refused for its size (TOO_LARGE) failed here, not at the provider: its class is
    ``output_too_large``.
    """
    said = response.call if response is not None and response.call is not None else ModelCall()
    host, port = model_server(provider)
    return replace(
        said,
        server_address=_short(host),
        server_port=port,
        response_id=_short(said.response_id),
        response_model=_short(said.response_model),
        system_fingerprint=_short(said.system_fingerprint),
        service_tier=_short(said.service_tier),
        output_type="json" if request.json_schema is not None else "",
        error_type=_failure(outcome, error),
    )


def _failure(outcome: ModelStepOutcome, error: ModelError | None) -> str:
    if outcome is ModelStepOutcome.TOO_LARGE:
        return "output_too_large"
    return error_type(error) if error is not None else ""


def _short(text: str) -> str:
    return storable_text(text)[:MAX_WIRE_TEXT]
