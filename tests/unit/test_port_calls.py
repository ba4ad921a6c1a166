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
