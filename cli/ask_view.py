"""What ``harness ask`` prints: the run's phases from its events, then the published answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_never

from rich.markup import escape as markup_escape

from cli.terminal_text import spelled_out
from domain.catalogue import event_type_name
from domain.published import (
    ChatAnswer,
    DiagnosisReport,
    FallbackContent,
    GroundedAnswer,
    UngroundedAnswer,
)
from domain.reasons import shown_reason
from domain.release_states import ReleaseOutcome
from domain.scopes import measured, shown_scope
from domain.states import RunState
from domain.tool_states import ToolRejectionCode

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rich.console import Console

    from application.chat import ChatResult
    from domain.grounding import Citation
    from domain.published import Published
    from domain.values import Fact


def escape(text: str) -> str:
    """``text`` as console markup showing itself (:mod:`cli.terminal_text`), escaped."""
    return markup_escape(spelled_out(text))


class AskView:
    """Turns domain events into one readable line each, as they are appended."""

    def __init__(self, console: Console) -> None:
        """Print to ``console``."""
        self.console = console
        self.question = ""
        self.known: tuple[str, ...] = ()

    def on_events(self, events: Sequence[Any]) -> None:
        """Print the events worth a line (status, routing, tools, guards, termination).

        A tool call's scope is the model's words: it is shown as the harness shows it in a
        fallback (:func:`domain.scopes.shown_scope`), from the question and the tools' catalogue
        the run recorded.
        """
        for event in events:
            name = event_type_name(type(event))
            if name == "RUN_STARTED":
                self.question = event.query
            elif name == "COLLECTION_STARTED":
                self.known = tuple(event.known_services)
            elif name == "TOOL_INVOCATION_STARTED":
                scope = shown_scope(event.normalized_scope, self.question, self.known)
                self.console.print(f"  [yellow]tool[/] {escape(event.tool)} {escape(scope)}")
            render = _LINES.get(name)
            if render is not None:
                self.console.print(render(event))

    def show_result(self, result: ChatResult) -> None:
        """The outcome and fallback type first, then how the run ended, then the content."""
        fallback = _fallback_type(result.published)
        title = result.release_outcome.value + (f" — {fallback}" if fallback else "")
        if self.console.is_terminal:
            self.console.rule(f"[bold]{title}[/]")
        else:
            self.console.print(f"== {title} ==", markup=False)  # a rule would span the pipe width
        self.console.print(summary(result), markup=False)
        if result.published is not None:
            for line in _content_lines(result.published):
                self.console.print(line)


def _content_lines(published: Published) -> list[str]:
    """What was published, as console markup: a report, an answer's text or a fallback."""
    match published:
        case DiagnosisReport(conclusion=conclusion, facts=facts):
            return [
                escape(conclusion.statement),
                *(_cite_line(c) for c in conclusion.citations),
                *_fact_lines(facts),
            ]
        case GroundedAnswer(text=text, citations=citations):  # the model's words, and its sources
            return [escape(text), *(_cite_line(c, source="source: passage") for c in citations)]
        case ChatAnswer(text=text) | UngroundedAnswer(text=text):
            return [escape(text)]
        case FallbackContent():
            facts = published.verified_facts  # only in a fallback recorded before observations
            return [
                escape(published.message),
                *(f"  • {escape(o.text)}" for o in published.observations or ()),
                *([UNJUDGED] if facts and not published.facts_judged else []),
                *_fact_lines(facts),
                *(f"  ○ {escape(item)}" for item in published.no_evidence),
                *(f"  ✗ {escape(item)}" for item in published.not_checked),
                *(f"  ? {escape(item)}" for item in published.missing_info),
            ]
        case _ as unreachable:
            assert_never(unreachable)


UNJUDGED = (
    "  [dim]The model's statements below were not judged: each one's quotes were found in the"
    " results it cites; read them for what the statement rests on.[/]"
)


FACT_QUOTE = "    "
"""A fact's quotes are indented under it."""


def _fact_lines(facts: Sequence[Fact]) -> list[str]:
    """Each fact, then the quotes it rests on."""
    lines: list[str] = []
    for fact in facts:
        lines.append(f"  • {escape(fact.statement)}")
        lines.extend(_cite_line(c, FACT_QUOTE) for c in fact.citations)
    return lines


def _cite_line(citation: Citation, indent: str = "  ", source: str = "evidence: invocation") -> str:
    quoted = escape(f'"{citation.excerpt}"')
    return f"{indent}[dim]{source} {escape(citation.reference)}: {quoted}[/]"


def _fallback_type(published: Published | None) -> str | None:
    """The published fallback's type, or None for any other content."""
    return published.fallback_type.value if isinstance(published, FallbackContent) else None


def summary(result: ChatResult) -> str:
    """One sentence: what was published (the release outcome), then the run's state in words."""
    ended = result.termination
    state = f"{ended.state.value} ({ended.reason.value})"
    if ended.state is RunState.SUCCESS:
        state = f"normally (state {ended.state.value}, {ended.reason.value})"
    match result.release_outcome:
        case ReleaseOutcome.SUCCESS:
            kind = result.published.kind if result.published else "answer"
            article = "an" if kind[:1] in "aeiou" else "a"
            said = f"Result: SUCCESS, {article} {kind} was published; the run ended {state}."
        case ReleaseOutcome.FALLBACK:
            said = (
                f"Result: FALLBACK ({_fallback_type(result.published)}), a safe fallback instead"
                f" of a conclusion; the run itself ended {state}."
            )
        case ReleaseOutcome.FAILED | ReleaseOutcome.CANCELLED as outcome:
            said = f"Result: {outcome.value}, no content was published; the run ended {state}."
        case _ as unreachable:
            assert_never(unreachable)
    return f"{said} Why: `harness runs explain {result.run_id}`"


def _routing(e: Any) -> str:
    return f"  intent: {e.intent.value if e.intent else 'none (' + shown_reason(e.error) + ')'}"


def _semantic(e: Any) -> str:
    verdict = e.verdict.value if e.verdict else f"unavailable ({shown_reason(e.unavailable)})"
    return f"  semantic check: {verdict}"


def _requested(e: Any) -> str:
    """The tool a rejected request named: no tool of that name is the model's word, measured.

    The rejection's detail is left out: it may quote the request's arguments.
    """
    if e.code is ToolRejectionCode.INVALID_ID:
        return f"an unknown tool ({measured(e.tool)})"
    return escape(e.tool)


def _redacted(e: Any) -> str:
    """How many secrets the result held, replaced by [redacted] (old logs: none)."""
    count = getattr(e, "redactions", 0)
    return f", {count} secret{'s' if count != 1 else ''} redacted" if count else ""


def _evidence(e: Any) -> str:
    return f"  evidence check: {'valid' if e.valid else 'invalid references'}"


_LINES: dict[str, Callable[[Any], str]] = {
    "RUN_STARTED": lambda e: f"[dim]run {e.originator_id} started[/]",
    "APPLICATION_STATUS_CHANGED": lambda e: f"[bold cyan]▸ {e.status.value}[/]",
    "ROUTING_DECISION": _routing,
    "TOOL_INVOCATION_READY": lambda e: (
        f"    → {e.evidence_status.value}, {e.byte_size} bytes{_redacted(e)}"
    ),
    "TOOL_INVOCATION_FAILED": lambda e: (
        f"    → [red]ERROR {escape(e.error_code)}[/]: {escape(e.message)}"
    ),
    "TOOL_REQUEST_REJECTED": lambda e: f"  [red]rejected[/] {_requested(e)}: {e.code.value}",
    "COLLECTION_STOP": lambda e: f"  collection stopped: {e.stop_reason.value}",
    "EVIDENCE_GUARD_INITIAL": _evidence,
    "EVIDENCE_GUARD_RECHECK": _evidence,
    "SEMANTIC_GUARD_DECISION": _semantic,
    "RUN_TERMINATED": lambda e: f"[dim]run ended: state {e.state.value} ({e.reason.value})[/]",
}
