"""A tool's output projected into bounded evidence content, with its notes kept apart (SPEC §8).

The content is the records the tool returned, whole, up to the tool's byte limit: what a
citation may quote, what is hashed and charged. What the harness or the tool says about the
result (records cut at the limit, records beyond the tool's own ``limit``) are notes: recorded
beside the content, shown to the model under a heading, never evidence (design §10.1).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from domain.tool_states import EvidenceStatus

if TYPE_CHECKING:
    from application.ports import ToolOutput
    from domain.tool_invocation import ToolInvocation


def mark_ready(invocation: ToolInvocation, output: ToolOutput, content: str) -> EvidenceStatus:
    """READY with the projected content, or NO_EVIDENCE with the scope that held nothing."""
    if content.strip():  # blank records are no candidate content (EVIDENCE_FOUND needs some)
        invocation.mark_ready(
            EvidenceStatus.EVIDENCE_FOUND, content, output.notes, output.redactions
        )
        return EvidenceStatus.EVIDENCE_FOUND
    invocation.mark_ready(
        EvidenceStatus.NO_EVIDENCE, output.scope_description, output.notes, output.redactions
    )
    return EvidenceStatus.NO_EVIDENCE


NOTES_HEADING = "-- notes from the harness and the tool (not evidence; never cite them) --"
"""What sets the notes apart from the records in the tool result the model is shown."""


def shown_notes(notes: tuple[str, ...]) -> str:
    """The notes as the model sees them after the records: under a heading, or nothing."""
    return "".join(f"\n{line}" for line in (NOTES_HEADING, *notes)) if notes else ""


def project(output: ToolOutput, limit: int) -> tuple[str | None, int, ToolOutput]:
    """Bounded evidence content: whole lines up to ``limit`` bytes; a note says what was cut.

    The records kept are the content; the note joins the tool's own notes, kept apart from it.
    """
    kept: list[str] = []
    used = 0
    notes = output.notes
    for line in output.lines:
        size = len(line.encode()) + 1
        if used + size > limit:
            if not kept:
                return None, limit, output
            notes = (*notes, f"[{len(output.lines) - len(kept)} more records truncated]")
            break
        kept.append(line)
        used += size
    return "\n".join(kept), used, replace(output, notes=notes)
