"""What a diagnosis publishes, composed from proven parts only (design §10.1).

A report holds the conclusion and the facts the judge found supported, each with its
citations. A fallback holds only the harness's words: the evidence records behind the proven
statements (observations, quoted with their time and source), scoped NO_EVIDENCE notes, the
tools that could not be checked (a failure is never worded as absence), and missing
information worded here from the draft's structured items — never the model's prose.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from domain.published import DiagnosisReport, FallbackContent, MissingItem, names_service
from domain.release_states import FallbackType
from domain.scopes import covered_span, shown_scope
from domain.states import MissingKind
from domain.tool_states import EvidenceStatus, InvocationStatus

if TYPE_CHECKING:
    from collections.abc import Iterable

    from application.drafts import MissingOut
    from application.release_context import ReleaseContext
    from domain.observations import Observation
    from domain.tool_invocation import ToolInvocation
    from domain.values import Fact

FALLBACK_MESSAGES = {
    FallbackType.MISSING_REQUIRED_CONTEXT: "I need more context before I can diagnose this.",
    FallbackType.INSUFFICIENT_EVIDENCE: "The checks so far do not support a conclusion yet.",
    FallbackType.EVIDENCE_VALIDATION_FAILED: "The draft conclusion did not match the evidence.",
    FallbackType.SEMANTIC_UNSUPPORTED: "The evidence does not support the drafted conclusion.",
    FallbackType.SEMANTIC_UNAVAILABLE: "The conclusion could not be checked, so it is withheld.",
}
MISSING_QUESTIONS = {
    MissingKind.SERVICE: "Which service is affected?",
    MissingKind.TIME_WINDOW: "When did it happen (a date and a time window in UTC)?",
    MissingKind.SYMPTOM: "What went wrong (errors, slowness, restarts or something else)?",
    MissingKind.ENVIRONMENT: "Which environment or region is affected?",
}


def report(conclusion: Fact, facts: Iterable[Fact]) -> DiagnosisReport:
    """The diagnosis report: the supported conclusion and supported facts, with citations."""
    return DiagnosisReport(conclusion, tuple(facts))


def fallback(
    ctx: ReleaseContext,
    kind: FallbackType,
    observed: tuple[Observation, ...],
    missing: Iterable[MissingOut],
) -> FallbackContent:
    """A fallback of ``kind``: observed records, empty scopes, what could not be checked.

    No statement of the model's: only the harness speaks unjudged (design §10.1).
    """
    items = list(dict.fromkeys(_scoped(ctx, m) for m in missing))
    return FallbackContent(
        fallback_type=kind,
        message=FALLBACK_MESSAGES[kind],
        verified_facts=(),
        observations=observed,
        no_evidence=tuple(no_evidence(ctx)),
        not_checked=tuple(not_checked(ctx)),
        missing_info=tuple(missing_question(m, known_of(ctx)) for m in items),
        missing=tuple(missing_item(m) for m in items),
    )


def missing_item(item: MissingOut) -> MissingItem:
    """A drafted missing item as published: its times as the JSON text of the draft's."""
    times = item.model_dump(mode="json", include={"start", "end"}, exclude_none=True)
    return MissingItem(item.kind, item.service, times.get("start"), times.get("end"))


def no_evidence(ctx: ReleaseContext) -> list[str]:
    """Each empty result, scoped to what was searched (never a global negative)."""
    return [
        empty_note(inv.tool, shown(ctx, inv.normalized_scope), inv.notes)
        for inv in ctx.invocations.values()
        if inv.evidence_status is EvidenceStatus.NO_EVIDENCE
    ]


def empty_note(tool: str, scope: str, notes: Iterable[str] = ()) -> str:
    """How an empty result is published: the tool and the scope that held nothing, as shown.

    ``scope`` is :func:`shown` of the call's scope: the model's words are never echoed in it.
    When the tool's notes say what span its data covers, the note says so (an empty window
    outside it has no data, which is not "nothing happened"). The verifier holds every
    published note to exactly this (design §16.5).
    """
    note = f"No matching records from {tool} for {scope or 'its whole scope'}"
    span = covered_span(notes)
    return (
        note
        if span is None
        else f"{note} ({tool} says its data covers only {span[0]} to {span[1]})"
    )


def no_evidence_note(scope: str) -> str:
    """How an empty result was published before scopes were shown in the harness's words."""
    return f"No matching records in the checked scope: {scope}"


def not_checked(ctx: ReleaseContext) -> list[str]:
    """Each tool call that failed: what could not be checked, never that nothing was found."""
    return [
        not_checked_note(inv, shown(ctx, inv.normalized_scope))
        for inv in ctx.invocations.values()
        if inv.status is InvocationStatus.ERROR
    ]


def not_checked_note(invocation: ToolInvocation, scope: str | None = None) -> str:
    """How a failed tool call is published: not checked, so nothing is known (never absence).

    ``scope`` is the call's scope as shown (:func:`shown`); None words it as fallbacks did before
    scopes were shown in the harness's words (the verifier reads older logs so).
    """
    if scope is None:
        scope = invocation.normalized_scope
    return (
        f"{invocation.tool} could not be checked for {scope or 'its scope'}"
        f" ({invocation.error_code}): nothing is known about it"
    )


def shown(ctx: ReleaseContext, scope: str) -> str:
    """A call's scope as a reader sees it: only values the harness can vouch for, verbatim."""
    return shown_scope(scope, ctx.run.query, known_of(ctx))


def missing_question(item: MissingOut, known: Iterable[str] = ()) -> str:
    """The question the harness asks for a missing item, scoped by its service and window.

    Asked which service, the reader is told the services the run's tools know (``known``, as
    ``COLLECTION_STARTED`` recorded them), so a name the tools do not know can be corrected.
    """
    words = MISSING_QUESTIONS[item.kind]
    names = sorted(known)
    if item.kind is MissingKind.SERVICE and names:
        words += f" (known services: {', '.join(names)})"
    if item.service:
        words += f" (service {item.service})"
    if item.start and item.end:
        words += f" (between {item.start.isoformat()} and {item.end.isoformat()})"
    return words


def known_of(ctx: ReleaseContext) -> tuple[str, ...]:
    """The services the run's tools know, as its collection recorded them (none before it)."""
    return ctx.journal.collection.known_services if ctx.journal.collection is not None else ()


def _scoped(ctx: ReleaseContext, item: MissingOut) -> MissingOut:
    """A service is named only if the question or the tools' catalogue does: no claim rides in.

    A service only the model named (in a tool call's arguments, say) is dropped from the item.
    """
    known = known_of(ctx)
    if item.service is None or names_service(item.service, ctx.run.query, known):
        return item
    return item.model_copy(update={"service": None})
