"""Append throughput: raw driver floor vs bare eventsourcing vs this project's HarnessStore.

Run from the repository root::

    .venv/bin/python -m bench.append [--events N] [--backend sqlite|postgres|both]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) and each mode it appends the same number of events
with three writers and prints events/s:

* ``raw``: plain ``sqlite3`` / ``psycopg`` inserts into an equivalent table (originator id and
  version, topic, state bytes, auto-assigned id), with the very topic and state bytes this
  project stores for a typical run;
* ``bare-es``: a plain ``eventsourcing`` Application with a minimal Aggregate whose one event type
  carries a payload padded to the project's mean stored state size;
* ``bare-1rt`` (PostgreSQL only): the same bare Application with this project's recorder
  (``infrastructure.pg_recorder``: one round trip per append, a server-side function) in place
  of eventsourcing's, in a table of its own: the recorder against the library's, all else equal;
* ``project``: ``HarnessStore.save_all`` with real ``Run`` aggregates and commands.

Modes: ``single`` is one event per transaction; ``batch`` is one transaction per boundary, i.e. 8
events from 2 aggregates (4 each) in one ``save``/``save_all`` (``executemany`` for the floor).

Each writer gets a warm-up pass per mode, then its events are appended in 5 rounds interleaved
with the other writers, so background work of the database hits all writers alike; nothing is
asserted. The last lines are JSON, one object per measurement and per ratio, for the README.
"""

DEFAULT_EVENTS = 15000
BATCH_EVENTS = 8
BATCH_AGGREGATES = 2
EVENTS_PER_STREAM = 40
"""A run (or bare aggregate, or raw stream) gets this many events, then a new one starts."""

TARGET = 0.8
ROUNDS = 5
WRITERS = ("raw", "bare-es", "bare-1rt", "project")
"""Every writer, in the order reported; a backend measures those it has (``bare-1rt``: PG)."""
MODES = {"single": (1, 1), "batch": (BATCH_EVENTS, BATCH_AGGREGATES)}
"""Mode name -> (events per transaction, aggregates per transaction)."""
