"""The shipped suite and the imported HolmesGPT cases, read by the real loader.

``infrastructure.eval_cases`` holds the format; these helpers give its cases as lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from infrastructure.eval_cases import Case as EvalCase
from infrastructure.eval_cases import load_file
from infrastructure.eval_cases import load_suite as load_cases

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["EvalCase", "load_case_file", "load_suite"]


def load_case_file(path: Path) -> list[EvalCase]:
    """The cases of one file (the loader's one-line error when it is not a case file)."""
    return list(load_file(path))


def load_suite(root: Path) -> list[EvalCase]:
    """Every case under ``root``, in suite order."""
    return list(load_cases([root]).cases)
