"""Frozen value objects carried by events; each has a registered transcoding in the store."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, assert_never

from domain.states import (
    BudgetKind,
    ModelAttemptFailure,
    RunState,
    TerminationReason,
    state_for_reason,
)

if TYPE_CHECKING:
    from domain.grounding import Citation


@dataclass(frozen=True)
class Budget:
    """Amounts of the four hard budgets: used as limits and as usage."""

    model_calls: int = 0
    tool_calls: int = 0
    tokens: int = 0
    bytes: int = 0

    def get(self, kind: BudgetKind) -> int:
        """The amount for one budget kind."""
        match kind:
            case BudgetKind.MODEL_CALLS:
                return self.model_calls
            case BudgetKind.TOOL_CALLS:
                return self.tool_calls
            case BudgetKind.TOKENS:
                return self.tokens
            case BudgetKind.BYTES:
                return self.bytes
            case _:
                assert_never(kind)

    def plus(self, kind: BudgetKind, amount: int) -> Budget:
        """A copy with ``amount`` added to one budget kind."""
        return self.add(**{_FIELD[kind]: amount})

    def add(
        self, model_calls: int = 0, tool_calls: int = 0, tokens: int = 0, bytes: int = 0
    ) -> Budget:
        """A copy with the given amounts added (one construction, on the hot path of replay)."""
        return Budget(
            self.model_calls + model_calls,
            self.tool_calls + tool_calls,
            self.tokens + tokens,
            self.bytes + bytes,
        )

    def first_exceeded(self, limits: Budget) -> BudgetKind | None:
        """The first budget kind whose amount is over the given limits, if any."""
        if self.model_calls > limits.model_calls:
            return BudgetKind.MODEL_CALLS
        if self.tool_calls > limits.tool_calls:
            return BudgetKind.TOOL_CALLS
        if self.tokens > limits.tokens:
            return BudgetKind.TOKENS
        if self.bytes > limits.bytes:
            return BudgetKind.BYTES
        return None

    def is_negative(self) -> bool:
        """Whether any amount is below zero."""
        return min(self.model_calls, self.tool_calls, self.tokens, self.bytes) < 0


_FIELD: dict[BudgetKind, str] = {
    BudgetKind.MODEL_CALLS: "model_calls",
    BudgetKind.TOOL_CALLS: "tool_calls",
    BudgetKind.TOKENS: "tokens",
    BudgetKind.BYTES: "bytes",
}

DEFAULT_LIMITS = Budget(model_calls=20, tool_calls=12, tokens=60_000, bytes=512_000)
"""Budget limits used when a run is started without explicit ones (and the settings' defaults)."""
DEFAULT_DEADLINE_S = 120.0
"""Seconds a run may take when nothing else is configured."""
DEFAULT_MODEL_TIMEOUT_S = 30.0
"""Seconds any one model call is waited for when nothing else is configured."""


@dataclass(frozen=True)
class Termination:
    """The one termination of a run: its final state and why (SPEC §4, §5)."""

    state: RunState
    reason: TerminationReason

    @classmethod
    def for_reason(cls, reason: TerminationReason) -> Termination:
        """The termination a reason leads to, by the one reason→state mapping."""
        return cls(state=state_for_reason(reason), reason=reason)


@dataclass(frozen=True)
class ModelAttempt:
    """One failed attempt of a model call that was tried again, and the wait before the next."""

    failure: ModelAttemptFailure
    status: int
    """The HTTP status the provider answered (0: none came, a connection failure or timeout)."""
    wait_ms: int
    """How long the harness waited before the next attempt (the provider's Retry-After, if any)."""


@dataclass(frozen=True)
class ModelCall:
    """What the wire told of one model call, for its trace.

    Whom it called, what answered and how it failed: low-cardinality names and ids only, never
    content, never a credential.
    """

    server_address: str = ""
    """The host of the model server called, as configured ('' for a model in process)."""
    server_port: int = 0
    """Its port, the scheme's default when the URL names none (0 with no server)."""
    response_id: str = ""
    """The completion's id as the provider gave it (``chatcmpl-…``; '' when none came)."""
    response_model: str = ""
    """The model that answered, as the provider named it ('' when none came)."""
    system_fingerprint: str = ""
    """The provider's fingerprint of its backend configuration, if it sent one."""
    service_tier: str = ""
    """The service tier the provider says it used, if it said."""
    output_type: str = ""
    """``json`` when the request asked for JSON output; '' for free text."""
    error_type: str = ""
    """The class of the failure: ``timeout``, an HTTP status, an exception's name ('': none)."""


@dataclass(frozen=True)
class McpSession:
    """The MCP session a tool call went over, as the client knew it when the call began."""

    server: str
    """The server's name in the tool configuration (``mcp:SERVER`` is the invocation's origin)."""
    transport: str
    """``stdio`` or ``http`` (Streamable HTTP)."""
    server_address: str = ""
    """An HTTP server's host ('' for stdio: a child process, reached over a pipe)."""
    server_port: int = 0
    """An HTTP server's port, the scheme's default when the URL names none (0 for stdio)."""
    protocol_version: str = ""
    """The MCP protocol version the session negotiated ('' before it was opened)."""
    session_id: str = ""
    """The ``Mcp-Session-Id`` an HTTP server gave the session ('' when none)."""


@dataclass(frozen=True)
class Fact:
    """A fact the agent claims and the citations it rests on (design §10.1)."""

    statement: str
    citations: tuple[Citation, ...]

    @property
    def references(self) -> tuple[str, ...]:
        """The sources it cites, each once, in citation order."""
        return tuple(dict.fromkeys(c.reference for c in self.citations))


SESSION_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]*$"
"""What a session id is: a letter or digit, then letters, digits and ``._:@-``."""
MAX_SESSION_ID = 200


def query_problem(query: str, max_chars: int) -> str | None:
    """What is wrong with ``query`` as a run's question, or None (the API's rules, in words)."""
    if not query.strip():
        return "is empty: ask something, e.g. 'Why was checkout slow?'"
    if "\x00" in query:
        return "contains a NUL character (\\u0000)"
    if len(query) > max_chars:
        return (
            f"is {len(query)} characters; at most {max_chars} are accepted"
            " (HARNESS_MAX_QUERY_CHARS)"
        )
    return None


def session_problem(session_id: str) -> str | None:
    """What is wrong with ``session_id``, or None."""
    if not 1 <= len(session_id) <= MAX_SESSION_ID:
        return f"must be 1 to {MAX_SESSION_ID} characters"
    if re.fullmatch(SESSION_ID_PATTERN, session_id) is None:
        return "must start with a letter or digit and hold only letters, digits and ._:@-"
    return None
