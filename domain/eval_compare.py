"""What changed between two evaluations (``harness eval compare A B``): A before, B after.

The totals' differences (B minus A), the settings and model that differ, and per case what
changed: its verdict, whether it became (or stopped being) published-and-wrong, or that it is
in one evaluation only. A case is matched by its id; a case whose verdict and
published-and-wrong are the same in both is unchanged, whatever its reasons say.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from domain.evals import CaseResult, EvalReport, Verdict

TOTALS = ("cases", "correct", "fallback", "wrong", "published_wrong", "tokens", "model_calls")
"""The totals compared, in the order they are shown (latency varies too much to be a change)."""


@dataclass(frozen=True)
class SettingChange:
    """One setting that differs (or the suite, or the model); None where one run lacks it."""

    name: str
    before: str | None
    after: str | None


@dataclass(frozen=True)
class CaseChange:
    """One case whose outcome differs between A and B (None: the case is not in that run)."""

    case_id: str
    question: str
    before: Verdict | None
    after: Verdict | None
    published_wrong_before: bool
    published_wrong_after: bool
    reasons: tuple[str, ...]
    """Why B scored it as it did (A's reasons for a case only in A)."""

    @property
    def what(self) -> str:
        """The change in words: ``correct → wrong, newly published-and-wrong``."""
        if self.before is None or self.after is None:
            return "only in B" if self.before is None else "only in A"
        said = [f"{self.before.value} → {self.after.value}"] if self.before != self.after else []
        if self.published_wrong_after and not self.published_wrong_before:
            said.append("newly published-and-wrong")
        elif self.published_wrong_before and not self.published_wrong_after:
            said.append("no longer published-and-wrong")
        return ", ".join(said)


@dataclass(frozen=True)
class EvalComparison:
    """Evaluation ``a`` against evaluation ``b``."""

    a: EvalReport
    b: EvalReport
    settings: tuple[SettingChange, ...]
    """The settings that differ, by name (the suite and model are :attr:`evaluated`)."""
    cases: tuple[CaseChange, ...]
    unchanged: int
    """Cases in both with the same verdict and published-and-wrong."""

    @property
    def evaluated(self) -> tuple[SettingChange, ...]:
        """The suite and the model, where they differ."""
        return tuple(
            SettingChange(name, getattr(self.a, name), getattr(self.b, name))
            for name in ("suite", "model")
            if getattr(self.a, name) != getattr(self.b, name)
        )

    @property
    def totals(self) -> tuple[tuple[str, int, int, int], ...]:
        """Each total as ``(name, in A, in B, B minus A)``."""
        a, b = vars(self.a.totals), vars(self.b.totals)
        return tuple((name, a[name], b[name], b[name] - a[name]) for name in TOTALS)

    @property
    def newly_published_wrong(self) -> tuple[CaseChange, ...]:
        """The cases B published wrong that A did not (or did not have)."""
        return tuple(
            c for c in self.cases if c.published_wrong_after and not c.published_wrong_before
        )


def compare(a: EvalReport, b: EvalReport) -> EvalComparison:
    """What changed from evaluation ``a`` to evaluation ``b``."""
    before = {r.case_id: r for r in a.results}
    after = {r.case_id: r for r in b.results}
    changes: list[CaseChange] = []
    unchanged = 0
    for case_id in [*after, *(c for c in before if c not in after)]:
        change = _change(before.get(case_id), after.get(case_id))
        if change is None:
            unchanged += 1
        else:
            changes.append(change)
    return EvalComparison(a, b, _settings(a, b), tuple(changes), unchanged)


def _change(a: CaseResult | None, b: CaseResult | None) -> CaseChange | None:
    if a is not None and b is not None:
        if (a.verdict, a.published_wrong) == (b.verdict, b.published_wrong):
            return None
    shown = b if b is not None else a
    assert shown is not None
    return CaseChange(
        case_id=shown.case_id,
        question=shown.question,
        before=a.verdict if a else None,
        after=b.verdict if b else None,
        published_wrong_before=bool(a and a.published_wrong),
        published_wrong_after=bool(b and b.published_wrong),
        reasons=tuple(shown.reasons),
    )


def _settings(a: EvalReport, b: EvalReport) -> tuple[SettingChange, ...]:
    """Every setting that differs, by name."""
    return tuple(
        SettingChange(name, a.settings.get(name), b.settings.get(name))
        for name in sorted(a.settings.keys() | b.settings.keys())
        if a.settings.get(name) != b.settings.get(name)
    )


def as_json(comparison: EvalComparison) -> dict[str, object]:
    """The comparison as plain JSON data (``--json``)."""

    def side(report: EvalReport) -> dict[str, object]:
        return {
            "eval_id": str(report.eval_id),
            "suite": report.suite,
            "model": report.model,
            "started_at": report.started_at.isoformat(),
            "totals": dict(vars(report.totals)),
        }

    return {
        "a": side(comparison.a),
        "b": side(comparison.b),
        "totals": [
            {"name": name, "a": was, "b": now, "delta": delta}
            for name, was, now, delta in comparison.totals
        ],
        "evaluated": [dataclasses.asdict(change) for change in comparison.evaluated],
        "settings": [dataclasses.asdict(change) for change in comparison.settings],
        "cases": [
            {
                **dataclasses.asdict(change),
                "before": change.before.value if change.before else None,
                "after": change.after.value if change.after else None,
                "what": change.what,
                "reasons": list(change.reasons),
            }
            for change in comparison.cases
        ],
        "unchanged": comparison.unchanged,
        "newly_published_wrong": [c.case_id for c in comparison.newly_published_wrong],
    }
