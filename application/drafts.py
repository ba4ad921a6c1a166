"""The agent's structured outputs: progress reports and the DiagnosisDraft (strict schemas)."""

from __future__ import annotations

import json
from datetime import datetime  # noqa: TC003 (pydantic reads it at runtime)
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from application.storable import NotStorable, storable_json
from domain.grounding import Citation
from domain.published import SERVICE_PATTERN
from domain.states import DraftOutcome, MissingKind
from domain.values import Fact

if TYPE_CHECKING:
    from collections.abc import Callable


class CitationOut(BaseModel):
    """A reference and the excerpt of its result, quoted verbatim, that a statement rests on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reference: str = Field(min_length=1, max_length=100)
    excerpt: str = Field(min_length=1, max_length=2000)

    def to_citation(self) -> Citation:
        """The domain value object."""
        return Citation(self.reference, self.excerpt)


class FactOut(BaseModel):
    """A fact the agent claims: a statement and the citations that prove it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    statement: str = Field(min_length=1, max_length=2000)
    citations: list[CitationOut] = Field(min_length=1, max_length=10)

    def to_fact(self) -> Fact:
        """The domain value object."""
        return Fact(self.statement, tuple(c.to_citation() for c in self.citations))


class Conclusion(BaseModel):
    """The diagnosis conclusion and its citations: at least one for each result it relies on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    statement: str = Field(min_length=1, max_length=4000)
    citations: list[CitationOut] = Field(min_length=1, max_length=20)

    @property
    def references(self) -> tuple[str, ...]:
        """The results it cites, each once."""
        return tuple(dict.fromkeys(c.reference for c in self.citations))

    def to_fact(self) -> Fact:
        """The conclusion as a statement with citations (how the guards check it)."""
        return Fact(self.statement, tuple(c.to_citation() for c in self.citations))


class MissingOut(BaseModel):
    """Information the agent needs from the user, as data: the harness words the question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: MissingKind
    service: str | None = Field(None, pattern=SERVICE_PATTERN)
    start: datetime | None = None
    end: datetime | None = None


class DiagnosisDraft(BaseModel):
    """The agent's final output (design §1): optional conclusion, facts, missing information."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    conclusion: Conclusion | None = None
    facts: list[FactOut] = Field(default_factory=list, max_length=50)
    missing_info: list[MissingOut] = Field(default_factory=list, max_length=10)

    @field_validator("facts", "missing_info", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        """Null, as the strict schema allows for a field that may be left out, is no items."""
        return [] if value is None else value

    def is_empty(self) -> bool:
        """Nothing at all was drafted."""
        return self.conclusion is None and not self.facts and not self.missing_info


class ProgressReport(BaseModel):
    """The progress report the agent owes after each tool result (SPEC §9)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gain: Literal["GAINED", "NO_GAIN"]
    facts: list[FactOut] = Field(default_factory=list, max_length=20)

    @field_validator("facts", mode="before")
    @classmethod
    def _none_is_empty(cls, value: object) -> object:
        """Null, as the strict schema allows for a field that may be left out, is no facts."""
        return [] if value is None else value


class AgentStep(BaseModel):
    """What one agent answer's text may carry besides tool calls.

    The draft is kept as data here and validated on its own (:func:`validate_draft`), so a
    broken draft is recorded as such rather than as a broken step.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    progress: ProgressReport | None = None
    draft: dict[str, Any] | None = None


class AgentAnswer(BaseModel):
    """The shape of an agent answer's text, for its strict schema (:class:`AgentStep` reads it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    progress: ProgressReport | None = None
    draft: DiagnosisDraft | None = None


DraftFailure = Literal[
    DraftOutcome.EMPTY_DRAFT,
    DraftOutcome.INVALID_JSON,
    DraftOutcome.SCHEMA_INVALID,
    DraftOutcome.TOO_LARGE,
]
"""How a draft can break its contract: every DraftOutcome but VALID."""


class DraftError(Exception):
    """The draft broke its contract (SPEC §7): empty, invalid JSON, schema-invalid, too large."""

    def __init__(self, kind: DraftFailure, detail: str):
        """Keep the kind so the failure is recorded precisely."""
        super().__init__(f"{kind.value}: {detail}")
        self.kind: DraftFailure = kind


def loads_json(text: str, object_pairs_hook: Callable[[Any], Any] | None = None) -> Any:
    """``json.loads`` for what a model wrote, which may be anything.

    Its strings are made storable (see :mod:`application.storable`: JSON may escape a lone
    surrogate, which the log cannot hold), and JSON nested deeper than the parser can recurse
    is invalid JSON like any other (a :class:`json.JSONDecodeError`), not a RecursionError that
    would end the run INTERNAL_ERROR. ``object_pairs_hook`` is :func:`json.loads`'s; a
    ValueError it raises is the caller's (the judge's answer refuses a key named twice).
    """
    try:
        return storable_json(json.loads(text, object_pairs_hook=object_pairs_hook))
    except (RecursionError, NotStorable):
        raise json.JSONDecodeError("nested too deeply", text, 0) from None


def parse_agent_text(text: str) -> tuple[AgentStep | None, DraftError | None]:
    """Parse an agent answer's text: the step, or None and why it is malformed (never raises)."""
    if not text.strip():
        return AgentStep(), None
    try:
        data = loads_json(text)
    except json.JSONDecodeError as error:
        where = f"{error.msg} at line {error.lineno} column {error.colno}"
        return None, DraftError(DraftOutcome.INVALID_JSON, where)
    try:
        return AgentStep.model_validate(data), None
    except ValidationError as error:
        return None, DraftError(DraftOutcome.SCHEMA_INVALID, _first_problem(error))


def validate_draft(data: dict[str, Any] | str) -> DiagnosisDraft:
    """A strictly valid draft, or :class:`DraftError` saying exactly what was wrong."""
    if isinstance(data, str):
        try:
            data = loads_json(data)
        except json.JSONDecodeError as error:
            raise DraftError(
                DraftOutcome.INVALID_JSON, f"{error.msg} at column {error.colno}"
            ) from error
    if not isinstance(data, dict):
        raise DraftError(DraftOutcome.SCHEMA_INVALID, "the draft must be a JSON object")
    try:
        draft = DiagnosisDraft.model_validate(data)
    except ValidationError as error:
        raise DraftError(DraftOutcome.SCHEMA_INVALID, _first_problem(error)) from error
    if draft.is_empty():
        raise DraftError(DraftOutcome.EMPTY_DRAFT, "no conclusion, facts or missing_info")
    return draft


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(p) for p in problem["loc"]) or "(root)"
    return f"{where}: {problem['msg']}"
