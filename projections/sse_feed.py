"""``sse_event``: each run's public feed (SPEC §11), numbered 1, 2, … for ``Last-Event-ID``.

The order is ``metadata → status* → (content | failure) → done``. Content is written once, from the
release decision, and only when the run finished with it published (SUCCESS or FALLBACK); a failed
run gets ``failure`` then ``done`` (FAILED). A cancelled run gets a ``failure`` naming the
cancellation and no ``done``: CANCELLED is never a public outcome. Every payload carries the
metadata's ``session_id`` and ``run_id``, and nothing is written after the terminal event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from application.view_port import jsonable
from domain.release import PUBLISHED
from domain.release_states import ReleaseOutcome
from domain.run import Run
from projections.base import Positioned, Written, begun_before, text

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from application.view_port import Row, ViewWriter


FEED_COLUMNS = ("run_id", "seq", "position", "event", "data")
"""The columns of an ``sse_event`` row, in the order its values are appended."""


class SseFeed:
    """The public event feed of every run, written as the log is followed."""

    name = "sse_feed"
    tables = ("sse_event", "sse_run")
    interests = (
        Run.RunStarted,
        Run.ApplicationStatusChanged,
        Run.ReleaseDecision,
        Run.RunTerminated,
        Run.RunFinished,
    )

    def process(self, view: ViewWriter, events: Sequence[Positioned]) -> Written:
        """Append the feed entries that this batch's Run events produce; they are its entries."""
        runs = view.rows("sse_run", "run_id")
        runs.preload(begun_before(events, Run.Event, Run.RunStarted))
        feed: list[Row] = []
        for position, event, run_id in events:
            if isinstance(event, Run.RunStarted):
                state = runs.add(new_state(run_id, event.session_id))
            else:
                found = runs.get(run_id)
                if found is None or found["closed"]:
                    continue  # unknown run, or its feed already ended: nothing after terminal
                state = found
            feed += numbered(state, event, position)
        values = [[row[column] for column in FEED_COLUMNS] for row in feed]
        return Written(runs.flush() + view.append("sse_event", FEED_COLUMNS, values), tuple(feed))


def numbered(state: Row, event: Any, position: int) -> list[Row]:
    """The feed rows ``event`` adds to the run of ``state``, numbered on; ``state`` follows.

    ``position`` is the event's log position.
    """
    rows: list[Row] = []
    run_id = state["run_id"]
    for kind, data in feed_entries(state, event):
        state["last_seq"] += 1
        identity = {"session_id": state["session_id"], "run_id": run_id}
        rows.append(
            {
                "run_id": run_id,
                "seq": state["last_seq"],
                "position": position,
                "event": kind,
                "data": identity | data,
            }
        )
    return rows


def run_feed(run_id: str, events: Iterable[Any]) -> list[tuple[Any, str, dict[str, Any]]]:
    """One run's public feed from its events in log order, as :class:`SseFeed` writes it.

    Pure (no database): each entry is the event that wrote it, its kind and its data. For audits
    that derive the feed from an exported log.
    """
    state: Row | None = None
    feed: list[tuple[Any, str, dict[str, Any]]] = []
    for event in events:
        if isinstance(event, Run.RunStarted):
            state = new_state(run_id, event.session_id)
        elif state is None or state["closed"]:
            continue  # as :meth:`SseFeed.process`: nothing before metadata or after terminal
        for kind, data in feed_entries(state, event):
            identity = {"session_id": state["session_id"], "run_id": run_id}
            feed.append((event, kind, identity | data))
    return feed


def ends_feed(kind: str, data: Mapping[str, Any]) -> bool:
    """Whether nothing follows this entry: ``done``, or a cancelled run's ``failure``.

    The last entry :func:`_ending` writes, told from the entry alone (a stream's end).
    """
    if kind == "done":
        return True
    return bool(kind == "failure" and data.get("release_outcome") == ReleaseOutcome.CANCELLED.value)


def new_state(run_id: str, session_id: str) -> Row:
    """A run's feed state (its ``sse_run`` row) right after its ``RunStarted``."""
    return {
        "run_id": run_id,
        "session_id": session_id,
        "last_seq": 0,
        "closed": False,
        "release_content": None,
        "fallback_type": None,
        "termination_state": None,
        "termination_reason": None,
    }


def feed_entries(state: Row, event: Any) -> list[tuple[str, dict[str, Any]]]:
    """The feed entries (kind, data without identity) ``event`` makes; updates ``state``.

    Does not number them: the caller adds one to ``last_seq`` per entry.
    """
    match event:
        case Run.RunStarted():
            return [("metadata", {"query": event.query})]
        case Run.ApplicationStatusChanged():
            return [("status", {"status": event.status.value})]
        case Run.ReleaseDecision():
            state["release_content"] = jsonable(event.content)
            state["fallback_type"] = text(event.fallback_type)
        case Run.RunTerminated():
            state["termination_state"] = event.state.value
            state["termination_reason"] = str(event.reason.value)
        case Run.RunFinished():
            state["closed"] = True
            entries = _ending(state, event.release_outcome)
            state["release_content"] = None  # only kept while the feed is open
            return entries
        case _:
            pass
    return []


def _ending(state: Row, outcome: ReleaseOutcome) -> list[tuple[str, dict[str, Any]]]:
    done = ("done", {"release_outcome": outcome.value})
    if outcome in PUBLISHED:
        content = {
            "release_outcome": outcome.value,
            "fallback_type": state["fallback_type"] if outcome is ReleaseOutcome.FALLBACK else None,
            "content": state["release_content"],
        }
        return [("content", content), done]
    failure = {
        "release_outcome": outcome.value,
        "termination_state": state["termination_state"],
        "termination_reason": state["termination_reason"],
    }
    if outcome is ReleaseOutcome.CANCELLED:
        return [("failure", failure)]  # no public CANCELLED done (SPEC §11)
    return [("failure", failure), done]
