"""What a knowledge answer records before its release: the passages retrieved, the answer proposed.

Both are recorded so the audit verifier can derive again, from the log alone, what the run
published: the harness's list of the retrieved passages, or the model's statements the judge
supported (design §10.1).
"""

from __future__ import annotations

from eventsourcing.domain import Aggregate

from domain.answer_rules import PARSE_REFUSALS, AnswerRefusal, RetrievedPassage
from domain.run_core import RunCore
from domain.run_steps import text_sha256
from domain.states import MAX_MODEL_OUTPUT_CHARS, Intent


class RunAnswers(RunCore):
    """The knowledge route's retrieval and proposed answer, and their events."""

    class PassagesRetrieved(Aggregate.Event):
        """The runbook passages retrieved for the question, best first, as stored."""

        class_version = 1
        passages: tuple[RetrievedPassage, ...]

        def apply(self, aggregate: RunAnswers) -> None:
            """Remember what the answer may cite."""
            aggregate.passages = self.passages

    class AnswerProposed(Aggregate.Event):
        """The model proposed a knowledge answer: its text, length, hash and how it parsed."""

        class_version = 1
        text: str
        """The answer's text, whole."""
        length: int
        """The full text's length in characters."""
        sha256: str
        """The hex SHA-256 of the full text, UTF-8 encoded."""
        refusal: AnswerRefusal | None
        """Why the text is no answer (one of :data:`PARSE_REFUSALS`); None when it parsed."""

        def apply(self, aggregate: RunAnswers) -> None:
            """Remember whether there are statements to judge."""
            aggregate.answer_parsed = self.refusal is None

    def retrieve_passages(self, passages: tuple[RetrievedPassage, ...]) -> None:
        """Record the passages retrieved for a knowledge question (``PASSAGES_RETRIEVED``)."""
        self.check_active()
        self._refuse_if(
            self.intent is not Intent.KNOWLEDGE_QUERY, "only a KNOWLEDGE_QUERY retrieves passages"
        )
        self._refuse_if(self.passages is not None, "the passages were already retrieved")
        self.trigger_event(self.PassagesRetrieved, passages=tuple(passages))

    def propose_answer(self, text: str, refusal: AnswerRefusal | None) -> None:
        """Record the knowledge answer the model proposed and how it parsed (``ANSWER_PROPOSED``).

        The text is recorded whole: an answer over
        :data:`~domain.states.MAX_MODEL_OUTPUT_CHARS` was refused TOO_LARGE at its model step and
        is never proposed.
        """
        self.check_active()
        self._refuse_if(self.release is not None, "the release was already decided")
        self._refuse_if(not self.passages, "an answer is asked for only over retrieved passages")
        self._refuse_if(self.answer_parsed is not None, "the answer was already proposed")
        self._invalid_if(
            refusal is not None and refusal not in PARSE_REFUSALS,
            f"{refusal.value if refusal else ''} is no refusal of the answer's text",
        )
        self._invalid_if(
            len(text) > MAX_MODEL_OUTPUT_CHARS,
            f"an answer over {MAX_MODEL_OUTPUT_CHARS} characters is refused, never proposed",
        )
        digest = text_sha256(text)
        self.trigger_event(
            self.AnswerProposed,
            text=text,
            length=len(text),
            sha256=digest,
            refusal=refusal,
        )
