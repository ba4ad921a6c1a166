"""A look for a cancel that cannot read the log loses nothing the run queued (design §17.1).

Before a local call a run with queued events looks whether another writer appended to it (a
read of the log where it does not hear of ends). When that read fails the look cannot tell: the
run commits instead, as it would before an external call, so a refusal is a refused commit (its
events queued again, SPEC §8) and never a queue dropped with the run's work in it. And a commit
refused while another process cancels the run loses the race with that cancel, as a conflict
does: nothing of the run is recorded after its termination.

The store fails for real: another thread holds its pool's only connection until the run logs
the failure.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from psycopg_pool import ConnectionPool

from application.ports import ModelProvider, ModelRequest, ModelResponse
from bootstrap.composition import Overrides, Services, bootstrap
from domain.run import Run
from domain.states import CancellationReason, RunState
from infrastructure.ops_data import sample_incidents
from infrastructure.pg_recorder import FailFastRecorder
from tests.conftest import pg_schema
from tests.integration._invariants import check_run, read_events

if TYPE_CHECKING:
    from uuid import UUID

    from application.chat import ChatResult

pytestmark = pytest.mark.postgres

WAIT_S = 30.0
"""A bound on waiting for the other thread, never reached when it works."""
FAILURE_LOGGERS = ("application.tool_boundary", "application.outage")
"""Where a run says the store failed it (then the pool is handed back)."""


class HoldsThePool:
    """The offline model; its 2nd call has another thread take the store's only connection."""

    local = True

    def __init__(
        self, inner: ModelProvider, pool: ConnectionPool[Any], meanwhile: Callable[[], object]
    ) -> None:
        self.inner, self.pool, self.meanwhile = inner, pool, meanwhile
        self.calls = 0
        self.released = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == 2:  # the next call is a tool's, which looks first
            holding = threading.Event()
            threading.Thread(target=self._hold, args=(holding,), daemon=True).start()
            assert holding.wait(WAIT_S)
            self.meanwhile()
        return self.inner.complete(request)

    def _hold(self, holding: threading.Event) -> None:
        with self.pool.connection():
            holding.set()
            self.released.wait(WAIT_S)


class ReleaseOnFailure(logging.Handler):
    """Hands the pool back once the run logged that the store failed it."""

    def __init__(self, released: threading.Event) -> None:
        super().__init__(logging.WARNING)
        self.released = released

    def emit(self, record: logging.LogRecord) -> None:
        self.released.set()


@pytest.fixture
def services(pg_available: None) -> Iterator[Services]:
    """A store whose pool has one connection, waited for one second at most."""
    quiet = Overrides(heartbeat=False)
    with (
        pg_schema(db_pool_size=1, db_max_overflow=0, db_connect_timeout=1) as settings,
        bootstrap(settings, create=True, sample=True, overrides=quiet) as built,
    ):
        yield built


def _ask(services: Services, meanwhile: Callable[[UUID], object]) -> ChatResult:
    """Ask the sample question; the model's 2nd call takes the pool and calls ``meanwhile``."""
    recorder = services.store.recorder
    assert isinstance(recorder, FailFastRecorder)
    runs: list[Run] = []
    model = HoldsThePool(
        services.chat.provider, recorder.datastore.pool, lambda: meanwhile(runs[0].id)
    )
    handler = ReleaseOnFailure(model.released)
    for name in FAILURE_LOGGERS:
        logging.getLogger(name).addHandler(handler)
    try:
        given = Overrides(store=services.store, provider=model, heartbeat=False)
        with bootstrap(services.settings, overrides=given) as built:
            chat = built.chat
            services.store.run_ends = None  # every look reads the log (as on SQLite)
            runs.append(chat.begin("look", sample_incidents()[0].question)[0])
            result = chat.execute(runs[0])
    finally:
        for name in FAILURE_LOGGERS:
            logging.getLogger(name).removeHandler(handler)
    assert model.released.is_set()  # the store did fail the run once
    check_run(result, read_events(services.store))
    return result


def test_a_look_that_cannot_read_commits_instead_and_drops_nothing(services: Services) -> None:
    result = _ask(services, lambda run_id: None)
    assert result.termination.state is RunState.SUCCESS, result.termination


def test_a_cancel_while_the_store_refuses_the_run_ends_it_and_nothing_follows(
    services: Services,
) -> None:
    def cancel(run_id: UUID) -> None:
        with bootstrap(services.settings) as other:  # another process: a pool of its own
            other.store.cancel(run_id, CancellationReason.USER_REQUESTED)

    result = _ask(services, cancel)
    assert result.termination.state is RunState.CANCELLED, result.termination
