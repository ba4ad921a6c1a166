"""The offline model: a deterministic, rule-based stand-in for a real model (no network).

It routes, plans tool calls over the sample operations data from the query (the agent of
:mod:`infrastructure.offline_agent`), reports progress by the protocol, drafts conclusions that
quote and cite evidence, repairs references, and judges whether quoted evidence occurs in the
cited results; it answers and judges knowledge questions as
:mod:`infrastructure.offline_knowledge` does. It knows nothing the tools did not return.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from domain.answer_rules import ChatReply
from domain.grounding import occurs
from domain.states import ModelStepPurpose
from infrastructure import offline_knowledge
from infrastructure.model_reply import reply
from infrastructure.offline_agent import SERVICES, Agent

if TYPE_CHECKING:
    from application.ports import Message, ModelRequest, ModelResponse

KNOWLEDGE_WORDS = (
    "how do",
    "how to",
    "how should",
    "how long",
    "how many",
    "how often",
    "who is",
    "who gets",
    "who should",
    "what should",
    "what is",
    "what does",
    "runbook",
    "checklist",
    "policy",
    "explain",
    "procedure",
)
DIAGNOSIS_WORDS = (
    "why",
    "slow",
    "fail",
    "error",
    "down",
    "latency",
    "outage",
    "incident",
    "broken",
    "timeout",
    "alert",
    "what happened",
    "crash",
    "restart",
)


class OfflineProvider:
    """Answers every request purpose deterministically from the conversation alone."""

    name = "offline"
    model = "offline-rules"
    blocking = False  # pure computation over the conversation: no I/O, nothing to wait for
    local = True  # nothing leaves the process: a run need not commit before asking it

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Route, answer, act, repair or judge."""
        match request.purpose:
            case ModelStepPurpose.ROUTE:
                text = json.dumps({"intent": route(request.messages[-1].content)})
                return reply(request, text)
            case ModelStepPurpose.ANSWER:
                return reply(request, answer(request.messages[-1].content))
            case ModelStepPurpose.AGENT:
                return Agent(request.messages).step(request)
            case ModelStepPurpose.REPAIR:
                return reply(request, repair(request.messages))
            case ModelStepPurpose.JUDGE:
                return reply(request, judge(request.messages[-1].content))


def route(query: str) -> str:
    """KNOWLEDGE_QUERY for how-to questions, DIAGNOSIS for symptoms or services, else chat."""
    text = query.lower()
    if any(w in text for w in KNOWLEDGE_WORDS):
        return "KNOWLEDGE_QUERY"
    if any(w in text for w in DIAGNOSIS_WORDS) or any(s in text for s in SERVICES):
        return "DIAGNOSIS"
    return "SYSTEM_CHAT"


def answer(prompt: str) -> str:
    """Answer from the passages quoting one verbatim, or pick a system-chat reply.

    A knowledge question comes as JSON ``{"question", "passages"}``: the answer states the
    sentence of a passage that best answers it, citing it, or nothing when none does
    (:mod:`infrastructure.offline_knowledge`).
    Anything else is a chat message: the answer is the one reply that fits it (the harness
    writes the words).
    """
    try:
        asked = json.loads(prompt)
    except ValueError:
        asked = None
    if isinstance(asked, dict) and isinstance(asked.get("passages"), list):
        question = str(asked.get("question", ""))
        return json.dumps(offline_knowledge.answer(asked["passages"], question))
    return json.dumps({"reply": _reply(prompt).value})


def _reply(message: str) -> ChatReply:
    text = " ".join(re.findall(r"[a-z0-9']+", message.lower()))
    words = set(text.split())
    if words & {"thanks", "thank", "thx", "cheers"}:
        return ChatReply.THANKS
    if words & {"hello", "hi", "hey", "greetings"}:
        return ChatReply.GREETING
    if "help" in words or any(p in text for p in ("what can you", "who are you", "what do you")):
        return ChatReply.CAPABILITIES
    if any(w in text for w in DIAGNOSIS_WORDS) or words & set(SERVICES):
        return ChatReply.HOW_TO_ASK
    return ChatReply.OUT_OF_SCOPE


def judge(payload: str) -> str:
    """SUPPORTED for a statement when every excerpt it cites occurs in the result it cites.

    A knowledge answer's statements (a payload of ``passages``, not ``evidence``) are judged
    as :func:`infrastructure.offline_knowledge.verdicts` says: never a live claim.
    """
    data = json.loads(payload)
    if "passages" in data:
        return json.dumps({"verdicts": offline_knowledge.verdicts(data)})
    evidence = data.get("evidence", {})
    verdicts = [
        {
            "statement": item["statement"],
            "verdict": "SUPPORTED" if _all_quoted(item["citations"], evidence) else "UNSUPPORTED",
        }
        for item in data.get("statements", [])
    ]
    return json.dumps({"verdicts": verdicts})


def _all_quoted(citations: list[dict[str, str]], evidence: dict[str, str]) -> bool:
    return bool(citations) and all(
        occurs(c["excerpt"], evidence.get(c["reference"], "")) for c in citations
    )


def repair(messages: tuple[Message, ...]) -> str:
    """Keep the citations whose excerpt occurs in a result the harness listed as usable."""
    listed = messages[0].content.split("Cite only these results: ", 1)[-1]
    usable = json.JSONDecoder().raw_decode(listed)[0] if listed.startswith("{") else {}
    draft = json.loads(messages[-1].content)
    for statement in [draft.get("conclusion"), *draft.get("facts", [])]:
        if statement:
            statement["citations"] = [
                c
                for c in statement["citations"]
                if occurs(c["excerpt"], usable.get(c["reference"], ""))
            ]
    draft["facts"] = [f for f in draft.get("facts", []) if f["citations"]]
    return json.dumps(draft)
