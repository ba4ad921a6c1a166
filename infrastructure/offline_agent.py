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
from application.tool_projection import NOTES_HEADING
from domain.tokens import inside_a_token, whole_tokens
from infrastructure.model_reply import invocation_of, reply
from infrastructure.offline_time import Unresolved, previous_window, resolve
from infrastructure.ops_data import sample_now

if TYPE_CHECKING:
    from application.ports import Message, ModelRequest, ModelResponse

SERVICES = ("checkout", "payments", "inventory", "search")
CONTEXT_HEADING = "\n\nPrevious diagnosis in this session:\n"
"""What separates the question from the previous turn's conclusion in the agent's prompt."""
_LINE_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ ")
_REFERENCE = re.compile(r"reference time \S* ?is (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")
_COVERAGE = re.compile(r"data covers (\S+Z) to (\S+Z)")
PRE_WINDOW = timedelta(hours=2)
"""How long before the asked window the symptoms are looked for (what led up to them)."""


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
    Cause("oom", "OOMKilled", (" deploy ",), "{service} containers were OOM-killed"),
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
        """Read the question, the reference time, the tool results so far and any stop."""
        prompt = next(m.content for m in messages if m.role == "user")
        self.query, _, context = prompt.partition(CONTEXT_HEADING)
        self.results = [_result(m.content) for m in messages if m.role == "tool"]
        self.coverage = next(
            (found.groups() for m in messages if m.role == "tool" for found in _covered(m.content)),
            None,
        )
        self.stopped = any(
            m.role == "user" and m.content.startswith("STOP_REQUIRED") for m in messages
        )
        self.service = _service_in(self.query) or _service_in(context)
        system = next((m.content for m in messages if m.role == "system"), "")
        stated = _REFERENCE.search(system)
        now = datetime.fromisoformat(stated.group(1)) if stated else sample_now()
        self.when = resolve(self.query, now, previous_window(context))

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

    @property
    def window(self) -> tuple[datetime, datetime] | None:
        """The window the question is about; None when its time cannot be resolved."""
        when = self.when
        return None if isinstance(when, Unresolved) else (when.start, when.end)

    def _plan(self) -> list[tuple[str, dict[str, Any]]]:
        if self.window is None:
            return []
        start, end = self.window
        scope = {"service": self.service, "start": _iso(start - PRE_WINDOW), "end": _iso(end)}
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
        inside = self._inside(lines)
        facts = [_fact(invocation, line) for line in _signals(inside)] if invocation else []
        return {"gain": "GAINED" if facts else "NO_GAIN", "facts": facts}

    def _draft(self) -> dict[str, Any]:
        missing = self._missing()
        if missing:
            return {"conclusion": None, "facts": [], "missing_info": missing}
        facts = self._facts()
        for cause in CAUSES:
            cited = self._evidence_for(cause)
            if cited:
                conclusion = self._conclusion(cause, cited)
                return {"conclusion": conclusion, "facts": facts, "missing_info": []}
        # Nothing pointed at a cause: ask for the symptom in the window looked at (a tool that
        # failed or found nothing is the harness's to report, never "nothing was found").
        assert self.window is not None
        start, end = (_iso(moment) for moment in self.window)
        symptom = {"kind": "SYMPTOM", "service": self.service, "start": start, "end": end}
        return {"conclusion": None, "facts": facts, "missing_info": [] if facts else [symptom]}

    def _missing(self) -> list[dict[str, Any]]:
        """What to ask for: a service, a window no phrase resolved, or one the data covers."""
        missing: list[dict[str, Any]] = []
        if self.service is None:
            missing.append({"kind": "SERVICE"})
        if self.window is None:
            missing.append({"kind": "TIME_WINDOW"})
        elif self.coverage and not any(lines for _, lines in self.results):
            start, end = self.coverage  # every result empty, and the tools said what they hold
            item = {"kind": "TIME_WINDOW", "service": self.service, "start": start, "end": end}
            missing.append(item)
        return missing

    def _conclusion(self, cause: Cause, cited: list[tuple[str, str]]) -> dict[str, Any]:
        assert self.window is not None and self.service is not None
        quotes = " and ".join(f'"{q}"' for _, q in cited)
        start, end = self.window
        statement = (
            f"Between {_iso(start)} and {_iso(end)}, "
            + cause.statement.format(service=self.service)
            + f": the evidence shows {quotes}."
        )
        citations = [{"reference": inv, "excerpt": quote} for inv, quote in cited]
        return {"statement": statement, "citations": citations}

    def _facts(self) -> list[dict[str, Any]]:
        """The reported lines of the window, earliest first."""
        found = [
            (line[:20], _fact(inv, line))
            for inv, lines in self.results
            if inv
            for line in _signals(self._inside(lines))
        ]
        return [fact for _, fact in sorted(found, key=lambda pair: pair[0])]

    def _inside(self, lines: list[str]) -> list[str]:
        """The lines dated in the window (and the look-back before it that led up to it)."""
        if self.window is None:
            return []
        start, end = (_iso(self.window[0] - PRE_WINDOW), _iso(self.window[1]))
        return [line for line in lines if start <= line[:20] < end]

    def _evidence_for(self, cause: Cause) -> list[tuple[str, str]]:
        """The cause's first symptom, then for each supporting phrase the line closest before it.

        The change that preceded the first symptom is the one to name, not an older one the
        wider look-back also found (the day before's deploy did not slow this day's checkout).
        """
        symptoms = [found for found in self._lines_with(cause.signal) if self._inside([found[1]])]
        first = min(symptoms, key=_when, default=None)
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


def _service_in(text: str) -> str | None:
    """The first known service the text names (as a word), or None."""
    lowered = text.lower()
    named = [(lowered.find(s), s) for s in SERVICES if re.search(rf"\b{s}\b", lowered)]
    return min(named)[1] if named else None


def _covered(content: str) -> list[re.Match[str]]:
    """The coverage a tool's notes state ("the data covers A to B"), if any."""
    found = _COVERAGE.search(content.partition(NOTES_HEADING)[2])
    return [found] if found else []


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
