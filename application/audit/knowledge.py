"""Design §10.1 on a knowledge answer, derived again from the log: every published word pinned.

A run that records the passages it retrieved (``PASSAGES_RETRIEVED``) and the answer the model
proposed (``ANSWER_PROPOSED``) published exactly what the harness derives from them and from the
judge's recorded verdicts (:mod:`application.knowledge_answers`): the model's statements only
when the judge supported every one, otherwise the harness's list of the recorded passages. A run
recorded before those events is held to the rules of :mod:`application.audit.answer_checks` alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.audit.rules import as_judged
from application.knowledge_answers import judged_content, parse_answer
from application.replies import shown_citation, ungrounded_content
from domain.answer_rules import AnswerRefusal, live_reference, quotes_not_cited
from domain.published import GroundedAnswer, RefusedCitation, UngroundedAnswer
from domain.run import Run
from domain.states import ModelStepOutcome, ModelStepPurpose

if TYPE_CHECKING:
    from application.audit.replay import Entry, RunLog
    from domain.answer_rules import RetrievedPassage
    from domain.grounding import Citation
    from domain.recorded import Recorded
    from domain.values import Fact

_BEFORE_JUDGING = (AnswerRefusal.CITATION_REJECTED, AnswerRefusal.LIVE_STATE)


def rederived_answer(log: RunLog, entry: Entry, content: Recorded) -> str | None:
    """What the knowledge answer released at ``entry`` is that the log does not derive, or None."""
    retrieved = _last_before(log, Run.PassagesRetrieved, entry)
    if retrieved is None:
        return None  # recorded before the passages were: the older rules alone
    if not isinstance(content, (GroundedAnswer, UngroundedAnswer)):
        return f"publishes {content.kind} content where a knowledge answer is derived"
    passages: tuple[RetrievedPassage, ...] = retrieved.event.passages
    expected = _expected(log, entry, passages, content)
    if isinstance(expected, str):
        return expected
    published, derived = content.to_json(), expected.to_json()
    differs = [key for key in derived if published.get(key) != derived[key]]
    if differs:
        return (
            f"publishes a knowledge answer whose {', '.join(differs)} the log does not derive"
            " (from the passages retrieved, the answer proposed and the judge's verdicts)"
        )
    return None


def _expected(
    log: RunLog,
    entry: Entry,
    passages: tuple[RetrievedPassage, ...],
    content: GroundedAnswer | UngroundedAnswer,
) -> GroundedAnswer | UngroundedAnswer | str:
    """The content the harness derives from the recorded inputs, or why none can be derived."""
    if not passages:
        return ungrounded_content([], AnswerRefusal.NOTHING_RETRIEVED)
    proposal = _last_before(log, Run.AnswerProposed, entry)
    if proposal is None:
        if isinstance(content, UngroundedAnswer) and content.refusal is AnswerRefusal.TOO_LARGE:
            return _refused_too_large(log, entry, passages)
        return "publishes a knowledge answer without the ANSWER_PROPOSED it derives from"
    if proposal.event.length != len(proposal.event.text):
        return "records a proposed answer cut short (an answer is recorded whole or refused)"
    parsed = _parsed(proposal.event)
    recorded = proposal.event.refusal
    if (parsed if isinstance(parsed, AnswerRefusal) else None) is not recorded:
        said = recorded.value if recorded else "a valid answer"
        return f"records its proposed answer as {said}, which its text does not parse to"
    if isinstance(parsed, AnswerRefusal):
        return ungrounded_content(passages, parsed)
    decision = _last_before(log, Run.SemanticGuardDecision, entry)
    if decision is not None:
        judged = decision.event.judged
        if [as_judged(j) for j in judged] != [as_judged(s) for s in parsed]:
            return "records as judged statements that are not those of the answer proposed"
        if any(quotes_not_cited(s) for s in parsed):
            return "judges an answer quoting words none of its excerpts are (QUOTE_NOT_CITED)"
        return judged_content(parsed, judged, passages)
    return _refused_unjudged(parsed, passages, content)


def _refused_unjudged(
    statements: tuple[Fact, ...],
    passages: tuple[RetrievedPassage, ...],
    content: GroundedAnswer | UngroundedAnswer,
) -> UngroundedAnswer | str:
    """The harness's list for an answer refused before the judge, as the content says why."""
    if not isinstance(content, UngroundedAnswer):
        return "publishes a knowledge answer no judge ruled on"
    if content.refusal not in _BEFORE_JUDGING:
        return (
            f"refuses the answer as {content.refusal.value}, which the log does not derive"
            " (the answer proposed parsed, and no judge ruled on it)"
        )
    if content.refusal is AnswerRefusal.LIVE_STATE:
        if not any(live_reference(s) for s in statements):
            return "refuses as LIVE_STATE an answer that names no moment of the live systems"
        return ungrounded_content(passages, AnswerRefusal.LIVE_STATE)
    proposed = [c for s in statements for c in s.citations]
    proposed += [quote for s in statements for quote, _ in quotes_not_cited(s)]
    if not content.rejected_citations or not all(
        _shown_of(r, proposed) for r in content.rejected_citations
    ):
        return "shows rejected citations that are not the answer's proposed citations"
    listed = ungrounded_content(passages, AnswerRefusal.CITATION_REJECTED)
    return UngroundedAnswer(
        listed.text, listed.passages, listed.refusal, content.rejected_citations
    )


def _shown_of(shown: RefusedCitation, proposed: list[Citation]) -> bool:
    """Whether a shown rejected citation is a proposed one, as the harness cuts it."""
    return any(shown_citation(c, shown.problem) == shown for c in proposed)


def _parsed(proposal: Run.AnswerProposed) -> tuple[Fact, ...] | AnswerRefusal:
    """The recorded answer's parse."""
    return parse_answer(proposal.text)


def _refused_too_large(
    log: RunLog, entry: Entry, passages: tuple[RetrievedPassage, ...]
) -> UngroundedAnswer | str:
    """The harness's list for an answer its model step refused whole, over the size limit."""
    steps = [
        e.event
        for e in log.of(Run.AgentModelStep)
        if e.record.position < entry.record.position and e.event.purpose is ModelStepPurpose.ANSWER
    ]
    if not steps or steps[-1].outcome is not ModelStepOutcome.TOO_LARGE:
        return "refuses the answer as TOO_LARGE, but its model step was not refused as too large"
    return ungrounded_content(passages, AnswerRefusal.TOO_LARGE)


def _last_before(log: RunLog, kind: type[object], entry: Entry) -> Entry | None:
    found = [e for e in log.of(kind) if e.record.position < entry.record.position]
    return found[-1] if found else None
