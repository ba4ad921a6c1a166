"""The offline model's diagnosis: plan tool calls over the sample data, cite what they return.

The agent keeps no state: each step re-reads the conversation (the question, the tool results so
far, a stop instruction), reports progress on the last result, then calls the next planned tool
or drafts a conclusion that quotes and cites the results. It knows nothing the tools did not
return.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from application.ports import ToolCall
from domain.tokens import inside_a_token, whole_tokens
from infrastructure.model_reply import invocation_of, reply

if TYPE_CHECKING:
    from application.ports import Message, ModelRequest, ModelResponse

SERVICES = ("checkout", "payments", "inventory", "search")
SAMPLE_WINDOW = (datetime(2026, 11, 28, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC))
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
            return reply(request, json.dumps(body))
        name, arguments = plan[len(self.results)]
        call = ToolCall(f"offline_{len(self.results) + 1}", name, arguments)
        return reply(request, json.dumps(body) if body else "", (call,))

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
        """The cause's first symptom, then for each supporting phrase the line closest before it.

        The change that preceded the first symptom is the one to name, not an older one the
        wider look-back also found (the day before's deploy did not slow this day's checkout).
        """
        first = min(self._lines_with(cause.signal), key=_when, default=None)
        if first is None:
            return []
        found = [(first[0], _excerpt(first[1], cause.signal))]
        for phrase in cause.support:
            candidates = self._lines_with(phrase)
            before = [c for c in candidates if _when(c) <= _when(first)]
            chosen = max(before, key=_when) if before else next(iter(candidates), None)
            if chosen is not None:
                found.append((chosen[0], _excerpt(chosen[1], phrase)))
        return found

    def _lines_with(self, phrase: str) -> list[tuple[str, str]]:
        """Every (invocation, line) of the results holding ``phrase``, in the order seen."""
        return [(inv, x) for inv, lines in self.results if inv for x in lines if phrase in x]


def _when(found: tuple[str, str]) -> str:
    """A result line's timestamp (every line kept starts with one: ``_result``)."""
    return found[1][:20]


def _result(content: str) -> tuple[str | None, list[str]]:
    invocation = invocation_of(content)
    lines = content.splitlines()[1:] if invocation else []
    return invocation, [x for x in lines if _LINE_TS.match(x)]


def _signals(lines: list[str]) -> list[str]:
    """At most two lines worth reporting: cause signals first, then alerts and errors."""
    phrases = [p for c in CAUSES for p in (c.signal, *c.support)] + [" alert ", " ERROR "]
    ranked = [line for p in phrases for line in lines if p in line]
    return list(dict.fromkeys(ranked))[:2]


def _fact(invocation: str, line: str) -> dict[str, Any]:
    # after the timestamp, up to 120 characters of whole tokens: a substring of the content
    excerpt = line[21 : _end_within(line, 21, 141)]
    return {
        "statement": f"Observed at {line[:20]}: {excerpt}",
        "citations": [{"reference": invocation, "excerpt": excerpt}],
    }


def _excerpt(line: str, phrase: str) -> str:
    """Whole tokens from the phrase on, up to 80 characters where it can, without quotes.

    The phrase itself is widened to whole tokens (``100`` of ``100/100`` is not quoted).
    """
    found = line.index(phrase.strip())
    start, end = whole_tokens(line, found, found + len(phrase.strip()))
    quote = line.find('"', end)
    limit = min(start + 80, len(line) if quote == -1 else quote)
    stop = _end_within(line, end, limit) if limit > end else end
    while stop > end and line[stop - 1] in " ,;:(" and not inside_a_token(line, stop - 1):
        stop -= 1
    return line[start:stop]


def _end_within(line: str, start: int, limit: int) -> int:
    """The last place at or before ``limit`` (and after ``start``) where a token ends."""
    end = min(limit, len(line))
    while end > start and (inside_a_token(line, end) or line[end - 1] == " "):
        end -= 1
    return end if end > start else whole_tokens(line, start, start + 1)[1]


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
