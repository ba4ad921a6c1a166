"""Runs hear of their ends over PostgreSQL LISTEN instead of reading the log (design §17.1).

An append that ends a run NOTIFYs the run's id on the store's ended channel in the same
transaction; a process executing runs listens there (``PgRunEnds``), so a run's look for a
cancel before a local call is answered from memory after its first read. A listener cut off
makes every token stale (runs read again), and what anyone NOTIFYs on the channel cannot break
it: an id it does not watch is ignored, and at worst a watched run commits early.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import psycopg
import pytest
from psycopg import sql

from application.ports import JSON, Tool, ToolOutput
from bootstrap.composition import Overrides, Services, bootstrap
from domain.run import Run
from domain.states import CancellationReason, FailureCode, RunState
from infrastructure.ops_data import sample_incidents
from infrastructure.pg_recorder import FailFastRecorder
from infrastructure.run_ends import PgRunEnds
from infrastructure.settings import Settings
from tests.conftest import PG_URL, pg_schema
from tests.integration._cli import harness, store_env

pytestmark = pytest.mark.postgres

QUESTION = sample_incidents()[0].question
WAIT_S = 30.0
"""A bound on waiting for the listener, never reached when it works."""
LOCAL_CALLS = 13
"""The sample run's model and tool calls after its first one (8 model calls, 5 tool calls)."""


def _channel(services: Services) -> str:
    recorder = services.store.recorder
    assert isinstance(recorder, FailFastRecorder)
    return recorder.append_function.ended_channel


def _ends(services: Services) -> PgRunEnds:
    ends = services.store.run_ends
    assert isinstance(ends, PgRunEnds)
    assert ends.wait_listening(WAIT_S)
    return ends


def _started(services: Services) -> Run:
    run = Run.start("s", "why?", datetime.now(UTC) + timedelta(hours=1))
    services.store.save_all(run)
    return run


@pytest.fixture
def services(pg_settings: Settings) -> Iterator[Services]:
    """A PostgreSQL store with the sample data whose chat service (and listener) is running."""
    with bootstrap(
        pg_settings, create=True, sample=True, overrides=Overrides(heartbeat=False)
    ) as built:
        assert built.chat is not None  # starts the run-ends listener
        yield built


def test_an_append_that_ends_a_run_names_it_on_its_schemas_ended_channel(
    services: Services,
) -> None:
    store = services.store
    with psycopg.connect(services.settings.database_url, autocommit=True) as listener:
        listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(_channel(services))))
        with pg_schema() as elsewhere, bootstrap(elsewhere, create=True) as other:
            # another schema of the same database: its ends are not ours
            other.store.cancel(_started(other).id, CancellationReason.USER_REQUESTED)
        cancelled, failed = _started(services), _started(services)  # starting ends nothing
        store.cancel(cancelled.id, CancellationReason.USER_REQUESTED)
        store.fail(failed.id, FailureCode.MODEL_FAILED)
        heard = [n.payload for n in listener.notifies(timeout=WAIT_S, stop_after=2)]
    assert heard == [str(cancelled.id), str(failed.id)]


def test_a_sample_run_reads_the_log_once_to_look_for_a_cancel(services: Services) -> None:
    _ends(services)
    for _ in range(2):
        services.store.looks = 0
        result = services.chat.ask("looks", QUESTION)
        assert result.termination.state is RunState.SUCCESS
        assert services.store.looks == 1  # the first look; the other 12 are answered by LISTEN
    services.store.run_ends = None  # as when it is not listening: every look reads
    services.store.looks = 0
    services.chat.ask("looks", QUESTION)
    assert services.store.looks == LOCAL_CALLS


class CancelledByTheCli:
    """A local tool whose 2nd call has ``harness runs cancel`` (another process) end the run."""

    local = True

    def __init__(self, inner: Tool, calls: list[str], env: dict[str, str], cwd: Path) -> None:
        self.inner, self.calls, self.env, self.cwd = inner, calls, env, cwd
        self.run_id = ""
        self.ends: PgRunEnds | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, arguments: JSON) -> ToolOutput:
        self.calls.append(self.inner.name)
        if len(self.calls) == 2:
            done = harness("runs", "cancel", self.run_id, env=self.env, cwd=self.cwd)
            assert done.returncode == 0, done.stderr
            assert self.ends is not None and self.ends.wait_heard(uuid.UUID(self.run_id), WAIT_S)
        return self.inner.run(arguments)


def test_a_cancel_from_another_process_is_heard_at_the_next_call(
    services: Services, tmp_path: Path
) -> None:
    calls: list[str] = []
    env = store_env(services.settings)
    tools = {
        name: cast("Tool", CancelledByTheCli(tool, calls, env, tmp_path))
        for name, tool in services.tools().items()
    }
    given = Overrides(store=services.store, tools=tools, heartbeat=False)
    with bootstrap(services.settings, overrides=given) as built:
        run, _ = built.chat.begin("cli", QUESTION)
        for tool in tools.values():
            cast("CancelledByTheCli", tool).run_id = str(run.id)
            cast("CancelledByTheCli", tool).ends = _ends(services)
        services.store.looks = 0
        result = built.chat.execute(run)
    assert result.termination.state is RunState.CANCELLED
    assert len(calls) == 2  # no tool (and no model) was called after the cancel was heard
    assert services.store.looks == 1  # heard, not read


def _terminate(settings: Settings, pid: int | None) -> None:
    with psycopg.connect(settings.database_url, autocommit=True) as admin:
        done = admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchall()
    assert done == [(True,)]


def test_a_listener_cut_off_makes_every_token_stale_until_it_listens_again(
    services: Services,
) -> None:
    ends = _ends(services)
    run = _started(services)
    token = ends.watch(run.id)
    assert token is not None and ends.ended(run.id, token) is False
    _terminate(services.settings, ends.listener.backend_pid)
    services.store.cancel(run.id, CancellationReason.USER_REQUESTED)  # perhaps never heard
    assert ends.wait_listening(WAIT_S, connections=2)
    assert ends.ended(run.id, token) is None  # so the run reads the log, and sees the cancel
    assert ends.watch(run.id) not in (None, token)
    assert services.store.written_after(run.id, 1)


def test_a_listen_connection_finds_a_network_gone_silent_within_seconds(
    services: Services,
) -> None:
    """A connection dropped without a word (a NAT, a load balancer) must not be trusted for the
    system's two hours: the kernel probes an idle one and gives up on unacknowledged data."""
    with _ends(services).listener.connect("harness-test-keepalive") as connection:
        probe = socket.fromfd(connection.fileno(), socket.AF_INET, socket.SOCK_STREAM)
        with probe:  # a duplicate of the connection's socket: closing it leaves that one open
            options = {
                "keepalive": probe.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE),
                "idle": probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE),
                "interval": probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL),
                "count": probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT),
                "user_timeout_ms": probe.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT),
            }
        assert connection.execute("SELECT 1").fetchone() == (1,)
    assert options == {
        "keepalive": 1,
        "idle": 5,
        "interval": 2,
        "count": 3,
        "user_timeout_ms": 11_000,
    }


def test_what_anyone_notifies_on_the_channel_breaks_nothing(services: Services) -> None:
    ends = _ends(services)
    run, other = _started(services), _started(services)
    token = ends.watch(run.id)
    with psycopg.connect(services.settings.database_url, autocommit=True) as hostile:
        for payload in ("not an id", str(uuid.uuid4()), "", f"{other.id}", f"x,{run.id},"):
            hostile.execute("SELECT pg_notify(%s, %s)", (_channel(services), payload))
    assert ends.wait_heard(run.id, WAIT_S)  # heard after all the others, in order
    assert ends.ended(run.id, token) is True  # a spoofed end: the run only commits early
    assert ends.ended(other.id, token) is None  # never watched: nothing kept of it
    assert ends.watch(other.id) == token
    assert ends.ended(other.id, token) is False
    with psycopg.connect(services.settings.database_url, autocommit=True) as hostile:
        hostile.execute("SELECT pg_notify(%s, '*')", (_channel(services),))
        hostile.execute("SELECT pg_notify(%s, %s)", (_channel(services), str(other.id)))
    assert ends.wait_heard(other.id, WAIT_S)
    assert ends.ended(run.id, token) is None  # too many ends to name: every token is stale


def test_a_stopped_listener_answers_nothing(services: Services) -> None:
    ends = _ends(services)
    run = _started(services)
    token = ends.watch(run.id)
    ends.close()
    assert ends.ended(run.id, token) is None
    assert ends.watch(run.id) is None


def test_a_schema_named_in_more_bytes_than_characters_still_ends_and_hears_runs() -> None:
    # PostgreSQL limits a channel name to 63 bytes, not characters: this 61-byte schema's
    # ended channel is 82 bytes in 57 characters
    schema = f"t_{'é' * 25}_{uuid.uuid4().hex[:8]}"
    assert len(schema.encode()) < 64 < len(f"harness_events_ended_{schema}".encode())
    settings = Settings(database_url=PG_URL, database_schema=schema)
    try:
        with bootstrap(settings, create=True, overrides=Overrides(heartbeat=False)) as built:
            assert built.chat is not None  # starts the run-ends listener
            ends = _ends(built)
            run = _started(built)
            token = ends.watch(run.id)
            built.store.cancel(run.id, CancellationReason.USER_REQUESTED)
            assert ends.wait_heard(run.id, WAIT_S)
            assert ends.ended(run.id, token) is True
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


def _cancel_together(services: Services, runs: list[Run]) -> None:
    for run in runs:
        run.cancel(CancellationReason.USER_REQUESTED)
    services.store.save_all(*runs)


def test_one_append_names_every_run_it_ends_up_to_the_payload_limit_then_says_star(
    services: Services,
) -> None:
    # 216 ids and their commas are 7991 bytes, under PostgreSQL's 8000; 217 would be 8028
    ends, deadline = _ends(services), datetime.now(UTC) + timedelta(hours=1)
    runs = [Run.start("s", "why?", deadline) for _ in range(216 + 217 + 1)]
    services.store.save_all(*runs)  # many streams in one append
    token = ends.watch(runs[0].id)
    assert {ends.watch(run.id) for run in runs} == {token}
    named, unnamed, last = runs[:216], runs[216:-1], runs[-1]
    _cancel_together(services, named)
    assert ends.wait_heard(named[-1].id, WAIT_S)
    assert {ends.ended(run.id, token) for run in named} == {True}
    assert ends.ended(last.id, token) is False
    _cancel_together(services, unnamed)
    _cancel_together(services, [last])
    assert ends.wait_heard(last.id, WAIT_S)  # heard in commit order: after the "*"
    assert {ends.ended(run.id, token) for run in runs} == {None}  # every run reads again
