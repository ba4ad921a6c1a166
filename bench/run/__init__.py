"""Harness overhead per diagnosis run: ChatService.ask vs bare eventsourcing with the same writes.

Run from the repository root::

    .venv/bin/python -m bench.run [--runs N] [--backend sqlite|postgres|both] [--profile]
        [--model offline|external]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) it first makes one real diagnosis run: the
offline model over the sample data answering the first sample incident's question (5 tool
calls). With ``--model external`` the same model answers from :mod:`bench.model_stub`, a real
HTTP server in a subprocess (``HARNESS_MODEL=openai``), as in a deployment: the run then
commits before every model call, and its model time is the HTTP exchanges, timed in this
process (:mod:`bench.model_external`); ``offline`` (the default) keeps every port in process.
A listener on ``store.listeners`` records that run's transaction shape: how many transactions,
which streams each touches, and the stored state size of every event. Then it measures, per
run:

* ``harness``: ``ChatService.ask`` for that question, end to end (routing, agent loop, tool
  boundary with SQL queries over the sample tables, guards, release, termination). The time
  spent inside the ports (``ModelProvider.complete`` of the offline model and ``Tool.run`` of the
  sample-data tools, timed in the thread that runs them) is recorded per run, so the report can
  also show the harness's own overhead: the run minus its port time. That is the figure the
  target is about: what the harness costs around the model and the tools it is given. The run
  minus its model time alone is shown too (``harness-model``, what ``bench.peers`` compares);
* ``floor``: a plain ``eventsourcing`` Application with a minimal Aggregate replaying exactly that
  shape: the same number of transactions, each saving the same number of events of the same
  number of streams, every event padded to the same stored state size; no reads;
* ``floor+get``: the same plus one ``repository.get`` per transaction (every transaction after the
  first rebuilds one stream before appending to it), so the reader can see how much of the
  harness overhead is reads (the harness rereads the run at every boundary, and its tools query
  the SQL sample tables).

Each measurement gets warm-up runs, then its runs are made in 5 rounds interleaved with the other
measurements (rotating order), so background work of the database hits all alike; nothing is
asserted. The target (harness overhead <= 1.5x the floor) is checked on the run minus its port
time; the end-to-end ratio is printed beside it. The last lines are JSON, one object per
measurement, per ratio and per shape.
"""

DEFAULT_RUNS = 300
WARM_UP = 10
ROUNDS = 5
TARGET = 1.5
SESSION = "bench"
MEASUREMENTS = ("harness", "floor", "floor+get")
OVERHEAD = "harness-ports"
"""The derived measurement: each harness run minus the time spent inside its ports."""
MODEL_FREE = "harness-model"
"""The other derived measurement: each harness run minus the time spent inside its model calls."""
PROFILE_LINES = 25
