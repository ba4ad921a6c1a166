"""Port calls: an abandoned call counts as stuck only once it has run ``stuck_after`` seconds."""

from __future__ import annotations

import threading

import pytest

from application.port_calls import PortBusy, PortCalls


def test_calls_a_cancel_abandoned_do_not_refuse_the_port_until_they_run_long() -> None:
    release = threading.Event()
    patient, strict = (
        PortCalls(max_stuck=1, stuck_after=3600),
        PortCalls(max_stuck=1, stuck_after=0),
    )
    try:
        for calls in (patient, strict):
            calls.abandon(calls.submit("model", release.wait))
        patient.abandon(patient.submit("model", release.wait))  # young: the port is still asked
        assert patient.stuck() == {} and strict.stuck() == {"model": 1}
        with pytest.raises(PortBusy, match="HARNESS_MAX_STUCK_CALLS"):
            strict.submit("model", release.wait)
        strict.submit("tool search_logs", lambda: None).result()  # other ports are asked
    finally:
        release.set()
        patient.shutdown()
        strict.shutdown()
    assert patient.stuck() == {} and strict.stuck() == {}  # returned: nothing is stuck any more


def test_a_finished_thread_takes_the_next_call_instead_of_a_new_thread_starting() -> None:
    calls = PortCalls(idle_s=3600)
    try:
        first = calls.submit("model", threading.current_thread).result(timeout=10)
        second = calls.submit("tool search_logs", threading.current_thread).result(timeout=10)
        assert first is second and second.name == "port tool search_logs"
    finally:
        calls.shutdown()
    assert not first.is_alive()  # shutdown ends the idle thread at once


def test_a_call_that_never_returns_holds_no_thread_another_call_needs() -> None:
    release = threading.Event()
    calls = PortCalls(idle_s=3600)
    try:
        hung = calls.submit("tool hang", release.wait)
        calls.abandon(hung)
        assert calls.submit("model", lambda: 42).result(timeout=10) == 42
        assert not hung.done()
    finally:
        release.set()
        calls.shutdown()


def test_an_idle_thread_ends_after_idle_s() -> None:
    calls = PortCalls(idle_s=0.001)
    try:
        thread = calls.submit("model", threading.current_thread).result(timeout=10)
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert calls.submit("model", lambda: "asked").result(timeout=10) == "asked"
    finally:
        calls.shutdown()


def test_no_call_is_lost_when_threads_end_as_calls_are_handed_to_them() -> None:
    calls = PortCalls(idle_s=0.0001)  # threads time out all the time, racing the hand-over
    results: list[list[int]] = [[] for _ in range(6)]

    def submitter(n: int) -> None:
        for i in range(400):
            results[n].append(calls.submit(f"tool t{n}", lambda i=i: i).result(timeout=10))

    workers = [threading.Thread(target=submitter, args=(n,)) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    calls.shutdown()
    assert results == [list(range(400))] * 6
    assert calls._idle >= 0
