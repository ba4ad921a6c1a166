"""SPEC §16 over random scripted scenarios, each run through ``ChatService.ask`` on a real store.

A strategy builds random scenario dicts for the scripted provider and tools: routes, agent steps
mixing tool calls (known and unknown tools, malformed and repeated arguments), progress reports
(valid, missing, malformed; facts citing ``$N`` ids that exist or not, excerpts that occur in the
results or not), drafts with and without a conclusion, raw text and model errors; tool results
(lines, empty scopes, errors, raises, oversized records); small budgets; judge and repair answers.
Bad model output is part of every feature, so ``ask`` must never raise.

Each example runs on a fresh SQLite file. Afterwards every event of the log is read in log order
and invariants 1 and 3-9 are checked on the run, tool-invocation and collection streams.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from application.chat import ChatResult, ChatService
from application.store import HarnessStore
from domain.collection import Collection, collection_id
from domain.run import Run
from domain.states import (
    DiagnosisStopReason,
    EvidenceStatus,
    FailureCode,
    Intent,
    ReleaseOutcome,
    RunState,
    state_for_reason,
)
from domain.tool_invocation import ToolInvocation
from infrastructure.eventstore import init_store
from infrastructure.model_scripted import ScriptedProvider, chat_config, scripted_tools
from infrastructure.settings import Settings

# -- the vocabulary scenarios are drawn from -------------------------------------------------------

LINES = (
    "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s",
    "2026-11-29T09:58:00Z checkout v2.14.0 deployed by ci: new payment client",
    "2026-11-30T08:00:00Z payments WARN connection pool 95% used",
    "2026-11-30T10:00:00Z search ERROR TLS handshake failed: certificate expired",
)
PRESENT = ("2026-11-", "upstream timeout", "v2.14.0 deployed", "pool 95% used", "xxxx")
"""Excerpts found in some tool result: ``2026-11-`` in every line, ``xxxx`` in ``size`` ones."""
ABSENT = ("disk full on db-1", "no errors exist anywhere")
KNOWN_TOOLS = ("search_logs", "list_deployments", "get_metrics")
UNKNOWN_TOOLS = ("restart_service", "")
OTHER_RUN = "@earlier-run"
"""Stands for a READY + EVIDENCE_FOUND invocation of ``EARLIER_RUN`` (when it ran first)."""
ODD_REFERENCES = ("$4", "$9", "not-an-id", "00000000-0000-4000-8000-000000000000", OTHER_RUN)
"""References that name no invocation of this run: past its results, not an id, an id no run
ever had, an invocation of an earlier run."""
ODD_ARGUMENTS: tuple[Any, ...] = ({}, {"service": "checkout"}, "not json {", "[1, 2]", ["a", "b"])
"""Arguments that are valid but unusual, raw text instead of a JSON object, or a JSON list."""
STATEMENTS = ("checkout times out upstream", "a deploy preceded the errors", "the pool ran hot")
SCOPES = ("payments ERROR logs 2026-11-30", "checkout deploys since 09:00", "")
"""Scope descriptions of empty results; a tool may also describe its scope as nothing at all."""
RAW_TEXTS = ("", "not json at all", "{}", '{"progress": 1}', '{"draft": "done"}', "[1, 2]")
MODEL_ERRORS = ("timeout", "unavailable", "refused")
MALFORMED_FACTS: tuple[Any, ...] = (
    {"statement": "s", "references": [], "excerpt": "upstream timeout"},
    {"statement": "s", "references": ["$1"]},
    {"statement": "s", "references": ["$1"], "excerpt": ""},
    {"statement": "s", "references": "$1", "excerpt": "upstream timeout"},
)
MALFORMED_PROGRESS: tuple[Any, ...] = (
    {"gain": "MAYBE", "facts": []},
    {"facts": []},
    {"gain": "GAINED", "facts": "x"},
    "GAINED",
)
INVALID_DRAFTS: tuple[Any, ...] = (
    {},
    {"conclusion": "it is the deploy"},
    {"facts": [{"statement": "s"}]},
    {"verdict": 1},
)
ROUTES: tuple[Any, ...] = ("DIAGNOSIS",) * 16 + (
    "SYSTEM_CHAT",
    "KNOWLEDGE_QUERY",
    "WEATHER",
    {"text": "not json"},
    {"error": "unavailable"},
    {"json": {"route": "DIAGNOSIS"}},
    "(none)",
)
"""Mostly DIAGNOSIS; the rest are other intents and broken router answers ("(none)": no answer)."""
JUDGES: tuple[Any, ...] = (
    "SUPPORTED",
    "SUPPORTED",
    "UNSUPPORTED",
    {"error": "unavailable"},
    {"text": "garbage"},
    {"json": {"verdict": "MAYBE"}},
)
EARLIER_RUN: dict[str, Any] = {
    "route": "DIAGNOSIS",
    "tools": {"search_logs": {"results": [{"lines": list(LINES)}]}},
    "steps": [
        {"tool": "search_logs", "arguments": {"q": 1}},
        {
            "progress": {"gain": "GAINED", "facts": []},
            "draft": {"facts": [], "missing_info": ["which service?"]},
        },
    ],
}
"""A run before the one under test, in the same store: its evidence is not this run's."""
BUDGETS = st.fixed_dictionaries(
    {},
    optional={
        "model_calls": st.integers(1, 10),
        "tool_calls": st.integers(0, 4),
        "tokens": st.integers(300, 6000),
        "bytes": st.integers(50, 2000),
    },
)
STOP_REASONS_CLOSING = (
    DiagnosisStopReason.INFORMATION_SATURATED,
    DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED,
)
PUBLISHED = (ReleaseOutcome.SUCCESS, ReleaseOutcome.FALLBACK)


# -- strategies ------------------------------------------------------------------------------------
# Mostly an agent that follows the protocol, with every kind of deviation mixed in: runs that fail
# at their first step say little about the release pipeline.


def _one_in(draw: st.DrawFn, n: int) -> bool:
    """True about once in ``n`` draws (shrinks to False)."""
    return draw(st.sampled_from((False,) * (n - 1) + (True,)))


def _some(draw: st.DrawFn, strategy: st.SearchStrategy[Any], sizes: tuple[int, ...]) -> list[Any]:
    """A list whose length is drawn from ``sizes`` (hypothesis alone favours empty lists)."""
    return [draw(strategy) for _ in range(draw(st.sampled_from(sizes)))]


def _refs(draw: st.DrawFn, max_size: int, latest: int) -> list[str]:
    """References, mostly to the latest tool result (``$latest``), sometimes to earlier or none."""
    recent = f"${max(latest, 1)}"
    earlier = tuple(f"${n}" for n in range(1, latest + 1)) or ("$1",)
    options = (recent,) * 4 + earlier + ODD_REFERENCES
    return _some(draw, st.sampled_from(options), tuple(range(1, max_size + 1)))


@st.composite
def facts(draw: st.DrawFn, latest: int) -> dict[str, Any]:
    """A fact the agent claims: valid (verifiable or not) or schema-invalid."""
    if _one_in(draw, 30):
        return draw(st.sampled_from(MALFORMED_FACTS))
    return {
        "statement": draw(st.sampled_from(STATEMENTS)),
        "references": _refs(draw, 2, latest),
        "excerpt": draw(st.sampled_from((PRESENT[0],) * 3 + PRESENT + ABSENT)),
    }


@st.composite
def progress_reports(draw: st.DrawFn, latest: int) -> Any:
    """A progress report: valid, or malformed in one of several ways."""
    if _one_in(draw, 12):
        return draw(st.sampled_from(MALFORMED_PROGRESS))
    gain = draw(st.sampled_from(("GAINED", "GAINED", "NO_GAIN")))
    return {"gain": gain, "facts": _some(draw, facts(latest), (1, 1, 2, 0))}


@st.composite
def drafts(draw: st.DrawFn, latest: int) -> Any:
    """A DiagnosisDraft as the agent would answer it: valid (with or without conclusion) or not."""
    if _one_in(draw, 12):
        return draw(st.sampled_from(INVALID_DRAFTS))
    conclusion = None
    if draw(st.booleans()):
        conclusion = {
            "statement": draw(st.sampled_from(STATEMENTS)),
            "references": _refs(draw, 3, latest),
        }
    missing = st.sampled_from(("which service?", "which time window?"))
    return {
        "conclusion": conclusion,
        "facts": _some(draw, facts(latest), (0, 1, 1, 2)),
        "missing_info": _some(draw, missing, (0, 0, 1)),
    }


@st.composite
def tool_calls(draw: st.DrawFn) -> dict[str, Any]:
    """A tool request: known or unknown tool; arguments valid, repeated or malformed."""
    name = (
        draw(st.sampled_from(UNKNOWN_TOOLS))
        if _one_in(draw, 8)
        else draw(st.sampled_from(KNOWN_TOOLS))
    )
    if _one_in(draw, 5):
        arguments = draw(st.sampled_from(ODD_ARGUMENTS))
    else:
        arguments = {"q": draw(st.integers(1, 3))}  # a small range: exact repeats happen
    return {"tool": name, "arguments": arguments}


@st.composite
def middle_steps(draw: st.DrawFn, latest: int) -> dict[str, Any]:
    """One scripted agent answer before the last one; ``latest`` tool results came before it."""
    shape = draw(st.sampled_from(("tool",) * 16 + ("draft", "text", "error", "progress")))
    if shape == "error":
        return {"error": draw(st.sampled_from(MODEL_ERRORS))}
    if shape == "text":
        return {"text": draw(st.sampled_from(RAW_TEXTS))}
    step: dict[str, Any] = {}
    if shape == "progress" or not _one_in(draw, 8):
        step["progress"] = draw(progress_reports(latest))
    if shape == "tool" or (shape == "draft" and _one_in(draw, 4)):
        step.update(draw(tool_calls()))
    if shape == "draft":
        step["draft"] = draw(drafts(latest))
    if _one_in(draw, 8):
        step["usage"] = {"tokens_in": draw(st.integers(0, 3000)), "tokens_out": 10}
    return step


@st.composite
def last_steps(draw: st.DrawFn, latest: int) -> list[dict[str, Any]]:
    """The agent's last answer: usually a draft; or nothing (the script runs dry), text, error."""
    shape = draw(st.sampled_from(("draft",) * 6 + ("none", "text", "error")))
    if shape == "none":
        return []
    if shape == "text":
        return [{"text": draw(st.sampled_from(RAW_TEXTS))}]
    if shape == "error":
        return [{"error": draw(st.sampled_from(MODEL_ERRORS))}]
    step: dict[str, Any] = {"draft": draw(drafts(latest))}
    if draw(st.booleans()):
        step["progress"] = draw(progress_reports(latest))
    return [step]


@st.composite
def tool_results(draw: st.DrawFn) -> dict[str, Any]:
    """One scripted tool result."""
    kind = draw(st.sampled_from(("lines",) * 6 + ("empty",) * 3 + ("error", "raise", "size")))
    match kind:
        case "lines":
            return {"lines": draw(st.lists(st.sampled_from(LINES), min_size=1, max_size=3))}
        case "empty":
            return {"lines": [], "scope": draw(st.sampled_from(SCOPES))}
        case "error":
            return {"error": "backend unavailable"}
        case "raise":
            return {"raise": "connection reset"}
        case _:
            return {"size": draw(st.sampled_from((50, 350, 3000)))}


@st.composite
def tool_configs(draw: st.DrawFn) -> dict[str, Any]:
    """A scripted tool: its results in call order and, sometimes, odd capabilities."""
    config: dict[str, Any] = {"results": draw(st.lists(tool_results(), min_size=1, max_size=3))}
    extra = draw(st.sampled_from(("none",) * 8 + ("write", "scope", "required", "small")))
    match extra:
        case "write":
            config["read_only"] = False
        case "scope":
            config["required_scope"] = "ops:write"
        case "required":
            config["required"] = ["service"]
        case "small":
            config["max_result_bytes"] = draw(st.sampled_from((60, 150)))
    return config


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A whole scripted scenario (see ``infrastructure/model_scripted.py``)."""
    count = draw(st.sampled_from((1, 2, 2, 3, 3, 4, 5, 6, 0)))
    steps = [draw(middle_steps(n)) for n in range(count)] + draw(last_steps(count))
    tools = {name: draw(tool_configs()) for name in KNOWN_TOOLS if not _one_in(draw, 6)}
    scenario: dict[str, Any] = {"steps": steps, "tools": tools}
    route = draw(st.sampled_from(ROUTES))
    if route != "(none)":
        scenario["route"] = route
    if not _one_in(draw, 5):
        scenario["judge"] = draw(st.sampled_from(JUDGES))
    if draw(st.booleans()):
        scenario["answer"] = draw(st.sampled_from(("Hello, operator.", {"error": "refused"})))
    if draw(st.booleans()):
        repair = st.sampled_from(({"text": "garbage"}, {"error": "timeout"}))
        scenario["repair"] = draw(st.one_of(drafts(count).map(lambda d: {"json": d}), repair))
    if _one_in(draw, 3):
        scenario["budget"] = draw(BUDGETS)
    if _one_in(draw, 30):
        scenario["deadline_s"] = 0  # deterministic: the deadline has passed at the first boundary
    return scenario


# -- running one scenario ------------------------------------------------------------------------


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def _ask(store: HarnessStore, scenario: dict[str, Any]) -> ChatResult:
    service = ChatService(
        store,
        ScriptedProvider(scenario),
        scripted_tools(scenario),
        SystemClock(),
        config=chat_config(scenario),
    )
    try:
        return service.ask("session-1", "why is checkout slow?")
    finally:
        service.pool.shutdown(wait=True)


def _replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    return new if value == old else value


def _run(
    scenario: dict[str, Any], no_gain: int, violations: int, earlier: bool
) -> tuple[ChatResult, list[Any]]:
    """Ask on a fresh SQLite file (after ``EARLIER_RUN`` if asked); return every event in order."""
    with tempfile.TemporaryDirectory() as tmp:
        settings_ = Settings(
            database_url=f"sqlite:///{Path(tmp) / 'harness.db'}",
            no_gain_threshold=no_gain,
            violation_threshold=violations,
        )
        store = init_store(settings_)
        try:
            if earlier:
                first = _ask(store, EARLIER_RUN)
                other = [
                    e for e in _events(store) if isinstance(e, ToolInvocation.ToolInvocationReady)
                ]
                assert first.content is not None and other, "the earlier run must have evidence"
                scenario = _replace(scenario, OTHER_RUN, str(other[0].originator_id))
            result = _ask(store, scenario)
            events = _events(store)
        finally:
            store.close()
    return result, events


def _events(store: HarnessStore) -> list[Any]:
    notifications = store.recorder.select_notifications(start=1, limit=100_000)
    return [store.mapper.to_domain_event(n) for n in notifications]


# -- reading the log -------------------------------------------------------------------------------


@dataclass
class Invocation:
    """One tool invocation as the log tells it, with the positions of its events."""

    run_id: UUID
    started: int
    ready: int | None = None
    evidence: EvidenceStatus | None = None
    content: str = ""


@dataclass
class Log:
    """The whole log, read for one run: indexes stand for log positions."""

    run_id: UUID
    events: list[Any]
    invocations: dict[UUID, Invocation] = field(default_factory=dict)
    streams: set[UUID] = field(default_factory=set)

    @classmethod
    def read(cls, run_id: UUID, events: list[Any]) -> Log:
        log = cls(run_id, events, streams={run_id, collection_id(run_id)})
        for index, event in enumerate(events):
            if isinstance(event, ToolInvocation.ToolInvocationStarted):
                log.invocations[event.originator_id] = Invocation(event.run_id, index)
                if event.run_id == run_id:
                    log.streams.add(event.originator_id)
            elif isinstance(event, ToolInvocation.ToolInvocationReady):
                invocation = log.invocations[event.originator_id]
                invocation.ready = index
                invocation.evidence = event.evidence_status
                invocation.content = event.content
        return log

    def own(self) -> list[tuple[int, Any]]:
        """This run's events (run, collection and invocation streams), in log order."""
        return [(i, e) for i, e in enumerate(self.events) if e.originator_id in self.streams]

    def where(self, kind: type[Any]) -> list[tuple[int, Any]]:
        return [(i, e) for i, e in self.own() if isinstance(e, kind)]

    def one(self, kind: type[Any]) -> tuple[int, Any]:
        found = self.where(kind)
        assert len(found) == 1, (kind.__name__, len(found))
        return found[0]

    def usable(self, reference: str, before: int, evidence: EvidenceStatus) -> Invocation | None:
        """The invocation of this run a reference names, if READY with ``evidence`` by then."""
        try:
            invocation = self.invocations.get(UUID(reference))
        except ValueError:
            return None
        if invocation is None or invocation.run_id != self.run_id:
            return None
        ready = invocation.ready is not None and invocation.ready < before
        return invocation if ready and invocation.evidence is evidence else None


# -- the invariants ------------------------------------------------------------------------------


def _check_one_termination(log: Log, result: ChatResult) -> None:
    """1: exactly one RUN_TERMINATED and one RUN_FINISHED, the last event of the run stream."""
    terminated_at, terminated = log.one(Run.RunTerminated)
    finished_at, finished = log.one(Run.RunFinished)
    run_stream = [e for _, e in log.own() if e.originator_id == log.run_id]
    assert run_stream[-1] is finished, type(run_stream[-1]).__name__
    assert terminated_at < finished_at
    assert terminated.state is state_for_reason(terminated.reason), terminated
    assert result.termination.state is terminated.state
    assert result.termination.reason is terminated.reason
    assert result.release_outcome is finished.release_outcome


def _published_facts(content: dict[str, Any]) -> list[dict[str, Any]]:
    key = "facts" if content["kind"] == "diagnosis" else "verified_facts"
    found: list[dict[str, Any]] = content.get(key, [])
    return found


def _check_references(log: Log) -> None:
    """3 and 5: published references name READY + EVIDENCE_FOUND invocations of this run."""
    for index, decision in log.where(Run.ReleaseDecision):
        content = decision.content
        if content.get("kind") not in ("diagnosis", "fallback"):
            continue
        references = list(content.get("references", []))
        for fact in _published_facts(content):
            references += fact["references"]
            sources = [
                log.usable(r, index, EvidenceStatus.EVIDENCE_FOUND) for r in fact["references"]
            ]
            assert fact["references"] and all(sources), ("unverified fact published", fact)
            assert fact["excerpt"], ("fact without excerpt published", fact)
            assert any(fact["excerpt"] in s.content for s in sources if s), ("excerpt", fact)
        for reference in references:
            found = log.usable(reference, index, EvidenceStatus.EVIDENCE_FOUND)
            never = log.usable(reference, index, EvidenceStatus.NO_EVIDENCE)
            assert never is None, ("a NO_EVIDENCE invocation was cited", reference)
            assert found is not None, ("published reference does not resolve", reference)


def _check_ready_evidence(log: Log) -> None:
    """4: every TOOL_INVOCATION_READY carries EVIDENCE_FOUND (with content) or NO_EVIDENCE."""
    for _, ready in log.where(ToolInvocation.ToolInvocationReady):
        assert ready.evidence_status in (EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE)
        if ready.evidence_status is EvidenceStatus.EVIDENCE_FOUND:
            assert ready.content.strip(), "EVIDENCE_FOUND with empty content"


def _check_no_evidence_scoped(log: Log) -> None:
    """5: a fallback's NO_EVIDENCE entries each name the non-empty scope of such an invocation."""
    for index, decision in log.where(Run.ReleaseDecision):
        content = decision.content
        if content.get("kind") != "fallback":
            continue
        assert "conclusion" not in content, "a fallback carried the unverified conclusion"
        scopes = [
            i.content
            for i in log.invocations.values()
            if i.run_id == log.run_id
            and i.evidence is EvidenceStatus.NO_EVIDENCE
            and i.ready is not None
            and i.ready < index
        ]
        for entry in content["no_evidence"]:
            assert any(s.strip() and s in entry for s in scopes), ("unscoped NO_EVIDENCE", entry)


def _check_no_tool_after_stop(log: Log) -> None:
    """6: no TOOL_INVOCATION_STARTED after saturation, the stop instruction or the termination."""
    closed_by: str | None = None
    for _, event in log.own():
        if isinstance(event, Collection.CollectionStop) and event.stop_reason in (
            STOP_REASONS_CLOSING
        ):
            closed_by = closed_by or f"COLLECTION_STOP {event.stop_reason.value}"
        elif isinstance(event, Collection.StopRequiredDelivered):
            closed_by = closed_by or "STOP_REQUIRED_DELIVERED"
        elif isinstance(event, Run.RunTerminated):
            closed_by = closed_by or f"RUN_TERMINATED {event.state.value}"  # SPEC §5
        elif isinstance(event, ToolInvocation.ToolInvocationStarted):
            assert closed_by is None, f"a tool invocation started after {closed_by}"


def _check_stop_goes_through_release(log: Log, intent: Intent | None) -> None:
    """7: published diagnosis content (after a stop or not) comes from Release after the guard."""
    _, terminated = log.one(Run.RunTerminated)
    _, finished = log.one(Run.RunFinished)
    stops = log.where(Collection.CollectionStop)
    guards = [i for i, _ in log.where(Run.EvidenceGuardInitial)]
    if stops and terminated.state in (RunState.SUCCESS, RunState.BUDGET_EXHAUSTED):
        # Release ran, whatever it then published (a budget may also run out during Release).
        assert guards, ("a stop without Release", [e.stop_reason for _, e in stops])
    if finished.release_outcome not in PUBLISHED or (intent is not Intent.DIAGNOSIS and not stops):
        return
    decided_at, _ = log.one(Run.ReleaseDecision)
    assert any(i < decided_at for i in guards), "a RELEASE_DECISION without a guard before it"
    assert all(i < decided_at for i, _ in stops), "a COLLECTION_STOP after the RELEASE_DECISION"


def _check_chain_needs_conclusion(log: Log) -> None:
    """8: repair, recheck and the semantic guard only after an initial check with a conclusion."""
    initial = [(i, e.has_conclusion) for i, e in log.where(Run.EvidenceGuardInitial)]
    chain = (
        Run.EvidenceRepair,
        Run.EvidenceGuardRecheck,
        Run.SemanticGuardAttempt,
        Run.SemanticGuardDecision,
    )
    for kind in chain:
        for index, _ in log.where(kind):
            assert any(i < index and has for i, has in initial), kind.__name__


def _check_fallback_is_not_failure(log: Log, result: ChatResult) -> None:
    """9: FALLBACK is a normal published outcome, never a FAILED run; FAILED publishes nothing."""
    _, terminated = log.one(Run.RunTerminated)
    _, finished = log.one(Run.RunFinished)
    decisions = [e for _, e in log.where(Run.ReleaseDecision)]
    if finished.release_outcome is ReleaseOutcome.FALLBACK:
        assert terminated.state in (RunState.SUCCESS, RunState.BUDGET_EXHAUSTED), terminated
    if any(d.outcome is ReleaseOutcome.FALLBACK for d in decisions):
        assert terminated.state is not RunState.FAILED, ("a FALLBACK ended FAILED", terminated)
        assert finished.release_outcome is ReleaseOutcome.FALLBACK, finished.release_outcome
    if finished.release_outcome in PUBLISHED:
        assert len(decisions) == 1 and decisions[0].outcome is finished.release_outcome
        assert result.content == decisions[0].content
    else:
        assert result.content is None, "a run that did not publish returned content"
        assert not decisions, ("a run that did not publish recorded a RELEASE_DECISION", finished)


# -- the property --------------------------------------------------------------------------------

EMPTY_SCOPE: dict[str, Any] = {
    "route": "DIAGNOSIS",
    "tools": {"search_logs": {"results": [{"lines": [], "scope": ""}]}},
    "steps": [
        {"tool": "search_logs", "arguments": {"q": 1}},
        {"draft": {"conclusion": None, "facts": [], "missing_info": ["which service?"]}},
    ],
}
"""Found by this test: an empty result whose tool describes no scope must still be published as
a scoped observation (the tool and its arguments), never as a bare "no matching records"."""


def _run_and_check(
    scenario: dict[str, Any], no_gain: int, violations: int, earlier: bool
) -> ChatResult:
    result, events = _run(scenario, no_gain, violations, earlier)  # never raises
    log = Log.read(result.run_id, events)
    decisions = [e for _, e in log.where(Run.RoutingDecision)]
    intent = decisions[0].intent if decisions else None

    _check_one_termination(log, result)
    _check_references(log)
    _check_ready_evidence(log)
    _check_no_evidence_scoped(log)
    _check_no_tool_after_stop(log)
    _check_stop_goes_through_release(log, intent)
    _check_chain_needs_conclusion(log)
    _check_fallback_is_not_failure(log, result)
    assert result.termination.reason is not FailureCode.INTERNAL_ERROR, "an unexpected exception"
    return result


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    scenario=scenarios(),
    no_gain=st.integers(1, 3),
    violations=st.integers(1, 2),
    earlier=st.booleans(),
)
def test_every_scripted_scenario_keeps_the_invariants(
    scenario: dict[str, Any], no_gain: int, violations: int, earlier: bool
) -> None:
    result = _run_and_check(scenario, no_gain, violations, earlier)
    hypothesis.event(f"outcome {result.release_outcome.value} / {result.termination.reason.value}")


def test_an_empty_result_without_a_scope_description_is_still_published_scoped() -> None:
    result = _run_and_check(EMPTY_SCOPE, no_gain=3, violations=2, earlier=False)
    assert result.release_outcome is ReleaseOutcome.FALLBACK
