"""SPEC §16 over random scripted scenarios, each run through ``ChatService.ask`` on a real store.

A strategy builds random scenario dicts for the scripted provider and tools: routes, agent steps
mixing tool calls (known and unknown tools, malformed and repeated arguments), progress reports
(valid, missing, malformed; facts citing ``$N`` ids that exist or not, excerpts that occur in the
results or not), drafts with and without a conclusion, raw text and model errors; tool results
(lines, empty scopes, errors, raises, oversized records); small budgets; judge and repair answers.
Bad model output is part of every feature, so ``ask`` must never raise.

The examples are the same 300 in every run, so a finding is never a flake (``FUZZ_EXAMPLES=N``
draws N at random instead, see ``tests/_fuzz.py``). Each example runs on a fresh SQLite file.
Afterwards every event of the log is read in log order and checked by
:func:`tests.integration._invariants.check_run` (invariants 1 and 3-9 on the run,
tool-invocation and collection streams, the aggregate-level checks, the SPEC §10 row).
"""

from __future__ import annotations

from typing import Any

import hypothesis
from hypothesis import given
from hypothesis import strategies as st

from application.chat import ChatResult
from bootstrap.composition import Services
from domain.release_states import ReleaseOutcome
from domain.states import RunState
from domain.tool_invocation import ToolInvocation
from tests._fuzz import fuzz_settings
from tests.helpers import ask_scripted, fresh_sqlite
from tests.integration._invariants import check_run, read_events

# -- the vocabulary scenarios are drawn from -------------------------------------------------------

LINES = (
    "2026-11-29T10:05:00Z checkout ERROR upstream timeout after 30s",
    "2026-11-29T09:58:00Z checkout v2.14.0 deployed by ci: new payment client",
    "2026-11-30T08:00:00Z payments WARN connection pool 95% used",
    "2026-11-30T10:00:00Z search ERROR TLS handshake failed: certificate expired",
)
PRESENT = (
    "upstream timeout after 30s",
    "checkout v2.14.0 deployed",
    "connection pool 95% used",
    "2026-11-",
    "xxxx",
    "upstream timeout",
)
"""Excerpts found in some tool result: the first three prove something; the rest occur but are
too weak (``2026-11-`` is in every line, ``xxxx`` in ``size`` ones)."""
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
    {"statement": "s", "citations": []},
    {"statement": "s", "citations": [{"reference": "$1"}]},
    {"statement": "s", "citations": [{"reference": "$1", "excerpt": ""}]},
    {"statement": "s", "citations": "$1"},
    {"statement": "s", "references": ["$1"], "excerpt": "upstream timeout after 30s"},
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
            "draft": {"facts": [], "missing_info": [{"kind": "SERVICE"}]},
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
    return {"statement": draw(st.sampled_from(STATEMENTS)), "citations": _cite(draw, 2, latest)}


def _cite(draw: st.DrawFn, max_size: int, latest: int) -> list[dict[str, str]]:
    """Citations of references like :func:`_refs`, each quoting a present or absent excerpt."""
    excerpts = st.sampled_from((PRESENT[0],) * 3 + PRESENT + ABSENT)
    return [{"reference": r, "excerpt": draw(excerpts)} for r in _refs(draw, max_size, latest)]


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
            "citations": _cite(draw, 3, latest),
        }
    missing = st.sampled_from(({"kind": "SERVICE"}, {"kind": "TIME_WINDOW", "service": "x"}))
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


def _ask(services: Services, scenario: dict[str, Any]) -> ChatResult:
    return ask_scripted(services, scenario)


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
    with fresh_sqlite(no_gain_threshold=no_gain, violation_threshold=violations) as services:
        if earlier:
            first = _ask(services, EARLIER_RUN)
            ready = ToolInvocation.ToolInvocationReady
            other = [e for e in read_events(services.store) if isinstance(e, ready)]
            assert first.content is not None and other, "the earlier run must have evidence"
            scenario = _replace(scenario, OTHER_RUN, str(other[0].originator_id))
        result = _ask(services, scenario)
        events = read_events(services.store)
    return result, events


# -- the property --------------------------------------------------------------------------------

EMPTY_SCOPE: dict[str, Any] = {
    "route": "DIAGNOSIS",
    "tools": {"search_logs": {"results": [{"lines": [], "scope": ""}]}},
    "steps": [
        {"tool": "search_logs", "arguments": {"q": 1}},
        {"draft": {"conclusion": None, "facts": [], "missing_info": [{"kind": "SERVICE"}]}},
    ],
}
"""Found by this test: an empty result whose tool describes no scope must still be published as
a scoped observation (the tool and its arguments), never as a bare "no matching records"."""


BUDGET_BEFORE_COLLECTING: dict[str, Any] = {
    "route": "DIAGNOSIS",
    "budget": {"model_calls": 1},
    "judge": "SUPPORTED",
    "tools": {"search_logs": {"results": [{"lines": ["10:05 checkout ERROR upstream timeout"]}]}},
    "steps": [
        {"tool": "search_logs", "arguments": {"q": 1}, "progress": {"gain": "GAINED"}},
        {"draft": {"conclusion": None, "facts": [], "missing_info": []}},
    ],
}
"""Found by this test: the routing call spends the only model call, so the agent's first call
exhausts the budget while the collection's start is still queued with the run (not in the
store); the collection must be stopped (BUDGET_LIMIT_REACHED) in the same commit all the same."""


def _run_and_check(
    scenario: dict[str, Any], no_gain: int, violations: int, earlier: bool
) -> ChatResult:
    result, events = _run(scenario, no_gain, violations, earlier)  # never raises
    check_run(result, events)
    return result


@fuzz_settings(300)  # the same 300 every run (FUZZ_EXAMPLES=N: N random ones, see tests/_fuzz.py)
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


def test_a_budget_spent_before_the_collection_was_committed_still_stops_it() -> None:
    result = _run_and_check(BUDGET_BEFORE_COLLECTING, no_gain=1, violations=1, earlier=False)
    assert result.termination.state is RunState.BUDGET_EXHAUSTED


def test_an_empty_result_without_a_scope_description_is_still_published_scoped() -> None:
    result = _run_and_check(EMPTY_SCOPE, no_gain=3, violations=2, earlier=False)
    assert result.release_outcome is ReleaseOutcome.FALLBACK
