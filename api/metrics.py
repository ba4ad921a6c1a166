"""What ``GET /metrics`` serves: the log's counts from the read side, and this process's own.

Two sources, so that ``harness serve --workers N`` answers the same numbers from every worker:

* :class:`LogCollector`: everything derivable from the log, read at scrape time from the
  ``metrics`` projection's few rows (``metric_sample``), the projections' positions and the
  log's head. Every worker reads the same rows; they survive restarts; a scrape costs three
  small queries whatever the number of runs.
* :class:`LocalMetrics`: what only a process knows (admission refusals, open event streams,
  its limits, HTTP requests by route and status with their latency, the build's version, and
  alone its ``process_*`` series).
  Alone, a worker serves its own values; with ``PROMETHEUS_MULTIPROC_DIR`` set (``harness
  serve --workers N`` sets it to a private directory it creates and removes) prometheus_client's
  multiprocess mode sums every worker's values, so each worker serves the totals.
"""

from __future__ import annotations

import contextlib
import glob
import os
import platform
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import (
    PROCESS_COLLECTOR,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from infrastructure.version import harness_version
from projections.metric_families import (
    ADMISSION_REFUSALS,
    BUILD_INFO,
    HTTP_DURATION,
    HTTP_REQUESTS,
    INF,
    LIMITS,
    LOG_FAMILIES,
    PROJECTION_LAG,
    RUNS,
    RUNS_IN_PROGRESS,
    RUNS_STARTED,
    SSE_STREAMS,
    SSE_STREAMS_BY_KEY,
    SUM,
    TOTAL,
    Family,
)
from projections.metric_reads import MetricSample, metric_samples, tracked_positions

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from sqlalchemy import Engine

    from projections.runner import Projector

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

Labels = tuple[str, ...]


@dataclass(frozen=True)
class LogSnapshot:
    """The log-derived rows one scrape read: samples and each projection's lag."""

    samples: list[MetricSample]
    lags: dict[str, int]


def read_snapshot(engine: Engine, projector: Projector) -> LogSnapshot:
    """Read the metrics rows and the projections' lag (blocking: run it in a thread).

    The log's head, then the positions, then the rows: each statement sees what was committed
    when it began (PostgreSQL's read committed), so the rows are at least as new as the
    positions, and a lag of 0 means they count the whole log as it was when the scrape began.
    Read the other way round, a batch committing in between showed a lag of 0 beside rows
    that did not count it yet.
    """
    head = projector.store.head()
    with engine.connect() as connection:
        positions = tracked_positions(connection)
        samples = metric_samples(connection)
    lags = {name: max(0, head - positions.get(name, 0)) for name in projector.names}
    return LogSnapshot(samples, lags)


class LogCollector:
    """A prometheus_client collector of one :class:`LogSnapshot` (no I/O of its own)."""

    def __init__(self, snapshot: LogSnapshot) -> None:
        """Serve ``snapshot``."""
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        """Every log-derived family, then the runs in progress and the projections' lag."""
        by_family: dict[str, list[MetricSample]] = defaultdict(list)
        for sample in self.snapshot.samples:
            by_family[sample.family].append(sample)
        for family in LOG_FAMILIES:
            found = by_family.get(family.name, [])
            yield (
                _histogram(family, found) if family.kind == "histogram" else _counter(family, found)
            )
        started = sum(s.value for s in by_family.get(RUNS_STARTED.name, []))
        finished = sum(s.value for s in by_family.get(RUNS.name, []))
        yield GaugeMetricFamily(RUNS_IN_PROGRESS.name, RUNS_IN_PROGRESS.help, started - finished)
        lag = GaugeMetricFamily(PROJECTION_LAG.name, PROJECTION_LAG.help, labels=["projection"])
        for name, behind in sorted(self.snapshot.lags.items()):
            lag.add_metric([name], behind)
        yield lag


def _values(family: Family, sample: MetricSample) -> list[str]:
    return [sample.labels.get(name, "") for name in family.labels]


def _counter(family: Family, samples: list[MetricSample]) -> Metric:
    metric = CounterMetricFamily(family.name, family.help, labels=list(family.labels))
    totals = sorted((_values(family, s), s.value) for s in samples if s.part == TOTAL)
    if not totals and not family.labels:
        totals = [([], 0)]  # a counter without labels starts at 0
    for values, value in totals:
        metric.add_metric(values, value)
    return metric


def _histogram(family: Family, samples: list[MetricSample]) -> Metric:
    """Cumulative buckets from the stored per-bucket counts; sums in seconds."""
    counts: dict[Labels, dict[str, int]] = defaultdict(dict)
    for sample in samples:
        counts[tuple(_values(family, sample))][sample.part] = sample.value
    if not counts and not family.labels:
        counts[()] = {}
    metric = HistogramMetricFamily(family.name, family.help, labels=list(family.labels))
    for values, parts in sorted(counts.items()):
        buckets: list[tuple[str, float]] = []
        total = 0
        for bound in family.bounds:
            total += parts.get(str(bound), 0)
            buckets.append((str(bound / family.scale), total))
        buckets.append((INF, total + parts.get(INF, 0)))
        metric.add_metric(list(values), buckets, parts.get(SUM, 0) / family.scale)
    return metric


def multiprocess_problem(environ: Mapping[str, str]) -> str | None:
    """What is wrong with a ``PROMETHEUS_MULTIPROC_DIR`` set in ``environ`` (None: nothing)."""
    directory = environ.get(MULTIPROC_ENV)
    if not directory or (os.path.isdir(directory) and os.access(directory, os.W_OK | os.X_OK)):
        return None
    return (
        f"{MULTIPROC_ENV}={directory!r} is not a writable directory: prometheus_client keeps"
        " each worker's own metrics there; create it empty, or unset it (harness serve"
        " --workers N makes its own)"
    )


class LocalMetrics:
    """This process's admission refusals, open event streams and limits (across workers)."""

    def __init__(self) -> None:
        """Make the metrics; in multiprocess mode their values go to this pid's files."""
        disable_created_metrics()  # type: ignore[no-untyped-call]  # no ``_created`` series beside the counter
        self.directory = os.environ.get(MULTIPROC_ENV) or None
        self.refusals = Counter(ADMISSION_REFUSALS.name, ADMISSION_REFUSALS.help, registry=None)
        self.streams = Gauge(
            SSE_STREAMS.name, SSE_STREAMS.help, registry=None, multiprocess_mode="livesum"
        )
        self.streams_by_key = Gauge(
            SSE_STREAMS_BY_KEY.name,
            SSE_STREAMS_BY_KEY.help,
            SSE_STREAMS_BY_KEY.labels,
            registry=None,
            multiprocess_mode="livesum",
        )
        # a worker's own limits: the same in every worker, so the largest live one is the value
        self.limits = [
            Gauge(f.name, f.help, registry=None, multiprocess_mode="livemax") for f in LIMITS
        ]
        self.build = Gauge(
            BUILD_INFO.name, BUILD_INFO.help, BUILD_INFO.labels, registry=None,
            multiprocess_mode="livemax",
        )  # fmt: skip
        self.build.labels(harness_version(), platform.python_version()).set(1)
        self.requests = Counter(
            HTTP_REQUESTS.name, HTTP_REQUESTS.help, HTTP_REQUESTS.labels, registry=None
        )
        seconds = tuple(bound / HTTP_DURATION.scale for bound in HTTP_DURATION.bounds)
        self.durations = Histogram(
            HTTP_DURATION.name, HTTP_DURATION.help, HTTP_DURATION.labels, registry=None,
            buckets=seconds,
        )  # fmt: skip

    def http(self, method: str, route: str, status: int, seconds: float) -> None:
        """Count one HTTP request and its time to the response's start."""
        self.requests.labels(method, route, str(status)).inc()
        self.durations.labels(method, route).observe(seconds)

    def show_limits(self, *values: int) -> None:
        """Serve the worker's limits, in the order of :data:`LIMITS`."""
        for gauge, value in zip(self.limits, values, strict=True):
            gauge.set(value)

    def collect(self) -> Iterable[Metric]:
        """The metrics: every live worker's together in multiprocess mode, else this one's."""
        if self.directory is None:
            mine = [self.refusals, self.streams, self.streams_by_key, *self.limits, self.build]
            mine += [self.requests, self.durations]
            families = [family for metric in mine for family in metric.collect()]
            return families + list(PROCESS_COLLECTOR.collect())  # process_*: this process's
        _forget_dead(self.directory)
        collector = MultiProcessCollector(None, self.directory)  # type: ignore[no-untyped-call]
        return collector.collect()  # type: ignore[no-any-return,no-untyped-call]

    def close(self) -> None:
        """This process stops serving: its open streams no longer count."""
        if self.directory is not None:
            with contextlib.suppress(OSError):
                mark_process_dead(os.getpid(), self.directory)  # type: ignore[no-untyped-call]


def _forget_dead(directory: str) -> None:
    """Drop the live gauges of workers that died without closing (uvicorn replaced them)."""
    for path in glob.glob(os.path.join(directory, "gauge_livesum_*.db")):
        pid = path.rsplit("_", 1)[1].removesuffix(".db")
        if pid.isdigit() and not _alive(int(pid)):
            with contextlib.suppress(OSError):
                mark_process_dead(int(pid), directory)  # type: ignore[no-untyped-call]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Exposition:
    """A registry-like collector of one scrape: the snapshot, then the local metrics."""

    def __init__(self, snapshot: LogSnapshot, local: LocalMetrics) -> None:
        """Serve ``snapshot`` and ``local``."""
        self.parts = (LogCollector(snapshot), local)

    def collect(self) -> Iterator[Metric]:
        """Every family of the scrape."""
        for part in self.parts:
            yield from part.collect()
