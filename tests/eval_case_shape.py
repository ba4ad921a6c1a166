"""A minimal check of the shared eval case format (prompts/eval_format.md), for the tests.

The real loader lives in ``infrastructure/eval_cases.py`` (written in parallel); until the merge
switches these tests to it, this strict pydantic model holds the shipped suite and the imported
HolmesGPT cases to the contract: unknown keys are refused, ids follow the pattern, a result is
lines or an error, and a fallback type is only given with a fallback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from domain.release_states import FallbackType

CASE_ID = r"^[a-z0-9][a-z0-9-]{0,63}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CaseExpect(_Strict):
    outcome: Literal["conclusion", "answer", "fallback"]
    must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()
    fallback_type: FallbackType | None = None

    @model_validator(mode="after")
    def _coherent(self) -> CaseExpect:
        if self.fallback_type is not None and self.outcome != "fallback":
            raise ValueError("fallback_type is only for outcome: fallback")
        if any(not text.strip() for text in (*self.must, *self.must_not)):
            raise ValueError("an empty must or must_not text")
        return self


class FixtureResult(_Strict):
    match: dict[str, Any] | None = None
    lines: tuple[str, ...] | None = None
    error: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> FixtureResult:
        if (self.lines is None) == (self.error is None):
            raise ValueError("a result holds lines or an error, not both or neither")
        return self


class FixtureTool(_Strict):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    results: tuple[FixtureResult, ...] = ()


class CaseFixture(_Strict):
    tools: tuple[FixtureTool, ...]


class EvalCase(_Strict):
    id: str = Field(pattern=CASE_ID)
    question: str = Field(min_length=1)
    session: str | None = None
    expect: CaseExpect
    fixture: CaseFixture | None = None
    tags: tuple[str, ...] = ()
    notes: str | None = None


def load_case_file(path: Path) -> list[EvalCase]:
    """The cases of one file: one case (a mapping) or ``cases: [...]``."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict), f"{path}: not a mapping"
    items = document["cases"] if set(document) == {"cases"} else [document]
    return [EvalCase.model_validate(item) for item in items]


def load_suite(folder: Path) -> list[EvalCase]:
    """Every case of every ``*.yaml`` file under ``folder``, sorted by path."""
    return [case for path in sorted(folder.rglob("*.yaml")) for case in load_case_file(path)]
