"""Runs/s and CPU per run over real HTTP, one worker and two, on a fresh PostgreSQL database.

Run from the repository root::

    .venv/bin/python -m bench.throughput [--seconds S] [--clients N] [--workers 1 2]

For each worker count it creates a fresh database (dropped at the end), runs ``harness db init
--sample`` and starts ``harness serve`` (``--workers N`` for more than one: N uvicorn workers and
a projection process) on a free port of 127.0.0.1, with the offline model. Then N concurrent
clients (16 by default; ``HARNESS_MAX_CONCURRENT_RUNS`` is set to them, so none is refused) post
the first sample incident's question to ``POST /v1/chat`` and read each stream to its ``done``,
over and over (after a short warm-up, not counted), in rounds that alternate between the
servers, ``--seconds`` in all per server (about 60 s for the whole bench by default). Per
server it reports:

* runs/s: the runs finished over the seconds the clients ran, and the p50/p95 of a run's
  duration as a client saw it (request sent to ``done`` read);
* CPU per run: user + system seconds, from ``/proc/PID/stat``, of the server's process tree
  (``harness serve``, its workers, the projection process) and of the PostgreSQL backends of the
  database (their pids from ``pg_stat_activity``), between the start of a round and the moment the
  projections have caught up after it, over the runs of the round;
* lock waiting: a sampler polls ``pg_locks`` (joined to ``pg_stat_activity``) every few
  milliseconds for the backends of the database waiting on a lock not granted, and sums
  backend-seconds of waiting by what they wait on: the event table (eventsourcing's ``LOCK TABLE
  … IN EXCLUSIVE MODE``, the store's ordering lock), the cluster-wide ``NOTIFY`` queue lock
  taken at commit (an ``object`` lock on ``pg_database``), or anything else. The share of run time
  is that sum over the summed durations of the runs. It is a sampled estimate: waits shorter than
  the interval are seen in proportion to how often they occur.

The clients (and the sampler) run in the bench's own process on the same machine; their CPU per
run is reported apart (``getrusage`` of the bench process over the rounds).

The pools are kept small (``HARNESS_DB_POOL_SIZE=2``, ``HARNESS_DB_MAX_OVERFLOW=8``) so two
workers stay far from the server's ``max_connections``; the peak number of connections seen is
reported. Nothing is asserted. The last lines are JSON, one object per server and one ratio.
"""

DEFAULT_SECONDS = 24.0
"""Measured seconds per server; two servers, plus start-up and catch-up: about a minute."""
CLIENTS = 16
WORKERS = (1, 2)
ROUNDS = 2
WARM_UP = 1.0
"""Seconds of warm-up load per server (at most two runs per client), not counted."""
SAMPLE_INTERVAL = 0.01
"""Seconds between two polls of ``pg_locks``."""
POOL = {"HARNESS_DB_POOL_SIZE": "2", "HARNESS_DB_MAX_OVERFLOW": "8"}
TARGET = 1.5
"""Issue 17: two workers >= 1.5x one worker's runs/s (or lock waits under 5% of run time)."""
LOCK_TARGET = 0.05
