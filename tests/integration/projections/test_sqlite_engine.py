"""The read side's SQLite connections: the pragmas every one of them is opened with."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bootstrap.composition import bootstrap

if TYPE_CHECKING:
    from infrastructure.settings import Settings

PRAGMAS = {
    "journal_mode": "wal",  # readers never block the writer
    "synchronous": 1,  # NORMAL: safe in WAL mode, no sync per read-side commit
    "foreign_keys": 1,
    "secure_delete": 2,  # FAST: emptying a table for a rebuild does not zero every page
}


def test_every_connection_of_the_sqlite_engine_has_the_pragmas(sqlite_settings: Settings) -> None:
    with bootstrap(sqlite_settings, create=True) as services:
        engine = services.engine
        engine.dispose()  # the connections checked are opened here
        for _ in range(2):  # the first connection, then another one opened beside it
            with engine.connect() as connection, engine.connect() as other:
                for opened in (connection, other):
                    found = {
                        name: opened.exec_driver_sql(f"PRAGMA {name}").scalar() for name in PRAGMAS
                    }
                    assert found == PRAGMAS
