"""Ports the runtime depends on: model provider, tools, knowledge retrieval and the clock.

Also the errors adapters raise and the use cases catch (the store's and the models' failures).

Adapters live in ``infrastructure/``; hand-written fakes that satisfy these protocols (the scripted
and offline model providers, scripted tools) are product features, not test doubles.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from domain.redaction import redact
from domain.run_drafts import too_large_detail

if TYPE_CHECKING:
    from datetime import datetime
    from uuid import UUID

    from application.send_gate import SendGate
    from domain.states import ModelStepPurpose
    from domain.values import ModelAttempt, ModelCall

JSON = Mapping[str, Any]


# -- model ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model asked for; ``arguments`` is the parsed JSON object.

    ``raw_arguments`` keeps the model's text when it was not a JSON object, so the tool boundary
    can reject it with INVALID_REQUEST instead of guessing.
    """

    id: str
    name: str
    arguments: JSON = field(default_factory=dict)
    raw_arguments: str | None = None


@dataclass(frozen=True)
class Message:
    """One chat message in the OpenAI chat-completions shape."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    tool_call_id: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool: name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: JSON


@dataclass(frozen=True)
class Usage:
    """Tokens a model call consumed."""

    tokens_in: int = 0
    tokens_out: int = 0


@dataclass(frozen=True)
class ModelRequest:
    """One model call: why, the conversation, the tools offered, and an optional output schema."""

    purpose: ModelStepPurpose
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    json_schema: JSON | None = None
    timeout_s: float = math.inf
    """Seconds this call may take. Callers leave it: :class:`~application.run_context.RunContext`
    bounds every call by the model timeout and the run's remaining deadline, and sets this to
    that bound for the provider (which may stop itself then). A caller may only tighten it."""
    send_gate: SendGate | None = None
    """Set by the run for a ``gated`` provider: wait on it right before the request leaves the
    process (:mod:`application.send_gate`); None: the run committed before calling."""


@dataclass(frozen=True)
class ModelResponse:
    """The model's answer: text and/or tool calls, with usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    attempts: tuple[ModelAttempt, ...] = ()
    """The failed attempts the provider tried again before this answer (the step records them)."""
    call: ModelCall | None = None
    """What the provider said of the answer besides it: its id, model, fingerprint, tier (the
    step records them for the trace; None: it said nothing of the kind)."""


class StoreError(Exception):
    """The event store could not serve the request; nothing was appended."""


class StoreUnavailableError(StoreError):
    """The database is unreachable or failed; retry later."""


class StoreNotInitialisedError(StoreError):
    """The event tables do not exist yet."""


class StoreClosedError(StoreError):
    """This process closed the store (it is shutting down); its runs are left to recovery."""


class ModelError(Exception):
    """A model call failed; the message says how, without secrets.

    The message is redacted when the error is made (:func:`domain.redaction.redact`): it ends up
    in the log (model steps, routing and guard decisions), whichever provider raised it.
    """

    attempts: tuple[ModelAttempt, ...] = ()
    """The failed attempts tried again before this failure (the step records them)."""
    error_type = ""
    """The failure's class for the trace's ``error.type``, set by the adapter that knows it (an
    HTTP status as text, ``timeout``, the transport error's name); '' lets the harness name it
    by the error's own class (:func:`application.model_call.error_type`)."""

    def __init__(self, message: str = "") -> None:
        """Keep ``message`` with whatever looks like a credential replaced."""
        super().__init__(redact(message))


class ModelTimeoutError(ModelError):
    """The provider did not answer within the call's timeout."""


class ModelUnavailableError(ModelError):
    """The provider could not be reached or answered with a server error."""


class ModelRefusedError(ModelError):
    """The provider refused the request (auth, content policy, bad request)."""


class ModelOutputTooLarge(ModelError):
    """The model answered over :data:`domain.states.MAX_MODEL_OUTPUT_CHARS`: refused whole.

    Raised by the run's model boundary before anything reads the answer; it carries the
    answer's length and hash, never its text. Each caller refuses it on its own path (a routing
    error, a TOO_LARGE draft, an unavailable judge, a refused answer); any other caller sees a
    failed model call.
    """

    def __init__(self, length: int, sha256: str) -> None:
        """Keep the refused answer's length and hash."""
        super().__init__(too_large_detail(length))
        self.length = length
        self.sha256 = sha256


class ModelProvider(Protocol):
    """Answers model requests; implementations: offline, scripted, openai-compatible.

    A provider may also say which ``model`` it asks for (a ``str`` attribute): model steps
    record it with ``name`` (:func:`application.run_context.model_name`).
    """

    name: str
    blocking: bool
    """True when a call may wait (network, a scripted delay or hang): the harness runs it in a
    worker thread and stops waiting at the model timeout or the run's deadline. A provider that
    only computes in process, and so cannot hang, sets False and is called inline, sparing a
    thread hand-off per call."""

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request or raise a :class:`ModelError` subclass."""
        ...


def stays_local(port: object) -> bool:
    """Whether calls to ``port`` (a model provider or a tool) stay in the service, changing nothing.

    A port says so with ``local = True`` (the offline model; the built-in tools, reads of the
    service's own database); anything else, a port that does not say, is external. Nothing of a
    run must be durable before a local call: the run's queue is committed before a call that
    leaves the service, and every commit interval (design §17.1).
    """
    return getattr(port, "local", False) is True


def model_name(provider: ModelProvider) -> str:
    """The model ``provider`` is asked for (its ``model``; '' for a provider that names none)."""
    return str(getattr(provider, "model", ""))


def model_where(provider: ModelProvider) -> str:
    """How messages name the provider and its model (and server, if it says: its ``where``)."""
    where = getattr(provider, "where", None)
    if isinstance(where, str) and where:
        return where
    model = model_name(provider)
    return f"{provider.name} model {model!r}" if model else f"{provider.name} model"


def model_server(provider: ModelProvider) -> tuple[str, int]:
    """The host and port ``provider`` calls (its ``server``); ('', 0) for a model in process."""
    server = getattr(provider, "server", None)
    if isinstance(server, tuple) and len(server) == 2:
        host, port = server
        if isinstance(host, str) and isinstance(port, int):
            return host, port
    return "", 0


def gated(provider: object) -> bool:
    """Whether ``provider`` says ``gated = True``: it waits at a request's ``send_gate``.

    The run may then commit while it builds the request (:mod:`application.send_gate`). A
    provider that stays local has nothing to wait for; one that does not say is called only
    once the commit has ended.
    """
    return getattr(provider, "gated", False) is True and not stays_local(provider)


# -- tools ------------------------------------------------------------------------------------


class ToolArgumentsError(ValueError):
    """The arguments do not satisfy the tool's schema; the message names the field."""


class ToolExecutionError(Exception):
    """The tool's backend failed; ``code`` is recorded on the invocation."""

    def __init__(self, code: str, message: str, redactions: int = 0, error_type: str = "") -> None:
        """Keep a stable code for the audit record, and the secrets already hidden in it."""
        super().__init__(message)
        self.code = code
        self.redactions = redactions
        """How many secrets in ``message`` were already replaced by [redacted] (recorded)."""
        self.error_type = error_type
        """The failure's class as the tool's source says it (an MCP server's JSON-RPC error
        code, ``tool_error``), for the trace's ``error.type``; '' when it says none."""


@dataclass(frozen=True)
class ToolOutput:
    """A tool's raw result: evidence lines (empty means the scope held nothing) and a scope note."""

    lines: tuple[str, ...]
    """The records the tool returned: the only text a citation may quote."""
    scope_description: str
    notes: tuple[str, ...] = ()
    """The tool's own words about the result (limits, counts, what was left out): shown to the
    model apart from the records, recorded beside them, never quotable as evidence."""
    redactions: int = 0
    """How many secrets in the lines and notes were already replaced by [redacted] (recorded)."""


@runtime_checkable
class Tool(Protocol):
    """A backend the agent may call; only read-only tools pass preflight."""

    name: str
    description: str
    parameters: JSON
    required_scope: str
    max_result_bytes: int
    blocking: bool
    """As for :attr:`ModelProvider.blocking`: True runs each call in a worker thread that the
    harness stops waiting for at the run's deadline; False (a read that cannot wait on a lock or
    a network) is called inline."""

    @property
    def read_only(self) -> bool:
        """Whether preflight admits it (read at each request: an MCP server may change its mind).

        A tool may also carry ``origin`` (``builtin``, ``plugin:NAME``, ``mcp:SERVER``) and
        ``read_only_override`` (the configuration, not the tool, made it read-only); the
        boundary records both on each invocation's begin.
        """
        ...

    def normalize_scope(self, arguments: JSON) -> str:
        """The canonical scope (service, time window, filters); raises ToolArgumentsError."""
        ...

    def run(self, arguments: JSON) -> ToolOutput:
        """Execute the call; raise ToolExecutionError on backend failure."""
        ...


# -- knowledge and time -----------------------------------------------------------------------


@dataclass(frozen=True)
class Passage:
    """A retrieved knowledge passage with a stable id the answer can cite."""

    id: str
    title: str
    text: str
    score: float


class KnowledgeRetriever(Protocol):
    """Ranked passages for a query."""

    def search(self, query: str, limit: int = 5) -> Sequence[Passage]:
        """The best passages first; empty when nothing matches."""
        ...


class Clock(Protocol):
    """Where the runtime reads the time (deadlines, durations)."""

    def now(self) -> datetime:
        """The current time, timezone-aware."""
        ...


class RunEnds(Protocol):
    """Hears which runs any process ended, so a run can look for a cancel without a read.

    A run about to make a local call asks whether another writer ended it (a cancel, a recovery):
    the log answers with a read, this port from memory. :meth:`watch` is followed by one read of
    the log (what ended before that is the read's to see); :meth:`ended` then answers for as long
    as the token holds, or None when it cannot tell (the listener was cut off meanwhile: read
    again). An end is heard a moment after it commits, so the run stops at the first boundary
    after that, or at its next commit, which conflicts with it anyway.
    """

    def watch(self, run_id: UUID) -> object | None:
        """Hear of ``run_id``'s end from now on; the token to ask with (None: not hearing)."""
        ...

    def ended(self, run_id: UUID, token: object) -> bool | None:
        """Whether ``run_id`` was heard ending since ``token``; None: read the log instead."""
        ...

    def forget(self, run_id: UUID) -> None:
        """Stop hearing of ``run_id`` (its run is over in this process)."""
        ...
