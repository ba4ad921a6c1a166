"""A model step's counts in ``metric_sample``, keyed once per (model, purpose, outcome).

The most frequent event the metrics projection counts: its four series' keys (the call, the
duration histogram, the input and output tokens) are the same for every step of a model with
the same purpose and outcome, so they are made once, not from label dicts every time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from projections.metric_families import (
    MODEL_CALLS,
    MODEL_DURATION,
    MODEL_TOKENS,
    SUM,
    TOTAL,
    bucket_part,
)

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from domain.run import Run

Labels = tuple[tuple[str, str], ...]
Key = tuple[str, str, Labels]
"""A series as ``Samples.added`` keys it: family, part, labels' items."""
StepKeys = tuple[Key, Labels, Key, Key]

KEYS_KEPT = 1_024
"""(model, purpose, outcome) combinations whose keys are kept; past that they start over."""

_keys: dict[tuple[str, Any, Any], StepKeys] = {}


def model_step(added: MutableMapping[Key, int], event: Run.AgentModelStep) -> None:
    """Count one model step into ``added``: its call, duration and tokens, in that order."""
    kind = (event.model, event.purpose, event.outcome)
    calls, timed, tokens_in, tokens_out = _keys.get(kind) or _step_keys(*kind)
    latency = event.latency_ms
    added[calls] += 1
    added[MODEL_DURATION.name, bucket_part(MODEL_DURATION, latency), timed] += 1
    added[MODEL_DURATION.name, SUM, timed] += latency
    added[tokens_in] += event.tokens_in
    added[tokens_out] += event.tokens_out


def _step_keys(model: str, purpose: Any, outcome: Any) -> StepKeys:
    """The keys ``Samples.count`` and ``Samples.observe`` give a model step's series."""
    if len(_keys) >= KEYS_KEPT:
        _keys.clear()
    timed = (("model", model), ("purpose", _v(purpose)))
    found = _keys[model, purpose, outcome] = (
        (MODEL_CALLS.name, TOTAL, (*timed, ("outcome", _v(outcome)))),
        timed,
        (MODEL_TOKENS.name, TOTAL, (("model", model), ("direction", "input"))),
        (MODEL_TOKENS.name, TOTAL, (("model", model), ("direction", "output"))),
    )
    return found


def _v(value: Any) -> str:
    """An enum's value as a label value (``_value_``: the same, without a descriptor call)."""
    return str(value._value_)
