"""The read side as real processes run it: killed, restarted, cut off from NOTIFY, and the CLI.

Every projection commits its rows and its tracking position in one transaction (SPEC §17), so a
process killed at any moment leaves a batch boundary behind, a restart continues from it, and a
rebuild from position 0 gives the same rows.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import psycopg
import pytest
from eventsourcing.utils import get_topic
from psycopg import sql
from sqlalchemy import Engine, Table, func, select

from application.store import HarnessStore
from bootstrap.composition import bootstrap
from domain.checkpoint import CHECKPOINTS_ID
from domain.run import Run
from infrastructure.pg_listen import LISTEN_APPLICATION_NAME, PgNotifyWake
from infrastructure.read_tables import (
    diagnosis_run,
    metadata,
    projection_tracking,
    session_turn,
    sse_event,
    sse_run,
    trace_event,
)
from infrastructure.settings import Settings
from projections.runner import Projector
from tests.integration.projections._projection_workers import append_runs, write_in_two_halves

HARNESS = [sys.executable, "-c", "from cli.main import app; app()"]
ROOT = Path(__file__).resolve().parents[3]
NAMES = (
    "diagnosis_run",
    "trace_event",
    "sse_feed",
    "session_turn",
    "metrics",
    "analytics",
    "eval_run",
)
READ_TABLES: tuple[Table, ...] = tuple(
    t for t in metadata.sorted_tables if t is not projection_tracking
)
BATCH = 20
DEADLINE_S = 90.0  # a bound on a hung process, not a synchronisation device
POLL_S = 0.01  # the wait between two checks of an observable condition
RUN_STARTED = get_topic(Run.RunStarted)


# -- processes ------------------------------------------------------------------------------------


def _env(settings: Settings, **extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    clean["PYTHONPATH"] = str(ROOT) + os.pathsep + clean.get("PYTHONPATH", "")
    return clean | {
        "HARNESS_DATABASE_URL": settings.database_url,
        "HARNESS_DATABASE_SCHEMA": settings.database_schema,
        **extra,
    }


def _harness(settings: Settings, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*HARNESS, *args],
        env=_env(settings),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )


class Follower:
    """``harness projections run`` in its own process, its output kept in files."""

    def __init__(self, settings: Settings, tmp_path: Path, label: str) -> None:
        self.err_path = tmp_path / f"{label}.stderr"
        self.out_path = tmp_path / f"{label}.stdout"
        self._out: IO[bytes] = self.out_path.open("wb")
        self._err: IO[bytes] = self.err_path.open("wb")
        env = _env(settings, HARNESS_PROJECTION_BATCH=str(BATCH), HARNESS_PROJECTION_POLL="0.05")
        self.process = subprocess.Popen(
            [*HARNESS, "projections", "run"],
            env=env,
            cwd=tmp_path,
            stdout=self._out,
            stderr=self._err,
        )

    def output(self) -> str:
        """What the process printed so far (for failure messages)."""
        return self.out_path.read_text() + self.err_path.read_text()

    def check_alive(self) -> None:
        """Fail at once, with its output, when the process ended by itself."""
        code = self.process.poll()
        assert code is None, f"`harness projections run` exited {code}:\n{self.output()}"

    def end(self, sig: int) -> int:
        """Send ``sig``, wait for the exit and return the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=DEADLINE_S)
        self._out.close()
        self._err.close()
        return code


@pytest.fixture
def followers(tmp_path: Path) -> Iterator[Callable[[Settings, str], Follower]]:
    """Start ``harness projections run`` processes; any still running are killed at the end."""
    started: list[Follower] = []

    def start(settings: Settings, label: str) -> Follower:
        follower = Follower(settings, tmp_path, label)
        started.append(follower)
        return follower

    yield start
    for follower in started:
        follower.end(signal.SIGKILL)


def _wait_until(what: str, condition: Callable[[], bool], check: Callable[[], None]) -> None:
    """Poll ``condition`` (an observable database state) until true; ``check`` fails fast."""
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        check()
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(POLL_S)


def _nothing() -> None:
    pass


# -- the log and the read side ------------------------------------------------------------------


def _log_ids(
    store: HarnessStore, topics: tuple[str, ...] = (), *, runs_only: bool = False
) -> list[int]:
    """Every notification id of the log (of the given topics), in order.

    ``runs_only`` leaves out the audit checkpoints: they are on no run's timeline, so the
    trace holds no row for them (a projection batch still counts them).
    """
    ids: list[int] = []
    start = 1
    while page := store.recorder.select_notifications(start=start, limit=1000, topics=topics):
        ids.extend(n.id for n in page if not (runs_only and n.originator_id == CHECKPOINTS_ID))
        start = page[-1].id + 1
        if len(page) < 1000:
            break
    return ids


def _positions(engine: Engine) -> dict[str, int]:
    with engine.connect() as connection:
        found = connection.execute(select(projection_tracking))
        return {row.name: int(row.position) for row in found}


def _count(engine: Engine, table: Table) -> int:
    with engine.connect() as connection:
        return int(connection.scalar(select(func.count()).select_from(table)) or 0)


def _column(engine: Engine, column: Any) -> list[int]:
    with engine.connect() as connection:
        return [int(v) for v in connection.scalars(select(column).order_by(column))]


def _dump(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every read table's rows, ordered by primary key."""
    with engine.connect() as connection:
        return {
            table.name: [
                tuple(row)
                for row in connection.execute(select(table).order_by(*table.primary_key.columns))
            ]
            for table in READ_TABLES
        }


def _assert_same_rows(
    expected: dict[str, list[tuple[Any, ...]]], actual: dict[str, list[tuple[Any, ...]]]
) -> None:
    for name, rows in expected.items():
        other = actual[name]
        assert len(other) == len(rows), f"{name}: {len(rows)} rows, then {len(other)}"
        differing = [(a, b) for a, b in zip(rows, other, strict=True) if a != b]
        assert not differing, f"{name}: {len(differing)} rows differ, first: {differing[0]}"


def _assert_exactly_once(store: HarnessStore, engine: Engine) -> None:
    """Every log entry is on the trace exactly once and every run in each per-run table once."""
    ids = _log_ids(store, runs_only=True)
    traced = _column(engine, trace_event.c.position)
    assert len(traced) == len(ids), f"{len(ids)} log entries, {len(traced)} trace rows"
    assert traced == ids  # ordered, so this also says: no position twice, none missing
    runs = len(_log_ids(store, (RUN_STARTED,)))
    for table in (diagnosis_run, sse_run, session_turn):
        assert _count(engine, table) == runs, table.name
    assert max(_column(engine, sse_event.c.position)) <= ids[-1]


# -- 1. killed and restarted ----------------------------------------------------------------------


def test_a_projection_process_killed_mid_log_and_restarted_loses_and_duplicates_nothing(
    settings: Settings, tmp_path: Path, followers: Callable[[Settings, str], Follower]
) -> None:
    services = bootstrap(settings, create=True)  # what `harness db init` does, before any process
    store, engine = services.store, services.engine
    try:
        append_runs(store, 200, "before")  # ~2,400 log entries: a hundred-odd batches
        third = store.head() // 3
        first = followers(settings, "first")
        _wait_until(
            f"a third of the log (position {third}) to be applied",
            lambda: min(_positions(engine).values(), default=0) >= third,
            first.check_alive,
        )
        assert first.end(signal.SIGKILL) == -signal.SIGKILL

        # What the killed process left: batch boundaries, and exactly the rows up to them.
        killed_at = _positions(engine)
        assert sorted(killed_at) == sorted(NAMES)
        ids = _log_ids(store)
        starts = _log_ids(store, (RUN_STARTED,))
        for name, position in killed_at.items():
            applied = [i for i in ids if i <= position]
            assert 0 < position and position in ids, (name, position)
            assert len(applied) % BATCH == 0 or position == ids[-1], (name, position)
        position = killed_at["trace_event"]
        on_runs = _log_ids(store, runs_only=True)
        assert _column(engine, trace_event.c.position) == [i for i in on_runs if i <= position]
        position = killed_at["diagnosis_run"]
        assert _count(engine, diagnosis_run) == len([i for i in starts if i <= position])
        assert max(_column(engine, diagnosis_run.c.last_position)) <= position
        position = killed_at["sse_feed"]
        assert _count(engine, sse_run) == len([i for i in starts if i <= position])
        assert max(_column(engine, sse_event.c.position)) <= position
        position = killed_at["session_turn"]
        assert _count(engine, session_turn) == len([i for i in starts if i <= position])

        append_runs(store, 100, "after")  # the restarted process has work past the kill for sure
        head = store.head()
        assert head > max(killed_at.values())
        second = followers(settings, "second")
        _wait_until(
            f"every projection to reach the head {head}",
            lambda: set(_positions(engine).values()) == {head},
            second.check_alive,
        )
        assert second.end(signal.SIGTERM) == 0, second.output()

        _assert_exactly_once(store, engine)
        resumed = _dump(engine)
        Projector(store, engine).rebuild()  # from position 0, in one large batch after another
        assert set(_positions(engine).values()) == {head}
        _assert_same_rows(resumed, _dump(engine))
    finally:
        services.close()


# -- 2. concurrent writers, a follower cut off from NOTIFY ---------------------------------------

WRITERS = 4
RUNS_PER_WRITER = 60


def _own_tcp_ports() -> set[int]:
    """Local ports of this process's TCP sockets (Linux ``/proc``).

    ``pg_stat_activity.client_port`` of a connection opened by this process is one of them: it
    tells this test's LISTEN connection from one of a test running at the same time elsewhere.
    """
    inodes: set[str] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports: set[int] = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _our_listeners(admin: psycopg.Connection[Any]) -> list[int]:
    """Backend pids of this process's LISTEN connections."""
    found = admin.execute(
        "SELECT pid, client_port FROM pg_stat_activity"
        " WHERE application_name = %s AND datname = current_database()",
        (LISTEN_APPLICATION_NAME,),
    ).fetchall()
    ours = _own_tcp_ports()
    return [int(pid) for pid, port in found if port in ours]


def _terminate(admin: psycopg.Connection[Any], pids: list[int]) -> None:
    """Cut these LISTEN connections off from the server side; exactly one must go."""
    terminated = admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE application_name = %s AND pid = ANY(%s)",
        (LISTEN_APPLICATION_NAME, pids),
    ).fetchall()
    assert terminated == [(True,)], terminated


@pytest.mark.postgres
def test_live_projections_survive_a_lost_listen_connection_under_concurrent_writers(
    pg_settings: Settings,
) -> None:
    services = bootstrap(pg_settings, create=True)
    store, engine = services.store, services.engine
    # A poll interval far beyond the test's deadline: catching up must come from NOTIFY and
    # from the wake-up of the LISTEN connection's own reconnection.
    live = services.live_projections(poll_interval=3600, batch_size=BATCH)
    listener = live.listener
    assert isinstance(listener, PgNotifyWake)
    ctx = multiprocessing.get_context("spawn")
    halfway, done = ctx.Queue(), ctx.Queue()
    carry_on = ctx.Event()
    args = (pg_settings.database_url, pg_settings.database_schema, RUNS_PER_WRITER)
    writers = [
        ctx.Process(target=write_in_two_halves, args=(*args, i, halfway, carry_on, done))
        for i in range(WRITERS)
    ]
    admin = psycopg.connect(
        pg_settings.database_url, autocommit=True, application_name="harness-test-admin"
    )
    quiet = bootstrap(pg_settings)  # its writes wake nothing in this process: NOTIFY only

    def caught_up() -> None:
        head = store.head()
        _wait_until(
            f"every projection to reach the head {head}",
            lambda: set(live.projector.positions().values()) == {head},
            _nothing,
        )

    def reconnected(before: list[int]) -> list[int]:
        _wait_until(
            "a new LISTEN connection",
            lambda: _our_listeners(admin) not in ([], before) and listener.listening.is_set(),
            _nothing,
        )
        now = _our_listeners(admin)
        assert len(now) == 1 and now != before, (before, now)
        return now

    try:
        live.start()
        assert listener.listening.wait(DEADLINE_S)
        first = _our_listeners(admin)
        assert len(first) == 1, first
        for writer in writers:
            writer.start()
        reports = dict(halfway.get(timeout=DEADLINE_S) for _ in writers)
        assert set(reports.values()) == {"ok"}, reports

        _terminate(admin, first)
        carry_on.set()  # the writers go on while the follower has no LISTEN connection
        reports = dict(done.get(timeout=DEADLINE_S) for _ in writers)
        assert set(reports.values()) == {"ok"}, reports
        for writer in writers:
            writer.join(timeout=DEADLINE_S)
            assert writer.exitcode == 0
        caught_up()
        second = reconnected(first)
        assert listener.connections >= 2

        # Once more with a quiet log: what is written while the LISTEN connection is down sends
        # no NOTIFY it can hear, and nothing is written after; the reconnection must catch up.
        _terminate(admin, second)
        noticed = lambda: not listener.listening.is_set()  # noqa: E731
        _wait_until("the lost connection to be noticed", noticed, _nothing)
        append_runs(quiet.store, 1, "in-the-gap")
        caught_up()
        reconnected(second)
        assert listener.connections >= 3
    finally:
        carry_on.set()
        live.close()
        for writer in writers:
            writer.join(timeout=DEADLINE_S)
        admin.close()
        quiet.close()

    try:
        _assert_exactly_once(store, engine)
        assert len(_log_ids(store, (RUN_STARTED,))) == WRITERS * RUNS_PER_WRITER + 1
        followed = _dump(engine)
        Projector(store, engine).rebuild()
        _assert_same_rows(followed, _dump(engine))
    finally:
        services.close()


# -- 3. the CLI -----------------------------------------------------------------------------------


def _status(settings: Settings, cwd: Path) -> dict[str, tuple[int, int, int]]:
    """``harness projections status`` as {name: (position, head, lag)}."""
    result = _harness(settings, "projections", "status", cwd=cwd)
    assert result.returncode == 0, result.stderr
    rows: dict[str, tuple[int, int, int]] = {}
    for line in result.stdout.splitlines():
        words = re.findall(r"\w+", line)
        if words and words[0] in NAMES:
            assert len(words) == 4, line
            rows[words[0]] = (int(words[1]), int(words[2]), int(words[3]))
    assert "position" in result.stdout and "lag" in result.stdout, result.stdout
    return rows


def test_the_projections_cli_shows_the_lag_and_rebuilds_to_the_same_rows(
    settings: Settings, tmp_path: Path
) -> None:
    services = bootstrap(settings, create=True)
    store, engine = services.store, services.engine
    try:
        append_runs(store, 30, "cli")
        head = store.head()
        assert _status(settings, tmp_path) == dict.fromkeys(NAMES, (0, head, head))

        everything = _harness(settings, "projections", "rebuild", cwd=tmp_path)
        assert everything.returncode == 0, everything.stderr
        said = " ".join(everything.stdout.split())
        assert f"rebuilt {', '.join(NAMES)}: {head} log entries applied" in said, said
        assert _status(settings, tmp_path) == dict.fromkeys(NAMES, (head, head, 0))
        _assert_exactly_once(store, engine)
        before = _dump(engine)

        one = _harness(settings, "projections", "rebuild", "trace_event", cwd=tmp_path)
        assert one.returncode == 0, one.stderr
        said = " ".join(one.stdout.split())
        assert f"rebuilt trace_event: {head} log entries applied" in said, said
        _assert_same_rows(before, _dump(engine))
        assert _status(settings, tmp_path) == dict.fromkeys(NAMES, (head, head, 0))

        unknown = _harness(settings, "projections", "rebuild", "nope", cwd=tmp_path)
        assert unknown.returncode == 2
        said = " ".join(unknown.stderr.split())
        assert "unknown projection 'nope'" in said and "Traceback" not in said, said
        assert f"known: {', '.join(NAMES)}" in said, said
        _assert_same_rows(before, _dump(engine))
    finally:
        services.close()


# -- 4. a rebuild racing the live follower -------------------------------------------------------


def _blocked_by(admin: psycopg.Connection[Any], pids: list[int]) -> list[int]:
    """Backends waiting for a lock that one of ``pids`` holds."""
    found = admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE %s::int[] && pg_blocking_pids(pid)", (pids,)
    ).fetchall()
    return [int(pid) for (pid,) in found]


@pytest.mark.postgres
def test_a_rebuild_racing_the_live_follower_applies_each_event_once(
    pg_settings: Settings, tmp_path: Path, followers: Callable[[Settings, str], Follower]
) -> None:
    """The interleaving is forced with a row lock the test holds on trace_event's tracking row.

    The follower's first batch reaches that row and waits; the rebuild empties the projection's
    tables and waits for the row too. Released, the follower commits its batch first (the lock
    queue is first come, first served), then the rebuild resets the position: every row the
    follower wrote must be gone by then, or the rebuild and the follower collide on them.
    """
    services = bootstrap(pg_settings, create=True)
    store, engine = services.store, services.engine
    Projector(store, engine).ensure_tracking()
    append_runs(store, 20, "race")
    head = store.head()
    admin = psycopg.connect(pg_settings.database_url, autocommit=True)
    holder = psycopg.connect(pg_settings.database_url)
    rebuild: subprocess.Popen[str] | None = None
    try:
        hold = holder.execute("SELECT pg_backend_pid()").fetchone()
        assert hold is not None
        holder.execute(
            sql.SQL("SELECT 1 FROM {}.projection_tracking WHERE name = %s FOR UPDATE").format(
                sql.Identifier(pg_settings.database_schema)
            ),
            ("trace_event",),
        )
        follower = followers(pg_settings, "follower")
        _wait_until(
            "the follower's first batch to wait for the tracking row",
            lambda: bool(_blocked_by(admin, [hold[0]])),
            follower.check_alive,
        )
        waiting = _blocked_by(admin, [hold[0]])
        rebuild = subprocess.Popen(
            [*HARNESS, "projections", "rebuild", "trace_event"],
            env=_env(pg_settings),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        _wait_until(
            "the rebuild to wait for the tracking row as well",
            lambda: bool(set(_blocked_by(admin, [hold[0], *waiting])) - set(waiting)),
            follower.check_alive,
        )
        holder.commit()  # let them go: the follower first, then the rebuild
        _, err = rebuild.communicate(timeout=DEADLINE_S)
        assert rebuild.returncode == 0, " ".join(err.split())[:600]
        _wait_until(
            f"every projection to reach the head {head}",
            lambda: set(_positions(engine).values()) == {head},
            follower.check_alive,
        )
        assert follower.end(signal.SIGTERM) == 0, follower.output()
        _assert_exactly_once(store, engine)
    finally:
        if rebuild is not None and rebuild.poll() is None:
            rebuild.kill()
            rebuild.communicate()
        holder.close()
        admin.close()
        services.close()
