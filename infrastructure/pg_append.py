"""One round trip per append on PostgreSQL: a server-side function that locks, inserts, notifies.

eventsourcing's recorder appends in a client-driven transaction of about five round trips
(``BEGIN``; ``SET LOCAL lock_timeout``, ``LOCK TABLE``, ``NOTIFY`` and the ``INSERT``; two
pipeline syncs; ``COMMIT``), and the table lock it takes first is held across all of them. Here
one statement, ``SELECT … FROM <schema>.harness_events_append(events, lock_timeout)``, runs on
an autocommit connection: inside it the server sets the lock timeout for this transaction only,
takes the same ``EXCLUSIVE`` lock on the events table, queues the ``NOTIFY``, inserts the rows
from one array with ``unnest`` and returns their notification ids; the implicit transaction
then commits as the statement ends. Lock, insert, notify and commit happen within one
statement's lifetime on the server, so the lock is never held while a client round trip is in
flight.

Why the lock stays (design.md §17): notification ids come from a sequence, and a sequence hands
out numbers in the order transactions *ask*, not in the order they *commit*. Without the lock a
reader tailing the log can read id n+1 committed while id n is still in flight and move past n
for good. ``EXCLUSIVE`` mode conflicts with every writer's lock and with nothing a reader takes,
so ids are committed in the order they are issued. (The library's own function, switched on by
``POSTGRES_ENABLE_DB_FUNCTIONS``, takes no lock, and is not used.)

The function is created with the tables (``CREATE OR REPLACE``, under a transaction-level
advisory lock so two initialisations at once do not collide) and, for a store initialised before
it existed, on the first append that finds it missing; the table layout is the library's,
unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.sql import SQL, Composed, Identifier

if TYPE_CHECKING:
    from collections.abc import Sequence

    from psycopg import Connection
    from psycopg.rows import DictRow

SUFFIX = "_append"
"""The function is named for its table: ``harness_events_append`` for the project's store, so
two applications' tables in one schema never share (and overwrite) one function."""

_ADVISORY_KEY = "harness_events_append"
"""Hashed into the advisory lock that serialises creating the functions."""

_BODY = """
BEGIN
    PERFORM set_config('lock_timeout', lock_timeout, true);
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    NOTIFY {channel};
    RETURN QUERY
        INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)
        SELECT e.originator_id, e.originator_version, e.topic, e.state
        FROM unnest(events) AS e
        RETURNING notification_id;
END;
"""


class AppendFunction:
    """The statements that create and call ``<schema>.<table>_append``."""

    def __init__(self, schema: str, table: str, event_type: str, channel: str) -> None:
        """Name the events table, its composite row type and the channel to NOTIFY."""
        self.name = table + SUFFIX
        """The function's name (in ``schema``)."""
        names = {
            "schema": Identifier(schema),
            "table": Identifier(table),
            "channel": Identifier(channel),
        }
        body = SQL(_BODY).format(**names).as_string()
        self.create_statement: Composed = SQL(
            "CREATE OR REPLACE FUNCTION {schema}.{function}"
            "(events {schema}.{event_type}[], lock_timeout text) "
            "RETURNS SETOF bigint LANGUAGE plpgsql AS {body}"
        ).format(
            schema=names["schema"],
            function=Identifier(self.name),
            event_type=Identifier(event_type),
            body=_dollar_quoted(body),
        )
        """Creates (or replaces) the function; run it with :data:`serialise_statement` first."""
        serialise = SQL("SELECT pg_advisory_xact_lock(hashtext({}))")
        self.serialise_statement: Composed = serialise.format(_ADVISORY_KEY)
        """Makes concurrent creations of the function wait for each other (same transaction)."""
        self.call_statement: Composed = SQL(
            "SELECT n FROM {schema}.{function}(%s, %s) AS n"
        ).format(schema=names["schema"], function=Identifier(self.name))

    def append(
        self, conn: Connection[DictRow], rows: Sequence[Any], lock_timeout_s: int
    ) -> list[int]:
        """Append ``rows`` (the library's composite values) in one statement; their ids, in order.

        ``conn`` must be in autocommit mode: the statement is its own transaction. A store
        initialised before the function existed gets it here, once, and the append is retried.
        """
        params = (list(rows), f"{lock_timeout_s}s")
        try:
            found = conn.execute(self.call_statement, params, prepare=True).fetchall()
        except psycopg.errors.UndefinedFunction:
            self.create(conn)
            found = conn.execute(self.call_statement, params, prepare=True).fetchall()
        return [int(row["n"]) for row in found]

    def create(self, conn: Connection[DictRow]) -> None:
        """Create the function in a transaction of its own on ``conn``."""
        with conn.transaction():
            conn.execute(self.serialise_statement)
            conn.execute(self.create_statement)


def _dollar_quoted(body: str) -> SQL:
    """``body`` as a dollar-quoted literal (it holds no ``$fn$``: only our own SQL text)."""
    if "$fn$" in body:
        raise ValueError("the function body must not contain $fn$")
    return SQL("$fn$" + body.replace("{", "{{").replace("}", "}}") + "$fn$")
