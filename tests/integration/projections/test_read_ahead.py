"""The next batch fetched while the current one is applied (projections/read_ahead.py).

Forced on for both stores (by default it is on for PostgreSQL only): the runner must end with
the very rows a runner without it makes, fetch in the read-ahead thread, and after a lost race
drop what it fetched for the old positions.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from projections.runner import Projector
from tests.integration._projection_helpers import dump, notifications, run_scenario

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from bootstrap.composition import Services

BATCH = 7


class Fetches(Projector):
    """A projector that notes where and in which thread each fetch of the log was made."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fetched: list[tuple[int, str]] = []

    def _fetch(self, after: int) -> Sequence[Any]:
        self.fetched.append((after, threading.current_thread().name))
        return super()._fetch(after)


def test_a_catch_up_fetching_ahead_makes_the_rows_one_without_makes(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    for name in ("conclusion_supported", "saturated"):
        run_scenario(services, name)
    Projector(store, engine, batch_size=BATCH, read_ahead=False).rebuild()
    without = dump(engine)

    projector = Fetches(store, engine, batch_size=BATCH, read_ahead=True)
    assert projector.rebuild() == len(notifications(store))
    assert dump(engine) == without
    threads = [thread for _, thread in projector.fetched]
    assert threads[0] == threading.current_thread().name
    assert set(threads[1:]) == {"projections-read-ahead"}  # every later batch was fetched ahead
    afters = [after for after, _ in projector.fetched]
    assert afters == sorted(set(afters))  # each batch fetched once, in order
    assert not [t for t in threading.enumerate() if t.name == "projections-read-ahead"]


def test_after_a_lost_race_what_was_fetched_for_the_old_positions_is_dropped(
    services: Services, store: HarnessStore, engine: Engine
) -> None:
    run_scenario(services, "conclusion_supported")
    winner = Projector(store, engine, batch_size=BATCH)
    loser = Fetches(store, engine, batch_size=BATCH, read_ahead=True)
    stale = loser.positions()  # read before the winner moves on
    winner.step()
    winner.step()
    log = notifications(store)

    assert loser._catch_up(stale)[0] > 0
    assert loser.conflicts == 1
    afters = [after for after, _ in loser.fetched]
    # its stale batch, the one it fetched ahead for it (dropped), then from the winner's position
    assert afters[:3] == [0, log[BATCH - 1][0], log[2 * BATCH - 1][0]]
    assert loser.positions() == dict.fromkeys(loser.names, log[-1][0])
    followed = dump(engine)
    Projector(store, engine).rebuild()
    assert dump(engine) == followed
