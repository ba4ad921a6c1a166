"""The embedded default end to end: the offline model over the sample data, on both stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest

from application.chat import ChatService
from application.ports import JSON, ModelProvider, ModelRequest, ModelResponse, Tool, ToolOutput
from application.replies import reply_text
from bootstrap.composition import Services, bootstrap
from domain.answer_rules import ChatReply
from domain.grounding import DEFAULT_RULES, occurs
from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import RunState
from infrastructure.knowledge import load_runbooks
from infrastructure.ops_data import SampleIncident, sample_incidents
from infrastructure.settings import Settings


@pytest.fixture
def runtime(settings: Settings) -> Iterator[Services]:
    with bootstrap(settings, create=True, sample=True) as services:
        yield services


@pytest.mark.parametrize("incident", sample_incidents(), ids=lambda i: i.id)
def test_each_planted_incident_is_diagnosed_citing_its_evidence(
    runtime: Services, incident: SampleIncident
) -> None:
    service: ChatService = runtime.chat
    result = service.ask("s", incident.question)

    assert result.termination.state is RunState.SUCCESS
    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert result.content is not None and result.content["kind"] == "diagnosis"
    assert incident.service in result.content["conclusion"]
    cited = [service.store.get_invocation(UUID(r)) for r in result.content["references"]]
    assert all(c.run_id == result.run_id and c.is_referenceable for c in cited)
    evidence = "\n".join(c.content for c in cited)
    found = [phrase for phrase in incident.evidence if phrase in evidence]
    assert found, (incident.evidence, evidence[:500])


@pytest.mark.parametrize(
    "question",
    ["Why was checkout slow on 2026-11-29?", "Why was checkout slow?"],
)
def test_the_cause_named_is_the_change_closest_before_the_first_symptom(
    runtime: Services, question: str
) -> None:
    """The look-back also finds the day before's deploy (v2.13.4); the one that preceded the
    first upstream timeout that morning is v2.14.0, at 09:52."""
    result = runtime.chat.ask("s", question)

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert result.content is not None
    conclusion = json.dumps([result.content["conclusion"], result.content["citations"]])
    assert "deploy v2.14.0" in conclusion
    assert "v2.13.4" not in conclusion  # it may be listed as a fact seen, never as the cause


@pytest.mark.parametrize(
    "question",
    [
        "Why is the billing service slow?",
        "Why was checkout slow on 2026-11-30 between 01:00 and 03:00 UTC?",
    ],
)
def test_a_question_the_data_cannot_answer_gets_a_safe_fallback(
    runtime: Services, question: str
) -> None:
    result = runtime.chat.ask("s", question)

    assert result.termination.state is RunState.SUCCESS
    assert result.release_outcome is ReleaseOutcome.FALLBACK
    assert result.content is not None
    assert result.content["fallback_type"] in (
        FallbackType.INSUFFICIENT_EVIDENCE.value,
        FallbackType.MISSING_REQUIRED_CONTEXT.value,
    )
    assert "conclusion" not in result.content


class ThreadRecorder:
    """Delegates to a provider and records which thread made each call (a port fake)."""

    def __init__(self, inner: ModelProvider, *, blocking: bool) -> None:
        self.name = inner.name
        self.blocking = blocking
        self.inner = inner
        self.threads: set[int] = set()

    def complete(self, request: ModelRequest) -> ModelResponse:
        self.threads.add(threading.get_ident())
        return self.inner.complete(request)


@pytest.mark.parametrize("blocking", [False, True], ids=["in-process", "blocking"])
def test_only_a_blocking_provider_is_called_from_a_watchdog_thread(
    runtime: Services, blocking: bool
) -> None:
    assert runtime.chat.provider.blocking is False  # the offline model never waits
    recorder = ThreadRecorder(runtime.chat.provider, blocking=blocking)
    runtime.chat.provider = recorder

    result = runtime.chat.ask("s", sample_incidents()[0].question)

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    caller = threading.get_ident()
    assert recorder.threads and (caller in recorder.threads) is not blocking


class ToolThreads:
    """Delegates to a tool and records which thread ran it (a port fake)."""

    def __init__(self, inner: Tool) -> None:
        self.name, self.description = inner.name, inner.description
        self.parameters = inner.parameters
        self.read_only, self.required_scope = inner.read_only, inner.required_scope
        self.max_result_bytes, self.blocking = inner.max_result_bytes, inner.blocking
        self.inner = inner
        self.threads: set[int] = set()

    def normalize_scope(self, arguments: JSON) -> str:
        return self.inner.normalize_scope(arguments)

    def run(self, arguments: JSON) -> ToolOutput:
        self.threads.add(threading.get_ident())
        return self.inner.run(arguments)


def test_sample_tools_run_inline_only_on_sqlite(runtime: Services, settings: Settings) -> None:
    """An SQLite read in WAL mode cannot wait on a lock; a PostgreSQL query gets a watchdog."""
    wrapped = {name: ToolThreads(tool) for name, tool in runtime.chat.tools.items()}
    runtime.chat.tools = wrapped

    result = runtime.chat.ask("s", sample_incidents()[0].question)

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    threads = set().union(*(t.threads for t in wrapped.values()))
    inline = settings.database.kind == "sqlite"
    assert threads and all(t.blocking is not inline for t in wrapped.values())
    assert (threads == {threading.get_ident()}) is inline


@pytest.mark.parametrize(
    "question",
    ["How do I restart the checkout service?", "How do I renew an expired TLS certificate?"],
)
def test_a_how_to_question_is_answered_with_a_grounded_citation(
    runtime: Services, question: str
) -> None:
    result = runtime.chat.ask("s", question)

    content = result.content
    assert result.release_outcome is ReleaseOutcome.SUCCESS
    assert content is not None and content["kind"] == "answer"
    assert content["grounded"] is True and content["refusal"] is None, content
    passages = {p.id: p for p in load_runbooks()}
    [citation] = content["citations"]
    assert occurs(citation["excerpt"], passages[citation["reference"]].text)
    assert DEFAULT_RULES.weakness(citation["excerpt"]) is None
    assert citation["excerpt"] in content["text"] and citation["reference"] in content["text"]
    cited = passages[citation["reference"]]
    assert content["passages"] == [{"id": cited.id, "title": cited.title, "text": cited.text}]


@pytest.mark.parametrize(
    ("message", "reply"),
    [("hello", "GREETING"), ("thanks!", "THANKS"), ("what can you do?", "CAPABILITIES")],
)
def test_small_talk_gets_a_system_reply(runtime: Services, message: str, reply: str) -> None:
    result = runtime.chat.ask("s", message)

    assert result.release_outcome is ReleaseOutcome.SUCCESS
    content = result.content
    assert content is not None and (content["reply"], content["refused"]) == (reply, False)
    assert content["text"] == reply_text(ChatReply(reply))


def test_harness_ask_prints_the_phases_and_the_answer(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    root = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = root
    question = sample_incidents()[0].question
    result = subprocess.run(
        [sys.executable, "-c", "from cli.main import app; app()", "ask", question],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for phase in ("ROUTING", "DIAGNOSIS_RUNNING", "SAFETY_VALIDATING", "run ended: state SUCCESS"):
        assert phase in out, out
    assert out.index("ROUTING") < out.index("DIAGNOSIS_RUNNING") < out.index("SAFETY_VALIDATING")
    assert "tool list_alerts" in out and "v2.14.0" in out
