"""Wires crash recovery: the sweep over the read side's open runs and the workers' leases.

The sweep lists candidates from ``diagnosis_run`` (``status`` stays RUNNING until
``RUN_FINISHED``) and decides each on the run's own stream, so a read side that lags only delays
a run's recovery to a later sweep; it never ends a run wrongly.
"""

from __future__ import annotations

from datetime import UTC
from typing import TYPE_CHECKING
from uuid import UUID

from sqlalchemy import select

from application.recovery import RecoverySweep, Unfinished
from infrastructure.composition import SystemClock
from infrastructure.leases import SqlLeases
from infrastructure.read_tables import diagnosis_run

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from sqlalchemy import Engine

    from application.store import HarnessStore
    from infrastructure.settings import Settings


def unfinished_runs(engine: Engine) -> list[Unfinished]:
    """Every run the read side shows without ``RUN_FINISHED``, oldest first."""
    column = diagnosis_run.c
    with engine.connect() as connection:
        rows = connection.execute(
            select(column.run_id, column.created_at)
            .where(column.status == "RUNNING")
            .order_by(column.created_at)
        ).all()
    return [
        Unfinished(
            UUID(run_id),
            created if created.tzinfo else created.replace(tzinfo=UTC),  # SQLite: naive UTC
        )
        for run_id, created in rows
    ]


def recovery_sweep(
    settings: Settings,
    store: HarnessStore,
    engine: Engine,
    executing: Callable[[], Collection[UUID]] | None = None,
) -> RecoverySweep:
    """A sweep of ``store``'s runs; a service worker passes the runs it ``executing``."""
    return RecoverySweep(
        store,
        SqlLeases(engine),
        lambda: unfinished_runs(engine),
        SystemClock(),
        settings.worker_lease_ttl,
        me=store.worker,
        executing=executing,
    )
