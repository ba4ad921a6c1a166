"""Modules and functions stay small enough to read: at most 300 lines and 40 lines.

A function counts from its ``def`` to its last line, docstring included. The packages and the
benches are checked; tests are not.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = (
    "domain",
    "application",
    "projections",
    "infrastructure",
    "bootstrap",
    "api",
    "cli",
    "bench",
)
MODULE_LINES = 300
FUNCTION_LINES = 40


def _sources() -> list[Path]:
    return [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]


def long_modules(limit: int = MODULE_LINES) -> list[str]:
    """``path: lines`` of every module over ``limit`` lines."""
    found = []
    for path in _sources():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(ROOT).as_posix()}: {lines}")
    return found


def long_functions(limit: int = FUNCTION_LINES) -> list[str]:
    """``path:line name (lines)`` of every function over ``limit`` lines."""
    found = []
    for path in _sources():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    where = f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
                    found.append(f"{where} {node.name} ({length})")
    return found


def test_no_module_is_over_300_lines() -> None:
    assert long_modules() == []


def test_no_function_is_over_40_lines() -> None:
    assert long_functions() == []


def test_the_checks_see_what_is_over() -> None:
    assert long_modules(limit=10) != []
    assert long_functions(limit=5) != []
