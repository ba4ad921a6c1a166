"""What the harness tells the model, and the JSON schemas its answers must follow, in one place.

One prompt (and schema) per model step: routing (ROUTE), the diagnosis agent and its stop
instruction (AGENT), the draft's repair (REPAIR), the semantic judge (JUDGE), and the answer
routes' system chat and knowledge answers (ANSWER). A schema is given to providers that support
structured output; every answer is still parsed and checked strictly where it is used.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from application.answer_shapes import ChatAnswer, JudgeAnswer, KnowledgeAnswer, RouteAnswer
from application.drafts import AgentAnswer, DiagnosisDraft
from application.strict_schema import strict_schema

# -- routing -----------------------------------------------------------------------------------

ROUTER_PROMPT = (
    'Classify the operator\'s message. Answer JSON {"intent": "SYSTEM_CHAT" | '
    '"KNOWLEDGE_QUERY" | "DIAGNOSIS"}: DIAGNOSIS for a question about what is happening or '
    "happened in the systems, KNOWLEDGE_QUERY for how-to and policy questions, SYSTEM_CHAT "
    "otherwise."
)
ROUTE_SCHEMA = strict_schema(RouteAnswer)

# -- diagnosis ---------------------------------------------------------------------------------

AGENT_PROMPT = (
    "You diagnose operational incidents with read-only tools. Call at most one tool per step. "
    "After every tool result, your next answer's text MUST be JSON with a progress report: "
    '{"progress": {"gain": "GAINED" | "NO_GAIN", "facts": [{"statement": …, "citations": '
    '[{"reference": invocation id, "excerpt": text copied exactly from that result}]}]}}. '
    'When done, answer {"draft": {"conclusion": {"statement": …, "citations": [...]} | null, '
    '"facts": [...], "missing_info": [{"kind": "SERVICE" | "TIME_WINDOW" | "SYMPTOM" | '
    '"ENVIRONMENT", "service": …, "start": …, "end": …}]}} and no tool call. Cite every result '
    "a statement relies on, each with an excerpt of at least three words copied exactly from "
    "it; cite only invocation ids you were given; a result marked NO_EVIDENCE only says its "
    "scope was empty and proves nothing."
)
REFERENCE_TIME = (
    " The reference time ('now') is {now} (UTC): resolve the question's relative times (today,"
    " yesterday, this morning, last night, right now, the same day as the previous diagnosis)"
    " against it; when one cannot be resolved, call no tool and ask for the window"
    ' (missing_info kind "TIME_WINDOW").'
)
"""Appended to the agent prompt, so every model reads "yesterday" as the same day."""


def agent_prompt(now: datetime) -> str:
    """The agent's system prompt, with the reference time relative times are resolved against."""
    moment = now.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="seconds")
    return AGENT_PROMPT + REFERENCE_TIME.format(now=moment + "Z")


AGENT_SCHEMA = strict_schema(AgentAnswer)
"""The agent's text when it answers without a tool call: a progress report, a draft, or both."""
STOP_INSTRUCTION = (
    "STOP_REQUIRED: evidence collection is closed ({reason}). Do not call tools. "
    "Answer now with your draft."
)
DRAFT_SCHEMA = strict_schema(DiagnosisDraft)
"""The JSON schema of a draft (the repair's answer), given to models with structured output."""


def repair_prompt(usable: dict[str, str], failures: str) -> str:
    """The system prompt of the one repair: which results may be cited, which citations failed.

    Args:
        usable: The content of every result a citation may quote, by invocation id.
        failures: The rejected citations, one after another, as the evidence guard found them.
    """
    return (
        "Repair the draft: every citation must copy an excerpt of at least three words "
        f"exactly from the result it cites. Cite only these results: {json.dumps(usable)}"
        f"\nThese citations failed: {failures}"
    )


# -- the semantic judge ------------------------------------------------------------------------

JUDGE_SCHEMA = strict_schema(JudgeAnswer)
JUDGE_PROMPT = (
    "For each numbered statement, answer whether the cited evidence supports it as stated. "
    'Answer JSON {"verdicts": [{"statement": N, "verdict": "SUPPORTED" | "UNSUPPORTED"}]} with '
    "exactly one verdict for every statement."
)
KNOWLEDGE_JUDGE_PROMPT = (
    "Each numbered statement answers an operator's question from runbook passages. For each,"
    " answer whether the cited passages support it as stated: a statement that says more than"
    " they do, or the opposite of what they say, is UNSUPPORTED. A runbook describes procedures"
    " and policies, never what is happening: a statement about the present or past state of a"
    " system (that a service is down, slow or broken now, that a deploy was bad or caused an"
    " incident, what happened at some time) or an action prescribed because of such a state"
    " ('the deploy was bad; roll it back') is UNSUPPORTED, whatever the passages say."
    ' Answer JSON {"verdicts": [{"statement": N, "verdict": "SUPPORTED" | "UNSUPPORTED"}]} with'
    " exactly one verdict for every statement."
)

# -- the answer routes -------------------------------------------------------------------------

CHAT_PROMPT = (
    "You are the front desk of a diagnosis service for operated systems. You never answer a"
    " question about the systems yourself: another route investigates those. Pick the one reply"
    ' that fits the operator\'s message and answer JSON {"reply": "GREETING" | "CAPABILITIES" |'
    ' "HOW_TO_ASK" | "THANKS" | "OUT_OF_SCOPE"}: GREETING for a greeting, CAPABILITIES when'
    " asked what you can do, HOW_TO_ASK when the message is about a service, an incident or a"
    " symptom, THANKS for thanks, OUT_OF_SCOPE for anything else. The harness writes the text."
)
CHAT_SCHEMA = strict_schema(ChatAnswer)
KNOWLEDGE_PROMPT = (
    "Answer the operator's question from the given runbook passages only, as a list of"
    ' statements. Answer JSON {"statements": [{"statement": one statement, "citations":'
    ' [{"reference": a passage id, "excerpt": a sentence copied verbatim from that passage}]}]}.'
    " Every statement cites the passages it rests on; an answer whose citations are missing, not"
    " verbatim or of a passage not given is not published, nor one the judge finds unsupported."
    " The passages say how to do things, not what is happening: never state that a system is"
    " broken, slow or healthy, what happened or what caused it; a question about that is a"
    " diagnosis, which another route investigates with tools."
)
KNOWLEDGE_SCHEMA = strict_schema(KnowledgeAnswer)
"""A knowledge answer: its statements, each with its citations."""

SCHEMAS: dict[str, dict[str, Any]] = {
    "route": ROUTE_SCHEMA,
    "agent": AGENT_SCHEMA,
    "draft": DRAFT_SCHEMA,
    "judge": JUDGE_SCHEMA,
    "chat": CHAT_SCHEMA,
    "knowledge": KNOWLEDGE_SCHEMA,
}
"""Every schema the harness sends with a model call, by the answer it shapes (the agent's own
steps carry tool calls and free text, checked by :func:`application.drafts.parse_agent_text`)."""
