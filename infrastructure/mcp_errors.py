"""What an MCP server's failures mean, each said in one line (for ``infrastructure.mcp_client``)."""

from __future__ import annotations

import logging

from pydantic import ValidationError

from infrastructure.mcp_lines import NOT_READ, TOO_LARGE


class _NoTraceback(logging.Filter):
    """The SDK logs a server's garbled line with a traceback; the harness says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = record.exc_text = None
        return True


logging.getLogger("mcp.client.stdio").addFilter(_NoTraceback())

_TRANSPORT_FAILURES = (-32000, -32001)
"""The SDK's codes for a closed connection and a request that timed out."""


class McpServerError(Exception):
    """The server could not be reached, broke the connection, hung or answered garbage.

    ``broken`` is False when the server answered the call with a protocol error of its own
    (an unknown tool, invalid parameters): the connection is sound and is kept.
    """

    def __init__(
        self, message: str, *, broken: bool = True, code: str = "EXECUTION", error_type: str = ""
    ) -> None:
        """Keep whether the connection must be started again, and the invocation's error code.

        ``error_type`` is the JSON-RPC error code the server answered, as text ('' for none).
        """
        super().__init__(message)
        self.broken = broken
        self.code = code
        self.error_type = error_type


def failure(name: str, error: Exception) -> McpServerError:
    """What a failed request means: a closed or garbled connection, or the server's own error."""
    from mcp.shared.exceptions import MCPError  # the SDK loads only once a server runs

    if isinstance(error, MCPError) and (error.code == TOO_LARGE or NOT_READ in error.message):
        words = error.message[max(error.message.find("the server's answer"), 0) :]
        return McpServerError(f"MCP server {name!r}: {words}", broken=False, code="SIZE")
    if isinstance(error, MCPError) and error.code not in _TRANSPORT_FAILURES:
        said = f"MCP server {name!r} answered: {brief(error)}"
        return McpServerError(said, broken=False, error_type=str(error.code))
    if isinstance(error, ValidationError):
        text = f"MCP server {name!r} answered something that is not MCP; it is restarted"
        return McpServerError(text, code="MALFORMED")
    if isinstance(error, MCPError) and error.code == _TRANSPORT_FAILURES[1]:
        return McpServerError(f"MCP server {name!r} did not answer in time", code="TIMEOUT")
    text = f"MCP server {name!r} failed ({brief(error)}); it is restarted for the next call"
    return McpServerError(text)


def brief(error: BaseException) -> str:
    """One line about ``error``, from the innermost of an exception group."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = (str(error).strip().splitlines() or [""])[0][:300]
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
