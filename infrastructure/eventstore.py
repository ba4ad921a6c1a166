"""Builds the event store from ``Settings``: the eventsourcing environment and the tables."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from application.audit.checkpoints import Checkpointer
from application.ports import StoreNotInitialisedError, StoreUnavailableError
from application.store import HarnessStore
from infrastructure import pg_recorder
from infrastructure.audit_keys import configured_signer

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
    """Open an existing store: table creation off, and nothing is created, not even a file.

    Raises StoreNotInitialisedError naming the store when its file or tables are missing, and
    StoreUnavailableError with the server's own reason when PostgreSQL refuses the connection.
    """
    target = settings.database
    if target.kind == "sqlite" and not _sqlite_exists(target.path):
        raise StoreNotInitialisedError(
            f"no event store at {target.describe()}: run `harness db init` there first, or set"
            " HARNESS_DATABASE_URL to the store you mean"
        )
    if target.kind == "postgres":
        probe_postgres(settings)
    store = _construct(settings, create_tables=False)
    try:
        store.check_ready()
    except StoreNotInitialisedError:
        store.close()
        raise StoreNotInitialisedError(
            f"the event store tables do not exist in {target.describe()}"
            f"{_schema_note(settings)}: run `harness db init` once first"
        ) from None
    except BaseException:
        store.close()
        raise
    return store


def init_store(settings: Settings) -> HarnessStore:
    """Create the schema (PostgreSQL) and the event tables once; safe to run again."""
    if settings.database.kind == "postgres":
        _create_schema(settings)
    return _construct(settings, create_tables=True)


def probe_postgres(settings: Settings) -> None:
    """Connect once, so a refusal comes back at once with the server's reason (not a pool wait).

    Raises StoreUnavailableError saying why: the database or role does not exist, the password
    was wrong, nothing listens on the port, or the server did not answer in the connect timeout.
    """
    target = settings.database
    try:
        psycopg.connect(**_connect_args(settings)).close()  # type: ignore[arg-type]
    except psycopg.Error as error:
        raise StoreUnavailableError(
            f"cannot connect to {target.describe()}: {server_reason(error)}"
        ) from None


def server_reason(error: BaseException) -> str:
    """The driver's message on one line, without libpq's repeated connection preamble."""
    lines = (" ".join(line.split()) for line in str(error).splitlines())
    text = "; ".join(line for line in lines if line)
    text = re.sub(r"^connection failed: ", "", text)
    text = re.sub(r'connection to server at "[^"]*" ?(\([^)]*\))?, port \d+ failed: ', "", text)
    return text.replace("FATAL: ", "") or type(error).__name__


def _sqlite_exists(path: str) -> bool:
    return path == ":memory:" or path.startswith("file:") or os.path.exists(path)


def _schema_note(settings: Settings) -> str:
    if settings.database.kind != "postgres":
        return ""
    return f" (schema {settings.database_schema!r})"


def _connect_args(settings: Settings) -> dict[str, object]:
    target = settings.database
    return {
        "host": target.host,
        "port": target.port,
        "user": target.user,
        "password": target.password or None,
        "dbname": target.dbname,
        "connect_timeout": settings.db_connect_timeout,
        "autocommit": True,
    }


def _construct(settings: Settings, *, create_tables: bool) -> HarnessStore:
    env = store_environment(settings, create_tables=create_tables)
    try:
        store = HarnessStore(
            env=env,
            no_gain_threshold=settings.no_gain_threshold,
            violation_threshold=settings.violation_threshold,
            audit_key=settings.audit_key.get_secret_value() or None,
        )
    except Exception as error:  # the recorders raise driver-specific errors at connect time
        raise StoreUnavailableError(
            f"cannot open the event store ({settings.database.describe()}): {error}"
        ) from error
    signer = configured_signer(settings.audit_signing_key_file)
    sign = signer.sign if signer else None
    store.after_save.append(Checkpointer(sign=sign).after_save)  # a checkpoint when one is due
    return store


def _create_schema(settings: Settings) -> None:
    target = settings.database
    try:
        with psycopg.connect(**_connect_args(settings)) as conn:  # type: ignore[arg-type]
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(settings.database_schema)
                )
            )
    except psycopg.Error as error:
        raise StoreUnavailableError(
            f"cannot create schema {settings.database_schema!r} in {target.describe()}: "
            f"{server_reason(error)}"
        ) from error
