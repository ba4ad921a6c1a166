"""The tool boundary (SPEC §8): preflight, canonical begin, execution, bounded projection."""

from __future__ import annotations

import logging
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

from application.port_calls import PortBusy
from application.ports import StoreUnavailableError, ToolExecutionError, ToolOutput
from application.run_context import RunAborted
from application.storable import NotStorable, storable_output, storable_text
from application.tool_admission import admitted, shown_name
from application.tool_port import MAX_ERROR_TYPE, PortView, begin, checks_block, read_port
from application.tool_projection import mark_ready, project, shown_notes
from application.tool_secrets import NO_SECRETS, redacted_error, redacted_output
from domain.run import Run
from domain.states import BudgetKind
from domain.tool_states import (
    EvidenceStatus,
    GainSource,
    InformationGain,
    ToolErrorCode,
    ToolRejectionCode,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from uuid import UUID

    from application.ports import Tool, ToolCall
    from application.run_context import RunContext
    from domain.collection import Collection
    from domain.redactor import Redactor
    from domain.tool_invocation import ToolInvocation

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class ToolResult:
    """What the agent is told about one tool request (``ToolBoundaryResult``)."""

    call_id: str
    text: str
    invocation_id: UUID | None = None
    evidence: EvidenceStatus | None = None
    awaits_progress: bool = False


class ToolBoundary:
    """Runs the agent's tool requests for one run, recording every outcome as events."""

    def __init__(
        self,
        ctx: RunContext,
        collection: Collection,
        tools: Mapping[str, Tool],
        granted_scopes: frozenset[str] = frozenset({"ops:read"}),
        redactor: Redactor = NO_SECRETS,
    ) -> None:
        """Bind the boundary to a run, its collection and the tools it may use.

        ``redactor`` hides the known secrets in what tools say (:mod:`application.tool_secrets`).
        """
        self.ctx = ctx
        self.collection = collection
        self.tools = tools
        self.granted_scopes = granted_scopes
        self.redactor = redactor
        self.seen: set[tuple[str, str]] = set()

    def execute(self, call: ToolCall) -> ToolResult:
        """Preflight, begin, run and project one call; raises ControlledStopError, RunAborted."""
        try:
            self.ctx.check_active()
        except RunAborted:
            self._reject(call, ToolRejectionCode.INVALID_RUN, "the run has already ended")
            raise
        self.collection.admit_tool_request()
        tool = self.tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(t.name for t in admitted(self.tools.values()))) or "none"
            return self._reject(
                call,
                ToolRejectionCode.INVALID_ID,
                f"no tool {shown_name(call.name)}; known: {known}",
            )
        view = self._preflight(tool, call)
        if isinstance(view, ToolResult):
            return view
        if not view.admission.admitted:  # never offered; its reason and the setting that admits it
            detail = view.admission.rejection(view.name)
            return self._reject(call, ToolRejectionCode.NOT_READ_ONLY, detail)
        if not view.granted:
            return self._reject(
                call, ToolRejectionCode.AUTH, f"scope {view.required_scope} not granted"
            )
        if view.scope is None:
            return self._reject(call, ToolRejectionCode.INVALID_REQUEST, view.problem or "")
        if self.ctx.run.would_exceed(BudgetKind.TOOL_CALLS, 1):
            self._reject(call, ToolRejectionCode.BUDGET, "the tool-call budget is spent")
            self.ctx.run.exhaust_budget(BudgetKind.TOOL_CALLS)
            self.ctx.journal.record(self.collection)
        return self._invoke(call, tool, view, view.scope)

    def _preflight(self, tool: Tool, call: ToolCall) -> PortView | ToolResult:
        """The tool's answers, asked within the call's bound; a rejection when none came.

        Raises RunAborted (recording INVALID_RUN) when the run ended while the tool was asked:
        a cancel, or the deadline, which the check times the run out at.
        """
        try:
            try:
                blocks = checks_block(tool)
                return self._ask(blocks, call.name, read_port, tool, call, self.granted_scopes)
            except FutureTimeout:  # the deadline passed while the tool read the arguments
                self.ctx.check_active()
        except PortBusy as busy:
            return self._reject(call, ToolRejectionCode.UNAVAILABLE, str(busy))
        except RunAborted:
            detail = f"the run ended while {call.name} read the arguments"
            self._reject(call, ToolRejectionCode.INVALID_RUN, detail)
            raise
        detail = f"{call.name} did not read the arguments before the deadline"
        return self._reject(call, ToolRejectionCode.INVALID_REQUEST, detail)

    def _ask(self, blocks: bool, name: str, ask: Callable[..., T], *args: Any) -> T:
        """``ask(*args)``: inline when it cannot block, else bounded by the deadline.

        A blocking tool's call runs in a port thread, waited for until the run's deadline or
        its end (a cancel): then FutureTimeout or RunAborted, and the call is abandoned (its
        late answer is dropped). PortBusy when too many of its calls are stuck already.
        """
        if not blocks:
            return ask(*args)
        future = self.ctx.pool.submit(f"tool {name}", ask, *args)
        return self.ctx.wait_for(future, max(0.0, self.ctx.time_left()[0]))

    def _invoke(self, call: ToolCall, tool: Tool, view: PortView, scope: str) -> ToolResult:
        """Begin, run and project a call that passed the preflight."""
        invocation = begin(self.ctx.run.id, view, scope, dict(call.arguments))
        self.ctx.run.charge(BudgetKind.TOOL_CALLS, 1, str(invocation.id))
        refused = self._record_begin(call, view, invocation)
        if refused is not None:
            return refused
        self.ctx.invocations[invocation.id] = invocation
        repeat = (view.name, scope) in self.seen
        self.seen.add((view.name, scope))
        try:
            output = self._run_or_abandon(tool, call, invocation)
        except ToolExecutionError as error:
            error = redacted_error(self.redactor, error)
            failure = (error.code, str(error), error.redactions, error.error_type)
            return self._failed(call, invocation, *failure)
        output = redacted_output(self.redactor, output)  # before anything is cut or recorded
        if not output.scope_description.strip():  # NO_EVIDENCE must always name its scope
            output = replace(output, scope_description=f"{view.name} with {scope}")
        content, size, output = project(output, view.max_result_bytes)
        self._check_still_active(invocation, output, content, size)
        if content is None:
            too_big = f"one record exceeds {size} bytes"
            return self._failed(call, invocation, ToolErrorCode.SIZE.value, too_big)
        if self.ctx.run.would_exceed(BudgetKind.BYTES, len(content.encode())):
            # One transaction: the invocation's failure and the run's exhaustion (SPEC §9).
            invocation.fail(ToolErrorCode.BUDGET, "the byte budget is spent")
            self.ctx.run.exhaust_budget(BudgetKind.BYTES)
            self.ctx.journal.record(invocation, self.collection)
        return self._ready(call, invocation, output, content, repeat)

    def _record_begin(
        self, call: ToolCall, view: PortView, invocation: ToolInvocation
    ) -> ToolResult | None:
        """Record the begin and charge (committed unless the tool is local); STORE if it failed."""
        try:
            self.ctx.journal.commit_or_record(invocation, before=view)
        except RunAborted:  # another writer ended the run first: the begin was not recorded
            self._reject(call, ToolRejectionCode.INVALID_RUN, "the run ended before the tool began")
            raise
        except StoreUnavailableError as error:
            # No canonical begin: the tool never runs, nothing is charged (SPEC §8), the rest of
            # the commit is queued again; a store that refuses even that ends the run.
            log.warning(
                "run %s: the begin of %s was not recorded: %s", self.ctx.run.id, view.name, error
            )
            self.ctx.journal.rewind(lambda event: not _of_begin(event, invocation))
            detail = f"the invocation could not be recorded: {error}"[:500]
            return self._reject(call, ToolRejectionCode.STORE, detail)
        return None

    def _run_or_abandon(self, tool: Tool, call: ToolCall, invocation: ToolInvocation) -> ToolOutput:
        """Run the tool; when the run ends meanwhile, close its invocation ABANDONED."""
        try:
            return self._run(tool, call)
        except RunAborted:
            # The run ended (a cancel) while the tool ran: the call is abandoned and its
            # invocation closed, so no record is left STARTED; nothing else is recorded.
            invocation.fail(ToolErrorCode.ABANDONED, "the run ended before the tool answered")
            self.ctx.journal.record(invocation)
            raise

    def _check_still_active(
        self, invocation: ToolInvocation, output: ToolOutput, content: str | None, size: int
    ) -> None:
        """Raise RunAborted if the run ended while the tool ran, its result closing the call."""
        try:
            self.ctx.check_active()
        except RunAborted:
            # The run ended while the tool ran: the result closes its invocation (its facts are
            # kept), but it is never charged, reported as progress or shown to the agent.
            if content is None:
                invocation.fail(ToolErrorCode.SIZE, f"one record exceeds {size} bytes")
            else:
                mark_ready(invocation, output, content)
            self.ctx.journal.record(invocation)
            raise

    def _run(self, tool: Tool, call: ToolCall) -> ToolOutput:
        try:
            return storable_output(self._ask(tool.blocking, call.name, tool.run, call.arguments))
        except NotStorable as error:  # a result of the wrong shape is the tool's failure
            raise ToolExecutionError(ToolErrorCode.MALFORMED.value, str(error)) from error
        except FutureTimeout:
            # The invocation is closed as ERROR and the run times out at its next boundary; the
            # call is not promised to stop, and its late result is dropped (SPEC §5).
            raise ToolExecutionError(
                ToolErrorCode.TIMEOUT.value, "the tool did not answer before the deadline"
            ) from None
        except PortBusy as busy:
            raise ToolExecutionError(ToolErrorCode.UNAVAILABLE.value, str(busy)) from None
        except (ToolExecutionError, RunAborted):
            raise  # RunAborted: the run ended while the tool ran, the call is abandoned
        except Exception as error:  # a tool that raises is a recorded failure, never a crash
            raise ToolExecutionError(
                ToolErrorCode.EXECUTION.value, f"{type(error).__name__}: {error}"[:500]
            ) from error

    def _ready(
        self,
        call: ToolCall,
        invocation: ToolInvocation,
        output: ToolOutput,
        content: str,
        repeat: bool,
    ) -> ToolResult:
        self.ctx.run.charge(BudgetKind.BYTES, len(content.encode()), str(invocation.id))
        evidence = mark_ready(invocation, output, content)
        harness_no_gain = repeat or evidence is EvidenceStatus.NO_EVIDENCE
        if harness_no_gain:
            self.collection.record_gain(
                InformationGain.NO_GAIN, GainSource.HARNESS, invocation_id=invocation.id
            )
        self.ctx.journal.record(invocation, self.collection)
        note = " (repeat of an earlier call: no new information)" if repeat else ""
        found = evidence is EvidenceStatus.EVIDENCE_FOUND
        body = content if found else f"NO_EVIDENCE: {output.scope_description}"
        return ToolResult(
            call.id,
            f"invocation {invocation.id}{note}\n{body}{shown_notes(output.notes)}",
            invocation.id,
            evidence,
            awaits_progress=not harness_no_gain,
        )

    def _failed(
        self,
        call: ToolCall,
        invocation: ToolInvocation,
        code: str,
        message: str,
        hidden: int = 0,
        kind: str = "",
    ) -> ToolResult:
        # the tool's own words (ToolExecutionError's code is text: a tool may name its own)
        code = storable_text(str(code)).strip() or ToolErrorCode.EXECUTION.value
        message = storable_text(message)
        invocation.fail(code, message, hidden, storable_text(str(kind))[:MAX_ERROR_TYPE])
        self.ctx.journal.record(invocation)
        return ToolResult(
            call.id, f"invocation {invocation.id} ERROR {code}: {message}", invocation.id
        )

    def _reject(self, call: ToolCall, code: ToolRejectionCode, detail: str) -> ToolResult:
        detail = storable_text(self.redactor.hide(detail))  # it may quote the tool's own words
        self.ctx.run.reject_tool_request(call.name, code, detail)
        try:
            self.ctx.journal.record()
        except RunAborted:
            if code is not ToolRejectionCode.INVALID_RUN:
                raise
        return ToolResult(call.id, f"REJECTED {code.value}: {detail}")


def _of_begin(event: object, invocation: ToolInvocation) -> bool:
    """True for the events of ``invocation``'s begin: its start and the run's charge for it."""
    charge = isinstance(event, Run.BudgetCharged) and event.ref == str(invocation.id)
    return charge or getattr(event, "originator_id", None) == invocation.id
