"""The shapes of the model's structured answers, one pydantic model each, for their schemas.

Each model here exists to generate the strict JSON schema a provider is given
(:mod:`application.strict_schema`); the answers themselves are parsed where they are used, by
rules stricter than a schema can say (:mod:`application.judge`, :mod:`domain.answer_rules`). The
draft's and the progress report's shapes are :mod:`application.drafts`' own models.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from domain.answer_rules import MAX_CITATIONS, MAX_STATEMENTS, ChatReply
from domain.release_states import SemanticVerdict
from domain.states import Intent


class RouteAnswer(BaseModel):
    """The router's answer: the intent of the operator's message."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    intent: Intent


class ChatAnswer(BaseModel):
    """A system-chat answer: which of the harness's replies fits; the harness writes its text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reply: ChatReply


class PassageCitation(BaseModel):
    """A passage id and a sentence copied verbatim from that passage."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reference: str
    excerpt: str


class KnowledgeStatement(BaseModel):
    """One statement of a knowledge answer and the passages it rests on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    statement: str
    citations: list[PassageCitation] = Field(max_length=MAX_CITATIONS)


class KnowledgeAnswer(BaseModel):
    """A knowledge answer: its statements, each with its citations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    statements: list[KnowledgeStatement] = Field(max_length=MAX_STATEMENTS)


class JudgeVerdict(BaseModel):
    """The judge's verdict on one numbered statement."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    statement: int = Field(ge=0)
    verdict: SemanticVerdict


class JudgeAnswer(BaseModel):
    """The judge's answer: one verdict for every statement, and an optional reason (unread)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdicts: list[JudgeVerdict]
    reason: str | None = None
