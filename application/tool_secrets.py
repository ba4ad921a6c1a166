"""A tool's result and failure with every secret redacted, before the boundary records them.

The boundary hands each raw result and each failure message to the run's
:class:`~domain.redactor.Redactor` (built once, at composition, from the settings and the tools
configuration) before it projects, records or shows them: the content and notes the log keeps
are what the model is shown and cites, ``[redacted]`` in place of each secret, so a citation of
a redacted record still matches it. The count is added to what the tool itself already hid
(an MCP tool redacts before it cuts, so no secret is left half shown).
"""

from __future__ import annotations

from dataclasses import replace

from application.ports import ToolExecutionError, ToolOutput
from domain.redactor import Redactor

NO_SECRETS = Redactor()
"""The shapes only: what a boundary without configured secrets redacts."""


def redacted_output(redactor: Redactor, output: ToolOutput) -> ToolOutput:
    """``output`` with its records, scope and notes redacted, and the count added up."""
    lines, in_lines = redactor.lines(output.lines)
    notes, in_notes = redactor.lines(output.notes)
    scope = redactor.redact(output.scope_description)
    found = in_lines + in_notes + scope.count
    if not found:
        return output
    return replace(
        output,
        lines=lines,
        scope_description=scope.text,
        notes=notes,
        redactions=output.redactions + found,
    )


def redacted_error(redactor: Redactor, error: ToolExecutionError) -> ToolExecutionError:
    """``error`` with its message redacted and the count added up (itself when nothing was)."""
    message = redactor.redact(str(error))
    if not message.count:
        return error
    count = error.redactions + message.count
    return ToolExecutionError(error.code, message.text, count, error.error_type)
