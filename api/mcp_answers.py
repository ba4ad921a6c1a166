"""What ``harness mcp serve`` answers: a run's feed as one tool result, a listing, an explanation.

A calling agent reads the text; a program reads ``structuredContent``, the same JSON the API
publishes (the ``content`` event's data, a ``RunPublic`` row, a ``RunExplanation``). The text is
the published content only, in the harness's words and with its citations: nothing the run did
not publish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import mcp_types as types

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from fastapi.exceptions import RequestValidationError
    from pydantic import ValidationError

    from application.explain import RunExplanation

Json = dict[str, Any]

ANSWER_SCHEMA: Json = {
    "type": "object",
    "properties": {
        "run_id": {"type": "string", "description": "The run: explain_run or harness://runs/…"},
        "session_id": {"type": "string", "description": "Pass it again to follow up."},
        "release_outcome": {"enum": ["SUCCESS", "FALLBACK"], "description": "What it published."},
        "fallback_type": {"type": ["string", "null"]},
        "content": {"type": "object", "description": "The published content, as the API's."},
    },
    "required": ["run_id", "session_id", "release_outcome", "content"],
}
"""``outputSchema`` of ``ask`` and ``diagnose``: what a published run returns."""


def error(message: str) -> types.CallToolResult:
    """A tool error the calling model reads (the call itself succeeded)."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def problems(invalid: ValidationError | RequestValidationError) -> str:
    """A validation error's problems in one line: where, and what was wrong."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'arguments'}: {e['msg']}"
        for e in invalid.errors()
    )


def answer_result(run_id: str, session_id: str, ending: Mapping[str, Any]) -> types.CallToolResult:
    """The result of a run whose feed ended with ``ending`` (its ``content`` or ``failure``)."""
    if "content" not in ending:  # a failure: nothing was published
        return error(
            f"run {run_id} ended {ending.get('termination_state')} "
            f"({ending.get('termination_reason')}) and published nothing; "
            f"explain_run says why"
        )
    content: Json = ending["content"] or {}
    structured = {
        "run_id": run_id,
        "session_id": session_id,
        "release_outcome": ending["release_outcome"],
        "fallback_type": ending.get("fallback_type"),
        "content": content,
    }
    lines = [*content_lines(content), "", f"run {run_id} (session {session_id})"]
    return types.CallToolResult(
        content=[types.TextContent(text="\n".join(lines))], structured_content=structured
    )


def content_lines(content: Json) -> list[str]:
    """Published content as lines of text: the statements, each with what it cites."""
    match content.get("kind"):
        case "diagnosis":
            lines = [f"Diagnosis: {content['conclusion']}", *_cited(content["citations"])]
            return lines + _facts(content["facts"])
        case "fallback":
            lines = [f"No diagnosis ({content['fallback_type']}): {content['message']}"]
            lines += _facts(content["verified_facts"])
            lines += [f"missing: {item}" for item in content["missing_info"]]
            return lines + [f"no evidence: {item}" for item in content["no_evidence"]]
        case "answer":
            lines = [str(content["text"]), *_cited(content.get("citations", []))]
            titles = [f"passage {p['id']}: {p['title']}" for p in content.get("passages", [])]
            return lines + titles
        case _:
            return [str(content)]


def _facts(facts: Iterable[Json]) -> list[str]:
    lines: list[str] = []
    for fact in facts:
        lines += [f"- {fact['statement']}", *(f"  {c}" for c in _cited(fact["citations"]))]
    return lines


def _cited(citations: Iterable[Json]) -> list[str]:
    return [f"cites {c['reference']}: {c['excerpt']!r}" for c in citations]


def runs_result(rows: list[Json], next_cursor: str | None) -> types.CallToolResult:
    """``list_runs``: one line a run, newest first, and the rows as the API lists them."""
    lines = [
        f"{row['run_id']}  {row['status']:<9} {row.get('release_outcome') or '-':<9} "
        f"{row.get('intent') or '-':<15} {str(row['query'])[:80]!r}"
        for row in rows
    ] or ["no runs"]
    if next_cursor:
        lines.append(f"more: call again with cursor={next_cursor}")
    structured = {"runs": rows, "next_cursor": next_cursor}
    return types.CallToolResult(
        content=[types.TextContent(text="\n".join(lines))], structured_content=structured
    )


def explanation_result(found: RunExplanation) -> types.CallToolResult:
    """``explain_run``: each troubleshooting question that applies, answered in words."""
    head = f"{found.query!r}: {found.release_outcome or 'not finished'}"
    lines = [head, *(f"- {a.asked}: {a.answer}" for a in found.answers if a.applies)]
    return types.CallToolResult(
        content=[types.TextContent(text="\n".join(lines))],
        structured_content=found.model_dump(mode="json"),
    )
