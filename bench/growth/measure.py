"""One backend: serve the app, grow the store size by size, time the reads and runs at each."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from bench.common import interleaved, percentile, place, shares
from bench.growth import READS, ROUNDS
from bench.growth.fill import Filler, memory_kb, questions
from bench.growth.heavy import Heavy, heavy_runs
from bench.growth.plans import analyse, autovacuum_off, plans, statistics_note
from bench.growth.reads import cli_list, getter, http_reads, timed
from bench.sse.service import serving
from bootstrap.composition import Overrides, bootstrap
from projections.queries import trace_rows
from projections.run_listing import RunFilter, RunKey, list_runs

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Connection

    from api.deps import Worker

CATCH_UP = 1800.0
"""The longest the projections may take to reach the log's head after a fill."""
WARM_UP = 2


@dataclass
class Size:
    """What one size gave: fill seconds, memory, and each measurement's durations."""

    runs: int
    fill_seconds: float
    rss_kb: int
    deep_page: int
    seconds: dict[str, list[float]] = field(default_factory=dict)

    def p(self, name: str, q: float) -> float:
        """Percentile ``q`` of measurement ``name``, in milliseconds."""
        return 1000 * percentile(self.seconds[name], q)


@dataclass
class Grown:
    """What one backend gave."""

    backend: str
    sizes: list[Size] = field(default_factory=list)
    heavy: list[Heavy] = field(default_factory=list)
    plans: dict[str, Any] = field(default_factory=dict)
    note: str = ""


def caught_up(worker: Worker) -> None:
    """Wait until every projection has applied the log's head."""
    if not worker.projector.wait_for(worker.store.head(), CATCH_UP):
        raise RuntimeError(f"the projections did not catch up within {CATCH_UP:g} s")


def measure_size(worker: Worker, client: httpx.Client, filler: Filler, samples: int) -> Size:
    """The reads (interleaved, rotating), then the runs, at the store's current size."""
    paths, deep_page = http_reads(client, filler)
    reads: dict[str, Callable[[], object]] = {name: getter(client, paths[name]) for name in paths}
    reads["cli"] = cli_list(worker.settings)
    size = Size(filler.made, 0.0, memory_kb(), deep_page, {name: [] for name in READS})
    for name in READS:
        timed(reads[name], WARM_UP)
    for _, name, share in interleaved(READS, shares(samples, ROUNDS)):
        size.seconds[name] += timed(reads[name], share)
    question = questions()[0]
    size.seconds["run"] = timed(lambda: filler.one(question), samples)  # reads wait for none
    return size


def query_reads(filler: Filler, deep: RunKey | None) -> dict[str, Callable[[Connection], object]]:
    """The list and trace queries the HTTP reads make, for their plans."""
    after, before = filler.window()
    return {
        "first": lambda c: list_runs(c, RunFilter(), 50),
        "deep": lambda c: list_runs(c, RunFilter(), 50, start=deep),
        "filter_status": lambda c: list_runs(c, RunFilter(status="SUCCESS"), 50),
        "filter_intent": lambda c: list_runs(c, RunFilter(intent="SYSTEM_CHAT"), 50),
        "filter_window": lambda c: list_runs(
            c, RunFilter(created_after=after, created_before=before), 50
        ),
        "owner": lambda c: list_runs(c, RunFilter(owner="ann"), 50),
        "trace": lambda c: trace_rows(c, filler.oldest),
    }


def deep_key(worker: Worker, pages: int) -> RunKey | None:
    """The place page ``pages`` starts after (None: the first page)."""
    start: RunKey | None = None
    with worker.engine.connect() as connection:
        for _ in range(pages - 1):
            start = list_runs(connection, RunFilter(), 50, start=start).next or start
    return start


def bench_backend(backend: str, sizes: list[int], samples: int) -> Grown:
    """Grow a fresh store on ``backend`` through ``sizes``, measuring at each; then the rest."""
    grown = Grown(backend)
    with place(backend) as where, ExitStack() as stack:
        quiet = Overrides(heartbeat=False)
        runtime = stack.enter_context(
            bootstrap(where.settings, create=True, sample=True, overrides=quiet)
        )
        served = stack.enter_context(serving(where.settings, runtime.store))
        worker: Worker = served.app.state.worker
        filler = Filler(worker.dispatcher.service)
        client = stack.enter_context(httpx.Client(base_url=served.base, timeout=120))
        stale = autovacuum_off(runtime.engine)
        for target in sizes:
            took = filler.fill_to(target)
            caught_up(worker)
            if stale:
                analyse(runtime.engine)
            size = measure_size(worker, client, filler, samples)
            size.fill_seconds = took
            grown.sizes.append(size)
            print(
                f"  {backend:8} {target:>7} runs: filled in {took:.0f} s, RSS "
                f"{size.rss_kb / 1024:.0f} MB, first page p50 {size.p('first', 50):.2f} ms",
                flush=True,
            )
        caught_up(worker)
        deep = deep_key(worker, grown.sizes[-1].deep_page)
        grown.plans = plans(runtime.engine, query_reads(filler, deep))
        grown.note = statistics_note(runtime.engine)
        grown.heavy = heavy_runs(where.settings, runtime.store)
    return grown
