"""What the offline and scripted models share: the tool results they read, the replies they build.

Neither model runs a tokenizer: both estimate usage as a quarter of the characters, the whole
conversation's for the request and the answer's (plus one) for the reply.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from application.ports import ModelResponse, Usage

if TYPE_CHECKING:
    from application.ports import ModelRequest, ToolCall

_INVOCATION = re.compile(r"^invocation ([0-9a-f-]{36})")
"""How the tool boundary starts the message of a result it recorded."""


def invocation_of(content: str) -> str | None:
    """The id of the invocation a tool result message reports (None: a rejection or no result)."""
    match = _INVOCATION.match(content)
    return match.group(1) if match else None


def estimated_usage(request: ModelRequest, text: str) -> Usage:
    """Tokens estimated from characters: the request's conversation in, ``text`` out."""
    return Usage(sum(len(m.content) for m in request.messages) // 4, len(text) // 4 + 1)


def reply(
    request: ModelRequest,
    text: str,
    calls: tuple[ToolCall, ...] = (),
    usage: Usage | None = None,
) -> ModelResponse:
    """The answer to ``request``: ``text`` and ``calls``, with ``usage`` or else the estimate."""
    return ModelResponse(text, calls, estimated_usage(request, text) if usage is None else usage)
