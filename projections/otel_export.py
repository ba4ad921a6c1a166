"""A run's trace from the log to an OTLP receiver: its streams read, SDK spans built, exported.

:func:`read_run` reads a run's streams through the store (the log is the source of truth),
:func:`readable_spans` turns :mod:`projections.otel_spans`' data into the SDK's ``ReadableSpan``
objects with explicit contexts, parents and times, and :class:`TraceExport` hands them to a
``SpanExporter`` (the OTLP/HTTP one in production): the protocol is the SDK's, not ours.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from uuid import UUID

from eventsourcing.utils import get_topic
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from domain.collection import Collection, collection_id
from domain.errors import UnknownAggregateError
from domain.run import Run
from domain.states import BudgetKind
from domain.tool_invocation import ToolInvocation
from infrastructure.version import harness_version
from projections.otel_data import AGENT_NAME, SCHEMA_URL, RunStreams, SpanData
from projections.otel_spans import run_spans

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from opentelemetry.sdk.trace.export import SpanExporter

    from application.store import HarnessStore

RUN_FINISHED = get_topic(Run.RunFinished)
RUN_STARTED = get_topic(Run.RunStarted)
PAGE = 500
"""Log entries read per page when looking for runs."""


def export_resource() -> Resource:
    """The resource of every span: ``service.name`` and ``service.version``, then the operator's.

    ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` (read by the SDK's own detector, as
    every OpenTelemetry SDK reads them) add to or replace ours. Nothing about the host or the
    process: with the same settings, the same run exports the same bytes.
    """
    ours = Resource({"service.name": AGENT_NAME, "service.version": harness_version()})
    return ours.merge(OTELResourceDetector().detect())


SCOPE = InstrumentationScope("diagnosis-harness.otel", harness_version(), SCHEMA_URL)
SAMPLED = TraceFlags(TraceFlags.SAMPLED)
CODES = {"UNSET": StatusCode.UNSET, "OK": StatusCode.OK, "ERROR": StatusCode.ERROR}


class ExportFailedError(Exception):
    """The receiver did not accept the spans (unreachable, refused, or answered an error)."""


def read_run(store: HarnessStore, run_id: UUID) -> RunStreams:
    """A run's streams from the log; :class:`UnknownAggregateError` when there is no such run.

    Its invocations are those its tool-call charges name (a charge is saved with the
    invocation's begin) and those its collection's progress names.
    """
    events = store.stream(run_id)
    if not events or not isinstance(events[0], Run.RunStarted):
        raise UnknownAggregateError(run_id, f"no run {run_id}")
    collection = store.stream(collection_id(run_id))
    invocations = {}
    for invocation in _invocation_ids(events, collection):
        stream = store.stream(invocation)
        begun = stream[0] if stream else None
        if isinstance(begun, ToolInvocation.ToolInvocationStarted) and begun.run_id == run_id:
            invocations[invocation] = stream
    return RunStreams(events, invocations, collection)


def _invocation_ids(run: Sequence[object], collection: Sequence[object]) -> Iterator[UUID]:
    seen: set[UUID] = set()
    for event in [*run, *collection]:
        found: UUID | None = None
        if isinstance(event, Run.BudgetCharged) and event.kind is BudgetKind.TOOL_CALLS:
            found = _uuid(event.ref)
        elif isinstance(event, Collection.ToolProgress):
            found = event.invocation_id
        if found is not None and found not in seen:
            seen.add(found)
            yield found


def _uuid(text: str) -> UUID | None:
    try:
        return UUID(text)
    except ValueError:
        return None


CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI instrumentations' opt-in to content in spans (``true``; off otherwise)."""


def content_capture() -> bool:
    """Whether the operator opted in to content in spans (:data:`CAPTURE_VARIABLE` is true)."""
    return os.environ.get(CAPTURE_VARIABLE, "").strip().lower() == "true"


def readable_spans(
    spans: Sequence[SpanData], resource: Resource | None = None
) -> list[ReadableSpan]:
    """The SDK's spans for ``spans``: contexts, parents, times and status as given.

    ``resource`` is :func:`export_resource`'s unless given.
    """
    found = resource or export_resource()
    return [_readable(span, found) for span in spans]


def _readable(span: SpanData, resource: Resource) -> ReadableSpan:
    parent = None
    if span.parent is not None:
        parent = SpanContext(span.trace, span.parent, is_remote=False, trace_flags=SAMPLED)
    error = span.status == "ERROR"
    return ReadableSpan(
        name=span.name,
        context=SpanContext(span.trace, span.span, is_remote=False, trace_flags=SAMPLED),
        parent=parent,
        resource=resource,
        attributes=dict(span.attributes),
        events=[Event(e.name, dict(e.attributes), e.time) for e in span.events],
        kind=SpanKind.CLIENT if span.kind == "CLIENT" else SpanKind.INTERNAL,
        status=Status(CODES[span.status], span.description if error else None),
        start_time=span.start,
        end_time=span.end,
        instrumentation_scope=SCOPE,
    )


@dataclass
class TraceExport:
    """Exports runs' traces from ``store`` through ``exporter``."""

    store: HarnessStore
    exporter: SpanExporter
    resource: Resource = field(default_factory=export_resource)
    """Every span's resource, read from the environment when the export is made."""
    capture: bool = field(default_factory=content_capture)
    """Whether spans carry content: the question, tools' arguments and results (opt-in)."""

    def export(self, run_id: UUID, *, unfinished: bool = True) -> int | None:
        """Export one run's trace; the spans sent (None: unfinished, and ``unfinished`` off).

        Raises :class:`ExportFailedError` when the receiver did not take them, and
        :class:`UnknownAggregateError` when there is no such run.
        """
        streams = read_run(self.store, run_id)
        if not (streams.finished or unfinished):
            return None
        spans = readable_spans(run_spans(streams, self.capture), self.resource)
        if self.exporter.export(spans) is not SpanExportResult.SUCCESS:
            raise ExportFailedError(f"the receiver did not accept the trace of run {run_id}")
        return len(spans)

    def finished_runs(self, after: int, stop: int | None = None) -> Iterator[tuple[int, UUID]]:
        """The runs whose ``RUN_FINISHED`` is after position ``after``, with its position."""
        while True:
            page = self.store.notifications(after, PAGE, topics=(RUN_FINISHED,), stop=stop)
            for notification in page:
                yield notification.id, UUID(str(notification.originator_id))
            if len(page) < PAGE:
                return
            after = page[-1].id

    def unfinished_count(self) -> int:
        """How many runs have started and not finished (in the whole log)."""
        return self._count(RUN_STARTED) - self._count(RUN_FINISHED)

    def _count(self, topic: str) -> int:
        after, count = 0, 0
        while page := self.store.notifications(after, PAGE, topics=(topic,)):
            count, after = count + len(page), page[-1].id
        return count
