"""Design §10.1 on a diagnosis, from the log alone: every published statement is proven.

For each release decision of a DIAGNOSIS run:

- every published citation quotes an informative excerpt (by the excerpt rules the run's
  EvidenceGuard recorded, or the defaults for a log recorded before them) and no statement
  cites nothing or the same citation twice;
- a report publishes only statements the judge found SUPPORTED, exactly as judged, and a quote
  inside a statement is one of its excerpts;
- a fallback speaks only in the harness's words (:mod:`application.audit.fallbacks`);
- the EvidenceGuard's verdict on the progress facts is the one the log re-derives.

The reference and excerpt of each citation are checked against the run's evidence by
:mod:`application.audit.evidence`; this module checks what that does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, assert_never

from application.audit.answer_checks import is_answer_run
from application.audit.evidence import ready_results
from application.audit.fallbacks import fallback_problems
from application.audit.integrity import Violation
from application.audit.rederive import comparable, rejections
from application.audit.rules import as_judged, cited, statements
from application.drafts import DraftError, validate_draft
from application.proposals import recorded_draft
from domain.collection import Collection
from domain.grounding import DEFAULT_RULES, GroundingRules, normalise
from domain.published import (
    ChatAnswer,
    DiagnosisReport,
    FallbackContent,
    GroundedAnswer,
    UngroundedAnswer,
)
from domain.published_reader import parse_published
from domain.quotes import uncited_quotes
from domain.recorded import LegacyAnswer, LegacyFallback, LegacyReport, Unreadable
from domain.release_states import SemanticVerdict
from domain.run import Run
from domain.tool_states import EvidenceStatus

if TYPE_CHECKING:
    from application.audit.replay import Entry, RunLog
    from domain.grounding import Evidence, JudgedStatement
    from domain.recorded import Recorded

RULE = "design §10.1"


def check_grounding(log: RunLog) -> list[Violation]:
    """What a diagnosis run published that the log does not prove."""
    if is_answer_run(log):
        return []
    rules = recorded_rules(log)
    found: list[Violation] = []
    for entry in log.of(Run.ReleaseDecision):
        content = parse_published(entry.event.content)
        found += [
            Violation(RULE, why, entry.record) for why in _problems(log, entry, content, rules)
        ]
    found += _guard_verdict(log, rules)
    return found


def _problems(log: RunLog, entry: Entry, content: Recorded, rules: GroundingRules) -> list[str]:
    """What one release decision of a diagnosis published that the log does not prove."""
    match content:
        case DiagnosisReport():
            return [
                *_weak_citations(content, rules),
                *_unjudged(log, entry, content),
                *_uncited_quotes(content),
            ]
        case LegacyReport():
            return [*_weak_citations(content, rules), *_unjudged(log, entry, content)]
        case FallbackContent() | LegacyFallback():
            judged = _last_judged(log, entry) or ()
            return [
                *_weak_citations(content, rules),
                *fallback_problems(log, entry, content, judged),
            ]
        case ChatAnswer() | GroundedAnswer() | UngroundedAnswer() | LegacyAnswer():
            return ["publishes an answer, which only SYSTEM_CHAT and KNOWLEDGE_QUERY runs publish"]
        case Unreadable(reason=reason):
            return [f"publishes {reason}"]
        case _ as unreachable:
            assert_never(unreachable)


def recorded_rules(log: RunLog) -> GroundingRules:
    """The excerpt rules the run's EvidenceGuard recorded; the defaults before they were."""
    for entry in log.of(Run.EvidenceGuardInitial):
        if entry.event.min_words > 0:
            return GroundingRules(entry.event.min_words, entry.event.min_chars)
    return DEFAULT_RULES


def _weak_citations(content: Recorded, rules: GroundingRules) -> list[str]:
    found: list[str] = []
    for pairs, _legacy in cited(content):
        excerpts = [excerpt for _, excerpt in pairs]
        respaced = {(r, normalise(e) if e is not None else None) for r, e in pairs}
        if len(respaced) != len(pairs):  # the same citation, whitespace aside (§10.1)
            found.append("publishes a statement that cites the same excerpt twice")
        for excerpt in excerpts:
            weakness = rules.weakness(excerpt) if excerpt is not None else "no excerpt at all"
            if weakness:
                found.append(f"publishes a citation whose excerpt proves nothing ({weakness})")
    return found


def _uncited_quotes(content: DiagnosisReport) -> list[str]:
    """A quote inside a published statement must be one of its excerpts (design §10.1)."""
    return [
        f"publishes a statement quoting {span!r:.80}, which is none of its excerpts"
        for fact in (content.conclusion, *content.facts)
        for span in uncited_quotes(fact.statement, [c.excerpt for c in fact.citations])
    ]


def _last_judged(log: RunLog, before: Entry) -> tuple[JudgedStatement, ...] | None:
    decisions = [
        e for e in log.of(Run.SemanticGuardDecision) if e.record.position < before.record.position
    ]
    return decisions[-1].event.judged if decisions else None


def _unjudged(log: RunLog, entry: Entry, content: DiagnosisReport | LegacyReport) -> list[str]:
    """A report's statements must be exactly ones the judge found SUPPORTED."""
    judged = _last_judged(log, entry)
    if not judged:
        return ["publishes a report whose statements were not judged one by one"]
    supported = {as_judged(j) for j in judged if j.verdict is SemanticVerdict.SUPPORTED}
    return [
        f"publishes {what!r:.80}, which the judge did not find SUPPORTED as published"
        for what, statement in statements(content)
        if statement not in supported
    ]


def _guard_verdict(log: RunLog, rules: GroundingRules) -> list[Violation]:
    """Each EvidenceGuard verdict is the one the log re-derives from the facts and drafts."""
    ready = ready_results(log)
    evidence = {
        name: content
        for name, (_, status, content) in ready.items()
        if status is EvidenceStatus.EVIDENCE_FOUND
    }
    found: list[Violation] = []
    for entry in log.of(Run.EvidenceGuardInitial, Run.EvidenceGuardRecheck):
        at = entry.record.position
        if isinstance(entry.event, Run.EvidenceGuardInitial) and entry.event.min_words == 0:
            continue  # recorded before claim-level grounding: it named no citation
        usable = {name: c for name, c in evidence.items() if ready[name][0] < at}
        why = _verdict_problem(log, entry, usable, rules)
        if why:
            found.append(Violation(RULE, why, entry.record))
    return found


def _verdict_problem(
    log: RunLog, entry: Entry, evidence: dict[str, Evidence], rules: GroundingRules
) -> str | None:
    at = entry.record.position
    recorded = comparable((r.statement, r.reference, r.problem) for r in entry.event.rejected)
    statements = _draft_statements(log, entry)
    if statements is None:
        return (
            "records an EvidenceGuard verdict on a draft the log does not hold"
            " (no DRAFT_PROPOSED the verdict could be derived from)"
        )
    if isinstance(entry.event, Run.EvidenceGuardInitial):
        progress = [e for e in log.of(Collection.ToolProgress) if e.record.position < at]
        facts = [fact for e in progress for fact in e.event.facts]
        statements += [(f"progress {n}", fact) for n, fact in enumerate(facts, start=1)]
    derived = comparable(rejections(statements, evidence, log.invocations, rules))
    drafted = {r for r in derived if not r[0].startswith("progress ")}
    if derived != recorded or entry.event.valid != (not drafted):
        return (
            f"records an EvidenceGuard verdict (valid={entry.event.valid}, {len(recorded)} failing"
            f" citation(s)) that the log does not give ({len(derived)} failing citation(s))"
        )
    return None


_UNREADABLE = object()
"""A valid draft the log holds but cannot read back (recorded cut short)."""


def _draft_statements(log: RunLog, entry: Entry) -> list[tuple[str, Any]] | None:
    """The labelled statements of the draft a guard event checked; None when unknowable.

    The initial check reads the agent's valid draft (none: a controlled stop or a failed
    draft, so no draft statement); a recheck the repair's draft, or the agent's again when the
    repair gave none with a conclusion. A draft recorded cut short cannot be read back: None.
    """
    at = entry.record.position
    drafts = [e for e in log.of(Run.DraftProposed) if e.record.position < at]
    agent = _parsed(drafts, "AGENT")
    if isinstance(entry.event, Run.EvidenceGuardRecheck):
        repaired = _parsed(drafts, "REPAIR")
        if repaired is _UNREADABLE:
            return None
        if repaired is not None and repaired.conclusion is not None:
            agent = repaired
    elif agent is None:
        return None if entry.event.has_conclusion else []
    if agent is None or agent is _UNREADABLE:
        return None
    draft: Any = agent
    labelled: list[tuple[str, Any]] = []
    if draft.conclusion is not None:
        labelled.append(("conclusion", draft.conclusion.to_fact()))
    labelled += [(f"fact {n}", f.to_fact()) for n, f in enumerate(draft.facts, start=1)]
    return labelled


def _parsed(drafts: list[Entry], purpose: str) -> Any:
    """The last VALID draft of ``purpose`` parsed; None if there is none; or :data:`_UNREADABLE`."""
    valid = [
        e.event
        for e in drafts
        if e.event.purpose.value == purpose and e.event.outcome.value == "VALID"
    ]
    if not valid:
        return None
    event = valid[-1]
    data = recorded_draft(event.text) if event.length == len(event.text) else None
    if data is None:
        return _UNREADABLE
    try:
        return validate_draft(data)
    except DraftError:
        return _UNREADABLE
