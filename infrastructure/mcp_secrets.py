"""An MCP server's answer with the secrets it was handed redacted, before anything is cut.

An MCP tool cuts a long result, and a long error, at a byte limit; a secret that straddles the
cut would be left half shown, where no later redaction could recognise it. So the tool redacts
the whole answer first: every text block, structured content string by string, and the text
of a failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp_types import CallToolResult

    from domain.redactor import Redactor


def redacted_result(redactor: Redactor, result: CallToolResult) -> tuple[CallToolResult, int]:
    """``result`` with its text and structured content redacted, and how many secrets were."""
    count = 0
    blocks: list[Any] = []
    for block in result.content:
        if block.type == "text":
            done = redactor.redact(block.text)
            count += done.count
            block = block.model_copy(update={"text": done.text}) if done.count else block
        blocks.append(block)
    update: dict[str, Any] = {"content": blocks}
    if result.structured_content is not None:
        structured, found = redactor.json(result.structured_content)
        count += found
        update["structured_content"] = structured
    return (result.model_copy(update=update) if count else result), count
