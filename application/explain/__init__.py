"""Answers to the troubleshooting questions of SPEC §15 for one run, from its event streams alone.

Reads the run's Run stream, its Collection stream and the ToolInvocation streams the run charged
for (a tool call's ``BUDGET_CHARGED`` names its invocation), never a projection. Every answer names
the events it rests on by stream id and version, so it can be checked against an export of the log.

The package: ``model`` (the answer's types and the questions), ``log`` (reading the streams),
``answers`` and ``answers_client`` (one function per question), ``causes`` (causes in words),
``drafts`` (the drafts the model proposed, read back from ``DRAFT_PROPOSED``), ``words`` (the
words tables and small helpers) and ``explanation`` (``explain_run``).
"""

from application.explain.explanation import explain_run
from application.explain.model import (
    QUESTIONS,
    Answer,
    BudgetUse,
    EventRef,
    FieldValue,
    RunExplanation,
)
from application.explain.words import _REASON_WORDS

__all__ = [
    "QUESTIONS",
    "_REASON_WORDS",
    "Answer",
    "BudgetUse",
    "EventRef",
    "FieldValue",
    "RunExplanation",
    "explain_run",
]
