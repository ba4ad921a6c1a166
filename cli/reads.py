"""What the CLI's reads share: read tables brought up to the log head, and run ids from prefixes.

``harness ask`` (and any process without a live projector) appends to the log without touching
the read tables, so a CLI read first applies the log up to its head as it was when the command
started, or says on stderr why it could not. Run ids may be given in full or, as git does, by
a unique prefix of at least :data:`MIN_PREFIX` hex digits.
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

from cli.common import err_console, fail

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from sqlalchemy import Connection, Engine

    from bootstrap.composition import Services
    from projections.runner import Projector

MIN_PREFIX = 4
"""The shortest run id prefix accepted (as git's shortest abbreviation)."""
SHORT = 8
"""Hex digits of the short ids ``runs list`` shows on a terminal (longer where they collide)."""
LONG_CATCH_UP = 5000
"""Log entries behind from which the catch-up shows a progress bar (on a terminal only)."""
_PREFIX = re.compile(r"[0-9a-f][0-9a-f-]*")
_NEEDED = ("diagnosis_run", "trace_event", "projection_tracking")


@dataclass(frozen=True)
class Freshness:
    """How current the read tables are after the catch-up: entries behind the head, and why."""

    store: str
    behind: int = 0
    why: str = ""

    def missing(self, what: str) -> str:
        """The message for ``what`` not found in the read tables, naming the store and any lag."""
        if not self.behind:
            return f"{what} in {self.store}"
        return (
            f"{what} in the read tables of {self.store}, which are {self.behind} log entries"
            f" behind the log ({self.why})"
        )


def bring_up_to_date(services: Services) -> Freshness:
    """Apply the log to the read tables up to its current head (exit 2 if they do not exist).

    When that fails (another process holds the lock longer than HARNESS_DB_LOCK_TIMEOUT, the
    database failed), a warning on stderr says why and how far behind the tables are.
    """
    from eventsourcing.persistence import PersistenceError
    from sqlalchemy.exc import SQLAlchemyError

    from application.ports import StoreError
    from projections.base import UnreadableLogEntry
    from projections.runner import brief

    store, where = services.store, services.settings.database.describe()
    check_read_tables(services.engine, where)
    projector = services.projector()
    behind = 0
    try:
        behind = max(0, store.head() - min(projector.positions().values()))
        if behind:
            _catch_up(projector, behind)
        return Freshness(where)
    except (SQLAlchemyError, StoreError, PersistenceError, OSError, UnreadableLogEntry) as error:
        why = str(error) if isinstance(error, UnreadableLogEntry) else _why(error, brief(error))
        left = Freshness(where, behind or 1, why)
        err_console().print(
            f"warning: cannot bring the read tables of {where} up to the log head ({why});"
            " showing them as they are"
        )
        return left


def check_read_tables(engine: Engine, where: str) -> None:
    """Exit 2 naming the store and `harness db init` unless the read tables exist."""
    from sqlalchemy.exc import SQLAlchemyError

    from projections.runner import brief

    try:
        missing = read_tables_missing(engine)
    except SQLAlchemyError as error:
        fail(f"cannot read the tables of {where}: {brief(error)}")
    if missing:
        fail(
            f"the read tables ({', '.join(missing)}) do not exist in {where}:"
            " run `harness db init` once first"
        )


def read_tables_missing(engine: Engine) -> list[str]:
    """The read tables the CLI needs that do not exist (it never creates them on a read)."""
    from sqlalchemy import inspect

    with engine.connect() as connection:
        found = set(inspect(connection).get_table_names())
    return [name for name in _NEEDED if name not in found]


def _why(error: BaseException, said: str) -> str:
    """Why the catch-up failed, in words (a lock held elsewhere is the usual reason)."""
    text = said.lower()
    if "locked" in text or "lock timeout" in text or "lock_timeout" in text:
        return f"another process holds the lock; try again when it is done: {said}"
    return said


def _catch_up(projector: Projector, behind: int) -> None:
    """Apply ``behind`` log entries (more if the log grew) with a bar when that takes a while."""
    stop = threading.Event()
    with _progress(behind) as advance:
        done = 0

        def progress(read: int) -> None:
            nonlocal done
            done += read
            advance(read)
            if done >= behind:
                stop.set()  # bounded: the head as it was when the command started

        projector.catch_up(progress, stop)


@contextmanager
def _progress(total: int) -> Iterator[Callable[[int], None]]:
    """A transient bar on stderr for a long catch-up on a terminal; otherwise nothing."""
    console = err_console()
    if total < LONG_CATCH_UP or not console.is_terminal:
        with nullcontext():
            yield lambda _read: None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("applying the log to the read tables"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    )
    with bar:
        task = bar.add_task("catch-up", total=total)
        yield lambda read: bar.advance(task, read)


def is_full_id(text: str) -> bool:
    """Whether ``text`` is a whole run id (no lookup needed)."""
    try:
        UUID(text)
    except ValueError:
        return False
    return True


def resolve_run_id(engine: Engine, text: str, store: str) -> UUID:
    """The run ``text`` names: a full id, or a unique prefix of one in the read tables.

    Exits 2 (via :func:`fail`) naming the candidates when the prefix is ambiguous, and naming
    ``store`` (``settings.database.describe()``) when no run id starts with it. Bring the read
    tables up to date first (:func:`bring_up_to_date`) so a run just asked for is found.
    """
    if is_full_id(text):
        return UUID(text)
    prefix = text.strip().lower()
    if not _PREFIX.fullmatch(prefix) or len(prefix.replace("-", "")) < MIN_PREFIX:
        fail(
            f"{text!r} is not a run id: give a whole id or its first {MIN_PREFIX} or more hex"
            " digits, as `harness runs list` shows them"
        )
    from projections.queries import run_ids_starting

    with engine.connect() as connection:
        found = run_ids_starting(connection, prefix, limit=6)
    if not found:
        fail(f"no run id starts with {prefix!r} in {store} (list them with `harness runs list`)")
    if len(found) > 1:
        shown = ", ".join(found[:5]) + (", …" if len(found) > 5 else "")
        fail(f"run id prefix {prefix!r} is ambiguous: it matches {shown}; give more digits")
    return UUID(found[0])


def lookup_run_id(services: Services, text: str) -> UUID:
    """:func:`resolve_run_id` for a command that reads the log (``audit export RUN_ID``).

    A whole id is returned as is; a prefix is looked up in read tables brought up to date.
    """
    if is_full_id(text):
        return UUID(text)
    bring_up_to_date(services)
    return resolve_run_id(services.engine, text, services.settings.database.describe())


def short_ids(connection: Connection, run_ids: list[str]) -> dict[str, str]:
    """Each id's shortest unique prefix of at least :data:`SHORT` hex digits."""
    from projections.queries import run_ids_sharing_prefix

    colliding = run_ids_sharing_prefix(connection, run_ids, SHORT)
    return {run_id: _shortest(run_id, colliding) for run_id in run_ids}


def _shortest(run_id: str, colliding: list[str]) -> str:
    others = [other for other in colliding if other != run_id and other[:SHORT] == run_id[:SHORT]]
    for length in range(SHORT, len(run_id)):
        if all(other[:length] != run_id[:length] for other in others):
            return run_id[:length]
    return run_id
