"""Scrape cost of ``GET /metrics``: the exposition of 10,000 finished runs' metrics vs a bare read.

Run from the repository root::

    .venv/bin/python -m bench.metrics [--runs N] [--scrapes N] [--backend sqlite|postgres|both]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) it loads the ``metrics`` projection's rows for
``--runs`` finished runs through the projection's own writer (``projections.metrics.Samples``,
the code every batch of the live projection flushes through), with a realistic spread of
labels: every intent, release outcome, fallback type and termination state, a dozen tools with
both statuses, every preflight code, guard verdict and model-call purpose, and the two
histograms. The rows depend on the labels seen, not on the number of runs.

Then, ``--scrapes`` times in interleaved order, it measures:

* ``scrape``: what ``GET /metrics`` does once authenticated: ``api.metrics.read_snapshot`` (the
  metric rows, the projections' positions, the log's head) and ``generate_latest`` of the
  exposition (the log-derived families and this process's own metrics);
* ``floor``: a bare ``SELECT`` of the same rows through the same engine, fetched and dropped.

It prints p50 and p99 of each in milliseconds and the ratio scrape/floor. Target: the scrape's
p50 below 5 ms at 10,000 runs. Nothing is asserted. The last lines are JSON.
"""

DEFAULT_RUNS = 10_000
DEFAULT_SCRAPES = 500
TARGET_MS = 5.0
"""The scrape's p50 should stay below this (issue 16)."""
