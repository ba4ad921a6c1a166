"""The log's order under concurrent writers on PostgreSQL: a tailing reader never skips an event.

Notification ids come from a sequence, which numbers inserts in the order they are made, not the
order they commit. The recorder's append function (``infrastructure/pg_append.py``) takes the
events table's ``EXCLUSIVE`` lock inside its one statement, so ids are committed in the order
they are issued and a reader that always asks for "after the last id I saw" sees every event.
These tests attack that: sixteen writers with random pauses and a follower polling as fast as it
can; an in-flight lockless insert that a reader must not pass; a store made before the function
existed.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from eventsourcing.persistence import ProgrammingError, Tracking
from eventsourcing.utils import get_topic
from psycopg import sql

from application.store import HarnessStore
from bootstrap.composition import bootstrap
from domain.run import Run
from domain.states import CancellationReason, ChatApplicationStatus, Intent
from infrastructure.settings import Settings

pytestmark = pytest.mark.postgres

WRITERS = 16
RUNS_PER_WRITER = 25
SAVES_PER_RUN = 3
DEADLINE_S = 120.0  # a bound on a hung thread, not a synchronisation device
PAGE = 100  # the follower's page: far fewer entries than the writers append in all
PAUSE_S = 0.004  # the most a writer pauses between two saves (random, for interleaving)


def _wait_until(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.005)


def _write_runs(store: HarnessStore, worker: int, errors: list[str]) -> None:
    """Save ``RUNS_PER_WRITER`` runs in three transactions each, pausing at random in between."""
    rng = random.Random(worker)
    deadline = datetime.now(UTC) + timedelta(hours=1)
    try:
        for n in range(RUNS_PER_WRITER):
            run = Run.start(f"w{worker}-s{n % 3}", f"why? {worker}/{n}", deadline)
            run.attempt_routing()
            store.save_all(run)
            time.sleep(rng.uniform(0, PAUSE_S))
            run.decide_routing(Intent.KNOWLEDGE_QUERY)
            run.change_status(ChatApplicationStatus.KNOWLEDGE_SEARCHING)
            store.save_all(run, store.new_collection(run.id))  # two streams in one append
            time.sleep(rng.uniform(0, PAUSE_S))
            run.cancel(CancellationReason.USER_REQUESTED)
            run.finish(datetime.now(UTC))
            store.save_all(run)
            time.sleep(rng.uniform(0, PAUSE_S))
    except Exception as error:  # reported by the test, which fails with it
        errors.append(f"writer {worker}: {error!r}")


class Tail:
    """A follower that asks, as fast as it can, for the entries after the last id it saw."""

    def __init__(self, store: HarnessStore) -> None:
        """Follow ``store``'s log from its start."""
        self.store = store
        self.seen: list[int] = []
        self.caught_up = 0
        """Reads that reached the head: entries, fewer than a page (so none were left)."""
        self.stop = threading.Event()
        self.errors: list[str] = []

    def poll(self) -> int:
        """Read once past the last id seen; how many entries came."""
        after = self.seen[-1] if self.seen else 0
        page = self.store.recorder.select_notifications(
            start=after, limit=PAGE, inclusive_of_start=False
        )
        self.seen.extend(n.id for n in page)
        self.caught_up += 0 < len(page) < PAGE
        return len(page)

    def follow(self) -> None:
        """Poll until told to stop, then drain what is left."""
        try:
            while not self.stop.is_set():
                self.poll()
            while self.poll():
                pass
        except Exception as error:
            self.errors.append(repr(error))


def _log(store: HarnessStore) -> list[int]:
    """Every id of the log, in one read after everything committed."""
    return [n.id for n in store.recorder.select_notifications(start=None, limit=1_000_000)]


def test_sixteen_writers_and_a_live_follower_see_every_event_once_in_order(
    pg_settings: Settings,
) -> None:
    settings = pg_settings.model_copy(update={"db_pool_size": WRITERS + 2})
    services = bootstrap(settings, create=True)
    store = services.store
    tail = Tail(store)
    errors: list[str] = []
    follower = threading.Thread(target=tail.follow)
    writers = [
        threading.Thread(target=_write_runs, args=(store, i, errors)) for i in range(WRITERS)
    ]
    try:
        follower.start()
        for writer in writers:
            writer.start()
        for writer in writers:
            writer.join(timeout=DEADLINE_S)
            assert not writer.is_alive(), "a writer hung"
        tail.stop.set()
        follower.join(timeout=DEADLINE_S)
        assert not follower.is_alive(), "the follower hung"
        assert not errors and not tail.errors, errors + tail.errors

        log = _log(store)
        starts = store.recorder.select_notifications(
            None, 10_000, topics=[get_topic(Run.RunStarted)]
        )
        assert len(starts) == WRITERS * RUNS_PER_WRITER
        assert tail.seen == log  # every entry, in the log's order: none skipped, none twice
        assert all(a < b for a, b in zip(log, log[1:], strict=False))
        # It followed live: it reached the head again and again while the writers wrote (read
        # only at the end, in full pages, it would have reached it once).
        assert tail.caught_up > 1, tail.caught_up
    finally:
        tail.stop.set()
        services.close()


def _waiting_on_the_table(admin: psycopg.Connection[Any], schema: str) -> bool:
    """Whether some backend waits for a lock on the events table of ``schema``."""
    found = admin.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation"
        " JOIN pg_namespace s ON s.oid = c.relnamespace"
        " WHERE NOT l.granted AND s.nspname = %s AND c.relname = 'harness_events'",
        (schema,),
    ).fetchone()
    return bool(found and found[0])


def _insert_row(conn: psycopg.Connection[Any], schema: str) -> int:
    """A lockless writer's insert (as the library's own function does): its id, uncommitted."""
    table = sql.Identifier(schema, "harness_events")
    statement = sql.SQL(
        "INSERT INTO {} (originator_id, originator_version, topic, state)"
        " VALUES (gen_random_uuid(), 1, 'test:Lockless', '\\x7b7d') RETURNING notification_id"
    ).format(table)
    found = conn.execute(statement).fetchone()
    assert found is not None
    return int(found[0])


def test_a_reader_is_never_shown_an_id_past_one_still_in_flight(pg_settings: Settings) -> None:
    """An insert in flight holds the table; our append waits for it, so nothing is passed over.

    First the hazard, to show the follower's check can fail: two lockless inserts, the later id
    committed first, and a reader past it never sees the earlier one. Then the same in-flight
    insert against our append: the append waits for it, and a reader sees both, in order.
    """
    services = bootstrap(pg_settings, create=True)
    store, schema = services.store, pg_settings.database_schema
    url = pg_settings.database_url
    admin = psycopg.connect(url, autocommit=True)
    first, second = psycopg.connect(url), psycopg.connect(url)
    try:
        earlier, later = _insert_row(first, schema), _insert_row(second, schema)
        second.commit()
        tail = Tail(store)
        tail.poll()
        assert tail.seen == [later]  # the reader is now past `earlier` ...
        first.commit()
        tail.poll()
        assert earlier not in tail.seen  # ... and never sees it: the skip the lock prevents
        assert earlier < later

        in_flight = _insert_row(first, schema)  # uncommitted, holding its ROW EXCLUSIVE lock
        saved: list[int | None] = []
        run = Run.start("s", "why?", datetime.now(UTC) + timedelta(hours=1))
        appender = threading.Thread(target=lambda: saved.append(store.save_all(run)))
        appender.start()
        _wait_until(
            "our append to wait for the table", lambda: _waiting_on_the_table(admin, schema)
        )
        assert tail.poll() == 0 and not saved  # nothing past the in-flight id is visible
        first.commit()
        appender.join(timeout=DEADLINE_S)
        assert saved and saved[0] is not None and saved[0] > in_flight
        tail.poll()
        assert tail.seen == [i for i in _log(store) if i != earlier]  # in_flight, then ours
    finally:
        for conn in (admin, first, second):
            conn.close()
        services.close()


def test_a_store_made_before_the_append_function_gets_it_on_its_first_append(
    pg_settings: Settings,
) -> None:
    bootstrap(pg_settings, create=True).close()
    function = sql.Identifier(pg_settings.database_schema, "harness_events_append")
    with psycopg.connect(pg_settings.database_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP FUNCTION {}").format(function))  # the old recorder's store
        old = _insert_row(admin, pg_settings.database_schema)  # written by the old recorder
    bootstrap(pg_settings, create=True).close()  # `harness db init` again: idempotent
    with bootstrap(pg_settings) as services:  # opened as a worker does: creates nothing
        with psycopg.connect(pg_settings.database_url, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP FUNCTION {}").format(function))
        run = Run.start("s", "why?", datetime.now(UTC) + timedelta(hours=1))
        position = services.store.save_all(run)  # recreates the function, then appends
        assert position is not None and position > old
        assert services.store.get_run(run.id).id == run.id
        again = services.store.save_all(Run.start("s2", "again?", run.deadline))
        assert again is not None and again > position


def test_a_tracking_record_is_refused_not_dropped(pg_settings: Settings) -> None:
    """The append function writes events only: a process application's tracking must not vanish."""
    with bootstrap(pg_settings, create=True) as services:
        run = Run.start("s", "why?", datetime.now(UTC) + timedelta(hours=1))
        head = services.store.head()
        with pytest.raises(ProgrammingError, match="tracking"):
            services.store.recorder.insert_events([], tracking=Tracking("upstream", 1))
        assert services.store.head() == head
        assert services.store.save_all(run)
