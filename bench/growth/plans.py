"""The query plans of the list and trace reads: what each statement of a read asks the database.

Each read's statements are caught as the read runs (``before_cursor_execute``) and asked again
under ``EXPLAIN QUERY PLAN`` (SQLite) or ``EXPLAIN`` (PostgreSQL) with the same parameters.
A plan line that reads a whole table or sorts outside an index is marked with ``!``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import event

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy import Connection, Engine


def suspect(line: str) -> bool:
    """Whether a plan line reads a whole table or sorts what an index did not order.

    SQLite's ``SCAN t USING INDEX`` walks an index in order and stops at the ``LIMIT``; a bare
    ``SCAN t`` reads every row. PostgreSQL's ``Seq Scan`` reads every row of a table, and a
    ``Sort`` orders every row that reaches it.
    """
    words = line.strip().lstrip("-> ")
    whole = words.startswith("SCAN ") and "INDEX" not in words and "anon" not in words
    return whole or "TEMP B-TREE" in words or words.startswith(("Seq Scan", "Sort"))


def statements(engine: Engine, read: Callable[[Connection], object]) -> list[tuple[str, Any]]:
    """The SQL statements (and parameters) ``read`` runs on a connection of ``engine``."""
    seen: list[tuple[str, Any]] = []

    def on_execute(*args: Any) -> None:
        seen.append((args[2], args[3]))

    event.listen(engine, "before_cursor_execute", on_execute)
    try:
        with engine.connect() as connection:
            read(connection)
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
    return seen


def explain(engine: Engine, statement: str, parameters: Any) -> list[str]:
    """The plan of one statement, a line per step."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.connect() as connection:
        cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(
                ("EXPLAIN QUERY PLAN " if sqlite else "EXPLAIN ") + statement, parameters
            )
            rows = cursor.fetchall()
        finally:
            cursor.close()
    return [str(row[3]) if sqlite else str(row[0]) for row in rows]


def plans(engine: Engine, reads: dict[str, Callable[[Connection], object]]) -> dict[str, Any]:
    """Per read, per statement: the SQL on one line and its plan."""
    found: dict[str, Any] = {}
    for name, read in reads.items():
        found[name] = [
            {"sql": " ".join(statement.split()), "plan": explain(engine, statement, parameters)}
            for statement, parameters in statements(engine, read)
        ]
    return found


def autovacuum_off(engine: Engine) -> bool:
    """Whether ``engine`` is a PostgreSQL server whose autovacuum is off."""
    if engine.dialect.name != "postgresql":
        return False
    with engine.connect() as connection:
        return connection.exec_driver_sql("SHOW autovacuum").scalar() != "on"


def analyse(engine: Engine) -> None:
    """``VACUUM ANALYZE`` every table of the store's schema, as autovacuum does on a default
    server (statistics for the planner; a visibility map, so a count reads an index alone)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        tables = connection.exec_driver_sql(
            "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()"
        ).scalars()
        for table in list(tables):
            connection.exec_driver_sql(f"VACUUM (ANALYZE) {table}")


def statistics_note(engine: Engine) -> str:
    """On PostgreSQL without autovacuum, what the bench does in its place (else nothing)."""
    if not autovacuum_off(engine):
        return ""
    return (
        "autovacuum is off on this server: after each fill the bench runs VACUUM (ANALYZE) on "
        "the store's tables, as autovacuum would on a default server (without it the planner "
        "keeps the first rows' statistics, and a capped count reads the table, not an index)"
    )


def print_plans(backend: str, found: dict[str, Any]) -> int:
    """Print every plan, marking suspect lines; how many lines were suspect."""
    suspects = 0
    print(f"\nquery plans on {backend} (! marks a whole-table read or a sort outside an index):")
    for name, planned in found.items():
        for one in planned:
            print(f"  {name}: {one['sql'][:160]}")
            for line in one["plan"]:
                bad = suspect(line)
                suspects += bad
                print(f"    {'!' if bad else ' '} {line}")
    return suspects
