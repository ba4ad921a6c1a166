"""How the runner batches the log on each database: batch sizes, and whether it reads ahead."""

from __future__ import annotations

DEFAULT_BATCH = {"sqlite": 4000, "postgresql": 8000}
"""Log entries per batch by database. A SQLite batch holds the one write lock while it writes
(about 0.1 s at this size); on PostgreSQL a bigger one spreads the round trips of its dozen
statements over more events. Half the size costs a rebuild 4-8 % (each batch's end overlaps
the next read, and is waited for, once); a batch holds ~3 MB a thousand entries meanwhile."""
READ_AHEAD = frozenset({"postgresql"})
"""Databases whose next batch is fetched in a thread while the current one is applied
(:mod:`projections.read_ahead`): where a read is mostly waiting for the server."""
