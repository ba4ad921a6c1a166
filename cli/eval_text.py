"""Eval history and comparisons as plain text: aligned columns, one item a line, never wrapped.

The same lines on a terminal and in a pipe, whatever the terminal's width. Text that came from a
suite or a model (questions, reasons, names) is shown on one line, every character that would
act on a terminal or hide spelled out (:func:`cli.terminal_text.spelled_out`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cli.terminal_text import spelled_out

if TYPE_CHECKING:
    from collections.abc import Sequence

    from domain.eval_compare import EvalComparison
    from domain.evals import EvalReport

HISTORY = (
    "when (UTC)",
    "eval",
    "suite",
    "model",
    "correct",
    "fallback",
    "wrong",
    "published-wrong",
)
HISTORY_COUNTS = ("correct", "fallback", "wrong", "published_wrong")
LONGEST = 200
"""Characters of one piece of text shown in a column or after a label; the rest is cut (…)."""


def line(text: object, most: int = LONGEST) -> str:
    """``text`` on one line, spelled out, at most ``most`` characters."""
    said = " ".join(spelled_out(str(text)).split())
    return said if len(said) <= most else said[: most - 1] + "…"


def columns(headers: Sequence[str], rows: Sequence[Sequence[str]], right: set[int]) -> list[str]:
    """Rows under their headers, each column as wide as its widest cell (``right``: aligned so)."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def one(cells: Sequence[str]) -> str:
        padded = [
            cell.rjust(width) if index in right else cell.ljust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(padded).rstrip()

    return [one(headers), *(one(row) for row in rows)]


def when(moment: datetime | None) -> str:
    """A time in UTC to the minute (``-`` for none)."""
    if moment is None:
        return "-"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def history_lines(rows: Sequence[dict[str, Any]], short: dict[str, str]) -> list[str]:
    """The eval history table: one evaluation a line, its counts out of its cases."""
    if not rows:
        return ["no evaluation recorded yet: run `harness eval` first"]
    cells = [
        [
            when(row["started_at"]),
            short[row["eval_id"]],
            line(row["suite"], 60),
            line(row["model"], 60),
            *(f"{row[name]}/{row['cases']}" for name in HISTORY_COUNTS),
        ]
        for row in rows
    ]
    return columns(HISTORY, cells, right={4, 5, 6, 7})


def _signed(number: int) -> str:
    return f"{number:+d}" if number else "0"


def _side(label: str, report: EvalReport) -> str:
    return (
        f"{label}  {report.eval_id}  {when(report.started_at)}  suite {line(report.suite, 80)}"
        f"  model {line(report.model, 80)}"
    )


def comparison_lines(comparison: EvalComparison) -> list[str]:
    """What changed from A to B: totals, settings, and every case that changed."""
    said = [_side("A", comparison.a), _side("B", comparison.b), ""]
    totals = [
        [name.replace("_", "-"), str(was), str(now), _signed(delta)]
        for name, was, now, delta in comparison.totals
    ]
    said += columns(("total", "A", "B", "change"), totals, right={1, 2, 3})
    said.append("")
    differ = [(c.name, c) for c in comparison.evaluated]
    differ += [(f"setting {c.name}", c) for c in comparison.settings]
    if differ:
        said.append("what differs (A → B):")
        said += [
            f"  {line(name, 80)}: {_value(c.before)} → {_value(c.after)}" for name, c in differ
        ]
    else:
        said.append("the same suite, model and settings")
    said.append("")
    said += _case_lines(comparison)
    return said


def _value(value: str | None) -> str:
    return "(not set)" if value is None else line(repr(value), 120)


def _case_lines(comparison: EvalComparison) -> list[str]:
    changed = comparison.cases
    if not changed:
        return [f"cases: none changed ({comparison.unchanged} the same)"]
    said = [f"cases that changed: {len(changed)} ({comparison.unchanged} the same)"]
    for change in changed:
        said.append(f"  {line(change.case_id, 80)}: {change.what}")
        said.append(f"    question: {line(change.question)}")
        said += [f"    - {line(reason)}" for reason in change.reasons]
    newly = comparison.newly_published_wrong
    if newly:
        names = ", ".join(line(c.case_id, 80) for c in newly)
        said += ["", f"newly published-and-wrong in B: {len(newly)} ({names})"]
    return said
