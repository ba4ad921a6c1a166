"""``trace_event``: every domain event on its run's timeline, with a TracePhase and a status."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from domain.catalogue import EVENT_CLASSES, event_type_name
from domain.collection import Collection
from domain.release import PUBLISHED
from domain.release_states import ReleaseOutcome, SemanticVerdict
from domain.run import Run
from domain.states import (
    DraftOutcome,
    ModelStepOutcome,
    ModelStepPurpose,
    RunState,
    TraceEventStatus,
    TracePhase,
)
from domain.tool_invocation import ToolInvocation
from domain.tool_states import InformationGain
from projections.base import Positioned, Written, uuid_text

if TYPE_CHECKING:
    from collections.abc import Sequence

    from application.view_port import ViewWriter

OK, INFO = TraceEventStatus.OK, TraceEventStatus.INFO
REJECTED, ERROR = TraceEventStatus.REJECTED, TraceEventStatus.ERROR

PURPOSE_PHASE = {
    ModelStepPurpose.ROUTE: TracePhase.ROUTING,
    ModelStepPurpose.ANSWER: TracePhase.AGENT,
    ModelStepPurpose.AGENT: TracePhase.AGENT,
    ModelStepPurpose.REPAIR: TracePhase.GUARD,
    ModelStepPurpose.JUDGE: TracePhase.GUARD,
}


TYPE_NAMES = {cls: event_type_name(cls) for cls in EVENT_CLASSES}

COLUMNS = (
    "position",
    "run_id",
    "stream_id",
    "stream_version",
    "event_type",
    "phase",
    "status",
    "timestamp",
    "attributes",
)
"""The order of each row's values (every column of ``trace_event``)."""


STREAM_MEMORY = 10_000
"""Streams whose run the trace remembers in memory before it starts over.

Only the streams of the runs in flight need it: their later events come in later batches. Starting
over costs one lookup in ``trace_stream`` for each stream still in flight then."""


class Trace:
    """The audit timeline: one row per event, ordered by log position."""

    name = "trace_event"
    tables = ("trace_event", "trace_stream")
    interests = (Run.Event, ToolInvocation.Event, Collection.Event)

    def __init__(self, remember: int = STREAM_MEMORY) -> None:
        """Start knowing no stream; a stream's run, once seen, is remembered (it never changes).

        Beyond ``remember`` streams it starts over (see :data:`STREAM_MEMORY`).
        """
        self.remember = remember
        self.runs_of_streams: dict[str, str] = {}

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Insert one row per event; invocation and collection events find their run."""
        streams, started = self._streams(view, events)
        rows: list[list[Any]] = []
        add, kinds = rows.append, _KINDS
        for position, event, stream in events:
            name, fixed, rule, of_run = kinds.get(type(event)) or _kind(type(event))
            run_id = stream if of_run else streams.get(stream)
            if run_id is None:
                continue  # not a stream of a known run: nothing to place it on
            phase, status = fixed or rule(event)
            attributes = vars(event).copy()  # the payload: the event's own fields
            del attributes["originator_id"], attributes["originator_version"]
            timestamp = attributes.pop("timestamp")
            add(
                [
                    position,
                    run_id,
                    stream,
                    event.originator_version,
                    name,
                    phase,
                    status,
                    timestamp,
                    attributes,
                ]
            )
        return Written(started + view.append("trace_event", COLUMNS, rows))

    def _streams(
        self, view: ViewWriter, events: Sequence[Positioned]
    ) -> tuple[dict[str, str], int]:
        """The run of every invocation and collection stream in ``events`` that has one.

        Streams started in this batch are recorded in ``trace_stream``; the others are looked up
        there once per process, since a stream never moves to another run. Also returns the
        rows that recording wrote.
        """
        known = self.runs_of_streams
        if len(known) > self.remember:
            known.clear()
        started: list[list[Any]] = []
        unknown: list[str] = []
        for _, event, stream in events:
            if isinstance(event, Run.Event):
                continue
            if isinstance(event, STREAM_STARTS):
                known[stream] = uuid_text(event.run_id)
                started.append([stream, known[stream]])
            elif stream not in known:
                unknown.append(stream)
        if unknown:
            stored = view.rows("trace_stream", "stream_id")
            stored.preload(unknown)
            for stream in unknown:
                if (row := stored.get(stream)) is not None:
                    known[stream] = str(row["run_id"])
        return known, view.append("trace_stream", ("stream_id", "run_id"), started)


STREAM_STARTS = (ToolInvocation.ToolInvocationStarted, Collection.CollectionStarted)
Rule = Callable[[Any], tuple[TracePhase, TraceEventStatus]]


class _Fixed:
    """A rule whose answer does not depend on the event's fields."""

    def __init__(self, phase: TracePhase, status: TraceEventStatus) -> None:
        self.answer = (phase, status)
        self.texts = (phase.value, status.value)

    def __call__(self, _event: Any) -> tuple[TracePhase, TraceEventStatus]:
        return self.answer


def _semantic_verdict(event: Any) -> tuple[TracePhase, TraceEventStatus]:
    verdict = {SemanticVerdict.SUPPORTED: OK, SemanticVerdict.UNSUPPORTED: REJECTED}
    return TracePhase.GUARD, verdict.get(event.verdict, ERROR) if event.verdict else ERROR


def _guard_validity(event: Any) -> tuple[TracePhase, TraceEventStatus]:
    return TracePhase.GUARD, OK if event.valid else REJECTED


def _run_finished(event: Any) -> tuple[TracePhase, TraceEventStatus]:
    published = event.release_outcome in PUBLISHED
    return TracePhase.RUN, OK if published else ERROR


RULES: dict[type, Rule] = {
    Run.RoutingAttempt: _Fixed(TracePhase.ROUTING, INFO),
    Run.RoutingDecision: lambda e: (TracePhase.ROUTING, ERROR if e.intent is None else OK),
    Run.AgentModelStep: lambda e: (
        PURPOSE_PHASE[e.purpose],
        ERROR if e.outcome is not ModelStepOutcome.OK else OK,
    ),
    Run.DraftProposed: lambda e: (
        TracePhase.AGENT,
        OK if e.outcome is DraftOutcome.VALID else ERROR,
    ),
    Run.PassagesRetrieved: lambda e: (TracePhase.AGENT, OK if e.passages else INFO),
    Run.AnswerProposed: lambda e: (TracePhase.AGENT, OK if e.refusal is None else ERROR),
    Run.BudgetExhausted: _Fixed(TracePhase.RUN, ERROR),
    Run.ToolRequestRejected: _Fixed(TracePhase.TOOL, REJECTED),
    Run.EvidenceGuardInitial: _guard_validity,
    Run.EvidenceGuardRecheck: _guard_validity,
    Run.EvidenceRepair: _Fixed(TracePhase.GUARD, INFO),
    Run.SemanticGuardAttempt: _Fixed(TracePhase.GUARD, INFO),
    Run.SemanticGuardDecision: _semantic_verdict,
    Run.ReleaseDecision: lambda e: (
        TracePhase.RELEASE,
        OK if e.outcome is ReleaseOutcome.SUCCESS else INFO,
    ),
    Run.RunTerminated: lambda e: (TracePhase.RUN, OK if e.state is RunState.SUCCESS else ERROR),
    Run.RunFinished: _run_finished,
    Run.Event: _Fixed(TracePhase.RUN, INFO),  # started, status changes, charges, cancellation
    ToolInvocation.ToolInvocationReady: _Fixed(TracePhase.TOOL, OK),
    ToolInvocation.ToolInvocationFailed: _Fixed(TracePhase.TOOL, ERROR),
    ToolInvocation.Event: _Fixed(TracePhase.TOOL, INFO),
    Collection.ToolProgress: lambda e: (
        TracePhase.COLLECTION,
        OK if e.gain is InformationGain.GAINED else INFO,
    ),
    Collection.ProgressProtocolViolation: _Fixed(TracePhase.COLLECTION, REJECTED),
    object: _Fixed(TracePhase.COLLECTION, INFO),
}
"""SPEC §13 per event class; a class without its own rule takes its nearest base class's."""


_RULE_OF: dict[type, Rule] = {}


def _rule(kind: type) -> Rule:
    rule = _RULE_OF.get(kind)
    if rule is None:
        rule = _RULE_OF[kind] = next(RULES[base] for base in kind.__mro__ if base in RULES)
    return rule


_TEXTS_OF: dict[type, Callable[[Any], tuple[str, str]]] = {}


def _texts(kind: type) -> Callable[[Any], tuple[str, str]]:
    """The rule of ``kind`` answering the column values (constant for a fixed rule)."""
    found = _TEXTS_OF.get(kind)
    if found is None:
        rule = _rule(kind)
        if isinstance(rule, _Fixed):
            texts = rule.texts
            found = _TEXTS_OF[kind] = lambda _event: texts
        else:
            found = _TEXTS_OF[kind] = lambda event: _values(rule(event))
    return found


Kind = tuple[str, tuple[str, str] | None, Callable[[Any], tuple[str, str]], bool]
"""An event class's ``event_type``, its phase and status texts when they are fixed (else None),
the rule answering them, and whether its events are Run events (their stream is the run)."""

_KINDS: dict[type, Kind] = {}


def _kind(kind: type) -> Kind:
    """The :data:`Kind` of an event class, worked out once."""
    rule = _rule(kind)
    fixed = rule.texts if isinstance(rule, _Fixed) else None
    name = TYPE_NAMES.get(kind) or event_type_name(kind)
    found = _KINDS[kind] = (name, fixed, _texts(kind), issubclass(kind, Run.Event))
    return found


def _values(answer: tuple[TracePhase, TraceEventStatus]) -> tuple[str, str]:
    return answer[0]._value_, answer[1]._value_  # ``value`` without its descriptor call


def classify(event: Any) -> tuple[TracePhase, TraceEventStatus]:
    """The timeline phase and status of one event (SPEC §13)."""
    return _rule(type(event))(event)
