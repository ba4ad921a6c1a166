"""Design §10.1 on a diagnosis fallback, from the log alone: only the harness speaks in it.

A fallback of the current shape publishes no statement of the model's: its observations quote
whole evidence records of the run with their true tool, scope and time, in time order; its
missing information is the harness's wording of structured items, naming only services the
question or the tools' catalogue named; every failed tool call is reported as not checked.
A fallback recorded before observations existed may hold the model's statements: then none
may be one the judge rejected or one restating the conclusion it judged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from application.drafts import MissingOut
from application.published import FALLBACK_MESSAGES, missing_question, not_checked_note
from domain.collection import Collection
from domain.grounding import restates
from domain.observations import in_time_order, is_record
from domain.published import FallbackContent, names_service
from domain.release_states import SemanticVerdict
from domain.scopes import shown_scope
from domain.tool_invocation import ToolInvocation

if TYPE_CHECKING:
    from application.audit.replay import Entry, RunLog
    from domain.grounding import JudgedStatement
    from domain.observations import Observation
    from domain.recorded import LegacyFallback


def fallback_problems(
    log: RunLog,
    entry: Entry,
    content: FallbackContent | LegacyFallback,
    judged: tuple[JudgedStatement, ...],
) -> list[str]:
    """What one fallback published that the log does not prove is the harness's own."""
    if isinstance(content, FallbackContent) and content.observations is not None:
        worded = content.message == FALLBACK_MESSAGES[content.fallback_type]
        return [
            *(
                []
                if worded
                else [
                    f"publishes a fallback message that is not the harness's"
                    f" for its type: {content.message!r:.80}"
                ]
            ),
            *_observation_problems(log, content.observations),
            *(
                f"publishes the model's statement {fact.statement!r:.80} in a fallback, where"
                " no judge ruled on it (only the harness speaks unjudged)"
                for fact in content.verified_facts
            ),
            *_missing_problems(log, content),
            *_not_checked_problems(log, entry, content),
        ]
    found: list[str] = []
    rejected = {j.statement for j in judged if j.verdict is SemanticVerdict.UNSUPPORTED}
    conclusion = judged[0].statement if judged else None
    for fact in content.verified_facts:
        statement = fact.statement
        if statement in rejected:
            found.append(f"publishes a fact the judge rejected: {statement!r:.80}")
        elif conclusion is not None and restates(statement, conclusion):
            found.append(f"publishes a fact restating the withheld conclusion: {statement!r:.80}")
    return found + _missing_problems(log, content) + _not_checked_problems(log, entry, content)


def shown_in(log: RunLog, scope: str) -> str:
    """A call's scope as the run's fallbacks show it, from the question and catalogue recorded."""
    question = log.run.aggregate.query if log.run and log.run.aggregate else ""
    return shown_scope(scope, question, known_services(log))


def known_services(log: RunLog) -> tuple[str, ...]:
    """The services the run's tools knew, as its collection recorded them."""
    collection = log.collection.aggregate if log.collection else None
    return collection.known_services if isinstance(collection, Collection) else ()


def _observation_problems(log: RunLog, observed: tuple[Observation, ...]) -> list[str]:
    """Each observation quotes a whole record of the result it names, from its tool and scope.

    That the record occurs in a READY + EVIDENCE_FOUND result of the run is checked with every
    citation (:mod:`application.audit.evidence`); here, that the harness's words around it
    are true: the tool, the scope, and the order in time.
    """
    found: list[str] = []
    for observation in observed:
        stream = log.invocations.get(observation.reference)
        invocation = stream.aggregate if stream is not None else None
        if invocation is None:
            continue  # named by the evidence check
        scope = shown_in(log, invocation.normalized_scope)
        if (invocation.tool, scope) != (observation.tool, observation.scope):
            found.append(
                f"publishes an observation of {observation.reference} naming another tool or"
                f" scope ({observation.tool!r:.40}, {observation.scope!r:.80})"
            )
        if not is_record(observation.record, invocation.content or ""):
            found.append(
                f"publishes an observation of {observation.reference} that is part of a record,"
                " not the record it was found in"
            )
    if in_time_order(observed) != observed:
        found.append("publishes observations out of time order")
    return found


def _missing_problems(log: RunLog, content: FallbackContent | LegacyFallback) -> list[str]:
    """Missing information is the harness's wording of structured items, nothing else.

    In a fallback of observations (the current shape), a service it names was named by the
    question or is one the run's tools know, as recorded when the collection started.
    """
    recorded = content.missing if isinstance(content, FallbackContent) else ()
    if isinstance(content, FallbackContent) and content.observations is not None:
        question = log.run.aggregate.query if log.run and log.run.aggregate else ""
        known = known_services(log)
        for item in recorded:
            if item.service is not None and not names_service(item.service, question, known):
                return [
                    f"publishes missing information naming the service {item.service!r:.60},"
                    " which neither the question nor the tools' catalogue names"
                ]
    try:
        items = [MissingOut.model_validate(item.to_json()) for item in recorded]
    except ValueError:
        return ["publishes missing information whose structured items are malformed"]
    asked = list(content.missing_info)
    worded = [missing_question(item, known_services(log)) for item in items]
    if asked not in (worded, [missing_question(item) for item in items]):  # or as logged before
        return ["publishes missing information that is not the harness's wording of its items"]
    return []


def _not_checked_problems(
    log: RunLog, entry: Entry, content: FallbackContent | LegacyFallback
) -> list[str]:
    """Every tool call that failed is reported as not checked, never left out as absence."""
    at = entry.record.position
    failed = [
        stream.aggregate
        for stream in log.invocations.values()
        if stream.aggregate is not None
        and any(
            isinstance(e.event, ToolInvocation.ToolInvocationFailed) and e.record.position < at
            for e in stream.entries
        )
    ]
    reported = list(content.not_checked) if isinstance(content, FallbackContent) else []
    current = isinstance(content, FallbackContent) and content.observations is not None
    expected = [
        not_checked_note(inv, shown_in(log, inv.normalized_scope) if current else None)
        for inv in failed
    ]
    if sorted(reported) != sorted(expected):
        return [
            f"reports {len(reported)} tool call(s) as not checked, but {len(expected)} failed"
            " (a failure must never read as absence)"
        ]
    return []
