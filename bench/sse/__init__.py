"""Live-feed latency: ``RUN_FINISHED`` appended to ``done`` at 100 observers vs raw NOTIFY.

Run from the repository root::

    .venv/bin/python -m bench.sse [--runs N] [--observers N] [--notifies N]
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
