"""A run's slot is free once its end is in the log (application/dispatch.py), not when its thread
returns: a client that reads ``done`` and asks again at once is not refused for the run it saw end.

The run's thread is held inside the save of its end (in a store listener registered after the
dispatcher's, as the feed's is), so the next question is asked while that thread still runs.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from application.dispatch import RunDispatcher
from domain.run import Run
from tests.helpers import scripted
from tests.integration._projection_helpers import QUERY

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bootstrap.composition import Services

WAIT = 30.0


def test_the_next_question_is_admitted_while_the_ended_run_s_thread_is_still_saving(
    services: Services,
) -> None:
    ended, go_on = threading.Event(), threading.Event()

    def held_at_the_end(events: Sequence[object]) -> None:  # where the feed would say `done`
        if any(type(e) is Run.RunFinished for e in events) and not ended.is_set():
            ended.set()
            go_on.wait(WAIT)

    with scripted(services, "conclusion_supported") as made:
        listeners = made.service.store.listeners
        before = list(listeners)
        dispatcher = RunDispatcher(made.service, 1, lambda _session: "")
        listeners.append(held_at_the_end)
        try:
            first = dispatcher.submit("s-1", QUERY)
            assert ended.wait(WAIT)
            running = dispatcher.execution(first.run_id)
            assert running is not None and not running.done()  # its thread is still saving
            try:
                second = dispatcher.submit("s-1", QUERY)  # the cap is 1: admitted all the same
            finally:
                go_on.set()
            for started in (first, second):
                execution = dispatcher.execution(started.run_id)
                if execution is not None:
                    execution.result(WAIT)
        finally:
            go_on.set()
            dispatcher.close()
    store = made.service.store
    assert store.get_run(first.run_id).termination is not None
    assert store.get_run(second.run_id).termination is not None
    assert listeners == [*before, held_at_the_end]  # the closed dispatcher no longer listens
