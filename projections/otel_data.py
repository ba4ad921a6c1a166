"""The data of an OpenTelemetry trace of a run: spans, events, deterministic ids and times.

Trace and span ids are derived from the run id and the events' stream ids and versions
(:func:`trace_id`, :func:`span_id`), so the same events always give the same spans, byte for
byte, and an export after a crash completes the trace it began.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal
from uuid import NAMESPACE_URL, UUID, uuid5

from domain.run import Run

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SEMCONV_VERSION = "1.41.0"
"""The OpenTelemetry semantic conventions the spans follow, attribute by attribute: the last
release holding the GenAI and MCP conventions in the ``open-telemetry/semantic-conventions``
repository (from v1.42.0 they moved to ``semantic-conventions-genai``; v1.41.1 changed none of
them). The spans' instrumentation scope names its schema, :data:`SCHEMA_URL`."""
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"

AGENT_NAME = "diagnosis-harness"
"""``gen_ai.agent.name`` of every run, and the ``service.name`` of the resource."""

Value = str | bool | int | float | tuple[str, ...]
Attributes = dict[str, Value]
StatusCode = Literal["UNSET", "OK", "ERROR"]
SpanKind = Literal["INTERNAL", "CLIENT"]
IN_PROCESS = frozenset({"offline", "scripted"})
"""Model providers that answer in the harness's own process: their calls are INTERNAL spans."""
PROVIDER_NAMES = {"openai-compatible": "openai"}
"""``gen_ai.provider.name`` by the adapter's name where the conventions name it otherwise: an
OpenAI-compatible server is ``openai`` (the conventions: "based on the instrumentation's best
knowledge"; ``server.address`` tells which system it is)."""


def provider_name(adapter: str) -> str:
    """The conventions' ``gen_ai.provider.name`` of a model adapter ('': ``unknown``)."""
    return PROVIDER_NAMES.get(adapter, adapter) or "unknown"


_IDS = uuid5(NAMESPACE_URL, "diagnosis-harness:otel")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def trace_id(run_id: UUID) -> int:
    """The 128-bit trace id of a run: a uuid5 of its id (never 0: it has version bits)."""
    return uuid5(_IDS, f"trace/{run_id}").int


def span_id(run_id: UUID, stream: UUID, key: int | str) -> int:
    """A 64-bit span id: the first 8 bytes of a uuid5 of (run, stream, version or name).

    Those bytes hold the uuid's version nibble, so the id is never 0.
    """
    return int.from_bytes(uuid5(_IDS, f"{run_id}/{stream}/{key}").bytes[:8], "big")


def nanos(at: datetime) -> int:
    """Nanoseconds since the epoch, exactly (a float would round the microseconds)."""
    return (at - EPOCH) // timedelta(microseconds=1) * 1000


@dataclass(frozen=True)
class SpanEvent:
    """A timed event on a span (a guard verdict, a rejection, a budget stop)."""

    name: str
    time: int
    attributes: Attributes


@dataclass
class SpanData:
    """One span as the exporter will send it; ``parent`` is None for the run's root span."""

    name: str
    trace: int
    span: int
    parent: int | None
    start: int
    end: int
    attributes: Attributes
    events: list[SpanEvent] = field(default_factory=list)
    status: StatusCode = "UNSET"
    description: str = ""
    kind: SpanKind = "INTERNAL"
    """CLIENT for a call that leaves the process (a remote model)."""


@dataclass(frozen=True)
class RunStreams:
    """A run's events as stored: its own stream, its invocations' streams, its collection's."""

    run: Sequence[object]
    invocations: Mapping[UUID, Sequence[object]] = field(default_factory=dict)
    collection: Sequence[object] = ()

    @property
    def finished(self) -> bool:
        """Whether the run recorded ``RUN_FINISHED`` (its trace is complete)."""
        return any(isinstance(event, Run.RunFinished) for event in self.run)
