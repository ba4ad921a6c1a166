"""What the benches share: where they write, their command line, rounds, percentiles and report.

Every bench measures on a fresh place per backend (:func:`place`): SQLite files in a new
temporary directory, or a new schema of the PostgreSQL database ``harness_bench`` (created
when missing) that is dropped at the end. The project's part opens its store there through the
composition root (:func:`bootstrap.composition.bootstrap` with the place's settings); a
bare-eventsourcing floor gets the place's ``bare_env``.
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import pstats
import sys
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import uuid4

import psycopg
from psycopg import sql

from infrastructure.settings import Settings

if TYPE_CHECKING:
    import cProfile

PG_HOST = "127.0.0.1"
PG_PORT = 5432
PG_USER = "postgres"
PG_DBNAME = "harness_bench"
LOCK_TIMEOUT = "5"
BACKENDS = ("sqlite", "postgres")

T = TypeVar("T")


# -- where a bench writes ----------------------------------------------------------------------


def pg_conninfo(dbname: str = PG_DBNAME) -> str:
    """A libpq connection string for the local server."""
    return f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={dbname}"


def ensure_database() -> None:
    """Create the benchmark database if it is missing."""
    with psycopg.connect(pg_conninfo("postgres"), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (PG_DBNAME,))
        if found.fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(PG_DBNAME)))


@dataclass(frozen=True)
class Place:
    """One backend's fresh place: the project's settings and a bare floor's environment."""

    backend: str
    settings: Settings
    bare_env: dict[str, str]
    """A plain ``eventsourcing`` Application's environment, beside the project's tables."""
    directory: str = ""
    """SQLite: the temporary directory holding the files."""
    schema: str = ""
    """PostgreSQL: the schema (the project's store creates it)."""


@contextmanager
def place(backend: str, **settings: Any) -> Iterator[Place]:
    """A fresh place on ``backend``, removed afterwards; ``settings`` add to the project's."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="harness-bench-") as tmp:
            yield sqlite_place(tmp, **settings)
        return
    if backend != "postgres":
        raise ValueError(f"no such backend: {backend!r} (use one of {', '.join(BACKENDS)})")
    ensure_database()
    schema = f"bench_{uuid4().hex[:12]}"
    try:
        yield postgres_place(schema, **settings)
    finally:
        with psycopg.connect(pg_conninfo(), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def sqlite_place(directory: str, **settings: Any) -> Place:
    """The project's file ``project.db`` and the floor's ``bare.db`` in ``directory``."""
    bare_env = {
        "PERSISTENCE_MODULE": "eventsourcing.sqlite",
        "SQLITE_DBNAME": f"{directory}/bare.db",
        "SQLITE_LOCK_TIMEOUT": LOCK_TIMEOUT,
        "CREATE_TABLE": "y",
    }
    project = Settings(
        database_url=f"sqlite:///{directory}/project.db",
        db_lock_timeout=int(LOCK_TIMEOUT),
        **settings,
    )
    return Place("sqlite", project, bare_env, directory=directory)


def postgres_place(schema: str, **settings: Any) -> Place:
    """The project's and the floor's tables side by side in ``schema`` of ``harness_bench``."""
    bare_env = {
        "PERSISTENCE_MODULE": "eventsourcing.postgres",
        "POSTGRES_DBNAME": PG_DBNAME,
        "POSTGRES_HOST": PG_HOST,
        "POSTGRES_PORT": str(PG_PORT),
        "POSTGRES_USER": PG_USER,
        "POSTGRES_PASSWORD": "",
        "POSTGRES_SCHEMA": schema,
        "POSTGRES_LOCK_TIMEOUT": LOCK_TIMEOUT,
        "CREATE_TABLE": "y",
    }
    project = Settings(
        database_url=f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{PG_DBNAME}",
        database_schema=schema,
        db_lock_timeout=int(LOCK_TIMEOUT),
        **settings,
    )
    return Place("postgres", project, bare_env, schema=schema)


# -- the command line --------------------------------------------------------------------------


def parser(name: str) -> argparse.ArgumentParser:
    """The parser of ``python -m bench.NAME``, described by the first line of its docstring."""
    doc = importlib.import_module(f"bench.{name}").__doc__
    return argparse.ArgumentParser(
        prog=f"python -m bench.{name}", description=doc.splitlines()[0] if doc else None
    )


def add_backend(arguments: argparse.ArgumentParser) -> None:
    """``--backend sqlite|postgres|both`` (both by default)."""
    arguments.add_argument("--backend", choices=(*BACKENDS, "both"), default="both")


def add_profile(arguments: argparse.ArgumentParser, what: str) -> None:
    """``--profile``: cProfile ``what`` once per backend at the end."""
    arguments.add_argument(
        "--profile", action="store_true", help=f"cProfile {what} per backend at the end"
    )


def chosen(backend: str) -> tuple[str, ...]:
    """The backends ``--backend`` names, in the order they are measured."""
    return BACKENDS if backend == "both" else (backend,)


def banner() -> None:
    """The first line of every bench: the interpreter and the process id."""
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}; measuring …", flush=True)


# -- rounds and statistics ---------------------------------------------------------------------


def shares(total: int, parts: int) -> list[int]:
    """``total`` split into ``parts`` near-equal shares, the larger ones first."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def rotated(names: Sequence[T], index: int) -> list[T]:
    """``names`` starting at ``index`` (modulo their number), the ones before it at the end."""
    start = index % len(names)
    return [*names[start:], *names[:start]]


def interleaved(names: Sequence[T], rounds: Sequence[int]) -> Iterator[tuple[int, T, int]]:
    """``(round, name, share)``: every name once per round, in an order rotating each round.

    So the background work of a database (a checkpoint, autovacuum) hits every measurement alike.
    """
    for index, share in enumerate(rounds):
        for name in rotated(names, index):
            yield index, name, share


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def print_profile(profiler: cProfile.Profile, what: str, lines: int) -> None:
    """The top ``lines`` functions of ``profiler``, by own and by cumulative time."""
    for order in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats(order).print_stats(lines)
        print(f"\n-- profile of {what}, by {order} --")
        text = out.getvalue().splitlines()
        start = next((i for i, line in enumerate(text) if "ncalls" in line), 0)
        print("\n".join(line for line in text[max(0, start - 2) :] if line.strip()))


# -- the report --------------------------------------------------------------------------------


def verdict(met: bool, missed: str) -> str:
    """``meets target``, or ``missed`` (BELOW, ABOVE) ``target``."""
    return "meets target" if met else f"{missed} target"


def print_json(lines: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object a line, for the README and for scripts."""
    for line in lines:
        print(json.dumps(line))


def print_ratios_json(ratios: Iterable[Mapping[str, Any]]) -> None:
    """Every ratio as a JSON line of kind ``ratio``."""
    print_json({"kind": "ratio", **ratio} for ratio in ratios)
