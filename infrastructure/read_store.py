"""The read tables as a whole: created, tracked, written in transactions, emptied for rebuilds."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from infrastructure.read_tables import create_read_tables, metadata, projection_tracking
from infrastructure.view_writer import SqlViewWriter

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping

    from sqlalchemy import Engine


class ReadBatch:
    """One transaction on the read tables: ``writer`` writes, ``finish`` ends it.

    ``finish`` (the rows the writer was given to append, then COMMIT) may run in another
    thread than the writes, once they are all made: the connection is never used by two
    threads at a time.
    """

    def __init__(self, engine: Engine) -> None:
        """Begin a transaction on a connection of ``engine``'s pool."""
        self.connection = engine.connect()
        try:
            self.transaction = self.connection.begin()
        except BaseException:
            self.connection.close()
            raise
        self.writer = SqlViewWriter(self.connection)

    def finish(self) -> None:
        """Write the appended rows and commit; on failure, roll back (and raise)."""
        try:
            self.writer.send_appended()
            self.transaction.commit()
        finally:
            self.connection.close()  # rolls back what did not commit

    def abandon(self) -> None:
        """Roll back and give the connection back."""
        self.connection.close()


class SqlReadStore:
    """The read tables on one engine, with a tracking row (a log position) per projection."""

    def __init__(self, engine: Engine) -> None:
        """The read tables on ``engine``."""
        self.engine = engine

    def ensure_tracking(self, names: Iterable[str]) -> None:
        """Create the read tables if missing, and a tracking row (position 0) per name."""
        create_read_tables(self.engine)
        for name in names:
            try:
                with self.engine.begin() as connection:
                    found = connection.scalar(
                        select(projection_tracking.c.position).where(
                            projection_tracking.c.name == name
                        )
                    )
                    if found is None:
                        connection.execute(
                            projection_tracking.insert(), {"name": name, "position": 0}
                        )
            except IntegrityError:
                pass  # another process created it at the same moment

    def positions(self) -> dict[str, int]:
        """Every stored tracking row's position, by projection name."""
        with self.engine.connect() as connection:
            found = connection.execute(select(projection_tracking))
            return {row.name: int(row.position) for row in found}

    @contextmanager
    def transaction(self) -> Iterator[SqlViewWriter]:
        """A writer whose rows and tracking moves commit together when the block ends."""
        batch = self.begin()
        try:
            yield batch.writer
        except BaseException:
            batch.abandon()
            raise
        batch.finish()

    def begin(self) -> ReadBatch:
        """A transaction whose end the caller makes: :meth:`ReadBatch.finish` or ``abandon``."""
        return ReadBatch(self.engine)

    def claim(self, claims: Mapping[str, int], last: int, notify_channel: str | None) -> bool:
        """:meth:`SqlViewWriter.advance` alone, for a batch that writes no rows.

        One statement committed on its own, without a transaction's BEGIN and COMMIT round trips
        (a live follower's batch of events none of its projections read).
        """
        with self.engine.connect() as connection:
            autocommit = connection.execution_options(isolation_level="AUTOCOMMIT")
            return SqlViewWriter(autocommit).advance(claims, last, notify_channel)

    def reset(self, names: Iterable[str], tables: Iterable[str]) -> None:
        """Move the named tracking rows back to 0 and empty ``tables``, in one transaction."""
        with self.engine.begin() as connection:
            # The tracking rows first: their locks make a follower's batch in flight commit
            # before the tables are emptied, so none of its rows survive the reset.
            connection.execute(
                update(projection_tracking)
                .where(projection_tracking.c.name.in_(list(names)))
                .values(position=0)
            )
            if connection.dialect.name == "postgresql":
                # transactional, and it leaves no dead rows behind for vacuum to clean up
                listed = ", ".join(f'"{table}"' for table in tables)
                connection.exec_driver_sql(f"TRUNCATE {listed}")
            else:
                for table in tables:
                    # SQLite's own truncate optimisation
                    connection.execute(metadata.tables[table].delete())
