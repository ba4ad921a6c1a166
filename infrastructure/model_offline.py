"""The offline model: a deterministic, rule-based stand-in for a real model (no network).

It routes, plans tool calls over the sample operations data from the query, reports progress by
the protocol, drafts conclusions that quote and cite evidence, repairs references, and judges
whether quoted evidence occurs in the cited results. It knows nothing the tools did not return.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from application.ports import ModelRequest, ModelResponse, ToolCall, Usage
from domain.answers import ChatReply, quotable_sentences
from domain.grounding import occurs
from domain.states import ModelStepPurpose

if TYPE_CHECKING:
    from application.ports import Message

SERVICES = ("checkout", "payments", "inventory", "search")
SAMPLE_WINDOW = (datetime(2026, 11, 28, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
KNOWLEDGE_WORDS = (
    "how do",
    "how to",
    "how should",
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
_INVOCATION = re.compile(r"^invocation ([0-9a-f-]{36})")
_LINE_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")


@dataclass(frozen=True)
class Cause:
    """A failure pattern: the phrase that identifies it and how to state the conclusion."""

    name: str
    signal: str
    support: tuple[str, ...]
    statement: str


CAUSES = (
    Cause(
        "tls",
        "certificate has expired",
        ("expires in",),
        "{service} failed because a TLS certificate expired",
    ),
    Cause(
        "pool",
        "connection pool exhausted",
        ("slow query holding connection", "db_connections at 100"),
        "{service} ran out of database connections",
    ),
    Cause("oom", "OOMKilled", ("Config change",), "{service} containers were OOM-killed"),
    Cause(
        "deploy",
        "upstream timeout",
        (" deploy v",),
        "{service} slowed down after a deploy that made upstream calls time out",
    ),
)
METRIC_FOR = {
    "tls": "error_rate",
    "pool": "db_connections",
    "oom": "memory_mb",
    "deploy": "latency_p99_ms",
}


class OfflineProvider:
    """Answers every request purpose deterministically from the conversation alone."""

    name = "offline"
    blocking = False  # pure computation over the conversation: no I/O, nothing to wait for

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Route, answer, act, repair or judge."""
        match request.purpose:
            case ModelStepPurpose.ROUTE:
                text = json.dumps({"intent": route(request.messages[-1].content)})
                return _response(request, text)
            case ModelStepPurpose.ANSWER:
                return _response(request, answer(request.messages[-1].content))
            case ModelStepPurpose.AGENT:
                return Agent(request.messages).step(request)
            case ModelStepPurpose.REPAIR:
                return _response(request, repair(request.messages))
            case ModelStepPurpose.JUDGE:
                return _response(request, judge(request.messages[-1].content))


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

    A knowledge question comes as JSON ``{"question", "passages"}``: the answer cites the first
    passage with an informative sentence, quoting that sentence. Anything else is a chat
    message: the answer is the one reply that fits it (the harness writes the words).
    """
    try:
        asked = json.loads(prompt)
    except ValueError:
        asked = None
    if isinstance(asked, dict) and isinstance(asked.get("passages"), list):
        return json.dumps(_from_passages(asked["passages"]))
    return json.dumps({"reply": _reply(prompt).value})


def _from_passages(passages: list[dict[str, Any]]) -> dict[str, Any]:
    for passage in passages:
        quotes = quotable_sentences(str(passage.get("text", "")))
        if quotes:
            text = f"From the runbook section [{passage['id']}] ({passage['title']}): {quotes[0]}"
            return {"text": text, "citations": [{"reference": passage["id"], "excerpt": quotes[0]}]}
    return {"text": "No passage answers that.", "citations": []}


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
    """SUPPORTED for a statement when every excerpt it cites occurs in the result it cites."""
    data = json.loads(payload)
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


class Agent:
    """One agent step, re-derived from the conversation each time (the model keeps no state)."""

    def __init__(self, messages: tuple[Message, ...]) -> None:
        """Read the question, the tool results so far and any stop instruction."""
        self.query = next(m.content for m in messages if m.role == "user")
        self.results = [_result(m.content) for m in messages if m.role == "tool"]
        self.stopped = any(
            m.role == "user" and m.content.startswith("STOP_REQUIRED") for m in messages
        )
        lowered = self.query.lower()
        self.service = next((s for s in SERVICES if s in lowered), None)
        self.window = _window(self.query)

    def step(self, request: ModelRequest) -> ModelResponse:
        """Report progress on the last result, then call the next planned tool or draft."""
        body: dict[str, Any] = {}
        if self.results:
            body["progress"] = self._progress(self.results[-1])
        plan = self._plan()
        if self.service is None or self.stopped or len(self.results) >= len(plan):
            body["draft"] = self._draft()
            return _response(request, json.dumps(body))
        name, arguments = plan[len(self.results)]
        call = ToolCall(f"offline_{len(self.results) + 1}", name, arguments)
        return _response(request, json.dumps(body) if body else "", (call,))

    def _plan(self) -> list[tuple[str, dict[str, Any]]]:
        start, end = self.window
        scope = {
            "service": self.service,
            "start": _iso(start - timedelta(hours=2)),
            "end": _iso(end),
        }
        wide = scope | {"start": _iso(start - timedelta(hours=24))}
        seen = "\n".join(line for _, lines in self.results for line in lines)
        cause = next((c for c in CAUSES if c.signal in seen), None)
        metric = METRIC_FOR[cause.name] if cause else "error_rate"
        return [
            ("list_alerts", scope),
            ("search_logs", scope | {"level": "ERROR", "limit": 20}),
            ("list_deployments", wide),
            ("search_logs", wide | {"level": "WARN", "limit": 30}),
            ("query_metrics", scope | {"metric": metric}),
        ]

    def _progress(self, result: tuple[str | None, list[str]]) -> dict[str, Any]:
        invocation, lines = result
        facts = [_fact(invocation, line) for line in _signals(lines)] if invocation else []
        return {"gain": "GAINED" if facts else "NO_GAIN", "facts": facts}

    def _draft(self) -> dict[str, Any]:
        if self.service is None:
            return {
                "conclusion": None,
                "facts": [],
                "missing_info": [{"kind": "SERVICE"}, {"kind": "TIME_WINDOW"}],
            }
        facts = [
            f
            for inv, lines in self.results
            if inv
            for f in (_fact(inv, x) for x in _signals(lines))
        ]
        for cause in CAUSES:
            cited = self._evidence_for(cause)
            if cited:
                quotes = " and ".join(f'"{q}"' for _, q in cited)
                statement = (
                    cause.statement.format(service=self.service) + f": the evidence shows {quotes}."
                )
                citations = [{"reference": inv, "excerpt": quote} for inv, quote in cited]
                return {
                    "conclusion": {"statement": statement, "citations": citations},
                    "facts": facts,
                    "missing_info": [],
                }
        # Nothing pointed at a cause: ask for the symptom, scoped to what was checked (a tool
        # that failed or found nothing is the harness's to report, never "nothing was found").
        missing = [] if facts else [{"kind": "SYMPTOM", "service": self.service}]
        return {"conclusion": None, "facts": facts, "missing_info": missing}

    def _evidence_for(self, cause: Cause) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        for phrase in (cause.signal, *cause.support):
            for invocation, lines in self.results:
                line = next((x for x in lines if phrase in x), None)
                if invocation and line:
                    found.append((invocation, _excerpt(line, phrase)))
                    break
            if phrase == cause.signal and not found:
                return []
        return found


def _result(content: str) -> tuple[str | None, list[str]]:
    match = _INVOCATION.match(content)
    lines = content.splitlines()[1:] if match else []
    return (match.group(1) if match else None), [x for x in lines if _LINE_TS.match(x)]


def _signals(lines: list[str]) -> list[str]:
    """At most two lines worth reporting: cause signals first, then alerts and errors."""
    phrases = [p for c in CAUSES for p in (c.signal, *c.support)] + [" alert ", " ERROR "]
    ranked = [line for p in phrases for line in lines if p in line]
    return list(dict.fromkeys(ranked))[:2]


def _fact(invocation: str, line: str) -> dict[str, Any]:
    excerpt = line[21:141]  # after the timestamp: a substring of the projected content
    return {
        "statement": f"Observed at {line[:20]}: {excerpt}",
        "citations": [{"reference": invocation, "excerpt": excerpt}],
    }


def _excerpt(line: str, phrase: str) -> str:
    """Up to 80 characters from the phrase on, cut at a word boundary, without quotes."""
    start = line.index(phrase.strip())
    piece = line[start : start + 80].split('"')[0]
    if start + 80 < len(line) and " " in piece:
        piece = piece.rsplit(" ", 1)[0]
    return piece.rstrip(" ,;:(")


def _window(query: str) -> tuple[datetime, datetime]:
    day = re.search(r"(\d{4}-\d\d-\d\d)", query)
    if not day:
        return SAMPLE_WINDOW
    base = datetime.fromisoformat(day.group(1)).replace(tzinfo=UTC)
    times = re.findall(r"\b(\d{1,2}):(\d\d)\b", query)
    if len(times) >= 2:
        (h1, m1), (h2, m2) = times[:2]
        return base.replace(hour=int(h1), minute=int(m1)), base.replace(
            hour=int(h2), minute=int(m2)
        )
    return base, base + timedelta(days=1)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _response(request: ModelRequest, text: str, calls: tuple[ToolCall, ...] = ()) -> ModelResponse:
    tokens_in = sum(len(m.content) for m in request.messages) // 4
    return ModelResponse(text, calls, Usage(tokens_in, len(text) // 4 + 1))
