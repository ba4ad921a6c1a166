"""SPEC §16.3–§16.6 on one run: what it cites, what its tools returned, when they ran.

Evidence is what a run's tool invocations returned: a published conclusion or fact may cite
only READY + EVIDENCE_FOUND results of the same run (the EvidenceGuard's own definition), and
a fact must quote one of them; NO_EVIDENCE says only that a scope was empty.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING
from uuid import UUID

from application.audit.answer_checks import is_answer_run
from application.audit.fallbacks import shown_in
from application.audit.integrity import Violation
from application.audit.rules import cited, no_evidence_notes
from application.published import empty_note, no_evidence_note
from domain.collection import Collection
from domain.grounding import Evidence, excerpt_problem
from domain.published import FallbackContent
from domain.published_reader import parse_published
from domain.release_states import CitationProblem
from domain.run import Run
from domain.tool_invocation import ToolInvocation
from domain.tool_states import EvidenceStatus

if TYPE_CHECKING:
    from application.audit.replay import Entry, RunLog
    from application.audit.rules import Cited
    from domain.recorded import Recorded

Ready = tuple[int, EvidenceStatus | None, Evidence]
"""Where an invocation became READY: its log position, evidence status, content and notes."""

FOUND, EMPTY = EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE


def check_evidence(log: RunLog) -> list[Violation]:
    """Every §16.3–§16.6 (and §8) violation of one run."""
    return [*check_references(log), *check_ready(log), *check_saturation(log)]


def ready_results(log: RunLog) -> dict[str, Ready]:
    """The run's READY invocations by stream name."""
    found: dict[str, Ready] = {}
    for name, stream in log.invocations.items():
        ready = next(
            (e for e in stream.entries if isinstance(e.event, ToolInvocation.ToolInvocationReady)),
            None,
        )
        if ready is not None:
            event = ready.event
            evidence = Evidence(str(event.content), _notes_of(event))
            found[name] = (ready.record.position, event.evidence_status, evidence)
    return found


def _notes_of(event: ToolInvocation.ToolInvocationReady) -> tuple[str, ...]:
    """The event's notes as text (a log edited by hand may hold anything there)."""
    notes: object = getattr(event, "notes", ())
    return tuple(map(str, notes)) if isinstance(notes, list | tuple) else (str(notes),)


def check_references(log: RunLog) -> list[Violation]:
    """§16.3 and §16.5: what is cited is READY + EVIDENCE_FOUND; NO_EVIDENCE stays scoped."""
    ready = ready_results(log)
    found: list[Violation] = []
    answer = is_answer_run(log)  # cites passages, not invocations: see audit.answers
    for entry in log.of(Run.ReleaseDecision):
        content = parse_published(entry.event.content)
        for pairs, legacy in [] if answer else cited(content):
            found.extend(_citation(log, ready, pairs, legacy, entry))
        found.extend(_unscoped_notes(log, ready, entry, content))
    for entry in log.of(Collection.ToolProgress):
        invocation = entry.event.invocation_id
        if invocation is not None and str(invocation) not in ready:
            why = f"records a gain for invocation {invocation}, which is no READY result of the run"
            found.append(Violation("SPEC §16.3", why, entry.record))
    return found


def _unscoped_notes(
    log: RunLog, ready: dict[str, Ready], entry: Entry, content: Recorded
) -> list[Violation]:
    """§16.5: each published NO_EVIDENCE note is the harness's note on an empty result's scope.

    In a fallback of the current shape (with observations) the note names the tool and the
    scope as shown (:func:`application.published.empty_note`); before, the tool's own words.
    """
    at = entry.record.position
    empty = [name for name, (p, status, _) in ready.items() if p < at and status is EMPTY]
    if isinstance(content, FallbackContent) and content.observations is not None:
        notes = {_empty_note(log, name) for name in empty}
    else:
        scopes = [ready[name][2].content for name in empty]
        notes = {no_evidence_note(scope) for scope in scopes if scope}
    return [
        Violation(
            "SPEC §16.5",
            f"publishes a NO_EVIDENCE note no empty result scopes: {note!r:.80}",
            entry.record,
        )
        for note in no_evidence_notes(content)
        if note not in notes
    ]


def _empty_note(log: RunLog, name: str) -> str:
    invocation = log.invocations[name].aggregate
    assert invocation is not None  # READY: its stream replayed
    scope = shown_in(log, invocation.normalized_scope)
    return empty_note(invocation.tool, scope, invocation.notes)


def _citation(
    log: RunLog, ready: dict[str, Ready], pairs: Cited, legacy: str | None, entry: Entry
) -> list[Violation]:
    """What is wrong with one published conclusion or fact and its citations."""
    found: list[tuple[str, str]] = []
    contents: list[str] = []
    for reference, excerpt in pairs:
        evidence = _evidence(log, ready, reference, entry, found)
        if evidence is None:
            continue
        contents.append(evidence.content)
        problem = None if excerpt is None else excerpt_problem(excerpt, evidence)
        if problem is not None:
            found.append(("SPEC §10", f"publishes a citation of {reference} {_WHY[problem]}"))
    if not pairs:
        found.append(("SPEC §16.3", "publishes a conclusion or a fact that cites nothing"))
    if legacy is not None and not (legacy and any(legacy in c for c in contents)):
        found.append(("SPEC §10", "publishes a fact that quotes none of its cited results"))
    return [Violation(rule, why, entry.record) for rule, why in found]


_WHY = {
    CitationProblem.EXCERPT_ABSENT: "whose excerpt is not in it",
    CitationProblem.EXCERPT_CUTS_A_TOKEN: (
        f"whose excerpt cuts a token of it ({CitationProblem.EXCERPT_CUTS_A_TOKEN.value})"
    ),
    CitationProblem.EXCERPT_QUOTES_A_NOTE: (
        "whose excerpt quotes a note about the result, not a record of it"
        f" ({CitationProblem.EXCERPT_QUOTES_A_NOTE.value})"
    ),
}
"""How the verifier words each way an excerpt fails its evidence (design §10.1)."""


def _evidence(
    log: RunLog, ready: dict[str, Ready], reference: str, entry: Entry, found: list[tuple[str, str]]
) -> Evidence | None:
    """The content a reference cites as evidence, or None after noting why it cannot."""
    name = _stream_of(reference)
    if name is None or name not in log.invocations:
        found.append(("SPEC §16.3", f"cites {str(reference)!r:.80}, no invocation of the run"))
    elif name not in ready or ready[name][0] > entry.record.position:
        found.append(("SPEC §16.3", f"cites invocation {name}, which is not READY"))
    elif ready[name][1] is not FOUND:
        status = ready[name][1]
        found.append(
            (
                "SPEC §16.5",
                f"cites invocation {name} ({status.value if status else 'no status'}) as"
                " evidence: an empty scope is no finding",
            )
        )
    else:
        return ready[name][2]
    return None


def _stream_of(reference: object) -> str | None:
    try:
        return str(UUID(str(reference)))
    except ValueError:
        return None


def check_ready(log: RunLog) -> list[Violation]:
    """§16.4: READY carries EVIDENCE_FOUND or NO_EVIDENCE; §8: an ended invocation is final."""
    found: list[Violation] = []
    final = (ToolInvocation.ToolInvocationReady, ToolInvocation.ToolInvocationFailed)
    for stream in log.invocations.values():
        ended: Entry | None = None
        for entry in stream.entries:
            if ended is not None:
                why = f"changes the invocation after it ended (at position {ended.record.position})"
                found.append(Violation("SPEC §8", why, entry.record))
            elif isinstance(entry.event, final):
                ended = entry
                if isinstance(entry.event, ToolInvocation.ToolInvocationReady):
                    found.extend(_ready_problems(entry))
    return found


def _ready_problems(entry: Entry) -> list[Violation]:
    event, record = entry.event, entry.record
    if event.evidence_status not in (FOUND, EMPTY):
        status = event.evidence_status.value if event.evidence_status else "none"
        return [Violation("SPEC §16.4", f"is READY with evidence status {status}", record)]
    found: list[Violation] = []
    content = event.content if isinstance(event.content, str) else ""
    data = content.encode()
    if event.evidence_status is FOUND and not content.strip():
        found.append(Violation("SPEC §16.4", "is EVIDENCE_FOUND with no content", record))
    if event.content_hash != hashlib.sha256(data).hexdigest() or event.byte_size != len(data):
        found.append(Violation("SPEC §8", "its content hash or size is not its content's", record))
    return found


def check_saturation(log: RunLog) -> list[Violation]:
    """§16.6: no tool invocation begins after the run's collection stopped."""
    entries = log.collection.entries if log.collection else []
    stop = next((e for e in entries if isinstance(e.event, Collection.CollectionStop)), None)
    if stop is None:
        return []
    at, reason = stop.record.position, stop.event.stop_reason.value
    return [
        Violation("SPEC §16.6", f"began after the collection stopped ({reason} at {at})", first)
        for stream in log.invocations.values()
        if stream.entries and (first := stream.entries[0].record).position > at
    ]
