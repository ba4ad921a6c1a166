"""Builds the event store from ``Settings``: the eventsourcing environment and the tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from application.store import HarnessStore, StoreUnavailableError
from infrastructure import pg_recorder

if TYPE_CHECKING:
    from infrastructure.settings import Settings


def store_environment(settings: Settings, *, create_tables: bool) -> dict[str, str]:
    """The eventsourcing environment for these settings (nothing is read from ``os.environ``)."""
    target = settings.database
    env = {"CREATE_TABLE": "y" if create_tables else "n"}
    if target.kind == "sqlite":
        env |= {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": target.path,
            "SQLITE_LOCK_TIMEOUT": str(settings.db_lock_timeout),
        }
        return env
    return env | {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": target.dbname,
        "POSTGRES_HOST": target.host,
        "POSTGRES_PORT": str(target.port),
        "POSTGRES_USER": target.user,
        "POSTGRES_PASSWORD": target.password,
        "POSTGRES_SCHEMA": settings.database_schema,
        "POSTGRES_LOCK_TIMEOUT": str(settings.db_lock_timeout),
        "POSTGRES_CONNECT_TIMEOUT": str(settings.db_connect_timeout),
        "POSTGRES_POOL_SIZE": str(settings.db_pool_size),
        "POSTGRES_MAX_OVERFLOW": str(settings.db_max_overflow),
        "POSTGRES_PRE_PING": "y" if settings.db_pre_ping else "n",
        # Fails within about the connect timeout while the server is away (not after 10 retries).
        "APPLICATION_RECORDER_TOPIC": pg_recorder.TOPIC,
        # Off on purpose: with it on, concurrent writers interleaved notification ids.
        "POSTGRES_ENABLE_DB_FUNCTIONS": "n",
    }


def open_store(settings: Settings) -> HarnessStore:
    """Open the store for a service process: table creation off, tables must already exist."""
    store = _construct(settings, create_tables=False)
    store.check_ready()
    return store


def init_store(settings: Settings) -> HarnessStore:
    """Create the schema (PostgreSQL) and the event tables once; safe to run again."""
    if settings.database.kind == "postgres":
        _create_schema(settings)
    return _construct(settings, create_tables=True)


def _construct(settings: Settings, *, create_tables: bool) -> HarnessStore:
    env = store_environment(settings, create_tables=create_tables)
    try:
        return HarnessStore(
            env=env,
            no_gain_threshold=settings.no_gain_threshold,
            violation_threshold=settings.violation_threshold,
            audit_key=settings.audit_key.get_secret_value() or None,
        )
    except Exception as error:  # the recorders raise driver-specific errors at connect time
        raise StoreUnavailableError(
            f"cannot open the event store ({settings.database.describe()}): {error}"
        ) from error


def _create_schema(settings: Settings) -> None:
    target = settings.database
    try:
        with psycopg.connect(
            host=target.host,
            port=target.port,
            user=target.user,
            password=target.password or None,
            dbname=target.dbname,
            connect_timeout=settings.db_connect_timeout,
            autocommit=True,
        ) as conn:
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(settings.database_schema)
                )
            )
    except psycopg.Error as error:
        raise StoreUnavailableError(
            f"cannot create schema {settings.database_schema!r} in {target.describe()}: {error}"
        ) from error
