"""Offline replay: audit records back to domain events and aggregates, without a store.

Records are decoded with a mapper built like the store's (the same transcodings), but only
for the topics of the domain's own event classes: a record naming any other topic is a
violation, never an import. Each stream is then replayed into its aggregate in log order.
Replay is tolerant of order breaks (the chain check reports those): it applies what it can and
reports only what cannot be applied at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from eventsourcing.domain import Aggregate, CanMutateAggregate, OriginatorVersionError
from eventsourcing.persistence import DatetimeAsISO, DecimalAsStr, JSONTranscoder, UUIDAsHex
from eventsourcing.utils import get_topic

from application.audit.chain import ChainingMapper
from application.audit.integrity import Violation
from application.audit.records import to_domain_event, type_of
from application.audit.shapes import shape_problem
from application.transcodings import register_all
from domain.catalogue import AGGREGATES
from domain.checkpoint import AuditCheckpoint, is_checkpoint_stream
from domain.collection import Collection, collection_id
from domain.eval_run import EvalRun
from domain.release_replay import ReleaseReplays
from domain.run import Run
from domain.session import Session, session_key
from domain.tool_invocation import ToolInvocation

if TYPE_CHECKING:
    from collections.abc import Iterable

    from application.audit.records import AuditRecord


def _event_classes() -> dict[str, type[Any]]:
    found: dict[str, type[Any]] = {}
    for aggregate in (*AGGREGATES, Session, AuditCheckpoint, EvalRun, ReleaseReplays):
        for value in vars(aggregate).values():
            if isinstance(value, type) and issubclass(value, CanMutateAggregate):
                if value.__name__ not in ("Event", "Created"):
                    found[get_topic(value)] = value
    return found


EVENT_TOPICS = _event_classes()
"""Every topic a record may name: the domain's event classes (sessions', checkpoints',
evaluations' and release replays' too)."""


def offline_mapper() -> ChainingMapper:
    """A mapper with the store's transcodings, needing no store (links are not checked here)."""
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DecimalAsStr(), DatetimeAsISO()):
        transcoder.register(transcoding)
    register_all(transcoder)
    return ChainingMapper(transcoder)


@dataclass(frozen=True)
class Entry:
    """One record and the domain event it decodes to."""

    record: AuditRecord
    event: Any


@dataclass
class Stream:
    """One aggregate's events, in log order, and the aggregate they replay to."""

    name: str
    entries: list[Entry] = field(default_factory=list)
    aggregate: Any | None = None
    orphaned: bool = False
    """True once an event was found with no creation event before it (reported once)."""

    @property
    def run_id(self) -> str | None:
        """The run this stream belongs to (None: a session, or no creation event)."""
        match self.aggregate:
            case Run():
                return self.name
            case ToolInvocation() | Collection():
                return str(self.aggregate.run_id)
            case _:
                return None


@dataclass
class RunLog:
    """Everything the log holds about one run: its run, collection and invocation streams."""

    run_id: str
    run: Stream | None = None
    collection: Stream | None = None
    invocations: dict[str, Stream] = field(default_factory=dict)

    def entries(self) -> list[Entry]:
        """Every entry of the run's streams, in log order."""
        streams = [self.run, self.collection, *self.invocations.values()]
        found = [entry for stream in streams if stream for entry in stream.entries]
        return sorted(found, key=lambda entry: entry.record.position)

    def of(self, *kinds: type[Any]) -> list[Entry]:
        """The entries of the given event classes, in log order."""
        return [entry for entry in self.entries() if isinstance(entry.event, kinds)]


@dataclass
class Replay:
    """The decoded streams of a log and what could not be decoded or replayed."""

    streams: dict[str, Stream] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    def runs(self) -> dict[str, RunLog]:
        """The runs of the log, by run id, with the streams that belong to each."""
        runs: dict[str, RunLog] = {}
        for stream in self.streams.values():
            run_id = stream.run_id
            if run_id is None:
                continue
            log = runs.setdefault(run_id, RunLog(run_id))
            match stream.aggregate:
                case Run():
                    log.run = stream
                case Collection():
                    log.collection = stream
                case _:
                    log.invocations[stream.name] = stream
        return runs


def decode(record: AuditRecord, mapper: ChainingMapper) -> tuple[Any, Violation | None]:
    """The record's domain event, or why it cannot be trusted to be one."""
    cls = EVENT_TOPICS.get(record.topic)
    if cls is None:
        return None, Violation("decode", f"names an unknown event topic {record.topic!r}", record)
    if record.type != type_of(record.topic):
        why = f"its type {record.type!r} is not its topic's ({type_of(record.topic)})"
        return None, Violation("decode", why, record)
    try:
        event = to_domain_event(mapper, record)
    except Exception as error:  # any malformed payload: a finding, never a crash
        why = f"does not decode as {cls.__qualname__}: {type(error).__name__}: {error}"
        return None, Violation("decode", why[:400], record)
    shape = shape_problem(cls, vars(event))
    if shape is not None:
        return None, Violation("decode", f"is no valid {cls.__qualname__}: it {shape}", record)
    stamp = event.timestamp.isoformat()
    if record.timestamp != stamp:
        why = f"its timestamp {record.timestamp!r} is not its payload's ({stamp})"
        return None, Violation("decode", why, record)
    return event, None


def replay(records: Iterable[AuditRecord]) -> Replay:
    """Decode every record and replay every stream into its aggregate, in log order."""
    mapper = offline_mapper()
    result = Replay()
    for record in sorted(records, key=lambda r: r.position):
        event, problem = decode(record, mapper)
        if problem is not None:
            result.violations.append(problem)
            continue
        stream = result.streams.setdefault(record.stream, Stream(record.stream))
        if _apply(stream, Entry(record, event), result.violations):
            stream.entries.append(Entry(record, event))
    return result


def _apply(stream: Stream, entry: Entry, violations: list[Violation]) -> bool:
    """Apply one event to its stream's aggregate; False (and a violation) when it cannot be."""
    event, record = entry.event, entry.record
    owner = type(event).__qualname__.split(".")[0]
    if stream.aggregate is None:
        if not isinstance(event, Aggregate.Created):
            if not stream.orphaned:
                stream.orphaned = True
                why = "cannot be replayed: its stream has no creation event before it"
                violations.append(
                    Violation("replay", f"{why} (nor the stream's later ones)", record)
                )
            return False
    elif owner != type(stream.aggregate).__name__:
        why = f"is a {owner} event in the stream of a {type(stream.aggregate).__name__}"
        violations.append(Violation("replay", why, record))
        return False
    elif isinstance(event, Aggregate.Created):
        return False  # a second creation: the chain check reports the repeated version
    try:
        stream.aggregate = mutate(event, stream.aggregate)
    except Exception as error:  # a forged payload may break an apply method in any way
        why = f"cannot be applied to its aggregate: {type(error).__name__}: {error}"
        violations.append(Violation("replay", why[:400], record))
        return False
    if isinstance(event, Aggregate.Created) and not _derived_id(stream):
        why = "its stream id is not the one its run or session id makes: a second, forged one"
        violations.append(Violation("replay", why, record))
    return True


def _derived_id(stream: Stream) -> bool:
    """A collection's id comes from its run's, a claim's from its session; checkpoints' is fixed."""
    match stream.aggregate:
        case Collection():
            return stream.name == str(collection_id(stream.aggregate.run_id))
        case Session():
            return stream.name == str(session_key(stream.aggregate.session_id))
        case AuditCheckpoint():
            return is_checkpoint_stream(stream.name)
        case _:
            return True


def mutate(event: Any, aggregate: Any | None) -> Any:
    """``event.mutate``, tolerating versions out of sequence (the chain check reports them)."""
    try:
        return event.mutate(aggregate)
    except OriginatorVersionError:
        assert aggregate is not None  # only a later event checks versions
        event.apply(aggregate)
        aggregate.version = event.originator_version
        return aggregate
