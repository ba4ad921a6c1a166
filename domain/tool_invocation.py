"""The ToolInvocation aggregate: a preflight-passed tool call and its projected evidence."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from domain.errors import InvalidCommandError, InvocationClosedError
from domain.tool_states import EvidenceStatus, InvocationStatus, ToolErrorCode

if TYPE_CHECKING:
    from domain.values import McpSession

ReadyEvidence = Literal[EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE]
"""The only evidence statuses a READY invocation can carry (SPEC §16 invariant 4)."""


class ToolInvocation(Aggregate):
    """One call of a read-only tool inside one run: PROJECTING, then READY or ERROR."""

    class ToolInvocationStarted(Aggregate.Created):
        """The canonical begin: preflight passed and the tool is being called."""

        class_version = 3
        run_id: UUID
        tool: str
        normalized_scope: str
        arguments: dict[str, Any]
        origin: str
        """Where the tool comes from: ``builtin``, ``plugin:NAME`` or ``mcp:SERVER``."""
        read_only_override: bool
        """True when the configuration admitted a tool its source does not call read-only."""
        call_id: str
        """The model's id of the tool call it answers (OpenAI's ``call_…``; '' before v3)."""
        mcp: McpSession | None
        """The MCP session the call went over, for a tool of an MCP server (None: not MCP)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 knew only the harness's own tools, none of them admitted by override."""
            state["origin"] = "builtin"
            state["read_only_override"] = False

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Version 2 recorded neither the model's call id nor the MCP session."""
            state["call_id"] = ""
            state["mcp"] = None

        def apply(self, aggregate: ToolInvocation) -> None:
            """Record what was called, for which run."""
            aggregate.run_id = self.run_id
            aggregate.tool = self.tool
            aggregate.normalized_scope = self.normalized_scope
            aggregate.arguments = self.arguments
            aggregate.origin = self.origin
            aggregate.read_only_override = self.read_only_override

    class ToolInvocationReady(Aggregate.Event):
        """The result was projected into bounded evidence content."""

        class_version = 3
        evidence_status: EvidenceStatus
        content: str
        """The records the tool returned, projected: what a citation may quote."""
        byte_size: int
        content_hash: str
        """Size and SHA-256 of ``content`` (not of the notes)."""
        notes: tuple[str, ...]
        """The harness's and the tool's notes about the result (truncation, limits): shown to
        the model, never evidence."""
        redactions: int
        """Secrets replaced by ``[redacted]`` in the content and notes before they were recorded
        (:mod:`domain.redactor`): their number, never their value."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 wrote its notes into the content (the guard refuses quotes of them)."""
            state["notes"] = ()

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Version 2 redacted nothing (secrets were recorded as the tool gave them)."""
            state["redactions"] = 0

        def apply(self, aggregate: ToolInvocation) -> None:
            """Make the invocation referenceable."""
            aggregate.status = InvocationStatus.READY
            aggregate.evidence_status = self.evidence_status
            aggregate.content = self.content
            aggregate.notes = tuple(self.notes)
            aggregate.redactions = self.redactions

    class ToolInvocationFailed(Aggregate.Event):
        """Execution, projection, size, budget or store failed."""

        class_version = 3
        error_code: str
        """A :class:`ToolErrorCode`'s value, or the tool's own code (text, so old logs read)."""
        message: str
        redactions: int
        """Secrets replaced by ``[redacted]`` in the message before it was recorded."""
        error_type: str
        """The failure's class as the tool's source said it, for the trace's ``error.type``: an
        MCP server's JSON-RPC error code, ``tool_error`` for its result marked ``isError``;
        '' when it said none (and before v3)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 redacted nothing."""
            state["redactions"] = 0

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Version 2 did not record the failure's class."""
            state["error_type"] = ""

        def apply(self, aggregate: ToolInvocation) -> None:
            """Close the invocation as ERROR."""
            aggregate.status = InvocationStatus.ERROR
            aggregate.evidence_status = EvidenceStatus.ERROR
            aggregate.error_code = self.error_code
            aggregate.redactions = self.redactions

    def __init__(self) -> None:
        """Fields are assigned by the events' ``apply`` methods."""
        self.run_id: UUID
        self.tool = ""
        self.normalized_scope = ""
        self.arguments: dict[str, Any] = {}
        self.origin = "builtin"
        self.read_only_override = False
        self.status = InvocationStatus.PROJECTING
        self.evidence_status: EvidenceStatus | None = None
        self.content = ""
        self.notes: tuple[str, ...] = ()
        self.error_code = ""
        self.redactions = 0

    @classmethod
    def begin(
        cls,
        run_id: UUID,
        tool: str,
        normalized_scope: str,
        arguments: dict[str, Any],
        invocation_id: UUID | None = None,
        *,
        origin: str = "builtin",
        read_only_override: bool = False,
        call_id: str = "",
        mcp: McpSession | None = None,
    ) -> ToolInvocation:
        """Begin an invocation in PROJECTING (``TOOL_INVOCATION_STARTED``).

        ``origin`` names the tool's source; ``read_only_override`` records that the configuration,
        not the tool's own annotations, made it read-only; ``call_id`` is the model's id of the
        call, ``mcp`` the session of an MCP server's tool.
        """
        key = invocation_id or uuid4()
        if not tool.strip():
            raise InvalidCommandError(key, f"invocation {key!r}: the tool name is required")
        return cls._create(
            cls.ToolInvocationStarted,
            id=key,
            run_id=run_id,
            tool=tool,
            normalized_scope=normalized_scope,
            arguments=dict(arguments),
            origin=origin,
            read_only_override=read_only_override,
            call_id=call_id,
            mcp=mcp,
        )

    @property
    def is_referenceable(self) -> bool:
        """Only READY invocations may be cited as evidence (SPEC §16 invariant 3)."""
        return self.status is InvocationStatus.READY

    def mark_ready(
        self,
        evidence: ReadyEvidence,
        content: str,
        notes: tuple[str, ...] = (),
        redactions: int = 0,
    ) -> None:
        """Record the projected evidence, its notes kept apart (``TOOL_INVOCATION_READY``).

        ``redactions`` counts the secrets already replaced in ``content`` and ``notes``.
        """
        self._check_projecting()
        self._check_count(redactions)
        if evidence not in (EvidenceStatus.EVIDENCE_FOUND, EvidenceStatus.NO_EVIDENCE):
            raise InvalidCommandError(
                self.id, f"invocation {self.id!r}: READY needs EVIDENCE_FOUND or NO_EVIDENCE"
            )
        if evidence is EvidenceStatus.EVIDENCE_FOUND and not content.strip():
            raise InvalidCommandError(
                self.id, f"invocation {self.id!r}: EVIDENCE_FOUND needs non-empty content"
            )
        data = content.encode("utf-8")
        self.trigger_event(
            self.ToolInvocationReady,
            evidence_status=evidence,
            content=content,
            byte_size=len(data),
            content_hash=hashlib.sha256(data).hexdigest(),
            notes=tuple(notes),
            redactions=redactions,
        )

    def fail(
        self,
        error_code: ToolErrorCode | str,
        message: str,
        redactions: int = 0,
        error_type: str = "",
    ) -> None:
        """Record a failure (``TOOL_INVOCATION_FAILED``): the harness's code or the tool's own.

        ``redactions`` counts the secrets already replaced in ``message``; ``error_type`` is the
        failure's class as the tool's source said it, if it said.
        """
        self._check_projecting()
        self._check_count(redactions)
        code = error_code.value if isinstance(error_code, ToolErrorCode) else error_code
        if not code.strip():
            raise InvalidCommandError(self.id, f"invocation {self.id!r}: an error code is required")
        self.trigger_event(
            self.ToolInvocationFailed,
            error_code=code,
            message=message,
            redactions=redactions,
            error_type=error_type,
        )

    def _check_count(self, redactions: int) -> None:
        if type(redactions) is not int or redactions < 0:
            raise InvalidCommandError(
                self.id, f"invocation {self.id!r}: redactions must be a count, not {redactions!r}"
            )

    def _check_projecting(self) -> None:
        if self.status is not InvocationStatus.PROJECTING:
            raise InvocationClosedError(
                self.id, f"invocation {self.id!r} is already {self.status.value}; it is final"
            )
