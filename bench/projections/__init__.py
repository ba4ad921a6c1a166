"""Read-side rebuild throughput: our batched Projector vs the raw log and one event per transaction.

Run from the repository root::

    .venv/bin/python -m bench.projections [--runs N] [--repeat N] [--prefix N]
        [--backend sqlite|postgres|both] [--profile] [--phases]

For each backend (SQLite files in a fresh temporary directory; PostgreSQL in a fresh schema of
database ``harness_bench``, dropped at the end) it fills the event store with realistic events:
``--runs`` runs of ``ChatService.ask`` with the offline model over the sample data, cycling
through the sample incidents' questions (diagnosis runs, about 46 events each), one small-talk and
one knowledge question, six turns per session. Then it measures, in events (log entries) per
second:

* ``ours``: ``Projector.rebuild()`` of every projection (seven) with the default batch size, on the
  whole log (this includes emptying the read tables first, as a rebuild does);
* ``ceiling``: reading and deserialising the notification log only: pages of
  ``store.recorder.select_notifications(start, limit=batch)`` (the Projector's batch size) and
  ``store.mapper.to_domain_event`` for every entry, under the collector thresholds a catch-up
  uses; nothing is written. No projection can rebuild faster than this;
* ``per-event``: the library's ``ProjectionRunner`` style: one runner per projection, one
  transaction per event, each committing that event's rows together with its tracking update.
  Implemented as ``Projector(store, engine, projections=[P], batch_size=1)`` for each of the
  projections in turn (tables and tracking emptied beforehand, untimed), stepped once per log
  entry: every step reads the tracking row and the next log entry, then applies that one event in
  its own transaction. It runs over the first ``--prefix`` log entries only (it is slow); its
  events/s is the prefix's entries divided by the wall time of all the runners together;
* ``es-runner`` (PostgreSQL only, reference): the real ``eventsourcing.projection
  .ProjectionRunner`` with a trivial projection that only records its tracking position, one
  transaction per event, over the same prefix, timed from the runner's construction until it has
  processed the prefix's last entry. It writes no view rows, so it is a lower bound on the cost
  of one library-style projection (the SQLite recorder has no ``subscribe()``).

Each measurement is made ``--repeat`` times in interleaved rounds (rotating order) after one
warm-up round; best and median events/s are reported. Targets (checked on the median, best
printed beside it): ours >= 0.3x the ceiling, and ours >= 10x the per-event style. Nothing is
asserted. ``ours / ceiling`` is also printed by this process's CPU seconds, as context: steadier
than wall time on a busy machine, but on PostgreSQL it leaves out the server's work. ``--profile``
adds a cProfile of one rebuild per backend; ``--phases`` times one rebuild in parts (reading the
log, each projection's rows, the inserts, the commits: :mod:`bench.projections.phases`), three
times, each after a read of the ceiling. The last lines are JSON.
"""

DEFAULT_RUNS = 450
"""Runs of ``ask``: with the default question mix, about 15k log entries."""
DEFAULT_REPEAT = 3
DEFAULT_PREFIX = 2000
"""Log entries the per-event measurements cover."""
TURNS_PER_SESSION = 6
SMALL_TALK = "hello"
KNOWLEDGE = "How do I renew an expired TLS certificate?"
OURS, CEILING, PER_EVENT, ES_RUNNER = "ours", "ceiling", "per-event", "es-runner"
MEASUREMENTS = (OURS, CEILING, PER_EVENT, ES_RUNNER)
PER_EVENT_ONE = "per-event/1"
"""Derived from per-event: the rate of one of its runners (one projection) on average."""
TARGETS = ((OURS, CEILING, 0.3), (OURS, PER_EVENT, 10.0))
"""(measure, reference, minimum ratio of their events/s)."""
REFERENCES = ((ES_RUNNER, PER_EVENT_ONE), (OURS, ES_RUNNER), (PER_EVENT, CEILING))
"""Ratios printed as context only."""
PROFILE_LINES = 20
PAGE = 2000
"""Log entries per read when counting the log's streams."""
ES_RUNNER_TIMEOUT = 300.0
