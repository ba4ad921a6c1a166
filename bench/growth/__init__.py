"""How cost grows with the store: reads, a run and memory at N finished runs, N growing.

Run from the repository root::

    .venv/bin/python -m bench.growth [--sizes 1000 10000 50000] [--backend sqlite|postgres|both]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) it serves the app with uvicorn in a thread of
this process, on a free port of 127.0.0.1 (real HTTP, the protocol ``harness serve`` uses), and
grows the store with real runs: the served worker's own ``ChatService.ask`` in a loop, the
offline model over the sample data, the same code path as ``bench.run``. The runs cycle through
the four sample incidents, a greeting (SYSTEM_CHAT) and a runbook question (KNOWLEDGE_QUERY),
for four owners, eight turns per session. The worker's live projections follow the log as
they do in the service. How long filling took is printed per size.

At each size, once the projections have caught up, it measures ``--samples`` times each, in
interleaved rounds:

* ``run``: one diagnosis run end to end (the first sample incident, as ``bench.run``);
* ``first``: ``GET /v1/runs`` (50 newest);
* ``deep``: ``GET /v1/runs`` page 50 (or the last page of a smaller store), reached by following
  each page's ``next_cursor`` (by ``offset`` on an API without one);
* ``filter_status``, ``filter_intent``, ``filter_window``: ``GET /v1/runs`` narrowed by
  ``status=SUCCESS`` (nearly every run), ``intent=SYSTEM_CHAT`` (a sixth) and a time window
  (the second quarter of the runs so far);
* ``trace``: ``GET /v1/runs/{id}/trace`` of the oldest run;
* ``cli``: ``harness runs list`` called in this process through the command line's own entry
  (Typer's runner): settings from the environment, the composition root, read tables brought
  up to date, the query, the table; a subprocess would add about a second of interpreter start.

and the process's resident memory (RSS, ``/proc/self/status``): the worker that made the runs
and serves the reads is this process. Then two heavy runs with the scripted model and tools: a
tool result of 5 MB and 50 tool calls, each with its time and the rise of peak RSS it caused.
Last it prints the query plans (SQLite ``EXPLAIN QUERY PLAN``, PostgreSQL ``EXPLAIN``) of the
list and trace reads at the largest size (and, on PostgreSQL, whether autovacuum keeps the
planner's statistics). Nothing is asserted. The report gives p50 and p95 per
read and size, the growth ratio p50 at the largest size over p50 at the smallest, and RSS
largest over smallest; its last lines are JSON.

``--trace-memory`` measures none of that: it traces what the worker holds on to between the
smallest and the largest size (:mod:`bench.growth.memory`).
"""

DEFAULT_SIZES = (1_000, 10_000, 50_000)
SAMPLES = 30
"""Timed requests (and runs) per measurement and size."""
ROUNDS = 3
PAGE = 50
DEEP_PAGE = 50
OWNERS = ("ann", "bob", "cy", "dee")
TURNS = 8
"""Runs per session."""
READS = ("first", "deep", "filter_status", "filter_intent", "filter_window", "trace", "cli")
MEASURES = ("run", *READS)
