"""An INTERNAL_ERROR run's cause is recorded when it fails, secrets redacted, and explained."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from eventsourcing.persistence import StoredEvent

from application.audit.chain import link
from application.audit.records import AuditRecord, store_records
from application.audit.verify import verify_records
from application.explain import explain_run
from application.ports import ModelRequest, ModelResponse
from application.store import HarnessStore, events_of
from bootstrap.composition import Services
from domain.run import Run
from domain.states import FailureCode, ModelStepPurpose, RunState
from infrastructure.model_scripted import ScriptedProvider
from tests.helpers import scripted
from tests.integration._projection_helpers import QUERY, run_scenario

SECRETS = ("hunter2", "sk-live-0123456789", "eyJhbGciOi.payload")
MESSAGE = (
    "POST https://bob:hunter2@llm.internal/v1/chat?api_key=sk-live-0123456789 failed"
    " (Authorization: Bearer eyJhbGciOi.payload)"
)


@dataclass
class BrokenProvider:
    """A model port whose first agent call raises what no one foresaw, secrets in its message."""

    inner: ScriptedProvider
    name: str = "broken"
    blocking: bool = False
    raised: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """The scripted answer, except for the first agent step."""
        if request.purpose is ModelStepPurpose.AGENT and not self.raised:
            self.raised.append(request)
            raise RuntimeError(MESSAGE)
        return self.inner.complete(request)


def test_explain_names_the_exception_of_an_internal_error_with_its_secrets_redacted(
    services: Services, store: HarnessStore
) -> None:
    with scripted(services, "conclusion_supported", wrap=BrokenProvider) as made:
        result = made.service.ask("session-1", QUERY)
    provider = made.service.provider
    assert isinstance(provider, BrokenProvider)

    assert provider.raised
    assert (result.termination.state, result.termination.reason) == (
        RunState.FAILED,
        FailureCode.INTERNAL_ERROR,
    )
    explanation = explain_run(store, result.run_id)
    expected = (
        "RuntimeError: POST https://***@llm.internal/v1/chat?api_key=*** failed"
        " (Authorization: Bearer ***)"
    )
    assert explanation.failure_cause == expected
    neither = next(a for a in explanation.answers if a.question == "timed_out_or_budget_exhausted")
    assert neither.fields["failure_cause"] == expected
    assert f"INTERNAL_ERROR: an unexpected internal error; cause recorded: {expected}" in (
        neither.answer
    )
    (terminated,) = [e for e in events_of(store, result.run_id) if isinstance(e, Run.RunTerminated)]
    assert terminated.cause == expected  # recorded when it failed, not worked out later
    log = json.dumps([r.to_json() for r in store_records(store)])
    shown = explanation.model_dump_json()
    assert not [s for s in SECRETS if s in log or s in shown]


def test_a_termination_recorded_before_causes_names_none(store: HarnessStore) -> None:
    deadline = datetime.now(UTC) + timedelta(minutes=5)
    run_id, _ = store.start_run("s", "q", deadline)
    v1_state = {
        "timestamp": {"_type_": "datetime_iso", "_data_": datetime.now(UTC).isoformat()},
        "state": {"_type_": "RunState", "_data_": "FAILED"},
        "reason": {"_type_": "FailureCode", "_data_": "INTERNAL_ERROR"},
    }
    topic = "domain.run:Run.RunTerminated"
    store.recorder.insert_events([StoredEvent(run_id, 2, topic, json.dumps(v1_state).encode())])

    assert Run.RunTerminated.class_version == 2
    terminated = events_of(store, run_id)[-1]
    assert isinstance(terminated, Run.RunTerminated) and terminated.cause == ""
    explanation = explain_run(store, run_id)
    assert explanation.termination_reason == "INTERNAL_ERROR"
    assert explanation.failure_cause is None


def _with_cause(records: list[AuditRecord], stream: str, cause: str) -> list[AuditRecord]:
    """The log with the cause of ``stream``'s RUN_TERMINATED replaced and its stream relinked."""
    edited = [
        replace(r, payload={**r.payload, "cause": cause})
        if r.stream == stream and r.type == "RUN_TERMINATED"
        else r
        for r in records
    ]
    previous, relinked = "", []
    for record in edited:
        if record.stream == stream:
            chain = link(previous, stream, record.version, record.topic, record.payload)
            record, previous = replace(record, hash=chain), chain
        relinked.append(record)
    return relinked


def test_verify_names_a_cause_the_harness_would_not_have_recorded(
    services: Services, store: HarnessStore
) -> None:
    succeeded = run_scenario(services, "conclusion_supported", "session-1")
    failed = run_scenario(services, "internal_failure", "session-2")  # ROUTING_FAILED, no cause
    records = list(store_records(store))
    assert verify_records(records).clean

    on_success = verify_records(_with_cause(records, str(succeeded.run_id), "RuntimeError: x"))
    secret = verify_records(_with_cause(records, str(failed.run_id), "password=hunter2"))

    assert [(v.rule, v.record and v.record.type) for v in on_success.violations] == [
        ("cause", "RUN_TERMINATED")
    ]
    assert "only a failure has one" in on_success.violations[0].message
    assert [v.rule for v in secret.violations] == ["cause"]
    assert "a secret may show in it" in secret.violations[0].message
