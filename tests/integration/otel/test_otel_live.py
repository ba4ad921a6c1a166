"""The live trace exporter: it follows the log, never holds a run up, and loses nothing.

A real OTLP/HTTP receiver (:mod:`tests.integration._otlp`) refuses with 503, or is not even
listening, while runs finish; when it comes back every trace arrives, whole, exactly as an
export on demand sends it. The exporter's position is a row of ``projection_tracking``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import partial
from uuid import UUID

import pytest

from bootstrap.composition import Overrides, Services, bootstrap
from infrastructure.ops_data import sample_incidents
from infrastructure.otlp import otlp_exporter
from infrastructure.read_store import SqlReadStore
from infrastructure.settings import Settings
from projections.otel_data import trace_id
from projections.otel_export import TraceExport
from projections.otel_follower import NAME, TraceFollower
from tests.integration._otlp import Receiver, Span, free_port, until

QUESTION = sample_incidents()[0].question
FAST = (0.05, 0.2)
"""The follower's first and longest wait between attempts, in seconds."""


@pytest.fixture
def runtime(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")
    with bootstrap(settings, create=True, sample=True, overrides=Overrides(heartbeat=False)) as s:
        yield s


def _follow(services: Services, monkeypatch: pytest.MonkeyPatch, base: str) -> TraceFollower:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", base)
    follower = services.trace_follower(retry=FAST)
    assert follower is not None
    return follower


def _expected(services: Services, run_id: UUID) -> list[bytes]:
    """The spans of the run as an export on demand sends them."""
    with Receiver() as receiver:
        export = TraceExport(services.store, otlp_exporter(receiver.url, timeout=5))
        export.export(run_id)
        export.exporter.shutdown()
        return sorted(s.raw for s in receiver.spans)


def _received(receiver: Receiver, run_id: UUID) -> list[Span]:
    return receiver.of_trace(f"{trace_id(run_id):032x}")


def test_no_endpoint_no_exporter(runtime: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert runtime.trace_follower() is None


def test_runs_are_exported_as_they_finish_and_the_position_is_kept(
    runtime: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Receiver() as receiver:
        follower = _follow(runtime, monkeypatch, receiver.base)
        first = runtime.chat.ask("s1", QUESTION).run_id
        second = runtime.chat.ask("s2", "Why is the billing service slow?").run_id
        for run_id in (first, second):
            receiver.wait_until(partial(_whole, run_id=run_id))
        head = runtime.store.head()
        until(lambda: follower.position() == head)
        requests = receiver.requests
        follower.close()

        again = TraceFollower(follower.export, follower.read)  # a restart: same row
        assert again.position() == head and again.step() == 0
        assert receiver.requests == requests
    assert sorted(s.raw for s in _received(receiver, first)) == _expected(runtime, first)
    assert NAME not in runtime.projector().names  # its own row, not a projection's


def _whole(receiver: Receiver, run_id: UUID) -> bool:
    spans = _received(receiver, run_id)
    return any(s.parent == "" and s.attributes["harness.run.finished"] for s in spans)


def test_a_receiver_that_answers_503_holds_no_run_up_and_gets_every_trace_later(
    runtime: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Receiver(status=503) as receiver:
        follower = _follow(runtime, monkeypatch, receiver.base)
        runs = [runtime.chat.ask(f"s{n}", QUESTION).run_id for n in range(2)]  # they finish
        receiver.wait_until(lambda r: r.requests >= 2 and follower.failures >= 1)
        assert receiver.spans == [] and follower.position() < runtime.store.head()

        receiver.status = 200
        for run_id in runs:
            receiver.wait_until(partial(_whole, run_id=run_id))
    for run_id in runs:
        assert sorted({s.raw for s in _received(receiver, run_id)}) == _expected(runtime, run_id)


def test_a_receiver_not_listening_loses_nothing_once_it_starts(
    runtime: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    follower = _follow(runtime, monkeypatch, f"http://127.0.0.1:{port}")
    run_id = runtime.chat.ask("s", QUESTION).run_id  # finishes with no receiver at all
    until(lambda: follower.failures >= 1)
    assert follower.position() < runtime.store.head()

    with Receiver(port=port) as receiver:
        receiver.wait_until(lambda r: _whole(r, run_id))
    assert sorted({s.raw for s in _received(receiver, run_id)}) == _expected(runtime, run_id)


def test_two_followers_of_one_database_send_each_run_and_never_move_the_position_back(
    runtime: Services,
) -> None:
    runs = [runtime.chat.ask(f"s{n}", QUESTION).run_id for n in range(3)]
    head = runtime.store.head()
    with Receiver() as receiver:
        export = TraceExport(runtime.store, otlp_exporter(receiver.url, timeout=5))
        followers = [TraceFollower(export, SqlReadStore(runtime.engine)) for _ in range(2)]
        threads = [threading.Thread(target=f.step) for f in followers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        until(lambda: followers[0].position() == head)
        for run_id in runs:  # each once, at most twice (both took it before either moved)
            roots = [s for s in _received(receiver, run_id) if s.parent == ""]
            assert 1 <= len(roots) <= 2
        assert all(f.step() == 0 for f in followers) and followers[1].position() == head
        export.exporter.shutdown()
