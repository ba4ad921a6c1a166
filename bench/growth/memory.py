"""``--trace-memory``: what the worker holds on to between two store sizes, and where it is.

The store grows as in the bench (the served worker's own chat service, live projections
following) to the smallest size; there, with the projections caught up and after a full
collection, ``tracemalloc`` starts and the live objects are counted by type. After growing to the
largest size (caught up, collected again) a second snapshot holds exactly what was allocated in
between and is still alive. The report gives the resident memory (RSS) at both sizes, the Python
heap that was traced between them, and ``tracemalloc``'s own memory: RSS growth well beyond the
traced bytes plus that overhead is held outside Python's allocations (SQLite's page cache, the
C allocator's fragmentation). Then the largest holders by traceback and the types whose count
of live objects grew. Tracing slows the runs between the sizes several times over.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass

from bench.common import place
from bench.growth.fill import Filler, memory_kb
from bench.growth.measure import caught_up
from bench.sse.service import serving
from bootstrap.composition import Overrides, bootstrap

TOP = 15
"""Tracebacks and types listed."""
FRAMES = 12
"""Frames kept per traced allocation (deep enough to reach the caller that holds it)."""


@dataclass(frozen=True)
class Point:
    """The process at one size: resident memory, traced heap, and live objects by type."""

    runs: int
    rss_kb: int
    traced_kb: int
    overhead_kb: int
    """``tracemalloc``'s own memory (counts in RSS, not in the traced heap)."""
    objects: Counter[str]


def live_objects() -> Counter[str]:
    """The objects the collector tracks, counted by their type's qualified name."""
    return Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())


def point(runs: int) -> Point:
    """Measure the process now, after a full collection."""
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
    overhead = tracemalloc.get_tracemalloc_memory() if tracemalloc.is_tracing() else 0
    return Point(runs, memory_kb(), traced // 1024, overhead // 1024, live_objects())


def trace_memory(backend: str, first: int, last: int, frames: int = FRAMES) -> None:
    """Grow a fresh store on ``backend`` to ``first`` runs, then trace growing it to ``last``."""
    with place(backend) as where, ExitStack() as stack:
        quiet = Overrides(heartbeat=False)
        runtime = stack.enter_context(
            bootstrap(where.settings, create=True, sample=True, overrides=quiet)
        )
        served = stack.enter_context(serving(where.settings, runtime.store))
        worker = served.app.state.worker
        filler = Filler(worker.dispatcher.service)
        filler.fill_to(first)
        caught_up(worker)
        before = point(first)
        tracemalloc.start(frames)
        try:
            filler.fill_to(last)
            caught_up(worker)
            gc.collect()
            snapshot = tracemalloc.take_snapshot()  # before the count, which allocates
            after = point(last)
        finally:
            tracemalloc.stop()
    report(backend, before, after, snapshot)


def report(backend: str, before: Point, after: Point, snapshot: tracemalloc.Snapshot) -> None:
    """Print the growth between the two points, its holders and the types that grew."""
    runs = after.runs - before.runs
    grew = after.rss_kb - before.rss_kb
    outside = grew - after.traced_kb - after.overhead_kb
    print(f"-- memory on {backend}: {before.runs} -> {after.runs} runs --")
    print(f"  RSS {before.rss_kb / 1024:.1f} -> {after.rss_kb / 1024:.1f} MB (+{grew} kB)")
    print(f"  traced Python heap still held: {after.traced_kb} kB")
    print(f"  tracemalloc's own memory: {after.overhead_kb} kB")
    print(f"  RSS growth outside the traced heap: {outside} kB")
    print(f"  per run: RSS {1024 * grew / runs:.0f} B, heap {1024 * after.traced_kb / runs:.0f} B")
    print(f"-- top {TOP} holders by traceback --")
    for stat in snapshot.statistics("traceback")[:TOP]:
        print(f"  {stat.size / 1024:.1f} kB in {stat.count} blocks")
        for line in stat.traceback.format(limit=8):
            print(f"    {line}")
    print(f"-- top {TOP} types by growth in live objects --")
    grown = after.objects.copy()
    grown.subtract(before.objects)
    for name, count in grown.most_common(TOP):
        print(f"  {count:+8d}  {name}")
