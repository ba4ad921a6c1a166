"""One backend: load the rows, then time scrapes against the bare read of the same rows."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prometheus_client import generate_latest

from api.metrics import Exposition, LocalMetrics, read_snapshot
from bench.common import interleaved, percentile, place
from bench.metrics.load import load
from bootstrap.composition import Overrides, bootstrap

SCRAPE, FLOOR = "scrape", "floor"
FLOOR_SQL = "SELECT family, part, labels, value FROM metric_sample"


@dataclass
class BackendReport:
    """What one backend measured: milliseconds per scrape and per bare read."""

    backend: str
    runs: int
    rows: int
    load_seconds: float
    exposition_bytes: int = 0
    samples: dict[str, list[float]] = field(default_factory=lambda: {SCRAPE: [], FLOOR: []})

    def at(self, name: str, p: float) -> float:
        """The ``p`` percentile of ``name`` in milliseconds."""
        return percentile(self.samples[name], p)


def bench_backend(backend: str, runs: int, scrapes: int) -> BackendReport:
    """Load ``runs`` runs' rows on a fresh place of ``backend`` and time ``scrapes`` of each."""
    with (
        place(backend) as where,
        bootstrap(where.settings, create=True, overrides=Overrides(heartbeat=False)) as services,
    ):
        began = time.perf_counter()
        rows = load(services.engine, runs)
        report = BackendReport(backend, runs, rows, time.perf_counter() - began)
        projector, engine, local = services.projector(), services.engine, LocalMetrics()

        def scrape() -> bytes:
            return generate_latest(Exposition(read_snapshot(engine, projector), local))

        def floor() -> None:
            with engine.connect() as connection:
                connection.exec_driver_sql(FLOOR_SQL).fetchall()

        report.exposition_bytes = len(scrape())  # and a warm-up of both
        floor()
        actions = {SCRAPE: scrape, FLOOR: floor}
        for _, name, _ in interleaved((SCRAPE, FLOOR), [1] * scrapes):
            start = time.perf_counter_ns()
            actions[name]()
            report.samples[name].append((time.perf_counter_ns() - start) / 1e6)
        return report
