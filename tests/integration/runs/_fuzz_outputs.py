"""What a model may say and what a tool may hand back: strategies and fakes for fuzzing.

Used by ``test_fuzz_outputs``: scripted scenarios whose every model answer is fuzzed (played by
the scripted provider, through :class:`ForgingProvider`), and :class:`FuzzTool`, a hand-written
fake of the Tool port whose calls return values of any type or raise exceptions of any kind.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hypothesis import strategies as st

from application.ports import (
    ModelRequest,
    ModelResponse,
    ToolArgumentsError,
    ToolExecutionError,
    ToolOutput,
)
from infrastructure.model_scripted import ScriptedProvider
from tests.integration.runs.test_runtime_properties import LINES, OTHER_RUN, PRESENT

if TYPE_CHECKING:
    from application.ports import JSON, Tool

KNOWN_TOOLS = ("search_logs", "get_metrics")

# -- what a model may say ------------------------------------------------------------------------

ODD_TEXT = (
    "\x00",
    "\ud800",
    "\udfff",
    "\u202eevil\u202c",
    "🔥",
    "\x85\u2028",
    "\ufeff",
    "\\",
    '"',
)
TEXT: st.SearchStrategy[str] = st.one_of(
    st.text(min_size=1, max_size=20),
    st.text(st.characters(codec=None, categories=("Cs", "Cc", "Zl", "Zp", "So")), max_size=8),
    st.sampled_from(ODD_TEXT),
    st.sampled_from(PRESENT),
)
"""Short text of every kind, lone surrogates and NULs included (``characters`` leaves them out
unless asked)."""


class Giant(str):
    """A huge text whose repr stays short (hypothesis prints the examples it falsifies)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Giant({self[:30]!r}... {len(self)} characters)"


GIANT_TEXT = st.sampled_from(
    (
        Giant("x" * 300_000),
        Giant("[" * 100_000),
        Giant('{"draft": ' * 50_000),
        Giant('{"progress": {"gain": "GAINED", "facts": [' + "[" * 20_000),
        Giant(json.dumps({"draft": {"missing_info": ["m"] * 10_000}})),
    )
)
"""Answers no model should give: huge, or nested deeper than any parser recurses."""
SCALARS: st.SearchStrategy[Any] = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), TEXT
)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)
FORGED = ("#U1", "#B1", "#N1", "#R1", "#U2", "#B2")
"""Markers :class:`ForgingProvider` replaces with non-canonical spellings of real invocation ids
(upper case, braces, no hyphens, ``urn:uuid:``)."""


def usually(
    normal: st.SearchStrategy[Any], odd: st.SearchStrategy[Any], n: int = 4
) -> st.SearchStrategy[Any]:
    """``normal``, and about once in ``n`` draws ``odd`` (shrinking towards ``normal``).

    Runs whose first answer is garbage say little about the release pipeline, so each part of
    an answer is odd only now and then, and every part may be.
    """
    return st.sampled_from((False,) * (n - 1) + (True,)).flatmap(lambda o: odd if o else normal)


REFERENCES: st.SearchStrategy[Any] = usually(
    st.sampled_from(("$1", "$1", "$2", "$3", "$9", OTHER_RUN, *FORGED)),
    st.one_of(st.uuids().map(str), TEXT, SCALARS),
    10,
)
"""Ids of this run's results (whatever they were: found, empty or failed), of none, of an
earlier run, forged spellings, garbage and things that are not strings."""
CITATIONS: st.SearchStrategy[Any] = usually(
    st.fixed_dictionaries(
        {"reference": REFERENCES, "excerpt": usually(st.sampled_from(PRESENT), TEXT, 3)}
    ),
    JSON_VALUES,
    8,
)
FACTS: st.SearchStrategy[Any] = usually(
    st.lists(
        st.fixed_dictionaries(
            {
                "statement": usually(st.just("the pool ran hot"), TEXT, 2),
                "citations": usually(st.lists(CITATIONS, min_size=1, max_size=3), SCALARS, 8),
            }
        ),
        max_size=3,
    ),
    JSON_VALUES,
    8,
)
PROGRESS: st.SearchStrategy[Any] = usually(
    st.fixed_dictionaries(
        {"gain": usually(st.sampled_from(("GAINED", "NO_GAIN")), SCALARS, 6), "facts": FACTS}
    ),
    JSON_VALUES,
    6,
)
CONCLUSIONS: st.SearchStrategy[Any] = usually(
    st.fixed_dictionaries(
        {
            "statement": usually(st.just("the deploy broke checkout"), TEXT, 2),
            "citations": usually(st.lists(CITATIONS, min_size=1, max_size=3), SCALARS, 8),
        }
    ),
    st.one_of(st.none(), JSON_VALUES),
    3,
)
MISSING: st.SearchStrategy[Any] = usually(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(("SERVICE", "TIME_WINDOW", "SYMPTOM", "ENVIRONMENT"))},
        optional={"service": usually(st.sampled_from(("checkout", "pay-ments")), TEXT, 3)},
    ),
    st.one_of(TEXT, JSON_VALUES),
    6,
)
DRAFTS: st.SearchStrategy[Any] = usually(
    st.fixed_dictionaries(
        {"conclusion": CONCLUSIONS, "facts": FACTS},
        optional={"missing_info": usually(st.lists(MISSING, max_size=2), JSON_VALUES, 6)},
    ),
    JSON_VALUES,
    6,
)
TOOL_CALLS: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {
        "tool": usually(st.sampled_from(KNOWN_TOOLS), TEXT, 8),
        "arguments": usually(
            st.fixed_dictionaries({"q": st.integers(1, 3)}), st.one_of(JSON_VALUES, TEXT), 5
        ),
    }
)
USAGE = st.fixed_dictionaries(
    {"tokens_in": st.integers(-(10**6), 10**12), "tokens_out": st.integers(-(10**6), 10**12)}
)


RAW = ("text", "json", "giant")
"""Answers that are not protocol steps at all (each ends the run INVALID_DRAFT, mostly)."""


@st.composite
def agent_steps(draw: st.DrawFn) -> dict[str, Any]:
    """One scripted agent answer: mostly a protocol step with odd contents, sometimes anything."""
    shape = draw(usually(st.sampled_from(("tool",) * 3 + ("draft",)), st.sampled_from(RAW), 10))
    step: dict[str, Any] = {}
    match shape:
        case "text":
            step["text"] = draw(TEXT)
        case "json":
            step["json"] = draw(JSON_VALUES)
        case "giant":
            step["text"] = draw(GIANT_TEXT)
        case "tool":
            step.update(draw(TOOL_CALLS))
        case _:
            step["draft"] = draw(DRAFTS)
    if shape in ("tool", "draft") and draw(usually(st.just(True), st.just(False), 6)):
        step["progress"] = draw(PROGRESS)
    if draw(usually(st.just(False), st.just(True), 8)):
        step["usage"] = draw(USAGE)
    return step


ANSWERS: st.SearchStrategy[Any] = st.one_of(
    TEXT.map(lambda text: {"text": text}),
    JSON_VALUES.map(lambda value: {"json": value}),
    GIANT_TEXT.map(lambda text: {"text": text}),
)
"""A router, judge, repair or chat answer that is anything at all."""


@st.composite
def model_scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A scenario whose every model answer is fuzzed; the tools answer normally."""
    steps = draw(st.lists(agent_steps(), min_size=1, max_size=6))
    steps.append({"draft": draw(DRAFTS), "progress": draw(PROGRESS)})
    scenario: dict[str, Any] = {
        "route": draw(usually(st.just("DIAGNOSIS"), ANSWERS, 6)),
        "steps": steps,
        "tools": {
            "search_logs": {"results": [{"lines": list(LINES)}, {"lines": [], "scope": ""}]},
            "get_metrics": {"lines": [LINES[2]]},
        },
        "judge": draw(usually(st.sampled_from(("SUPPORTED", "UNSUPPORTED")), ANSWERS, 3)),
    }
    if draw(st.booleans()):
        scenario["repair"] = draw(usually(DRAFTS.map(lambda d: {"json": d}), ANSWERS, 3))
    if draw(st.booleans()):
        scenario["answer"] = draw(ANSWERS)
    return scenario


@dataclass
class ForgingProvider:
    """The scripted provider, with :data:`FORGED` markers in its answers made into real ids."""

    inner: ScriptedProvider
    name: str = "forging"
    blocking: bool = False

    def complete(self, request: ModelRequest) -> ModelResponse:
        """The scripted answer, forged."""
        response = self.inner.complete(request)
        ids = re.findall(r"^invocation ([0-9a-f-]{36})", _tool_texts(request), re.MULTILINE)
        text = re.sub(r"#([UBNR])([12])", lambda m: _forge(m, ids), response.text)
        return ModelResponse(text, response.tool_calls, response.usage, response.finish_reason)


def _tool_texts(request: ModelRequest) -> str:
    return "\n".join(m.content for m in request.messages if m.role == "tool")


def _forge(marker: re.Match[str], ids: list[str]) -> str:
    index = int(marker[2]) - 1
    if index >= len(ids):
        return marker[0]
    real = ids[index]
    return {
        "U": real.upper(),
        "B": "{" + real + "}",
        "N": real.replace("-", ""),
        "R": f"urn:uuid:{real}",
    }[marker[1]]


# -- what a tool may hand back ---------------------------------------------------------------------


class Outcome:
    """How a :class:`FuzzTool` call ends: ``returns`` a value or ``raises`` an exception."""

    def __init__(self, returns: Any = None, raises: BaseException | None = None) -> None:
        self.returns = returns
        self.raises = raises

    def __repr__(self) -> str:
        what = f"raises={self.raises!r}" if self.raises else f"returns={self.returns!r:.200}"
        return f"Outcome({what})"


RECORDS: st.SearchStrategy[Any] = st.one_of(
    st.sampled_from(LINES), TEXT, st.sampled_from(("", " ", Giant("x" * 10_000))), SCALARS
)
"""Records: evidence lines, odd and blank text, one oversized line, and non-strings."""
OUTPUTS: st.SearchStrategy[Any] = st.one_of(
    st.builds(
        ToolOutput,
        st.one_of(st.lists(RECORDS, max_size=4).map(tuple), st.just(tuple(LINES) * 200)),
        st.one_of(TEXT, st.sampled_from(("checkout logs", ""))),
    ),
    st.builds(ToolOutput, st.one_of(TEXT, SCALARS, st.lists(RECORDS, max_size=2)), SCALARS),
    JSON_VALUES,
)
"""Results: well-typed with odd records, a result too big for any budget, wrong types inside a
ToolOutput, and values that are not ToolOutputs at all."""
EXCEPTIONS: st.SearchStrategy[BaseException] = st.one_of(
    st.builds(ToolExecutionError, TEXT, TEXT),
    st.builds(ToolArgumentsError, TEXT),
    st.sampled_from(
        (
            RuntimeError("connection reset"),
            ValueError("\ud800\x00"),
            KeyError("service"),
            TypeError(None),
            RecursionError("maximum recursion depth exceeded"),
            UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
            MemoryError(),
            OSError(104, "Connection reset by peer"),
            Exception(),
        )
    ),
)
"""Whatever an adapter may raise (``Exception`` subclasses: a tool is not expected to stop the
process, and KeyboardInterrupt should not be swallowed)."""
OUTCOMES: st.SearchStrategy[Outcome] = st.one_of(
    OUTPUTS.map(lambda value: Outcome(returns=value)),
    EXCEPTIONS.map(lambda error: Outcome(raises=error)),
)


@dataclass
class FuzzTool:
    """A Tool whose calls end as scripted: values of any type returned, exceptions raised."""

    name: str
    outcomes: list[Outcome]
    scope: Outcome = field(default_factory=lambda: Outcome(returns="scope"))
    """What :meth:`normalize_scope` does."""
    blocking: bool = False
    max_result_bytes: int = 8000
    description: str = "A fuzzed tool."
    parameters: JSON = field(default_factory=lambda: {"type": "object"})
    read_only: bool = True
    required_scope: str = "ops:read"
    calls: int = 0

    def normalize_scope(self, arguments: JSON) -> str:
        """The scripted scope (or the scripted failure)."""
        return self._play(self.scope)  # type: ignore[no-any-return]

    def run(self, arguments: JSON) -> ToolOutput:
        """The next scripted outcome (the last one repeats)."""
        outcome = self.outcomes[min(self.calls, len(self.outcomes) - 1)]
        self.calls += 1
        return self._play(outcome)  # type: ignore[no-any-return]

    @staticmethod
    def _play(outcome: Outcome) -> Any:
        if outcome.raises is not None:
            raise outcome.raises
        return outcome.returns


SCOPES: st.SearchStrategy[Outcome] = st.one_of(
    st.just(Outcome(returns="service=checkout")),
    st.just(Outcome(returns="service=checkout")),
    TEXT.map(lambda scope: Outcome(returns=scope)),
    SCALARS.map(lambda scope: Outcome(returns=scope)),
    EXCEPTIONS.map(lambda error: Outcome(raises=error)),
)


@st.composite
def fuzz_tools(draw: st.DrawFn) -> dict[str, Tool]:
    """The tools of a run: each plays fuzzed outcomes, inline or in a worker thread."""
    return {
        name: FuzzTool(
            name,
            draw(st.lists(OUTCOMES, min_size=1, max_size=4)),
            draw(SCOPES),
            blocking=draw(st.booleans()),
            max_result_bytes=draw(st.sampled_from((8000, 8000, 200, 1, 0))),
        )
        for name in KNOWN_TOOLS
    }


@st.composite
def protocol_steps(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An agent that follows the protocol: tool calls, progress citing them, then a draft."""
    steps: list[dict[str, Any]] = []
    count = draw(st.integers(1, 4))
    for n in range(1, count + 1):
        step: dict[str, Any] = {"tool": draw(st.sampled_from(KNOWN_TOOLS)), "arguments": {"q": n}}
        if n > 1:
            step["progress"] = _progress(draw, n - 1)
        steps.append(step)
    cited = [{"reference": f"${count}", "excerpt": draw(st.sampled_from(PRESENT))}]
    conclusion = {"statement": "the pool ran hot", "citations": cited}
    draft = {
        "conclusion": draw(st.sampled_from((None, conclusion))),
        "missing_info": [{"kind": "SYMPTOM"}],
    }
    steps.append({"progress": _progress(draw, count), "draft": draft})
    return steps


def _progress(draw: st.DrawFn, latest: int) -> dict[str, Any]:
    excerpt = draw(st.sampled_from((*PRESENT, "checkout")))
    fact = {"statement": "s", "citations": [{"reference": f"${latest}", "excerpt": excerpt}]}
    return {"gain": draw(st.sampled_from(("GAINED", "NO_GAIN"))), "facts": [fact]}
