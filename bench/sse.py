"""Live-feed latency: ``RUN_FINISHED`` appended to ``done`` at 100 observers vs raw NOTIFY.

Run from the repository root::

    .venv/bin/python bench/sse.py [--runs N] [--observers N] [--notifies N]
        [--client raw|httpx] [--in-process]

The service runs in this process on PostgreSQL, in a fresh schema of database ``harness_bench``
(dropped at the end, also after Ctrl-C): the sample data is loaded and the app
(``api.main.create_app`` with default settings: the offline model, projections following the
log in-process) is served by one uvicorn worker in a thread on a free loopback port, on the
bench's own store object.

For each measured run (after warm-up runs that are not counted):

* the bench starts a detached run with ``POST /v1/runs``: the offline model diagnosing
  ``QUESTION`` (five tool calls, about 46 events). So that the run cannot finish before its
  observers are in, the service's model provider is wrapped in a gate: the run's first model
  call (routing) waits until the bench opens the gate; everything after is the offline model's
  own path, called inline as usual;
* ``--observers`` concurrent observers open ``GET /v1/runs/{id}/stream``, one connection each,
  as asyncio tasks of one event loop in a process of their own (``--in-process``: in a thread of
  this one, sharing the server's GIL). The gate opens only when every one of them has received
  the run's ``metadata`` event, so all are live followers, not replaying, when the run ends;
* the instant ``RUN_FINISHED`` is appended is taken from the store: a listener in
  ``store.listeners`` (called right after the commit, in the run's thread; put first, so it
  runs before the projector is woken) records ``time.perf_counter()`` on ``Run.RunFinished``;
* every observer records ``time.perf_counter()`` when it has read its ``done`` frame. On Linux
  that clock is ``CLOCK_MONOTONIC``, one clock for all processes (elsewhere the observers fall
  back to this process). Delay = done arrival - RUN_FINISHED append: one sample per observer
  and run, so ``--runs`` x ``--observers`` samples, of which p50 and p99 are given. For the
  breakdown, a listener on the service's projector records when the batch holding
  ``RUN_FINISHED`` committed (``projected``), and each run's first and last ``done`` arrival.

The observers' client is part of the instrument: one Python process reads all the streams, so
its own cost per stream is added to the later observers' delays. ``--client raw`` (the default)
is a minimal HTTP/1.1 reader on asyncio streams (chunked bodies, as uvicorn serves them); its
last observer reads ``done`` a couple of milliseconds after the server wrote the last frame.
``--client httpx`` uses ``httpx.AsyncClient`` streams, as a Python client would; on a 2-core
machine it adds tens of milliseconds to the last observers (it parses the 100 streams one after
another), which is the client's time, not the service's; it is there for comparison.

The reference, interleaved with the runs (after each run, its share of ``--notifies`` round
trips, in the observers' process while no stream is open): the raw PostgreSQL NOTIFY round
trip. One autocommit psycopg connection LISTENs in a thread of its own (as the service's
listeners do); another sends ``NOTIFY`` (autocommit); the round trip is from just before the
send until the listening thread has the notification. Target: p99(done delay) <= 20x p99(NOTIFY
round trip); the p50 ratio is printed as context. Both p99s rest on few events (the observers
of one run share its delay; NOTIFY's tail is rare spikes), hence the many runs and round trips by
default. Nothing is asserted; the last lines are JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import multiprocessing.process
import os
import queue
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AsyncExitStack, ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import httpx
import psycopg
import uvicorn
from psycopg import sql

# Run as a script (`python bench/X.py`), this folder comes first on sys.path: put the
# repository root before it, so `projections` is the package and `bench` importable.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from api.main import create_app
from bench.floor import (
    LOCK_TIMEOUT,
    PG_DBNAME,
    PG_HOST,
    PG_PORT,
    PG_USER,
    ensure_database,
    pg_conninfo,
)
from domain.run import Run
from infrastructure.composition import bootstrap
from infrastructure.eventstore import init_store
from infrastructure.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine, Iterable, Sequence
    from multiprocessing.connection import Connection

    from fastapi import FastAPI

    from application.ports import ModelProvider, ModelRequest, ModelResponse
    from application.store import HarnessStore
    from projections.base import Committed

DEFAULT_RUNS = 100
"""The observers of one run share its projector batch, so a run's 100 delays move together: the
p99 over all delays is about the worst run's, and it takes many runs to be stable (about a
minute on 2 cores; with 20 runs the verdict swings with one slow batch)."""
DEFAULT_OBSERVERS = 100
DEFAULT_NOTIFIES = 1000
"""Round trips in all (10 after each run): the NOTIFY p99 is a few rare spikes, so many."""
WARM_UP_RUNS = 2
WARM_UP_NOTIFIES = 20
TARGET = 20.0
"""p99(done delay) / p99(NOTIFY round trip) at most this."""
QUESTION = "Why was checkout slow on 2026-11-29 between 10:00 and 12:00 UTC?"
STARTUP_TIMEOUT = 30.0
CONNECT_TIMEOUT = 30.0
"""Seconds for all observers to have their ``metadata`` (the gate also opens then, regardless)."""
FINISH_TIMEOUT = 60.0
"""Seconds for every ``done`` to arrive once the gate is open."""
NOTIFY_TIMEOUT = 5.0


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


# -- holding a run until its observers are in --------------------------------------------------


class GatedProvider:
    """The service's model provider, whose calls wait while the gate is closed."""

    def __init__(self, inner: ModelProvider) -> None:
        self.name = inner.name
        self.blocking = inner.blocking  # the offline model stays inline: its own call path
        self._inner = inner
        self.gate = threading.Event()
        self.gate.set()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Wait for the gate (bounded, so a stuck bench never hangs a run), then delegate."""
        self.gate.wait(CONNECT_TIMEOUT + 5)
        return self._inner.complete(request)


# -- instants recorded inside the service ------------------------------------------------------


class Stamps:
    """When each run's ``RUN_FINISHED`` was appended, and when each projector batch committed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.finished: dict[str, float] = {}
        self.batches: list[tuple[float, int]] = []

    def on_saved(self, events: Sequence[Any]) -> None:
        """Store listener: stamp ``RUN_FINISHED`` right after its commit."""
        now = time.perf_counter()
        for event in events:
            if isinstance(event, Run.RunFinished):
                with self._lock:
                    self.finished[str(event.originator_id)] = now

    def on_batch(self, batch: Committed) -> None:
        """Projector listener: stamp every committed batch with its last log position."""
        now = time.perf_counter()
        with self._lock:
            self.batches.append((now, batch.last))

    def projected(self, position: int, after: float) -> float | None:
        """When the first batch reaching ``position`` committed (not before ``after``)."""
        with self._lock:
            return next((t for t, p in self.batches if p >= position and t >= after), None)


@dataclass(frozen=True)
class Served:
    """The running server: base URL, app, event loop and HTTP protocol implementation."""

    base: str
    app: FastAPI
    loop: str
    http: str


@contextmanager
def serving(settings: Settings, store: HarnessStore) -> Iterator[Served]:
    """Serve the app (one uvicorn worker) in a thread on a free port."""
    app = create_app(settings, store)
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=5
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not server.started:  # uvicorn has no readiness callback
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the bench server did not start; see the log above")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    loop = type(server.servers[0].get_loop()).__module__.split(".")[0]
    http = str(getattr(config, "http_protocol_class", type(None)).__name__)
    try:
        yield Served(f"http://127.0.0.1:{port}", app, loop, http)
    finally:
        server.should_exit = True
        thread.join(timeout=30)


# -- the reference: a raw NOTIFY round trip ----------------------------------------------------


class NotifyProbe:
    """One connection LISTENs in its own thread; another sends NOTIFY; round trips in seconds."""

    def __init__(self, channel: str) -> None:
        self.channel = sql.Identifier(channel)
        self._listen = psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True)
        self._listen.execute(sql.SQL("LISTEN {}").format(self.channel))
        self._send = psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True)
        self._arrived: queue.Queue[tuple[str, float]] = queue.Queue()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-listen", daemon=True)
        self._thread.start()
        self._sent = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            for notify in self._listen.notifies(timeout=0.2):
                self._arrived.put((notify.payload, time.perf_counter()))

    def round_trip(self) -> float:
        """Seconds from just before a NOTIFY is sent until the listening thread has it."""
        self._sent += 1
        payload = str(self._sent)
        began = time.perf_counter()
        self._send.execute(sql.SQL("NOTIFY {}, {}").format(self.channel, sql.Literal(payload)))
        got, arrived = self._arrived.get(timeout=NOTIFY_TIMEOUT)
        if got != payload:
            raise RuntimeError(f"NOTIFY probe: expected payload {payload}, got {got}")
        return arrived - began

    def close(self) -> None:
        """Stop listening and close both connections."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._listen.close()
        self._send.close()


# -- the observers (their own process by default) ----------------------------------------------


@dataclass
class Watch:
    """What one run's observers saw, in the observers' process."""

    observers: int
    connected: int = 0
    all_in: asyncio.Event = field(default_factory=asyncio.Event)
    arrivals: list[float] = field(default_factory=list)
    frames: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)

    def saw(self, event: str, data: str) -> None:
        """One complete frame (its ending blank line has just been read)."""
        if event == "done":
            self.arrivals.append(time.perf_counter())
            self.outcomes[str(json.loads(data).get("release_outcome"))] += 1
        elif event == "metadata":
            self.connected += 1
            if self.connected == self.observers:
                self.all_in.set()
        self.frames[event] += 1


def parse_frame(lines: Iterable[str]) -> tuple[str, str]:
    """The ``event`` and ``data`` fields of one event-stream frame (single-line data)."""
    event = data = ""
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data = line[5:].strip()
    return event, data


async def observe_httpx(client: httpx.AsyncClient, path: str, watch: Watch) -> None:
    """Read one stream to its end with httpx, handing every frame to ``watch``."""
    async with client.stream("GET", path) as response:
        if response.status_code != 200:
            body = (await response.aread())[:200]
            raise RuntimeError(f"GET {path}: {response.status_code} {body!r}")
        lines: list[str] = []
        async for line in response.aiter_lines():
            if line:
                lines.append(line)
                continue
            event, data = parse_frame(lines)
            if event:
                watch.saw(event, data)
            lines = []


async def observe_raw(base: str, path: str, watch: Watch) -> None:
    """The same with a minimal HTTP/1.1 client on asyncio streams (chunked bodies, as served)."""
    url = httpx.URL(base)
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(
            f"GET {path} HTTP/1.1\r\nHost: {url.host}:{url.port}\r\n"
            "Accept: text/event-stream\r\nConnection: close\r\n\r\n".encode()
        )
        head = await reader.readuntil(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0]
        if not status.startswith(b"HTTP/1.1 200") or b"chunked" not in head.lower():
            raise RuntimeError(f"GET {path}: {status.decode(errors='replace')}")
        buffer = b""
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16):
            buffer += (await reader.readexactly(size + 2))[:-2]
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                event, data = parse_frame(frame.decode().split("\n"))
                if event:
                    watch.saw(event, data)
    finally:
        writer.close()


async def watch_run(
    observe: Callable[[str, Watch], Coroutine[Any, Any, None]],
    path: str,
    observers: int,
    pipe: Connection,
) -> None:
    """Open the streams; report when all have ``metadata``, then what arrived at the end."""
    watch = Watch(observers)
    began = time.perf_counter()
    tasks = [asyncio.create_task(observe(path, watch)) for _ in range(observers)]
    with suppress(TimeoutError):
        await asyncio.wait_for(watch.all_in.wait(), CONNECT_TIMEOUT)
    pipe.send(("in", watch.connected, time.perf_counter() - began))
    done, pending = await asyncio.wait(tasks, timeout=FINISH_TIMEOUT)
    for task in pending:
        task.cancel()
    errors = [repr(task.exception()) for task in done if task.exception() is not None]
    errors += ["no end within the timeout"] * len(pending)
    pipe.send(("done", watch.arrivals, dict(watch.frames), dict(watch.outcomes), errors))


async def observe_runs(
    base: str, observers: int, client: str, channel: str, pipe: Connection
) -> None:
    """Serve the parent's commands until None: watch a run, or measure NOTIFY round trips."""
    async with AsyncExitStack() as stack:
        if client == "httpx":
            limits = httpx.Limits(max_connections=observers + 8, max_keepalive_connections=None)
            http = await stack.enter_async_context(
                httpx.AsyncClient(base_url=base, limits=limits, timeout=FINISH_TIMEOUT)
            )
            observe = partial(observe_httpx, http)
        else:
            observe = partial(observe_raw, base)
        probe = NotifyProbe(channel)
        stack.callback(probe.close)
        while (command := await asyncio.to_thread(pipe.recv)) is not None:
            kind, argument = command
            if kind == "watch":
                await watch_run(observe, str(argument), observers, pipe)
            else:  # blocking on purpose: no stream is open, the loop has nothing else to do
                pipe.send(("notified", [probe.round_trip() for _ in range(int(argument))]))


def observer_main(base: str, observers: int, client: str, channel: str, pipe: Connection) -> None:
    """Entry of the observers' process (or thread): one asyncio loop for all streams."""
    if threading.current_thread() is threading.main_thread():  # our own process: the
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # parent handles Ctrl-C and stops us
    asyncio.run(observe_runs(base, observers, client, channel, pipe))


class Observers:
    """The observers' process (or thread), which also probes NOTIFY, and the pipe to it."""

    def __init__(self, base: str, observers: int, client: str, *, in_process: bool) -> None:
        self.pipe, theirs = multiprocessing.Pipe()
        args = (base, observers, client, f"bench_sse_{uuid4().hex[:12]}", theirs)
        self.worker: multiprocessing.process.BaseProcess | threading.Thread
        if in_process:
            self.worker = threading.Thread(target=observer_main, args=args, daemon=True)
        else:
            self.worker = multiprocessing.get_context("spawn").Process(
                target=observer_main, args=args, name="bench-observers", daemon=True
            )
        self.worker.start()

    def round_trips(self, count: int) -> list[float]:
        """``count`` NOTIFY round trips, in seconds."""
        self.pipe.send(("notify", count))
        (trips,) = self.receive("notified", NOTIFY_TIMEOUT * (count + 1))
        return list(trips)

    def receive(self, kind: str, timeout: float) -> tuple[Any, ...]:
        """The next report, which must be of ``kind``."""
        if not self.pipe.poll(timeout):
            raise RuntimeError(f"the observers sent no {kind!r} report within {timeout:.0f} s")
        report: tuple[Any, ...] = self.pipe.recv()
        if report[0] != kind:
            raise RuntimeError(f"the observers sent {report[0]!r}, expected {kind!r}")
        return report[1:]

    def close(self) -> None:
        """Tell them to stop; end the process if it does not."""
        with suppress(OSError):
            self.pipe.send(None)
        self.worker.join(timeout=5)
        if isinstance(self.worker, multiprocessing.process.BaseProcess) and self.worker.is_alive():
            self.worker.terminate()
            self.worker.join(timeout=5)


# -- one measured run ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSample:
    """One run: its observers' done arrivals and the breakdown instants (perf_counter seconds)."""

    run_id: str
    connected: int
    connect_s: float
    appended: float
    projected: float | None
    arrivals: tuple[float, ...]
    frames: dict[str, int]
    outcomes: dict[str, int]
    errors: tuple[str, ...]

    @property
    def delays(self) -> list[float]:
        """Seconds from RUN_FINISHED appended to each done arrival."""
        return [a - self.appended for a in self.arrivals]


class Bench:
    """Runs watched by many observers, against one served app."""

    def __init__(
        self,
        http: httpx.Client,
        observers: Observers,
        gated: GatedProvider,
        stamps: Stamps,
        store: HarnessStore,
    ) -> None:
        self.http = http
        self.observers = observers
        self.gated = gated
        self.stamps = stamps
        self.store = store

    def run(self) -> RunSample:
        """Start a held run, connect the observers, open the gate, collect every done."""
        self.gated.gate.clear()
        try:
            created = self.http.post("/v1/runs", json={"query": QUESTION})
            created.raise_for_status()
            run_id, path = created.json()["run_id"], created.json()["stream"]
            self.observers.pipe.send(("watch", path))
            connected, connect_s = self.observers.receive("in", CONNECT_TIMEOUT + 10)
        finally:
            self.gated.gate.set()
        arrivals, frames, outcomes, errors = self.observers.receive("done", FINISH_TIMEOUT + 10)
        appended = self.stamps.finished.get(run_id)
        if appended is None:
            raise RuntimeError(f"run {run_id}: no RUN_FINISHED was appended; see the log above")
        position = self.store.head()  # the run's RUN_FINISHED: nothing else writes meanwhile
        return RunSample(
            run_id,
            connected,
            connect_s,
            appended,
            self.stamps.projected(position, appended),
            tuple(arrivals),
            frames,
            outcomes,
            tuple(errors),
        )


@dataclass
class Results:
    """Everything measured."""

    runs: list[RunSample] = field(default_factory=list)
    notifies: list[float] = field(default_factory=list)

    @property
    def delays(self) -> list[float]:
        """Every observer's done delay of every run."""
        return [d for run in self.runs for d in run.delays]


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal shares."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def measure(bench: Bench, runs: int, notifies: int) -> Results:
    """Warm up, then the runs, each followed by its share of NOTIFY round trips."""
    for index in range(WARM_UP_RUNS):
        print(f"  warm-up {index + 1}: {_line(bench.run())}", flush=True)
    bench.observers.round_trips(WARM_UP_NOTIFIES)
    results = Results()
    for index, share in enumerate(shares(notifies, runs)):
        sample = bench.run()
        results.runs.append(sample)
        trips = bench.observers.round_trips(share) if share else []
        results.notifies += trips
        notify = f"  notify p50 {1000 * percentile(trips, 50):.3f} ms" if trips else ""
        print(f"  run {index + 1:3d}/{runs}: {_line(sample)}{notify}", flush=True)
    return results


def _line(sample: RunSample) -> str:
    for error in sample.errors[:3]:
        print(f"    an observer failed: {error}", flush=True)
    delays = sample.delays
    if not delays:
        return f"no done arrived ({sample.connected} observers were connected)"
    projected = "n/a"
    if sample.projected is not None:
        projected = f"+{1000 * (sample.projected - sample.appended):.1f} ms"
    return (
        f"{sample.connected} in {sample.connect_s:.2f} s; done delay p50 "
        f"{1000 * percentile(delays, 50):6.1f} ms, max {1000 * max(delays):6.1f} ms "
        f"(projected {projected})"
    )


# -- report ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of the table: a measure's samples in seconds."""

    name: str
    description: str
    seconds: tuple[float, ...]

    def ms(self, p: float) -> float:
        """A percentile in milliseconds."""
        return 1000 * percentile(self.seconds, p)


DONE_DELAY, NOTIFY = "done delay", "NOTIFY round trip"


def rows(results: Results) -> list[Row]:
    """The done delays, their breakdown per run, and the reference."""
    runs = [r for r in results.runs if r.arrivals]
    projected = [(r, r.projected) for r in runs if r.projected is not None]
    return [
        Row(
            DONE_DELAY, "RUN_FINISHED appended -> done read, every observer", tuple(results.delays)
        ),
        Row(
            "  appended->projected",
            "-> the projector batch holding it committed, per run",
            tuple(at - r.appended for r, at in projected),
        ),
        Row(
            "  projected->first",
            "-> the first observer read done, per run",
            tuple(min(r.arrivals) - at for r, at in projected),
        ),
        Row(
            "  first->last",
            "the fan-out: first to last observer's done, per run",
            tuple(max(r.arrivals) - min(r.arrivals) for r in runs),
        ),
        Row(NOTIFY, "raw LISTEN/NOTIFY, send -> listening thread has it", tuple(results.notifies)),
    ]


def print_setup(setup: dict[str, Any], results: Results) -> None:
    """What was served, run and observed."""
    frames: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    for run in results.runs:
        frames.update(run.frames)
        outcomes.update(run.outcomes)
    measured = len(results.runs) * setup["observers"]
    print()
    print(
        f"setup: PostgreSQL {setup['postgres']} at {PG_HOST}:{PG_PORT}, {setup['cpus']} CPUs, "
        f"one uvicorn worker (loop {setup['loop']}, http {setup['http']}) in this process; "
        "projections in-process; the offline model"
    )
    print(
        f"question: {QUESTION!r}; {len(results.runs)} measured runs after {WARM_UP_RUNS} warm-up "
        f"runs, {setup['observers']} observers each (asyncio, client {setup['client']}, one "
        f"connection each) in {setup['observers_in']}"
    )
    print(
        f"frames read by all observers: {dict(frames)}; done outcomes {dict(outcomes)}; "
        f"{measured - len(results.delays)} of {measured} done missing"
    )
    connect = [r.connect_s for r in results.runs]
    short = sum(1 for r in results.runs if r.connected < setup["observers"])
    print(
        f"observers connected (all had metadata) in p50 {percentile(connect, 50):.2f} s, "
        f"max {max(connect):.2f} s, then the run's first model call was let through; "
        f"runs with observers missing at that point: {short}"
    )


def print_table(table: list[Row]) -> None:
    """The aligned table."""
    header = f"{'measure':22}  {'samples':>7}  {'p50 ms':>8}  {'p99 ms':>8}  {'max ms':>8}  what"
    print()
    print(header)
    print("-" * len(header))
    for row in table:
        if not row.seconds:
            print(f"{row.name:22}  {0:7d}  {'n/a':>8}")
            continue
        print(
            f"{row.name:22}  {len(row.seconds):7d}  {row.ms(50):8.2f}  {row.ms(99):8.2f}  "
            f"{1000 * max(row.seconds):8.2f}  {row.description}"
        )


def ratios(table: list[Row]) -> list[dict[str, Any]]:
    """p99 and p50 of the done delay over the NOTIFY round trip's."""
    by_name = {row.name: row for row in table}
    done, notify = by_name[DONE_DELAY], by_name[NOTIFY]
    if not (done.seconds and notify.seconds):
        return []
    return [
        {
            "measure": DONE_DELAY,
            "reference": NOTIFY,
            "percentile": p,
            "ratio": round(done.ms(p) / notify.ms(p), 2),
            "target_max": TARGET if p == 99 else None,
        }
        for p in (99, 50)
    ]


def print_ratios(computed: list[dict[str, Any]]) -> None:
    """The ratios, with the verdict on p99."""
    print()
    print(f"target: p99({DONE_DELAY}) <= {TARGET:g}x p99({NOTIFY}); the p50 ratio is context")
    for ratio in computed:
        verdict = "  (context)"
        if ratio["target_max"] is not None:
            met = ratio["ratio"] <= ratio["target_max"]
            verdict = f"  target <= {TARGET:g}x ({'meets target' if met else 'ABOVE target'})"
        print(
            f"p{ratio['percentile']}({DONE_DELAY}) / p{ratio['percentile']}({NOTIFY}) = "
            f"{ratio['ratio']:8.2f}x{verdict}"
        )


def print_json(setup: dict[str, Any], table: list[Row], computed: list[dict[str, Any]]) -> None:
    """One JSON object for the setup, per row of the table and per ratio."""
    print()
    print(json.dumps({"kind": "setup", **setup}))
    for row in table:
        if row.seconds:
            line = {
                "kind": "latency",
                "measure": row.name.strip(),
                "samples": len(row.seconds),
                "p50_ms": round(row.ms(50), 3),
                "p99_ms": round(row.ms(99), 3),
                "max_ms": round(1000 * max(row.seconds), 3),
            }
            print(json.dumps(line))
    for ratio in computed:
        print(json.dumps({"kind": "ratio", **ratio}))


def report(setup: dict[str, Any], results: Results) -> None:
    """The setup, the aligned table, the ratios with the verdict, then JSON lines."""
    table = rows(results)
    computed = ratios(table)
    print_setup(setup, results)
    print_table(table)
    print_ratios(computed)
    print_json(setup, table, computed)


# -- main ------------------------------------------------------------------------------------


def server_version() -> str:
    """The PostgreSQL server version."""
    with psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True) as conn:
        found = conn.execute("SHOW server_version").fetchone()
        return str(found[0]) if found else "?"


def observers_in_process(asked: bool) -> bool:
    """Whether the observers share this process: asked, or the clock is not system-wide."""
    clock = time.get_clock_info("perf_counter").implementation
    if asked or "CLOCK_MONOTONIC" in clock:
        return asked
    print(f"perf_counter is {clock}, not CLOCK_MONOTONIC: observers in this process instead")
    return True


def serve_and_measure(
    settings: Settings, args: argparse.Namespace
) -> tuple[dict[str, Any], Results]:
    """Store, sample data and server in place; hook the gate and the stamps; measure."""
    store = init_store(settings)  # creates the schema
    try:
        bootstrap(settings, create=True, sample=True).close()
        with serving(settings, store) as served, ExitStack() as stack:
            services = served.app.state.services
            gated = GatedProvider(services.dispatcher.service.provider)
            services.dispatcher.service.provider = gated
            stamps = Stamps()
            store.listeners.insert(0, stamps.on_saved)  # before the projector's wake-up
            services.projector.listeners.append(stamps.on_batch)
            in_process = observers_in_process(args.in_process)
            observers = Observers(served.base, args.observers, args.client, in_process=in_process)
            stack.callback(observers.close)
            http = stack.enter_context(httpx.Client(base_url=served.base, timeout=FINISH_TIMEOUT))
            bench = Bench(http, observers, gated, stamps, store)
            setup = {
                "postgres": server_version(),
                "cpus": os.cpu_count(),
                "loop": served.loop,
                "http": served.http,
                "observers": args.observers,
                "observers_in": "this process" if in_process else "their own process",
                "client": args.client,
                "runs": args.runs,
                "warm_up_runs": WARM_UP_RUNS,
                "notifies": args.notifies,
                "question": QUESTION,
            }
            return setup, measure(bench, args.runs, args.notifies)
    finally:
        store.close()


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A new schema name in ``harness_bench`` (created by ``init_store``), dropped afterwards."""
    ensure_database()
    schema = f"bench_{uuid4().hex[:12]}"
    try:
        yield schema
    finally:
        with psycopg.connect(pg_conninfo(PG_DBNAME), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, measure in a fresh schema, print the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS, help="measured runs")
    parser.add_argument(
        "--observers", type=int, default=DEFAULT_OBSERVERS, help="streams watching each run"
    )
    parser.add_argument(
        "--notifies", type=int, default=DEFAULT_NOTIFIES, help="NOTIFY round trips in all"
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="observers in a thread of the server's process (sharing its GIL), not their own",
    )
    parser.add_argument(
        "--client",
        choices=("raw", "httpx"),
        default="raw",
        help="observers' HTTP client: a minimal one on asyncio streams, or httpx.AsyncClient",
    )
    args = parser.parse_args(argv)
    args.runs, args.observers = max(1, args.runs), max(1, args.observers)
    args.notifies = max(1, args.notifies)
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}; measuring …", flush=True)
    began = time.perf_counter()
    try:
        with fresh_schema() as schema:
            settings = Settings(
                database_url=f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DBNAME}",
                database_schema=schema,
                db_lock_timeout=int(LOCK_TIMEOUT),
                model="offline",
                projections_in_process=True,
            )
            setup, results = serve_and_measure(settings, args)
    except KeyboardInterrupt:
        print("\ninterrupted; the bench schema was dropped", file=sys.stderr)
        sys.exit(130)
    report(setup, results)
    print(f"\n(total {time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
