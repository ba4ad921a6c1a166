"""Recorded-evidence fixtures: an eval case's tool results, served instead of the live tools.

A case's ``fixture`` names tools and what each returned when the case was recorded. They are
offered through the same :class:`~application.ports.Tool` port as every tool, so the tool
boundary, the budgets and the guards treat them exactly as the live ones: a case runs the same
on any machine, against any model. A call is answered by the first recorded result whose
``match`` is a subset of the call's arguments (each key present with an equal value): its
``lines``, or its ``error`` as a failed call; a call no result matches returns no records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

from jsonschema import exceptions as schema_errors
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from referencing.exceptions import Unresolvable

from application.ports import ToolArgumentsError, ToolExecutionError, ToolOutput
from application.tool_admission import VALID_NAME
from infrastructure.mcp_results import MAX_ERROR_CHARS, canonical_scope
from infrastructure.tool_schemas import SchemaRefused, compiled
from infrastructure.tools import DEFAULT_MAX_RESULT_BYTES, OPS_READ_SCOPE

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

    from application.ports import JSON

FIXTURE_ORIGIN = "fixture"
"""The origin a recorded tool's invocations carry (built-ins say ``builtin``)."""


class CaseFilePart(BaseModel):
    """A part of a case file: frozen, and any key it does not know is refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RecordedResult(CaseFilePart):
    """One recorded answer of a tool: lines (records) or an error, for matching arguments."""

    match: dict[str, Any] = Field(default_factory=dict)
    lines: tuple[str, ...] | None = None
    error: str | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_answer(self) -> Self:
        if self.lines is not None and self.error is not None:
            raise ValueError("a result has either lines or an error, not both")
        return self

    def matches(self, arguments: JSON) -> bool:
        """Whether every key of ``match`` is among ``arguments`` with an equal value."""
        return all(key in arguments and arguments[key] == v for key, v in self.match.items())


class RecordedTool(CaseFilePart):
    """A tool of a fixture: its name, what the model is told of it, and its recorded results."""

    name: str
    description: str = Field(default="A tool whose results were recorded.", min_length=1)
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    results: tuple[RecordedResult, ...] = ()

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not VALID_NAME.match(name):
            raise ValueError("a tool name is 1 to 64 letters, digits, _ or -")
        return name

    @field_validator("parameters")
    @classmethod
    def _safe_schema(cls, parameters: dict[str, Any]) -> dict[str, Any]:
        try:  # nothing is fetched; a schema that cannot be checked safely is refused here
            compiled(parameters, "parameters")
        except SchemaRefused as error:
            raise ValueError(str(error)) from None
        return parameters


class Fixture(CaseFilePart):
    """The tools a case's run is offered instead of the configured ones."""

    tools: tuple[RecordedTool, ...] = Field(min_length=1)

    @field_validator("tools")
    @classmethod
    def _unique(cls, tools: tuple[RecordedTool, ...]) -> tuple[RecordedTool, ...]:
        names = [tool.name for tool in tools]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(f"tool {twice[0]!r} is recorded twice")
        return tools


class FixtureTool:
    """A :class:`~application.ports.Tool` answering from a recorded tool's results."""

    def __init__(self, recorded: RecordedTool) -> None:
        """Serve ``recorded``; its schema checks the arguments as an MCP tool's does."""
        self.recorded = recorded
        self.name = recorded.name
        self.description = recorded.description
        self.parameters: JSON = recorded.parameters
        self.read_only = True
        self.required_scope = OPS_READ_SCOPE
        self.max_result_bytes = DEFAULT_MAX_RESULT_BYTES
        self.blocking = False  # an in-memory answer: it cannot wait
        self.local = True  # nothing leaves the process, nothing changes
        self.origin = FIXTURE_ORIGIN
        self.calls = 0
        self._validator: Validator = compiled(recorded.parameters, "parameters")

    def normalize_scope(self, arguments: JSON) -> str:
        """The arguments as canonical JSON, once they satisfy the recorded schema."""
        if not isinstance(arguments, dict):
            raise ToolArgumentsError("arguments must be a JSON object")
        try:
            problem = schema_errors.best_match(self._validator.iter_errors(dict(arguments)))
        except (RecursionError, Unresolvable):
            raise ToolArgumentsError("the schema cannot check these arguments") from None
        if problem is not None:
            field = ".".join(str(p) for p in problem.absolute_path) or "arguments"
            raise ToolArgumentsError(f"{field}: {problem.message}"[:MAX_ERROR_CHARS])
        return canonical_scope(arguments)

    def run(self, arguments: JSON) -> ToolOutput:
        """The first matching result's lines, or its error as a failed call; none: no records."""
        self.calls += 1
        scope = f"recorded {self.name} {canonical_scope(arguments)}"
        for result in self.recorded.results:
            if result.matches(arguments):
                if result.error is not None:
                    raise ToolExecutionError("BACKEND", result.error[:MAX_ERROR_CHARS])
                return ToolOutput(tuple(result.lines or ()), scope)
        return ToolOutput((), scope)


def fixture_tools(fixture: Fixture) -> dict[str, FixtureTool]:
    """The fixture's tools by name, fresh (each run counts its own calls)."""
    return {tool.name: FixtureTool(tool) for tool in fixture.tools}
