"""The event store's PostgreSQL recorder fails fast while the server is away and heals after.

On a private cluster (the shared server is never stopped). The library's own recorder retries
every call ten times and waits for a pooled connection each time; ours waits once, retries only
a lost connection (after checking the pool's idle ones), and never retries a lock timeout. The
waits are counted as requests to the connection pool, not timed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import psycopg_pool
import pytest
from eventsourcing.persistence import IntegrityError, OperationalError
from psycopg import sql

from application.ports import StoreUnavailableError
from application.store import HarnessStore
from bootstrap.composition import bootstrap
from domain.run import Run
from infrastructure.pg_recorder import FailFastRecorder, connection_lost
from infrastructure.settings import Settings
from tests.integration._private_pg import PrivatePostgres, private_postgres


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivatePostgres]:
    with private_postgres() as found:
        yield found


@pytest.fixture
def private_store(cluster: PrivatePostgres) -> Iterator[HarnessStore]:
    """A store with a warm pool of three connections on the private cluster."""
    if not cluster.accepts_connections():  # a failed test may have left it stopped
        cluster.start()
    settings = Settings(
        database_url=cluster.url,
        database_schema=f"rec_{uuid.uuid4().hex[:8]}",
        db_connect_timeout=1,
        db_pool_size=3,
    )
    bootstrap(settings, create=True).close()  # `harness db init`; then open it as a service does
    with bootstrap(settings) as services:
        _pool(services.store).wait(timeout=30)  # every pooled connection is open (and will be cut)
        yield services.store


def _pool(store: HarnessStore) -> psycopg_pool.ConnectionPool[Any]:
    recorder = store.recorder
    assert isinstance(recorder, FailFastRecorder)
    return recorder.datastore.pool


def _requests(store: HarnessStore) -> int:
    """How many connections were asked of the pool so far (one per attempt)."""
    return _pool(store).get_stats().get("requests_num", 0)


def _new_run() -> Run:
    return Run.start("session-1", "why?", datetime.now(UTC) + timedelta(minutes=1))


def test_while_the_server_is_down_each_call_fails_after_one_wait(
    cluster: PrivatePostgres, private_store: HarnessStore
) -> None:
    cluster.stop()
    try:
        before = _requests(private_store)
        with pytest.raises(StoreUnavailableError, match="couldn't get a connection"):
            private_store.head()
        # a pooled connection found dead, the pool checked, then one wait for a new one
        assert _requests(private_store) - before <= 2

        calls: list[Callable[[], object]] = [
            private_store.head,
            lambda: private_store.save_all(_new_run()),
        ]
        for call in calls:
            before = _requests(private_store)
            with pytest.raises(StoreUnavailableError, match="couldn't get a connection"):
                call()
            assert _requests(private_store) - before == 1  # the library's recorder: 10
    finally:
        cluster.start()
    run = _new_run()
    assert private_store.save_all(run)  # the first call after the restart succeeds
    assert private_store.get_run(run.id).id == run.id


def test_after_a_restart_the_first_read_and_write_succeed_on_a_pool_of_dead_connections(
    cluster: PrivatePostgres, private_store: HarnessStore
) -> None:
    cluster.stop()
    cluster.start()
    head = private_store.head()  # three dead connections pooled: one is found, all are dropped
    run = _new_run()
    position = private_store.save_all(run)
    assert position is not None and position > head
    assert private_store.get_run(run.id).id == run.id


def test_a_lock_timeout_is_not_retried(pg_settings: Settings) -> None:
    settings = pg_settings.model_copy(update={"db_lock_timeout": 1})
    bootstrap(settings, create=True).close()
    services = bootstrap(settings)
    store = services.store
    table = sql.Identifier(settings.database_schema, "harness_events")
    try:
        with psycopg.connect(settings.database_url) as holder:
            holder.execute(sql.SQL("LOCK TABLE {} IN EXCLUSIVE MODE").format(table))
            before = _requests(store)
            with pytest.raises(StoreUnavailableError, match="lock"):
                store.save_all(_new_run())
            assert _requests(store) - before == 1
            holder.rollback()
        assert store.save_all(_new_run())  # the lock is gone: the next write goes through
    finally:
        services.close()


def _failure(cause: BaseException) -> OperationalError:
    try:
        raise OperationalError(str(cause)) from cause
    except OperationalError as error:
        return error


@pytest.mark.parametrize(
    ("cause", "lost"),
    [
        (psycopg.OperationalError("server closed the connection unexpectedly"), True),
        (psycopg.errors.AdminShutdown("terminating connection"), True),  # 57P01: a restart
        (psycopg.errors.CannotConnectNow("the database system is starting up"), True),
        (psycopg.errors.ConnectionFailure("connection failure"), True),  # 08006
        (psycopg.errors.LockNotAvailable("lock timeout"), False),  # waited already
        (psycopg.errors.QueryCanceled("statement timeout"), False),
        (psycopg_pool.PoolTimeout("couldn't get a connection"), False),  # waited already
    ],
)
def test_only_a_lost_connection_is_tried_again(cause: BaseException, lost: bool) -> None:
    assert connection_lost(_failure(cause)) is lost


def test_a_conflict_is_never_retried_and_stays_a_conflict(
    private_store: HarnessStore,
) -> None:
    run = _new_run()
    private_store.save_all(run)
    stored = private_store.recorder.select_events(run.id)
    before = _requests(private_store)
    with pytest.raises(IntegrityError):
        private_store.recorder.insert_events(list(stored))
    assert _requests(private_store) - before == 1


def test_events_that_landed_are_recognised_by_their_exact_bytes(
    private_store: HarnessStore,
) -> None:
    run = _new_run()
    run.attempt_routing()
    position = private_store.save_all(run)
    recorder = private_store.recorder
    assert isinstance(recorder, FailFastRecorder)
    stored = list(recorder.select_events(run.id))
    assert len(stored) == 2
    positions = recorder.landed(stored)  # what a retry after a lost commit is told
    assert positions is not None and positions[-1] == position
    assert positions == sorted(positions)
    forged = stored[1].__class__(
        stored[1].originator_id, stored[1].originator_version, stored[1].topic, b'{"a":1}'
    )
    assert recorder.landed([stored[0], forged]) is None  # another writer's event: a conflict
    later = stored[1].__class__(run.id, 3, stored[1].topic, stored[1].state)
    assert recorder.landed([later]) is None  # never stored
