"""The SQLAlchemy engine for the read side and the sample data, built from ``Settings``.

Also :func:`brief`, how its errors are told in one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import URL, Engine, create_engine, event

if TYPE_CHECKING:
    from infrastructure.settings import DatabaseTarget, Settings


def brief(error: BaseException) -> str:
    """The database's own first line of an error, without the SQL and its parameters."""
    cause = getattr(error, "orig", None) or error
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[0] if lines else ''}"


def create_sql_engine(settings: Settings) -> Engine:
    """An engine on the same database as the event store (PostgreSQL: the configured schema)."""
    target = settings.database
    if target.kind == "sqlite":
        return _sqlite_engine(settings, target.path)
    return _postgres_engine(settings, target)


def _sqlite_engine(settings: Settings, path: str) -> Engine:
    """The SQLite file at ``path``, in WAL mode with foreign keys enforced (see the pragmas)."""
    engine = create_engine(
        URL.create("sqlite+pysqlite", database=path),
        connect_args={"timeout": settings.db_lock_timeout, "check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_connection: object, _record: object) -> None:
        cursor = dbapi_connection.cursor()  # type: ignore[attr-defined]
        cursor.execute("PRAGMA journal_mode=WAL")
        # In WAL mode NORMAL never corrupts and never reorders: a read-side commit lost to a
        # power cut takes its tracking position with it (so it is applied again), and the
        # event store's own connections still sync every append.
        cursor.execute("PRAGMA synchronous=NORMAL")
        # Debian's SQLite zeroes every freed page by default (SECURE_DELETE), which made emptying
        # the read tables for a rebuild a tenth of it. FAST still zeroes deleted content where
        # that costs no extra write; what a read table held is in the log anyway.
        cursor.execute("PRAGMA secure_delete=FAST")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def _postgres_engine(settings: Settings, target: DatabaseTarget) -> Engine:
    """A pooled psycopg engine on the configured schema, with UTC sessions and lock timeouts."""
    url = URL.create(
        "postgresql+psycopg",
        username=target.user,
        password=target.password or None,
        host=target.host,
        port=target.port,
        database=target.dbname,
    )
    return create_engine(
        url,
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_max_overflow,
        # While the server is away a request fails within the connect timeout, as the event
        # store's do; after it is back, the first error on a dropped connection discards every
        # pooled one (SQLAlchemy invalidates the pool), so the next checkout reconnects.
        pool_timeout=settings.db_connect_timeout,
        pool_pre_ping=settings.db_pre_ping,
        connect_args={
            "connect_timeout": settings.db_connect_timeout,
            # UTC sessions: times read back (and day boundaries) never depend on the server's zone;
            # a lock wait (two projectors claiming one batch) ends like the event store's does
            "options": f"-c search_path={settings.database_schema} -c timezone=UTC"
            f" -c lock_timeout={settings.db_lock_timeout * 1000}",
        },
    )
