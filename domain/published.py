"""What a run publishes (design §10.1): one frozen value per kind of content.

The harness builds these (``application/published.py``, ``application/replies.py``); a
``RELEASE_DECISION`` stores :meth:`to_json` of one, a dict whose keys and their order are those
every log holds. :func:`domain.recorded.parse_published` reads a stored dict back, and readers
match over the union instead of reading keys.

A diagnosis publishes a :class:`DiagnosisReport` (SUCCESS) or a :class:`FallbackContent`; a
SYSTEM_CHAT run a :class:`ChatAnswer`; a KNOWLEDGE_QUERY run a :class:`GroundedAnswer`, or the
harness's :class:`UngroundedAnswer` instead of one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from domain.release_states import FallbackType

if TYPE_CHECKING:
    from collections.abc import Iterable

    from domain.answer_rules import AnswerRefusal, ChatReply
    from domain.grounding import Citation
    from domain.observations import Observation
    from domain.release_states import CitationProblem
    from domain.states import MissingKind
    from domain.values import Fact

Json = dict[str, Any]
"""Published content as stored: a JSON object."""


def citations_json(citations: Iterable[Citation]) -> list[dict[str, str]]:
    """Citations as published: each reference with its excerpt."""
    return [{"reference": c.reference, "excerpt": c.excerpt} for c in citations]


def fact_json(fact: Fact) -> Json:
    """A statement and its citations as published, with the references they name."""
    return {
        "statement": fact.statement,
        "citations": citations_json(fact.citations),
        "references": list(fact.references),
    }


@dataclass(frozen=True)
class DiagnosisReport:
    """A diagnosis released SUCCESS: the supported conclusion and supported facts."""

    kind: ClassVar[Literal["diagnosis"]] = "diagnosis"
    conclusion: Fact
    facts: tuple[Fact, ...]

    def to_json(self) -> Json:
        """The report as stored."""
        return {
            "kind": self.kind,
            "conclusion": self.conclusion.statement,
            "citations": citations_json(self.conclusion.citations),
            "references": list(self.conclusion.references),
            "facts": [fact_json(f) for f in self.facts],
        }


SERVICE_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
"""What a service name looks like (lower case, digits, ``._-``): a missing item's, a scope's."""


def names_service(service: str, question: str, known: Iterable[str]) -> bool:
    """Whether a fallback may name ``service``: the question names it, or the tools know it.

    Never one only the model named (in a tool call's arguments, say): a missing item's service
    is printed in the harness's words, so it must come from the operator or the catalogue.
    """
    if service in known:
        return True
    found = re.search(rf"(?<![\w.-]){re.escape(service)}(?![\w-]|\.\w)", question, re.IGNORECASE)
    return found is not None


@dataclass(frozen=True)
class MissingItem:
    """Information a fallback asks for, as data: the harness words its question.

    ``start`` and ``end`` are ISO 8601 text, exactly as recorded.
    """

    kind: MissingKind
    service: str | None = None
    start: str | None = None
    end: str | None = None

    def to_json(self) -> Json:
        """The item as stored: what is not known is left out."""
        data = {
            "kind": self.kind.value,
            "service": self.service,
            "start": self.start,
            "end": self.end,
        }
        return {key: value for key, value in data.items() if value is not None}


@dataclass(frozen=True)
class FallbackContent:
    """A safe fallback: its type's message, observations, scoped empty results, what is missing.

    ``observations`` quote the verified evidence records in time order (the harness's words,
    never the model's); ``no_evidence`` scopes each empty result; ``not_checked`` words each
    failed tool call as not checked (never as absence); ``missing_info`` is the harness's
    question for each of ``missing``. ``verified_facts`` (the model's statements) is only ever
    filled in fallbacks recorded before observations (``observations`` None): a fallback has no
    judge verdict on its statements, and only the harness speaks unjudged.
    """

    kind: ClassVar[Literal["fallback"]] = "fallback"
    fallback_type: FallbackType
    message: str
    verified_facts: tuple[Fact, ...]
    no_evidence: tuple[str, ...]
    not_checked: tuple[str, ...]
    missing_info: tuple[str, ...]
    missing: tuple[MissingItem, ...]
    observations: tuple[Observation, ...] | None = None
    """None in a fallback recorded before observations existed."""

    @property
    def facts_judged(self) -> bool:
        """Whether the judge found each of ``verified_facts`` supported (design §10.1).

        Only after it rejected the conclusion (SEMANTIC_UNSUPPORTED), when it answered for every
        statement. In the other fallbacks no judge ran or answered: each fact's quotes were
        found in the results it cites, the statement itself was not checked against them.
        """
        return self.fallback_type is FallbackType.SEMANTIC_UNSUPPORTED

    def to_json(self) -> Json:
        """The fallback as stored."""
        return {
            "kind": self.kind,
            "fallback_type": self.fallback_type.value,
            "message": self.message,
            "verified_facts": [fact_json(f) for f in self.verified_facts],
            "no_evidence": list(self.no_evidence),
            "not_checked": list(self.not_checked),
            "missing_info": list(self.missing_info),
            "missing": [item.to_json() for item in self.missing],
        } | (
            {}
            if self.observations is None
            else {"observations": [o.to_json() for o in self.observations]}
        )


@dataclass(frozen=True)
class ChatAnswer:
    """A SYSTEM_CHAT answer: the reply picked, the harness's text for it, and any refusal."""

    kind: ClassVar[Literal["answer"]] = "answer"
    reply: ChatReply
    text: str
    refusal: AnswerRefusal | None
    """Why the model's answer was refused (then ``reply`` is the harness's); None if it was not."""

    def to_json(self) -> Json:
        """The answer as stored."""
        return {
            "kind": self.kind,
            "reply": self.reply.value,
            "text": self.text,
            "refused": self.refusal is not None,
            "refusal": self.refusal.value if self.refusal else None,
        }


@dataclass(frozen=True)
class CitedPassage:
    """A runbook passage a grounded answer cites, recorded as retrieved."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class GroundedAnswer:
    """A KNOWLEDGE_QUERY answer every citation of which proved, with the passages it cites."""

    kind: ClassVar[Literal["answer"]] = "answer"
    text: str
    citations: tuple[Citation, ...]
    passages: tuple[CitedPassage, ...]

    def to_json(self) -> Json:
        """The answer as stored."""
        return {
            "kind": self.kind,
            "grounded": True,
            "text": self.text,
            "citations": citations_json(self.citations),
            "passages": [{"id": p.id, "title": p.title, "text": p.text} for p in self.passages],
            "refusal": None,
            "rejected_citations": [],
        }


@dataclass(frozen=True)
class ListedPassage:
    """A retrieved passage as the harness lists it: id, title and first sentence."""

    id: str
    title: str
    sentence: str


@dataclass(frozen=True)
class RefusedCitation:
    """A citation of a refused knowledge answer, cut as shown, and its problem."""

    reference: str
    excerpt: str
    problem: CitationProblem


@dataclass(frozen=True)
class UngroundedAnswer:
    """The harness's answer instead of an ungrounded one: the retrieved passages, listed."""

    kind: ClassVar[Literal["answer"]] = "answer"
    text: str
    passages: tuple[ListedPassage, ...]
    refusal: AnswerRefusal
    rejected_citations: tuple[RefusedCitation, ...]

    def to_json(self) -> Json:
        """The answer as stored: it cites nothing."""
        return {
            "kind": self.kind,
            "grounded": False,
            "text": self.text,
            "citations": [],
            "passages": [
                {"id": p.id, "title": p.title, "sentence": p.sentence} for p in self.passages
            ],
            "refusal": self.refusal.value,
            "rejected_citations": [
                {"reference": r.reference, "excerpt": r.excerpt, "problem": r.problem.value}
                for r in self.rejected_citations
            ],
        }


Published = DiagnosisReport | FallbackContent | ChatAnswer | GroundedAnswer | UngroundedAnswer
"""What the harness publishes today."""
