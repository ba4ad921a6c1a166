"""A release decision summarised from its events: the same summary for a run and its replay.

Both sides of a replay are read by this one function, from the events their release recorded
(the run's from the log, the replay's from the run's copy), so a difference shown is a
difference in what the guards recorded, never in how two summaries were made.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from application.proposals import recorded_draft
from domain.run import Run
from domain.states import DraftOutcome, ModelStepOutcome, ModelStepPurpose

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from domain.grounding import RejectedCitation

MAX_TEXT = 300
"""The most characters of a statement a summary keeps (the log holds it whole)."""

NOT_DECIDED = "NONE"
"""The outcome of a release that decided nothing (the run ended first, or had nothing safe)."""


@dataclass(frozen=True)
class Fate:
    """What became of one statement: ``conclusion``, ``fact N`` or ``progress N``."""

    label: str
    text: str
    fate: str


@dataclass(frozen=True)
class Decision:
    """One release, summarised: what it decided and why, statement by statement."""

    outcome: str
    """SUCCESS, FALLBACK, or NONE (nothing released)."""
    fallback_type: str | None
    rules: str
    """The excerpt rules the evidence check applied."""
    repair: str
    judge: str
    statements: tuple[Fate, ...]
    content_sha256: str | None
    """The digest of the published content's canonical JSON (None: nothing published)."""
    content: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        """The summary as a replay's event records it."""
        data = asdict(self)
        data["statements"] = [asdict(f) for f in self.statements]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Decision:
        """A summary read back from a replay's event."""
        fates = tuple(Fate(**f) for f in data.get("statements", ()))
        return cls(**{**data, "statements": fates})


def decide(events: Sequence[Any], texts: Mapping[str, str]) -> Decision:
    """The decision ``events`` (a release's, in order) record; ``texts`` names each statement.

    ``texts`` maps ``conclusion``, ``fact N`` and ``progress N`` to the statements the agent's
    draft and the collection held; a repaired draft's replace the agent's.
    """
    initial = _last(events, Run.EvidenceGuardInitial)
    recheck = _last(events, Run.EvidenceGuardRecheck)
    judged = _last(events, Run.SemanticGuardDecision)
    release = _last(events, Run.ReleaseDecision)
    content = dict(release.content) if release is not None else None
    statements = {**texts, **_repaired(events)}
    rejected = _rejections(initial, recheck)
    verdicts = {j.statement: j.verdict for j in judged.judged} if judged is not None else {}
    published = _published(content)
    return Decision(
        outcome=release.outcome.value if release is not None else NOT_DECIDED,
        fallback_type=release.fallback_type.value
        if release is not None and release.fallback_type is not None
        else None,
        rules=_rules(initial),
        repair=_repair(events),
        judge=_judge(judged, events),
        statements=tuple(
            Fate(label, text[:MAX_TEXT], _fate(label, text, rejected, verdicts, published))
            for label, text in statements.items()
        ),
        content_sha256=_digest(content),
        content=content,
    )


def differences(original: Decision, replay: Decision) -> list[str]:
    """What the replay decided otherwise, one line each (none: the same decision)."""
    found = [
        f"{name}: {getattr(original, name)} -> {getattr(replay, name)}"
        for name in ("outcome", "fallback_type")
        if getattr(original, name) != getattr(replay, name)
    ]
    before = {f.label: f.fate for f in original.statements}
    after = {f.label: f.fate for f in replay.statements}
    for label in dict.fromkeys([*before, *after]):
        if before.get(label) != after.get(label):
            found.append(f"{label}: {before.get(label, '-')} -> {after.get(label, '-')}")
    if original.content_sha256 != replay.content_sha256:
        found.append("published content differs")
    return found


def _last(events: Iterable[Any], cls: type[Any]) -> Any | None:
    found = None
    for event in events:
        if isinstance(event, cls):
            found = event
    return found


def _repaired(events: Sequence[Any]) -> dict[str, str]:
    """The repaired draft's statements, when the repair proposed a valid draft."""
    drafts = [d for d in _repair_drafts(events) if d.outcome is DraftOutcome.VALID]
    data = recorded_draft(drafts[-1].text) if drafts else None
    if not data or not isinstance(data.get("conclusion"), dict):
        return {}
    return draft_texts(data)


def draft_texts(data: Mapping[str, Any]) -> dict[str, str]:
    """``conclusion`` and ``fact N`` of a draft's JSON, as the guards label them."""
    texts: dict[str, str] = {}
    conclusion = data.get("conclusion")
    if isinstance(conclusion, dict):
        texts["conclusion"] = str(conclusion.get("statement", ""))
    for number, fact in enumerate(data.get("facts") or (), start=1):
        if isinstance(fact, dict):
            texts[f"fact {number}"] = str(fact.get("statement", ""))
    return texts


def _rejections(initial: Any | None, recheck: Any | None) -> dict[str, RejectedCitation]:
    """The first failing citation of each statement, as the last check of it found."""
    found: dict[str, RejectedCitation] = {}
    for rejected in initial.rejected if initial is not None else ():
        found.setdefault(rejected.statement, rejected)
    if recheck is not None:  # the recheck judged the repaired draft afresh (progress: not)
        found = {k: v for k, v in found.items() if k.startswith("progress")}
        for rejected in recheck.rejected:
            found.setdefault(rejected.statement, rejected)
    return found


def _fate(
    label: str,
    text: str,
    rejected: Mapping[str, RejectedCitation],
    verdicts: Mapping[str, Any],
    published: set[str],
) -> str:
    if label in rejected:
        failed = rejected[label]
        return f"rejected: cites {failed.reference or '(nothing)'}: {failed.problem.value}"
    if text in published:
        return "published"
    if text in verdicts:
        verdict = verdicts[text]
        return "not judged: judge unavailable" if verdict is None else f"withheld: {verdict.value}"
    return "withheld"


def _published(content: Mapping[str, Any] | None) -> set[str]:
    if content is None or content.get("kind") != "diagnosis":
        return set()
    facts = content.get("facts") or ()
    return {str(content.get("conclusion")), *(str(f.get("statement")) for f in facts)}


def _rules(initial: Any | None) -> str:
    if initial is None:
        return "not checked"
    if initial.min_words == 0 and initial.min_chars == 0:
        return "references only (before excerpt rules)"
    return f"excerpts of {initial.min_words}+ words, {initial.min_chars}+ characters"


def _repair(events: Sequence[Any]) -> str:
    if _last(events, Run.EvidenceRepair) is None:
        return "not asked"
    drafts = _repair_drafts(events)
    if drafts:
        return f"asked: {drafts[-1].outcome.value} draft"
    steps = [
        e
        for e in events
        if isinstance(e, Run.AgentModelStep) and e.purpose is ModelStepPurpose.REPAIR
    ]
    return f"asked: no draft ({steps[-1].detail})" if steps else "asked: no draft came"


def _repair_drafts(events: Sequence[Any]) -> list[Run.DraftProposed]:
    return [
        e
        for e in events
        if isinstance(e, Run.DraftProposed) and e.purpose is ModelStepPurpose.REPAIR
    ]


def _judge(decision: Any | None, events: Sequence[Any]) -> str:
    if decision is None:
        return "not asked"
    if decision.verdict is not None:
        return str(decision.verdict.value)
    steps = [
        e
        for e in events
        if isinstance(e, Run.AgentModelStep) and e.purpose is ModelStepPurpose.JUDGE
    ]
    failed = steps[-1].detail if steps and steps[-1].outcome is ModelStepOutcome.FAILED else ""
    return f"unavailable ({decision.unavailable})" + (f": {failed}" if failed else "")


def _digest(content: Mapping[str, Any] | None) -> str | None:
    if content is None:
        return None
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
