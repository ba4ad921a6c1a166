"""The EvidenceGuard: every citation of every statement checked against this run's evidence.

Nothing is filtered silently: a draft passes only when every citation of its conclusion and of
its facts proves its excerpt (design §10.1), and every failing citation is returned with its
statement and a :class:`~domain.release_states.CitationProblem`, to be recorded in the guard's
event. Progress facts (reported during collection) are checked the same way; a failing one is
never published, and is named in the event too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from uuid import UUID

from domain.errors import UnknownAggregateError
from domain.grounding import (
    DEFAULT_RULES,
    SHOWN_EXCERPT,
    Citation,
    Evidence,
    GroundingRules,
    RejectedCitation,
)
from domain.quotes import fact_problems
from domain.release_states import CitationProblem
from domain.tool_states import EvidenceStatus, InvocationStatus

if TYPE_CHECKING:
    from collections.abc import Iterable

    from application.release_context import ReleaseContext
    from domain.tool_invocation import ToolInvocation
    from domain.values import Fact


@dataclass(frozen=True)
class Checked:
    """Statements checked together: which passed, and every citation that failed."""

    passed: tuple[Fact, ...]
    rejected: tuple[RejectedCitation, ...] = field(default=())

    @property
    def valid(self) -> bool:
        """Whether every citation of every statement proved its excerpt."""
        return not self.rejected

    @property
    def references(self) -> tuple[str, ...]:
        """The references of the failing citations, each once (the events' legacy field)."""
        return tuple(dict.fromkeys(r.reference for r in self.rejected))


class EvidenceGuard:
    """Resolves references to this run's invocations and checks each citation's excerpt."""

    def __init__(self, ctx: ReleaseContext, rules: GroundingRules = DEFAULT_RULES) -> None:
        """Resolve through the run's own invocations; judge excerpts by ``rules``."""
        self.ctx = ctx
        self.rules = rules

    def source(self, reference: str) -> tuple[ToolInvocation | None, CitationProblem | None]:
        """The invocation a reference names, or why it names no usable evidence."""
        try:
            key = UUID(reference)
        except ValueError:
            return None, CitationProblem.UNKNOWN_REFERENCE
        if str(key) != reference:  # "{id}", "urn:uuid:id", upper case: not the id as recorded
            return None, CitationProblem.UNKNOWN_REFERENCE
        invocation = self.ctx.invocations.get(key)
        if invocation is None:
            try:
                invocation = self.ctx.store.get_invocation(key)
            except UnknownAggregateError:
                return None, CitationProblem.UNKNOWN_REFERENCE
        if invocation.run_id != self.ctx.run.id:
            return None, CitationProblem.OTHER_RUN
        ready = invocation.status is InvocationStatus.READY
        if not ready or invocation.evidence_status is not EvidenceStatus.EVIDENCE_FOUND:
            return None, CitationProblem.NOT_EVIDENCE
        return invocation, None

    def content(self, reference: str) -> str | None:
        """The evidence content a reference proves from, or None when it proves nothing."""
        invocation, _ = self.source(reference)
        return invocation.content if invocation is not None else None

    def resolve(self, reference: str) -> tuple[str, str, str] | None:
        """A reference's tool, scope and evidence content, or None when it proves nothing."""
        invocation, _ = self.source(reference)
        if invocation is None or invocation.content is None:
            return None
        return invocation.tool, invocation.normalized_scope, invocation.content

    def problems(self, fact: Fact) -> list[tuple[Citation, CitationProblem]]:
        """Every failing citation of one statement, with why (``domain.quotes``'s rule)."""
        return fact_problems(fact, self._content_or_why, self.rules)

    def _content_or_why(self, reference: str) -> tuple[Evidence | None, CitationProblem | None]:
        invocation, problem = self.source(reference)
        if invocation is None:
            return None, problem
        return Evidence(invocation.content, invocation.notes), None

    def check(self, statements: Iterable[tuple[str, Fact]]) -> Checked:
        """Check ``(label, statement)`` pairs; a statement passes when all its citations do."""
        passed: list[Fact] = []
        rejected: list[RejectedCitation] = []
        for label, fact in statements:
            failing = self.problems(fact)
            rejected += [
                RejectedCitation(label, c.reference, c.excerpt[:SHOWN_EXCERPT], problem)
                for c, problem in failing
            ]
            if not failing and fact not in passed:
                passed.append(fact)
        return Checked(tuple(passed), tuple(rejected))


def labelled(prefix: str, facts: Iterable[Fact]) -> list[tuple[str, Fact]]:
    """``(f"{prefix} N", fact)`` from 1, the labels a guard event names statements by."""
    return [(f"{prefix} {number}", fact) for number, fact in enumerate(facts, start=1)]
