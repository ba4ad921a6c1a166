"""The shape of one real run: its transactions, the stored size of each event, and its reads."""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import event

from bench.run import SESSION

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from uuid import UUID

    from bootstrap.composition import Services


@dataclass(frozen=True)
class Shape:
    """One real run's writes and reads.

    ``transactions`` lists, per save, its events as ``(stream index, stored state bytes)``; streams
    are numbered in order of first appearance (0 is the run). The read counts are what the
    harness did besides writing.
    """

    transactions: tuple[tuple[tuple[int, int], ...], ...]
    event_types: tuple[tuple[str, int], ...]
    aggregate_reads: int
    events_read: int
    stream_selects: int
    sql_statements: int
    outcome: str

    @property
    def events(self) -> int:
        """Events appended by one run."""
        return sum(len(tx) for tx in self.transactions)

    @property
    def streams(self) -> int:
        """Aggregates (streams) one run writes to."""
        return len({stream for tx in self.transactions for stream, _ in tx})

    @property
    def state_bytes(self) -> int:
        """Stored state bytes one run appends."""
        return sum(size for tx in self.transactions for _, size in tx)

    def summary(self) -> str:
        """One line for the report."""
        per_tx = Counter(len(tx) for tx in self.transactions)
        spread = ", ".join(f"{n}x{k}" for k, n in sorted(per_tx.items()))
        tools = dict(self.event_types).get("ToolInvocation.ToolInvocationStarted", 0)
        return (
            f"{len(self.transactions)} transactions ({spread} events), {self.events} events on "
            f"{self.streams} streams, {self.state_bytes} bytes of stored state, {tools} tool "
            f"calls; reads: {self.stream_selects} event-stream selects ({self.aggregate_reads} of "
            f"them full rebuilds), {self.events_read} events read, {self.sql_statements} SQL "
            f"statements on the read-side engine; "
            f"outcome {self.outcome}"
        )


@contextmanager
def counting_reads(runtime: Services) -> Iterator[Counter[str]]:
    """Count repository.get calls, events they select and SQL statements of the tools' engine."""
    store = runtime.store
    counts: Counter[str] = Counter()
    get = store.repository.get
    select = store.recorder.select_events

    def counted_get(*args: Any, **kwargs: Any) -> Any:
        counts["gets"] += 1
        return get(*args, **kwargs)

    def counted_select(*args: Any, **kwargs: Any) -> Any:
        selected = select(*args, **kwargs)
        counts["selects"] += 1
        counts["events"] += len(selected)
        return selected

    def on_execute(*_: Any) -> None:
        counts["sql"] += 1

    setattr(store.repository, "get", counted_get)  # noqa: B010 (instance attribute, undone below)
    setattr(store.recorder, "select_events", counted_select)  # noqa: B010
    event.listen(runtime.engine, "before_cursor_execute", on_execute)
    try:
        yield counts
    finally:
        delattr(store.repository, "get")
        delattr(store.recorder, "select_events")
        event.remove(runtime.engine, "before_cursor_execute", on_execute)


def capture_shape(runtime: Services, question: str) -> Shape:
    """Make one real run and record its transactions, event sizes and reads."""
    store = runtime.store
    saves: list[list[tuple[UUID, int, str]]] = []

    def listener(events: Sequence[Any]) -> None:
        saves.append(
            [
                (e.originator_id, len(store.mapper.to_stored_event(e).state), type(e).__qualname__)
                for e in events
            ]
        )

    store.listeners.append(listener)
    try:
        with counting_reads(runtime) as counts:
            result = runtime.chat.ask(SESSION, question)
    finally:
        store.listeners.remove(listener)
    streams: dict[UUID, int] = {}
    transactions = tuple(
        tuple((streams.setdefault(oid, len(streams)), size) for oid, size, _ in tx) for tx in saves
    )
    types = Counter(name for tx in saves for _, _, name in tx)
    return Shape(
        transactions,
        tuple(sorted(types.items())),
        counts["gets"],
        counts["events"],
        counts["selects"],
        counts["sql"],
        f"{result.termination.state.value}/{result.release_outcome.value}",
    )
