"""Eval cases from YAML files (docs/evals.md): a suite is files, or directories read recursively.

A file holds one case (a mapping) or ``cases:`` (a list of them). Every key is checked and an
unknown one is refused; every problem is :class:`CaseFileError`, one line naming the file, the
case and the field, e.g. ``evals/a.yaml: case 'checkout-why': expect.outcome: Input should
be 'conclusion', 'answer' or 'fallback'``. YAML aliases are refused (a case never needs one, and
a few of them make a file of kilobytes expand to gigabytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from domain.evals import Expectation, Expected
from domain.release_states import FallbackType  # noqa: TC001 - pydantic reads it
from domain.values import query_problem, session_problem
from infrastructure.fixture_tools import CaseFilePart, Fixture

SHIPPED_SUITE = Path(__file__).resolve().parent / "evals"
"""The suite ``harness eval`` runs when given no paths."""
CASE_ID_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
MAX_FILE_BYTES = 10 * 1024 * 1024
"""The largest case file read (recorded tool output included)."""
SUFFIXES = (".yaml", ".yml")
MAX_QUESTION_CHARS = 4000
"""The default HARNESS_MAX_QUERY_CHARS; :func:`load_suite` checks the configured one."""


class CaseFileError(ValueError):
    """A case file that cannot be used; the message is one line naming the file and field."""


class Expect(CaseFilePart):
    """What a right answer to the case is."""

    outcome: Literal["conclusion", "answer", "fallback"]
    must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()
    fallback_type: FallbackType | None = None

    @field_validator("must", "must_not")
    @classmethod
    def _not_blank(cls, texts: tuple[str, ...]) -> tuple[str, ...]:
        if any(not text.strip() for text in texts):
            raise ValueError("an empty text occurs in every answer; give words to look for")
        return texts

    @model_validator(mode="after")
    def _type_of_fallback(self) -> Self:
        if self.fallback_type is not None and self.outcome != "fallback":
            raise ValueError("fallback_type is only for outcome: fallback")
        return self


class Case(CaseFilePart):
    """One question and what a right answer holds, optionally with recorded tool results."""

    id: str = Field(pattern=CASE_ID_PATTERN)
    question: str
    session: str | None = None
    expect: Expect
    fixture: Fixture | None = None
    tags: tuple[str, ...] = ()
    notes: str = ""

    @field_validator("question")
    @classmethod
    def _askable(cls, question: str) -> str:
        problem = query_problem(question, len(question))  # the length: load_suite's to check
        if problem:
            raise ValueError(f"the question {problem}")
        return question

    @field_validator("session")
    @classmethod
    def _label(cls, session: str | None) -> str | None:
        problem = None if session is None else session_problem(session)
        if problem:
            raise ValueError(f"a session label {problem}")
        return session

    def expectation(self) -> Expectation:
        """The case's expectation as :func:`domain.evals.score` takes it."""
        expect = self.expect
        wanted = expect.fallback_type.value if expect.fallback_type else None
        return Expectation(Expected(expect.outcome), expect.must, expect.must_not, wanted)


class _CaseList(CaseFilePart):
    cases: tuple[Case, ...] = Field(min_length=1)


@dataclass(frozen=True)
class Suite:
    """The cases to run, in order, with what they were read from."""

    name: str
    cases: tuple[Case, ...]
    files: dict[str, Path]
    """Each case's file, by case id."""


def load_suite(paths: list[Path], max_question_chars: int = MAX_QUESTION_CHARS) -> Suite:
    """Every case of ``paths`` (files, or directories read recursively, sorted by path).

    Raises CaseFileError for a path that does not exist, a bad file, a question longer than
    ``max_question_chars``, an id used twice, or no case at all.
    """
    cases: list[Case] = []
    files: dict[str, Path] = {}
    for file in case_files(paths):
        for case in load_file(file):
            if case.id in files:
                raise CaseFileError(f"{file}: case {case.id!r}: id: also used in {files[case.id]}")
            if len(case.question) > max_question_chars:
                raise CaseFileError(
                    f"{file}: case {case.id!r}: question: {len(case.question)} characters; at"
                    f" most {max_question_chars} are accepted (HARNESS_MAX_QUERY_CHARS)"
                )
            cases.append(case)
            files[case.id] = file
    name = ", ".join(str(path) for path in paths)
    if not cases:
        raise CaseFileError(f"{name}: no case files ({', '.join(SUFFIXES)}) there")
    return Suite(name, tuple(cases), files)


def case_files(paths: list[Path]) -> list[Path]:
    """The case files of ``paths``: each file as given, each directory's YAML files sorted."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            every = (p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
            found.extend(sorted(every))
        elif path.is_file():
            found.append(path)
        else:
            raise CaseFileError(f"{path}: no such file or directory")
    return found


def load_file(file: Path) -> tuple[Case, ...]:
    """The cases of one file; CaseFileError naming the file, the case and the field."""
    data = _read_yaml(file)
    many = isinstance(data, dict) and "cases" in data
    try:
        if many:
            return _CaseList.model_validate(data).cases
        if not isinstance(data, dict):
            raise CaseFileError(f"{file}: a case file is a mapping (one case) or cases: [...]")
        return (Case.model_validate(data),)
    except ValidationError as error:
        raise CaseFileError(_first_problem(file, data, error)) from None


def _read_yaml(file: Path) -> Any:
    try:
        size = file.stat().st_size
        if size > MAX_FILE_BYTES:
            raise CaseFileError(f"{file}: {size} bytes; a case file may have {MAX_FILE_BYTES}")
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise CaseFileError(f"{file}: cannot be read: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise CaseFileError(f"{file}: is not UTF-8 text") from None
    try:
        data = yaml.load(text, Loader=NoAliases)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as error:
        raise CaseFileError(f"{file}: not valid YAML: {_yaml_problem(error)}") from None
    if data is None:
        raise CaseFileError(f"{file}: is empty")
    return data


class NoAliases(yaml.SafeLoader):
    """The safe loader, refusing aliases (``*name``)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        """The node, unless it is an alias."""
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(None, None, "aliases are not accepted", mark)
        return super().compose_node(parent, index)


def _yaml_problem(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None) or str(error)
    mark = getattr(error, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return " ".join(str(problem).split()) + where


def _first_problem(file: Path, data: Any, error: ValidationError) -> str:
    """One line: the file, the case (its id when it has a usable one), the field, the problem."""
    problems = error.errors(include_url=False)
    first = problems[0]
    where: list[Any] = list(first["loc"])
    raw: Any = data
    if where[:1] == ["cases"] and len(where) > 1 and isinstance(where[1], int):
        raw = data["cases"][where[1]] if isinstance(data.get("cases"), list) else None
        where = where[2:] if isinstance(raw, dict) else where
    case_id = raw.get("id") if isinstance(raw, dict) else None
    case = f"case {case_id!r}" if isinstance(case_id, str) else "a case"
    field = ".".join(str(part) for part in where) or "case"
    message = " ".join(str(first["msg"]).split()).removeprefix("Value error, ")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{file}: {case}: {field}: {message}{more}"
