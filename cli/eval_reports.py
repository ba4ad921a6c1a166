"""What ``harness eval`` prints and writes: a table, JSON, JUnit XML, and the thresholds' verdict.

The table is plain lines of fixed columns, the same on a terminal and in a pipe (no width is
read). Text a model wrote (a conclusion, an answer) and text of a case file (its reasons quote
``must`` texts) is shown on one line, its invisible characters spelled out
(:func:`cli.terminal_text.spelled_out`) and cut; the same spelling keeps the JUnit XML valid
(XML 1.0 cannot hold most control characters, even escaped).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, assert_never
from xml.etree import ElementTree as ET

from cli.terminal_text import spelled_out
from domain.evals import Verdict

if TYPE_CHECKING:
    from cli.eval_runner import CaseDetail, SuiteRun
    from domain.evals import CaseResult, Totals

SAID_CHARS = 160
"""Characters of a published headline shown under a case that was not correct."""


def one_line(text: str, limit: int = SAID_CHARS) -> str:
    """``text`` on one line, its hidden characters spelled out, cut to ``limit`` characters."""
    flat = spelled_out(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# -- thresholds ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Thresholds:
    """What an evaluation must reach: a share of correct cases, a most of published-and-wrong."""

    min_correct: float | None = None
    """The least share (0 to 1) of cases that must be correct; None: no least."""
    max_published_wrong: int = 0

    def missed(self, totals: Totals) -> list[str]:
        """One line per threshold ``totals`` missed (empty: every one held)."""
        missed = []
        share = totals.correct / totals.cases if totals.cases else 0.0
        if self.min_correct is not None and share < self.min_correct:
            missed.append(
                f"correct {totals.correct}/{totals.cases} ({share:.1%}) is below"
                f" --min-correct {self.min_correct:g}"
            )
        if totals.published_wrong > self.max_published_wrong:
            missed.append(
                f"published-and-wrong {totals.published_wrong} is above"
                f" --max-published-wrong {self.max_published_wrong}"
            )
        return missed


# -- table --------------------------------------------------------------------------------------


def table_lines(run: SuiteRun) -> list[str]:
    """One line per case (id, verdict, outcome, tokens, model calls, latency), then the totals.

    A case that was not correct gets its reasons and what was published under it, indented.
    """
    results = run.report.results
    width = max([len("case"), *(len(r.case_id) for r in results)])
    lines = [f"{'case':<{width}}  {'verdict':<8}  {'outcome':<40}  tokens  calls  latency"]
    for result in results:
        outcome = _outcome(result, run.details[result.case_id])
        wrong = "wrong*" if result.published_wrong else result.verdict.value
        lines.append(
            f"{result.case_id:<{width}}  {wrong:<8}  {one_line(outcome, 40):<40}"
            f"  {result.tokens:>6}  {result.model_calls:>5}  {_seconds(result.latency_ms):>7}"
        )
        if result.verdict is not Verdict.CORRECT:
            lines.extend(_why(result, run.details[result.case_id]))
    return [*lines, "", totals_line(run.report.totals)]


def totals_line(totals: Totals) -> str:
    """The counts in one line (``*`` in the table marks a published-and-wrong case)."""
    return (
        f"{totals.cases} case{'' if totals.cases == 1 else 's'}: {totals.correct} correct,"
        f" {totals.fallback} fallback,"
        f" {totals.wrong} wrong, {totals.published_wrong} published-and-wrong (*);"
        f" tokens {totals.tokens}, model calls {totals.model_calls},"
        f" latency {_seconds(totals.latency_ms)}"
    )


def _outcome(result: CaseResult, detail: CaseDetail) -> str:
    if result.release in ("SUCCESS", "FALLBACK"):
        return detail.published
    return f"{result.release or 'NOT_RUN'} (run {result.state})"


def _why(result: CaseResult, detail: CaseDetail) -> list[str]:
    lines = [f"    - {one_line(reason)}" for reason in result.reasons]
    if detail.headline:
        lines.append(f'    said: "{one_line(detail.headline)}"')
    return lines


def _seconds(milliseconds: int) -> str:
    return f"{milliseconds / 1000:.2f}s"


# -- JSON ---------------------------------------------------------------------------------------


def report_json(run: SuiteRun, missed: list[str]) -> dict[str, Any]:
    """The whole report: what was run, the totals, every case, and the thresholds missed."""
    report = run.report
    return {
        "eval_id": str(report.eval_id),
        "suite": report.suite,
        "model": report.model,
        "settings": report.settings,
        "started_at": report.started_at.isoformat(),
        "finished_at": report.finished_at.isoformat(),
        "totals": asdict(report.totals),
        "thresholds_missed": missed,
        "results": [_case_json(r, run.details[r.case_id]) for r in report.results],
    }


def _case_json(result: CaseResult, detail: CaseDetail) -> dict[str, Any]:
    return asdict(result) | {
        "verdict": result.verdict.value,
        "reasons": list(result.reasons),
        "published": detail.published,
        "headline": detail.headline,
    }


# -- JUnit XML ----------------------------------------------------------------------------------


def junit_xml(run: SuiteRun) -> bytes:
    """JUnit XML: one testcase per case; a wrong one fails, a fallback one is skipped.

    A failure's ``type`` is ``published-and-wrong`` or ``wrong``; the suite's properties hold the
    model, the settings and the totals, and each testcase's its outcome, tokens and model calls.
    """
    report, totals = run.report, run.report.totals
    seconds = f"{(report.finished_at - report.started_at).total_seconds():.3f}"
    counts = {
        "tests": str(totals.cases),
        "failures": str(totals.wrong),
        "errors": "0",
        "skipped": str(totals.fallback),
        "time": seconds,
    }
    root = ET.Element("testsuites", {"name": "harness eval", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": _xml(report.suite), **counts})
    suite.set("timestamp", report.started_at.isoformat())
    properties = {"eval_id": str(report.eval_id), "model": report.model, **report.settings}
    properties |= {name: str(value) for name, value in asdict(totals).items()}
    _properties(suite, properties)
    for result in report.results:
        _testcase(suite, result, run.details[result.case_id])
    return bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


def _testcase(suite: ET.Element, result: CaseResult, detail: CaseDetail) -> None:
    case = ET.SubElement(suite, "testcase", {"name": result.case_id, "classname": "harness.eval"})
    case.set("time", f"{result.latency_ms / 1000:.3f}")
    outcome = _outcome(result, detail)
    _properties(
        case,
        {
            "verdict": result.verdict.value,
            "outcome": outcome,
            "run_id": result.run_id or "",
            "tokens": str(result.tokens),
            "model_calls": str(result.model_calls),
        },
    )
    reasons = "; ".join(result.reasons) or outcome
    match result.verdict:
        case Verdict.WRONG:
            kind = "published-and-wrong" if result.published_wrong else "wrong"
            failure = ET.SubElement(case, "failure", {"type": kind, "message": _xml(reasons)})
            failure.text = _xml("\n".join([*result.reasons, f"said: {detail.headline}"]))
        case Verdict.FALLBACK:
            ET.SubElement(case, "skipped", {"message": _xml(f"{outcome}: {reasons}")})
        case Verdict.CORRECT:
            pass
        case _ as unreachable:
            assert_never(unreachable)


def _properties(parent: ET.Element, values: dict[str, str]) -> None:
    properties = ET.SubElement(parent, "properties")
    for name, value in values.items():
        ET.SubElement(properties, "property", {"name": _xml(name), "value": _xml(value)})


def _xml(text: str) -> str:
    """``text`` as XML 1.0 can hold it: every hidden character (controls too) spelled out."""
    return spelled_out(text)
