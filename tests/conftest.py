"""Shared fixtures: real SQLite files and real PostgreSQL schemas, one per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Engine

from application.store import HarnessStore
from bootstrap.composition import Overrides, Services, bootstrap
from infrastructure.settings import Settings
from tests.helpers import FixedClock

PG_URL = os.environ.get("HARNESS_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/harness_test")
"""The test database; `.ci/run` creates it. Each test gets its own schema inside it."""


def _pg_admin_url() -> str:
    return PG_URL.rsplit("/", 1)[0] + "/postgres"


def _ensure_pg_database() -> str | None:
    """Create the test database if needed; return why PostgreSQL is unusable, or None."""
    dbname = PG_URL.rsplit("/", 1)[1]
    try:
        with psycopg.connect(_pg_admin_url(), autocommit=True, connect_timeout=3) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (dbname,))
            if exists.fetchone() is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
    except psycopg.Error as error:
        return f"PostgreSQL at {PG_URL} is not reachable: {error}"
    return None


@pytest.fixture(scope="session")
def pg_available() -> None:
    """Skip PostgreSQL tests with a reason when the server is absent, except under CI=true."""
    why = _ensure_pg_database()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{why} (under CI=true the PostgreSQL tests must run)")
    pytest.skip(why)


@contextmanager
def pg_schema(**overrides: Any) -> Iterator[Settings]:
    """Settings for a PostgreSQL schema of its own, dropped afterwards (any fixture scope)."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    try:
        yield Settings(database_url=PG_URL, database_schema=schema, **overrides)
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture
def pg_settings(pg_available: None) -> Iterator[Settings]:
    """Settings for a fresh PostgreSQL schema, dropped after the test."""
    with pg_schema() as settings:
        yield settings


@pytest.fixture
def sqlite_settings(tmp_path: Path) -> Settings:
    """Settings for a fresh SQLite file."""
    return Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")


@pytest.fixture(params=["sqlite", "postgres"])
def settings(request: pytest.FixtureRequest) -> Settings:
    """Both stores: every test using it runs on an SQLite file and on PostgreSQL."""
    name = "sqlite_settings" if request.param == "sqlite" else "pg_settings"
    value: Settings = request.getfixturevalue(name)
    return value


@pytest.fixture
def services(settings: Settings) -> Iterator[Services]:
    """The composition root on a fresh store of each backend: event, read and lease tables.

    No worker lease (the tests execute runs in-process); ``store`` and ``engine`` are its parts.
    """
    with bootstrap(settings, create=True, overrides=Overrides(heartbeat=False)) as opened:
        yield opened


@pytest.fixture
def store(services: Services) -> HarnessStore:
    """The store of :func:`services`, initialised on each backend."""
    return services.store


@pytest.fixture
def engine(services: Services) -> Engine:
    """The read side's engine of :func:`services`, on the store's database."""
    return services.engine


@pytest.fixture
def fixed_clock() -> FixedClock:
    """A clock that always says :data:`tests.helpers.AT`."""
    return FixedClock()
