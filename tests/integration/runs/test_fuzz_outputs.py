"""Bad input at the model and tool doors: fuzzed output never breaks a run (issue 6, item 5).

Model output is whatever a model may say: arbitrary text (NULs, lone surrogates, bidi marks),
invalid JSON, JSON nested beyond any parser's depth, JSON of the wrong shape, progress reports
with verdicts that are not verdicts, drafts citing unknown, forged, foreign and non-canonical
evidence references, gigantic answers and absurd token counts. Tool output is whatever a tool
adapter may hand back: arbitrary and oversized records, records that are not strings, results of
the wrong type, exceptions of any kind, scopes that are not strings.

The strategies and fakes are in ``_fuzz_outputs``. Each example runs ``ChatService.ask`` on a
fresh SQLite file with the scripted provider (and, for tools, ``FuzzTool``, a hand-written fake
of the Tool port); ``ask`` must return, and
:func:`tests.integration._invariants.check_run` then checks the stored log: one termination, a
row of the SPEC §10 table, the SPEC §16 invariants on every stream, no INTERNAL_ERROR.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import hypothesis
import pytest
from hypothesis import given
from hypothesis import strategies as st

from application.chat import ChatResult
from application.ports import ToolExecutionError, ToolOutput
from domain.collection import Collection
from domain.run import Run
from domain.states import CompletionReason, FailureCode
from domain.tool_invocation import ToolInvocation
from domain.tool_states import ToolRejectionCode
from infrastructure.openai_wire import parse_arguments
from tests._fuzz import fuzz_settings
from tests.helpers import ask_scripted, fresh_sqlite
from tests.integration._invariants import Log, check_run, read_events
from tests.integration.runs._fuzz_outputs import (
    FORGED,
    ForgingProvider,
    FuzzTool,
    Giant,
    Outcome,
    fuzz_tools,
    model_scenarios,
    protocol_steps,
)
from tests.integration.runs.test_runtime_properties import (
    EARLIER_RUN,
    LINES,
    OTHER_RUN,
    _replace,
)

if TYPE_CHECKING:
    from application.ports import Tool
    from bootstrap.composition import Services

QUERY = "why is checkout slow?"

# -- running one example ---------------------------------------------------------------------------


def _run(
    scenario: dict[str, Any], tools: dict[str, Tool] | None = None, *, earlier: bool = False
) -> tuple[ChatResult, Log]:
    """Ask on a fresh SQLite file (after ``EARLIER_RUN`` if asked) and check the log."""
    with fresh_sqlite() as services:
        if earlier:
            _ask(services, EARLIER_RUN)
            ready = ToolInvocation.ToolInvocationReady
            other = next(e for e in read_events(services.store) if isinstance(e, ready))
            scenario = _replace(scenario, OTHER_RUN, str(other.originator_id))
        result = _ask(services, scenario, tools)  # never raises
        log = check_run(result, read_events(services.store))
    if hypothesis.currently_in_test_context():
        hypothesis.event(f"{result.release_outcome.value} / {result.termination.reason.value}")
        for _, event in log.where(ToolInvocation.ToolInvocationFailed):
            hypothesis.event(f"invocation FAILED {event.error_code}")
    return result, log


def _ask(
    services: Services, scenario: dict[str, Any], tools: dict[str, Tool] | None = None
) -> ChatResult:
    return ask_scripted(services, scenario, wrap=ForgingProvider, tools=tools)


# -- the properties --------------------------------------------------------------------------------


@fuzz_settings(80)  # each example is a whole run on a fresh SQLite file (about 20 ms)
@given(scenario=model_scenarios(), earlier=st.booleans())
def test_any_model_output_ends_the_run_on_a_legal_row_with_the_invariants(
    scenario: dict[str, Any], earlier: bool
) -> None:
    _run(scenario, earlier=earlier)


@fuzz_settings(50)
@given(steps=protocol_steps(), tools=fuzz_tools())
def test_any_tool_output_ends_the_run_on_a_legal_row_with_the_invariants(
    steps: list[dict[str, Any]], tools: dict[str, Tool]
) -> None:
    _run({"route": "DIAGNOSIS", "steps": steps, "judge": "SUPPORTED"}, tools)


# -- what the fuzzing found (each ended the run INTERNAL_ERROR, some with an unreadable stream) ----

DEEP = Giant("[" * 100_000)
UPSTREAM = "upstream timeout after 30s"
EVIDENCE_STEPS: list[dict[str, Any]] = [
    {"tool": "search_logs", "arguments": {"q": 1}},
    {
        "progress": {
            "gain": "GAINED",
            "facts": [{"statement": "s", "citations": [{"reference": "$1", "excerpt": UPSTREAM}]}],
        },
        "draft": {
            "conclusion": {
                "statement": "the deploy broke it",
                "citations": [{"reference": "$1", "excerpt": UPSTREAM}],
            }
        },
    },
]
TOOLS = {"search_logs": {"lines": list(LINES)}}


@pytest.mark.parametrize(
    ("where", "reason", "fallback"),
    [
        ({"route": {"text": DEEP}}, FailureCode.ROUTING_FAILED, None),
        ({"steps": [{"text": DEEP}]}, FailureCode.INVALID_DRAFT, None),
        ({"judge": {"text": DEEP}}, CompletionReason.COMPLETED, "SEMANTIC_UNAVAILABLE"),
        (
            {"steps": EVIDENCE_STEPS[:1] + [_replace(EVIDENCE_STEPS[1], "$1", "$7")]},
            CompletionReason.COMPLETED,
            "EVIDENCE_VALIDATION_FAILED",
        ),
    ],
)
def test_json_nested_deeper_than_the_parser_goes_is_just_invalid_json(
    where: dict[str, Any], reason: Any, fallback: str | None
) -> None:
    """It raised RecursionError from ``json.loads``, which no door expected."""
    scenario = {"route": "DIAGNOSIS", "steps": EVIDENCE_STEPS, "tools": TOOLS, "judge": "SUPPORTED"}
    result, _ = _run({**scenario, "repair": {"text": DEEP}, **where})
    assert result.termination.reason is reason
    assert (result.content or {}).get("fallback_type") == fallback
    assert parse_arguments(DEEP) == ({}, DEEP)  # the OpenAI adapter's tool-call arguments


def test_lone_surrogates_and_nuls_from_the_model_are_stored_as_replacement_characters() -> None:
    """A JSON answer may escape a lone surrogate, which UTF-8 cannot encode: the save failed,
    and the run's end was then appended past the lost events (a stream that cannot be read)."""
    odd = _replace(EVIDENCE_STEPS, "the deploy broke it", "the \ud800deploy\x00 broke it")
    odd = _replace(odd, "s", "\udfff")
    scenario = {"route": "DIAGNOSIS", "steps": odd, "tools": TOOLS, "judge": "SUPPORTED"}
    result, log = _run(scenario)
    assert result.content is not None and result.release_outcome.value == "SUCCESS"
    assert result.content["conclusion"] == "the \ufffddeploy\ufffd broke it"
    (_, progress), *_ = log.where(Collection.ToolProgress)
    assert [f.statement for f in progress.facts] == ["\ufffd"]


@pytest.mark.parametrize("forged", FORGED[:4])
def test_another_spelling_of_an_evidence_id_is_not_that_id(forged: str) -> None:
    """``UUID()`` reads "{id}", "urn:uuid:id", upper case and no hyphens as the id: the guard
    verified them, and published content cited ids that no reader of the log would find."""
    steps = _replace(EVIDENCE_STEPS, "$1", forged)  # the fact's and the conclusion's reference
    result, log = _run({"route": "DIAGNOSIS", "steps": steps, "tools": TOOLS, "judge": "SUPPORTED"})
    assert result.content is not None, result
    assert result.content["fallback_type"] == "EVIDENCE_VALIDATION_FAILED"
    assert result.content["verified_facts"] == []
    (_, initial), *_ = log.where(Run.EvidenceGuardInitial)
    assert initial.invalid_references[0] != forged  # the provider did forge a real id


@pytest.mark.parametrize(
    "returned",
    [
        None,
        "2026-11-29 checkout ERROR",
        ToolOutput("2026-11-29 checkout ERROR", "scope"),  # type: ignore[arg-type]
        ToolOutput((b"bytes",), "scope"),  # type: ignore[arg-type]
        ToolOutput(("ok", 1), "scope"),  # type: ignore[arg-type]
        ToolOutput(("ok",), None),  # type: ignore[arg-type]
    ],
)
def test_a_tool_result_of_the_wrong_shape_fails_its_invocation_malformed(returned: Any) -> None:
    """It raised AttributeError or TypeError past the boundary: the invocation stayed open."""
    tools: dict[str, Tool] = {"search_logs": FuzzTool("search_logs", [Outcome(returns=returned)])}
    _, log = _run({"route": "DIAGNOSIS", "steps": EVIDENCE_STEPS}, tools)
    (_, failed), *_ = log.where(ToolInvocation.ToolInvocationFailed)
    assert failed.error_code == "MALFORMED", failed


def test_text_from_a_tool_is_stored_as_replacement_characters() -> None:
    output = ToolOutput(("2026-11-29 checkout upstream timeout \ud800\x00",), "\udfff")
    tools: dict[str, Tool] = {"search_logs": FuzzTool("search_logs", [Outcome(returns=output)])}
    _, log = _run({"route": "DIAGNOSIS", "steps": EVIDENCE_STEPS, "judge": "SUPPORTED"}, tools)
    (_, ready), *_ = log.where(ToolInvocation.ToolInvocationReady)
    assert ready.content == "2026-11-29 checkout upstream timeout \ufffd\ufffd"


def test_a_tool_error_without_a_code_fails_its_invocation_as_execution() -> None:
    """The domain refused the blank code: INTERNAL_ERROR and an invocation left open."""
    error = Outcome(raises=ToolExecutionError(" ", "backend \ud800 down"))
    tools: dict[str, Tool] = {"search_logs": FuzzTool("search_logs", [error])}
    _, log = _run({"route": "DIAGNOSIS", "steps": EVIDENCE_STEPS}, tools)
    (_, failed), *_ = log.where(ToolInvocation.ToolInvocationFailed)
    assert (failed.error_code, failed.message) == ("EXECUTION", "backend \ufffd down")


@pytest.mark.parametrize("scope", [Outcome(raises=KeyError("service")), Outcome(returns=42)])
def test_a_tool_that_cannot_read_its_arguments_rejects_the_request(scope: Outcome) -> None:
    """Only ToolArgumentsError was expected from ``normalize_scope``: anything else escaped."""
    tools: dict[str, Tool] = {"search_logs": FuzzTool("search_logs", [Outcome()], scope)}
    _, log = _run({"route": "DIAGNOSIS", "steps": EVIDENCE_STEPS}, tools)
    (_, rejected), *_ = log.where(Run.ToolRequestRejected)
    assert rejected.code is ToolRejectionCode.INVALID_REQUEST and "search_logs" in rejected.detail
    assert not log.where(ToolInvocation.ToolInvocationStarted)
