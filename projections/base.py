"""What every projection shares: the protocol, a batch's events, what it wrote, value helpers.

Besides the protocol: which events of a batch each projection reads (:func:`shares`), what a
batch wrote, where a projection stands against the log, and event-to-value helpers. A
projection decides which rows the events make and writes them through an
``application.view_port.ViewWriter``; it never sees SQL (see ``application.view_port`` for where
each part of the read side lives).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from eventsourcing.utils import resolve_topic

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence
    from enum import Enum
    from uuid import UUID

    from eventsourcing.persistence import Mapper, Notification

    from application.view_port import Row, ViewWriter

Positioned = tuple[int, Any, str]
"""A domain event with its log position and its stream's id as text."""


@dataclass(frozen=True)
class Written:
    """What one projection wrote for one batch: returned by ``process``, never kept on it."""

    rows: int
    """Rows inserted or rewritten, its tables together."""
    entries: tuple[Row, ...] = ()
    """The new rows live readers are handed once the batch commits (the feed's entries)."""


@dataclass(frozen=True)
class Committed:
    """A batch the runner committed: it applied the log entries in ``(after, last]``."""

    after: int
    last: int
    written: Mapping[str, Written]
    """What each projection that had events in the batch wrote, by name."""

    def entries(self, name: str) -> list[Row]:
        """The entries projection ``name`` wrote in this batch (none when it had no events)."""
        written = self.written.get(name)
        return list(written.entries) if written else []


@dataclass(frozen=True)
class ProjectionStatus:
    """Where one projection stands against the log."""

    name: str
    position: int
    head: int

    @property
    def lag(self) -> int:
        """Log positions not yet applied (0 when caught up)."""
        return max(0, self.head - self.position)


class Projection(Protocol):
    """A read model built from the log; ``process`` must only write through ``view``."""

    @property
    def name(self) -> str:
        """The name of its tracking row."""
        ...

    @property
    def tables(self) -> tuple[str, ...]:
        """The names of the tables it owns: emptied when it is rebuilt from position 0."""
        ...

    @property
    def interests(self) -> tuple[type, ...]:
        """The event classes it reads (subclasses included); other events only move its position."""
        ...

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Apply a batch of its events of interest (in log order) in the caller's transaction."""
        ...


class UnreadableLogEntry(ValueError):
    """A log entry is not an event this code can read (changed outside it, or by a newer one).

    No projection can apply it, or anything after it, until it is put right.
    """


def positioned(mapper: Mapper[UUID], notifications: Sequence[Notification]) -> list[Positioned]:
    """Log entries as :data:`Positioned` events, deserialised once for every projection.

    Raises :class:`UnreadableLogEntry` naming the first entry that is not an event.
    """
    to_domain_event, text_of = mapper.to_domain_event, uuid_text
    try:
        return [(n.id, to_domain_event(n), text_of(n.originator_id)) for n in notifications]
    except ValueError:  # eventsourcing's MapperDeserialisationError is one, as JSON's errors are
        raise UnreadableLogEntry(_unreadable(mapper, notifications)) from None


def _unreadable(mapper: Mapper[UUID], notifications: Sequence[Notification]) -> str:
    """Which of ``notifications`` is not an event, and why (the slow path of a failure)."""
    for n in notifications:
        try:
            mapper.to_domain_event(n)
        except ValueError as error:
            why = " ".join(str(error.__cause__ or error).split())[:200]
            return (
                f"log entry {n.id} ({n.topic} of stream {n.originator_id}"
                f" v{n.originator_version}) is not an event this code can read ({why}); the read"
                " tables stop before it: `harness audit verify --db` reports what is wrong"
            )
    return "a log entry is not an event this code can read"


class Readers:
    """Which log entries a runner's projections read, told from an entry's topic alone.

    An entry's topic names its event class, so an entry of a class none of them reads is
    skipped before its state is deserialised (its position still moves them all on): the SSE
    feed's follower reads five classes of the log's dozens. A topic that names no class is
    kept, so that deserialising it says what is wrong with the entry.
    """

    def __init__(self, projections: Sequence[Projection]) -> None:
        """Read what any of ``projections`` is interested in."""
        self.interests = tuple(kind for p in projections for kind in p.interests)
        self._read: dict[str, bool] = {}
        """Per topic met, whether its class is read (only topics that name a class)."""

    def wanted(self, notifications: Sequence[Notification]) -> list[Notification]:
        """The entries of ``notifications`` that some projection reads, in log order."""
        read = self._read
        return [n for n in notifications if read.get(n.topic) or self._learn(n.topic)]

    def wants(self, topic: str) -> bool:
        """Whether some projection reads the entries of ``topic``."""
        return self._read.get(topic) or self._learn(topic)

    def _learn(self, topic: str) -> bool:
        if topic in self._read:
            return False
        try:
            kind = resolve_topic(topic)
        except Exception:  # noqa: BLE001 (any failure: deserialising names it)
            return True
        if not isinstance(kind, type):
            return True  # no class: deserialising names it
        found = self._read[topic] = issubclass(kind, self.interests)
        return found


def shares(
    projections: Sequence[Projection], positions: Mapping[str, int], events: list[Positioned]
) -> Iterator[tuple[Projection, list[Positioned]]]:
    """Each projection with the events of ``events`` it reads and has not applied yet."""
    kinds = {type(e[1]) for e in events}
    first = events[0][0] if events else 0
    for projection in projections:
        position = positions[projection.name]
        wanted = {kind for kind in kinds if issubclass(kind, projection.interests)}
        mine = [e for e in events if type(e[1]) in wanted]
        if position >= first:  # it already has part of this batch
            mine = [e for e in mine if e[0] > position]
        yield projection, mine


def begun_before(events: Sequence[Positioned], kind: type, first: type) -> list[str]:
    """The streams of the ``kind`` events in ``events`` whose ``first`` event is not among them.

    Only those can have rows stored by earlier batches: a stream's first event comes before all
    its others in the log, so a stream that starts in this batch has nothing stored yet and
    needs no lookup. (In a rebuild nearly every stream starts in the batch that reads it.)
    """
    started: set[str] = set()
    earlier: dict[str, None] = {}
    for _, event, stream in events:
        if stream in started or stream in earlier:
            continue  # one look per stream: its first event here decides
        if isinstance(event, first):
            started.add(stream)
        elif isinstance(event, kind):
            earlier[stream] = None
    return list(earlier)


TEXTS_KEPT = 4_096
"""Stream ids whose text :func:`uuid_text` remembers; past that it starts over.

A stream's events lie close together in the log (a run's within its own span), so a few
thousand streams hold every repeat of a batch; the finished runs' streams never come back."""

_texts: dict[int, str] = {}


def uuid_text(value: UUID | str) -> str:
    """``str(uuid)``, remembered: a run's stream comes by some 25 times in the log.

    Keyed by the id's integer, whose hash is the interpreter's own: a ``UUID`` key would cost
    two Python-level calls a look (its ``__hash__`` and ``__eq__``). A text id is its own text.
    """
    if isinstance(value, str):
        return value
    key = value.int
    found = _texts.get(key)
    if found is None:
        if len(_texts) >= TEXTS_KEPT:
            _texts.clear()
        found = _texts[key] = str(value)
    return found


def texts_kept() -> int:
    """How many stream ids' texts :func:`uuid_text` holds now."""
    return len(_texts)


def text(value: Enum | None) -> str | None:
    """An enum's value for a text column (``_value_``: ``value`` without a descriptor call)."""
    return None if value is None else str(value._value_)
