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

An append that ends a run (its ``RUN_TERMINATED``) also NOTIFYs the run's id on the store's
ended channel in the same transaction, for the processes executing runs to hear a cancel without
reading the log (:mod:`infrastructure.run_ends`).

The function is created with the tables (``CREATE OR REPLACE``, under a transaction-level
advisory lock so two initialisations at once do not collide) and, for a store initialised before
it existed, on the first append that finds it missing; the table layout is the library's,
unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import psycopg
from psycopg.sql import SQL, Composed, Identifier, Literal

from infrastructure.pg_listen import channel_name

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from eventsourcing.persistence import StoredEvent
    from psycopg import Connection
    from psycopg.rows import DictRow

SUFFIX = "_append"
"""The function is named for its table: ``harness_events_append`` for the project's store, so
two applications' tables in one schema never share (and overwrite) one function."""

MAX_PAYLOAD = 7999
"""The longest NOTIFY payload PostgreSQL takes (bytes; ours are ASCII)."""

MANY_ENDED = "*"
"""The payload of an append that ended too many runs to name: listeners ask the log instead."""

_ADVISORY_KEY = "harness_events_append"
"""Hashed into the advisory lock that serialises creating the functions."""

_BODY = """
BEGIN
    PERFORM set_config('lock_timeout', lock_timeout, true);
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    NOTIFY {channel};
    IF ended <> '' THEN
        PERFORM pg_notify({ended_channel}, ended);
    END IF;
    RETURN QUERY
        INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)
        SELECT * FROM unnest(ids, versions, topics, states)
        RETURNING notification_id;
END;
"""


class AppendFunction:
    """The statements that create and call ``<schema>.<table>_append``."""

    def __init__(self, schema: str, table: str, event_type: str, channel: str) -> None:
        """Name the events table, its composite row type and the channel to NOTIFY."""
        self.name = table + SUFFIX
        """The function's name (in ``schema``)."""
        self.ended_channel = ended_channel(channel, schema)
        """The channel told which runs an append ended (:mod:`infrastructure.run_ends`)."""
        names = {
            "schema": Identifier(schema),
            "table": Identifier(table),
            "channel": Identifier(channel),
            "ended_channel": Literal(self.ended_channel),
        }
        body = SQL(_BODY).format(**names).as_string()
        self.create_statement: Composed = SQL(
            "CREATE OR REPLACE FUNCTION {schema}.{function}"
            "(ids uuid[], versions integer[], topics text[], states bytea[],"
            " lock_timeout text, ended text) "
            "RETURNS SETOF bigint LANGUAGE plpgsql AS {body}"
        ).format(schema=names["schema"], function=Identifier(self.name), body=_dollar_quoted(body))
        """Creates (or replaces) the function; run it with :data:`serialise_statement` first."""
        self.drop_old_statement: Composed = SQL(
            "DROP FUNCTION IF EXISTS {schema}.{function}({schema}.{event_type}[], text),"
            " {schema}.{function}({schema}.{event_type}[], text, text)"
        ).format(
            schema=names["schema"],
            function=Identifier(self.name),
            event_type=Identifier(event_type),
        )
        """Drops the function as it was when it took the rows as one array of the library's
        composite type (one name, one signature)."""
        serialise = SQL("SELECT pg_advisory_xact_lock(hashtext({}))")
        self.serialise_statement: Composed = serialise.format(_ADVISORY_KEY)
        """Makes concurrent creations of the function wait for each other (same transaction)."""
        self.call_statement: Composed = SQL(
            "SELECT n FROM {schema}.{function}(%b, %b, %b, %b, %s, %s) AS n"
        ).format(schema=names["schema"], function=Identifier(self.name))

    def append(
        self,
        conn: Connection[DictRow],
        events: Sequence[StoredEvent],
        lock_timeout_s: int,
        ended: str = "",
    ) -> list[int]:
        """Append ``events`` in one statement; their notification ids, in order.

        The rows go as four arrays, one per column, in PostgreSQL's binary format: a composite
        array in text format took ten times as long to build in Python (2.6 ms against 0.24 ms
        for a run's last 45 events), since every byte of every state was escaped.

        ``ended`` (the ids of the runs these rows end, see :func:`ended_payload`) is NOTIFYed on
        :attr:`ended_channel` in the same transaction when not empty. ``conn`` must be in
        autocommit mode: the statement is its own transaction. A store initialised before the
        function existed (or took ``ended``) gets it here, once, and the append is retried.
        """
        params = (
            [e.originator_id for e in events],
            [e.originator_version for e in events],
            [e.topic for e in events],
            [e.state for e in events],
            f"{lock_timeout_s}s",
            ended,
        )
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
            conn.execute(self.drop_old_statement)
            conn.execute(self.create_statement)


def ended_channel(channel: str, schema: str) -> str:
    """The channel an append NOTIFYs with the runs it ended: one per events table and schema.

    (eventsourcing's own channel is named for the table only, so stores in two schemas of one
    database share it; that one only wakes followers, while this one must not mix runs.) Cut
    to 63 bytes, schemas whose names share their first 42 bytes share it too: a run of one
    hearing another's end (ids differ, so only a copied schema's runs) commits early, no more.
    """
    return channel_name(f"{channel}_ended_{schema}")


def ended_payload(ended: Iterable[str]) -> str:
    """The NOTIFY payload naming the runs ``ended``: their ids, comma-separated.

    A payload over PostgreSQL's limit (8000 bytes) would fail the append: :data:`MANY_ENDED`
    says instead that a listener cannot know which runs ended (it then asks the log).
    """
    payload = ",".join(sorted(set(ended)))
    return payload if len(payload) <= MAX_PAYLOAD else MANY_ENDED


def _dollar_quoted(body: str) -> SQL:
    """``body`` as a dollar-quoted literal (it holds no ``$fn$``: only our own SQL text)."""
    if "$fn$" in body:
        raise ValueError("the function body must not contain $fn$")
    return SQL("$fn$" + body.replace("{", "{{").replace("}", "}}") + "$fn$")
