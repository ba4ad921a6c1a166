"""Shared by the recovery tests: leases, runs of named workers and sweeps at a fixed time.

Leases are real rows written through ``SqlLeases``; an expired one is a lease renewed for 0
seconds, a live one for an hour. The sweeper's clock is a fixed time, so "older than one lease
TTL" is decided without waiting.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from sqlalchemy import Engine

from application.recovery import RecoverySweep, SweepReport, Unfinished
from application.store import HarnessStore, events_of
from infrastructure.leases import SqlLeases, WorkerIdentity
from infrastructure.processes import process_identity
from infrastructure.read_tables import sse_event
from projections.queries import unfinished_runs
from projections.runner import Projector
from tests.helpers import FixedClock
from tests.integration._projection_helpers import QUERY, rows

TTL = 30.0
LATER = timedelta(seconds=TTL + 5)
"""How far ahead of the runs' start the sweeper's clock is: every run is one TTL old."""


def worker(name: str, process: str = "") -> WorkerIdentity:
    return WorkerIdentity(name, "test-host", 1, process)


def start(store: HarnessStore, by: str, deadline_in: timedelta = timedelta(hours=1)) -> UUID:
    store.worker = by
    run_id, _ = store.start_run("ops", QUERY, datetime.now(UTC) + deadline_in)
    return run_id


def sweeper(
    store: HarnessStore, engine: Engine, ahead: timedelta = LATER, **kw: Any
) -> RecoverySweep:
    clock = FixedClock(datetime.now(UTC) + ahead)
    return RecoverySweep(store, SqlLeases(engine), lambda: open_runs(engine), clock, TTL, **kw)


def open_runs(engine: Engine) -> list[Unfinished]:
    with engine.connect() as connection:
        return unfinished_runs(connection)


def sweep(store: HarnessStore, engine: Engine, **kw: Any) -> SweepReport:
    Projector(store, engine).catch_up()  # the sweep lists the read side's open runs
    return sweeper(store, engine, **kw).sweep()


def types(store: HarnessStore, run_id: UUID) -> list[str]:
    return [type(e).__name__ for e in events_of(store, run_id)]


def feed(store: HarnessStore, engine: Engine, run_id: UUID) -> list[tuple[str, dict[str, Any]]]:
    Projector(store, engine).catch_up()
    found = rows(engine, sse_event, sse_event.c.run_id == str(run_id), order_by=[sse_event.c.seq])
    return [(row["event"], row["data"]) for row in found]


@contextmanager
def doomed_process() -> Iterator[str]:
    """A real process of this machine, killed when the block ends: its identity for a lease."""
    with subprocess.Popen([sys.executable, "-c", "input()"], stdin=subprocess.PIPE) as child:
        identity = process_identity(child.pid)
        assert identity, "this test needs Linux /proc"
        try:
            yield identity
        finally:
            child.kill()
