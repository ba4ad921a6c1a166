"""Import HolmesGPT's recorded-fixture eval folders as cases of the harness's eval format.

A HolmesGPT case (``tests/llm/fixtures/test_ask_holmes/<case>/``, Apache-2.0) is a
``test_case.yaml`` (``user_prompt``, ``expected_output``, live set-up in ``before_test`` /
``after_test``, …) beside recorded tool outputs: ``*.txt`` files whose line 1 is a JSON header
(``toolset_name``, ``tool_name``, ``match_params``), line 2 the structured result (``status``,
``error``, …) and the lines after it the output itself. Each folder becomes one case per prompt,
its recordings a ``fixture`` (one result per file, matched by its ``match_params``; the most
specific first, since the first match wins; :mod:`infrastructure.holmes_recordings` reads them).

HolmesGPT's expected outputs are statements an LLM judges. Only literal, checkable facts are
kept as ``must``: quoted strings, identifiers, versions and numbers of a statement that also occur
in the recorded outputs or the question (what a grounded answer can state); the statements stay
in ``notes``, negated ones are never checked. Anything unreadable is refused in one line naming
the file and the field.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from infrastructure.eval_cases import Case, NoAliases
from infrastructure.holmes_facts import literal_facts
from infrastructure.holmes_recordings import HolmesImportError, read_recording, recorded_tools

if TYPE_CHECKING:
    from pathlib import Path

TEST_CASE = "test_case.yaml"
ID_PREFIX = "holmes-"
MAX_ID = 64
IGNORED = frozenset(
    """after_test allow_toolset_failures base_id before_test cluster_name folder generate_mocks id
    include_tool_calls mock_overrides mock_policy original_user_prompt port_forwards runbooks
    setup_timeout test_env_vars test_type toolsets variant_index""".split()
)
"""Known fields a recorded run does without: live set-up, and what HolmesGPT fills in itself."""
USED = frozenset(
    "user_prompt expected_output evaluation tags skip skip_reason description mocked_date".split()
)
REFUSED = {
    "conversation_history": "earlier turns of a conversation cannot be replayed as one question",
    "include_files": "attached files are not imported; inline them into user_prompt",
}


@dataclass(frozen=True)
class HolmesImport:
    """What an import produced: the cases, and the folders left out (one line each)."""

    cases: tuple[dict[str, Any], ...]
    skipped: tuple[str, ...]
    """Cases HolmesGPT itself skips (``skip: true``), with their reason."""
    refused: tuple[str, ...]
    """One-line errors of the folders refused (only when importing leniently)."""


def import_holmes(source: Path, *, lenient: bool = False) -> HolmesImport:
    """The cases of one HolmesGPT case folder, or of every case folder directly under ``source``.

    Raises HolmesImportError for the first folder it cannot read, unless ``lenient``: then that
    folder is refused (listed) and the others are imported.
    """
    cases: list[dict[str, Any]] = []
    skipped: list[str] = []
    refused: list[str] = []
    for folder in case_folders(source):
        try:
            converted, why = convert_folder(folder)
        except HolmesImportError as error:
            if not lenient:
                raise
            refused.append(str(error))
            continue
        if why is not None:
            skipped.append(f"{folder.name}: {why}")
        cases.extend(converted)
    _check_unique(cases)
    return HolmesImport(tuple(cases), tuple(skipped), tuple(refused))


def case_folders(source: Path) -> list[Path]:
    """``source`` if it holds a test_case.yaml, else its sub-folders that do, sorted by name."""
    if not source.is_dir():
        raise HolmesImportError(f"{source}: not a folder")
    if (source / TEST_CASE).is_file():
        return [source]
    folders = sorted(p for p in source.iterdir() if p.is_dir() and (p / TEST_CASE).is_file())
    if not folders:
        raise HolmesImportError(f"{source}: no {TEST_CASE} in it or in its sub-folders")
    return folders


def convert_folder(folder: Path) -> tuple[list[dict[str, Any]], str | None]:
    """One folder's cases (one per prompt), or none and why HolmesGPT skips it."""
    spec = read_test_case(folder)
    if spec.get("skip") is True:
        return [], f"skip: true ({spec.get('skip_reason') or 'no reason given'})"
    for name in ("conversation_history", "conversation_history.json"):
        if (folder / name).exists():
            raise HolmesImportError(f"{folder / name}: {REFUSED['conversation_history']}")
    recorded = [item for path in sorted(folder.glob("*.txt")) if (item := read_recording(path))]
    if not recorded:
        raise HolmesImportError(f"{folder}: no recorded tool output (*.txt): it runs only live")
    prompts = _texts(spec["user_prompt"])
    statements = _texts(spec["expected_output"])
    evidence = "\n".join(line for item in recorded for line in item.get("lines", ()))
    cases = []
    for index, prompt in enumerate(prompts):
        must, unchecked = literal_facts(statements, f"{evidence}\n{prompt}")
        case: dict[str, Any] = {
            "id": case_id(folder.name, index if len(prompts) > 1 else None),
            "question": prompt,
            "expect": {"outcome": "conclusion", "must": must},
            "fixture": {"tools": recorded_tools(recorded)},
            "tags": _tags(spec, checked=bool(must)),
            "notes": _notes(folder, spec, statements, must, unchecked),
        }
        cases.append(_valid(folder, case))
    return cases, None


def _valid(folder: Path, case: dict[str, Any]) -> dict[str, Any]:
    """``case`` when the case loader takes it; else the first thing it refuses, named."""
    try:
        Case.model_validate(case)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        said = f"{folder}: its case would be refused: {where}: {first['msg']}"
        raise HolmesImportError(said) from None
    return case


def read_test_case(folder: Path) -> dict[str, Any]:
    """``test_case.yaml`` checked as HolmesGPT's own loader does (unknown fields are refused)."""
    path = folder / TEST_CASE
    try:
        spec = yaml.load(path.read_text(encoding="utf-8"), Loader=NoAliases)  # noqa: S506
    except OSError as error:
        raise HolmesImportError(f"{path}: cannot read it: {error.strerror or error}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise HolmesImportError(f"{path}: not YAML: {' '.join(str(error).split())}") from None
    if not isinstance(spec, dict):
        raise HolmesImportError(f"{path}: not a mapping of fields")
    _check_fields(path, spec)
    return spec


def _check_fields(path: Path, spec: dict[str, Any]) -> None:
    """Refuse unknown or unusable fields, missing prompts and answers, and wrong types."""
    for field in spec:
        if field in REFUSED:
            raise HolmesImportError(f"{path}: {field}: {REFUSED[field]}")
        if field not in USED | IGNORED:
            raise HolmesImportError(f"{path}: {field}: unknown field (HolmesGPT forbids it too)")
    for field in ("user_prompt", "expected_output"):
        if field not in spec or not _texts(spec[field]):
            raise HolmesImportError(f"{path}: {field}: missing (a text or a list of texts)")
    if spec.get("mock_policy") == "never_mock":
        raise HolmesImportError(f"{path}: mock_policy: never_mock runs only on live tools")
    for field, kind, name in (("tags", list, "list"), ("skip", bool, "boolean")):
        if spec.get(field) is not None and not isinstance(spec[field], kind):
            raise HolmesImportError(f"{path}: {field}: not a {name}")


def case_id(name: str, variant: int | None) -> str:
    """``holmes-<folder>`` in the case-id alphabet, with ``-<n>`` for one of several prompts."""
    suffix = "" if variant is None else f"-{variant}"
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise HolmesImportError(f"{name}: the folder name has no letter or digit for a case id")
    return ID_PREFIX + slug[: MAX_ID - len(ID_PREFIX) - len(suffix)].rstrip("-") + suffix


def _check_unique(cases: list[dict[str, Any]]) -> None:
    seen: set[str] = set()
    for case in cases:
        if case["id"] in seen:
            raise HolmesImportError(f"{case['id']}: two folders give the same case id; rename one")
        seen.add(case["id"])


def _texts(value: object) -> list[str]:
    """A text or a list of texts as a list of non-blank texts ([] for anything else)."""
    items: list[object] = value if isinstance(value, list) else [value]
    texts = [item.strip() for item in items if isinstance(item, str)]
    return [text for text in texts if text] if len(texts) == len(items) else []


def _tags(spec: dict[str, Any], *, checked: bool) -> list[str]:
    tags = ["holmes", *(str(tag) for tag in spec.get("tags") or [])]
    return tags if checked else [*tags, "unchecked"]


def _notes(
    folder: Path, spec: dict[str, Any], statements: list[str], must: list[str], unchecked: list[str]
) -> str:
    parts = [f"Imported from HolmesGPT case {folder.name} (Apache-2.0)."]
    if spec.get("description"):
        parts.append(f"Description: {' '.join(str(spec['description']).split())}")
    parts.append(f"Expected output (judged by an LLM there): {_quoted(statements)}.")
    parts.append(f"Checked here literally: {', '.join(must) if must else 'nothing'}.")
    if unchecked:
        parts.append(f"Not checkable literally: {_quoted(unchecked)}.")
    for field in ("evaluation", "mocked_date"):
        if field in spec:
            parts.append(f"{field}: {json.dumps(spec[field], default=str)}")
    ignored = sorted(field for field in spec if field in IGNORED)
    if ignored:
        parts.append(f"Ignored (live set-up): {', '.join(ignored)}.")
    return " ".join(parts)


def _quoted(statements: list[str]) -> str:
    return "; ".join(f'"{" ".join(statement.split())}"' for statement in statements)
