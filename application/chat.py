"""The chat use case in SPEC §3 order: start, route, execute by intent, release, terminate, finish.

Every ending is recorded: a run always gets exactly one termination and one ``RUN_FINISHED``, and
no exception escapes :meth:`ChatService.execute` (unexpected ones end the run FAILED with
INTERNAL_ERROR, their type and message recorded, redacted, as the termination's cause, and are
logged; when the store itself fails, the run is ended that way once the store answers again, see
:mod:`application.outage`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from application.answer_routes import answer_chat, answer_knowledge
from application.conflicts import MAX_CONFLICT_RETRIES, retry_on_conflict
from application.diagnosis import AgentFailure, AgentFault, run_agent
from application.guards import NoSafeContent, Publication, release
from application.outage import end_after_outage, resync
from application.port_calls import PortCalls
from application.ports import (
    ModelError,
    StoreClosedError,
    StoreUnavailableError,
)
from application.routing import RoutingFailed, route
from application.run_context import RunAborted, RunContext
from application.run_journal import DEFAULT_COMMIT_INTERVAL_S
from application.tool_boundary import ToolBoundary
from application.tool_secrets import NO_SECRETS
from domain.grounding import DEFAULT_RULES, GroundingRules
from domain.redaction import describe_error
from domain.release import PUBLISHED
from domain.states import ChatApplicationStatus, FailureCode, Intent
from domain.values import DEFAULT_DEADLINE_S, DEFAULT_LIMITS, DEFAULT_MODEL_TIMEOUT_S, Budget

if TYPE_CHECKING:
    from collections.abc import Mapping
    from uuid import UUID

    from application.ports import Clock, KnowledgeRetriever, ModelProvider, Tool
    from application.store import HarnessStore
    from domain.published import Published
    from domain.redactor import Redactor
    from domain.release_states import ReleaseOutcome
    from domain.run import Run
    from domain.values import Termination

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChatConfig:
    """Per-run limits."""

    deadline_s: float = DEFAULT_DEADLINE_S
    limits: Budget = DEFAULT_LIMITS
    model_timeout_s: float = DEFAULT_MODEL_TIMEOUT_S
    """The longest any one model call is waited for; the run's deadline may cut it shorter."""
    commit_interval_s: float = DEFAULT_COMMIT_INTERVAL_S
    """The longest a run's events wait uncommitted at local calls (0: every call commits)."""
    grounding: GroundingRules = DEFAULT_RULES
    """How informative a citation's excerpt must be (design §10.1)."""
    redactor: Redactor = NO_SECRETS
    """The known secrets, hidden in whatever a tool says before it is recorded or shown."""
    reference_time: datetime | None = None
    """The "now" relative times in questions are resolved against; None: the clock's now."""


@dataclass(frozen=True)
class ChatResult:
    """How a run ended, as recorded in its events."""

    run_id: UUID
    session_id: str
    termination: Termination
    release_outcome: ReleaseOutcome
    published: Published | None
    """What the run published; None when it published nothing (FAILED or CANCELLED)."""
    position: int

    @property
    def content(self) -> dict[str, Any] | None:
        """The published content as stored in the run's ``RELEASE_DECISION`` (its JSON)."""
        return self.published.to_json() if self.published is not None else None


@dataclass
class ChatService:
    """Starts and executes runs against the store, the model, the tools and the knowledge base."""

    store: HarnessStore
    provider: ModelProvider
    tools: Mapping[str, Tool]
    clock: Clock
    retriever: KnowledgeRetriever | None = None
    config: ChatConfig = field(default_factory=ChatConfig)
    pool: PortCalls = field(default_factory=PortCalls)
    """Where the runs' blocking model and tool calls run (see :mod:`application.port_calls`)."""

    def begin(
        self,
        session_id: str,
        query: str,
        run_id: UUID | None = None,
        *,
        owner: str = "",
        deadline_s: float | None = None,
        limits: Budget | None = None,
    ) -> tuple[Run, int]:
        """Record ``RUN_STARTED`` for ``owner``: the saved run and the log position of the event.

        The run is RUNNING from here on; a caller streams its events from that position.
        ``deadline_s`` and ``limits`` replace the configured ones for this run. The run returned
        is current: hand it to :meth:`execute` without reading it again.
        """
        deadline = self.clock.now() + timedelta(seconds=deadline_s or self.config.deadline_s)
        return self.store.begin_run(
            session_id, query, deadline, limits or self.config.limits, run_id, owner
        )

    def known_services(self) -> tuple[str, ...]:
        """The services the tools know (a tool may carry ``known_services``), sorted, each once."""
        known = {
            str(s) for tool in self.tools.values() for s in getattr(tool, "known_services", ())
        }
        return tuple(sorted(known))

    def _context(self, run: Run) -> RunContext:
        """The live handle of ``run`` in this worker, current with the log it was begun in."""
        timeout, interval = self.config.model_timeout_s, self.config.commit_interval_s
        ctx = RunContext(self.store, self.clock, self.provider, run, self.pool, timeout, interval)
        ctx.span_s = max(0.0, (run.deadline - self.clock.now()).total_seconds())
        ctx.journal.mark_current()
        return ctx

    def execute(self, run: Run, context: str = "") -> ChatResult:
        """Route and execute a run from :meth:`begin` to its termination and ``RUN_FINISHED``.

        ``context`` is the session's previous turn, carried into a diagnosis (PreviousTurn).
        """
        ctx = self._context(run)
        try:
            return self._execute(ctx, context)
        finally:
            ctx.journal.close()  # on every way out, a store closing under it included

    def _execute(self, ctx: RunContext, context: str) -> ChatResult:
        """:meth:`execute` with the run's live handle."""
        run = ctx.run
        content: Published | None = None
        failure: FailureCode | None = None  # None: the release decided, complete the run
        unexpected: Exception | None = None
        cause = ""  # the provider's failure, in one line naming it, when the model failed
        try:
            publication = self._by_intent(ctx, route(ctx), context)
            content = publication.content
        except RunAborted:
            failure = FailureCode.INTERNAL_ERROR  # a no-op: the run has already ended
        except RoutingFailed as routing:
            failure, cause = FailureCode.ROUTING_FAILED, str(routing)
        except ModelError as error:
            failure, cause = FailureCode.MODEL_FAILED, describe_error(error)
        except NoSafeContent as no_content:
            failure = _failure_code(no_content.__cause__)
        except StoreUnavailableError as error:  # the store went away mid-run
            return self._after_outage(ctx, error)
        except StoreClosedError:  # this process is shutting down: recovery ends the run
            raise
        except Exception as error:  # never a traceback to the caller: the run records the failure
            log.exception("run %s failed unexpectedly", run.id)
            failure, unexpected = FailureCode.INTERNAL_ERROR, error
        try:
            if unexpected is not None:
                resync(ctx)  # what it holds may be ahead of the log (a save that failed)
            cause = describe_error(unexpected) if unexpected is not None else cause
            return self._close(ctx, failure, content, cause)
        except StoreUnavailableError as error:
            return self._after_outage(ctx, error)

    def ask(
        self, session_id: str, query: str, previous_run: UUID | None = None, owner: str = ""
    ) -> ChatResult:
        """:meth:`begin` and :meth:`execute` a run in the calling thread.

        ``previous_run`` is the session's previous run; only its published DIAGNOSIS + SUCCESS
        result is carried into this run (the PreviousTurn policy, :attr:`Run.previous_turn`).
        """
        context = self.store.get_run(previous_run).previous_turn if previous_run else None
        return self.execute(self.begin(session_id, query, owner=owner)[0], context or "")

    # -- phases ------------------------------------------------------------------------------------

    def _by_intent(self, ctx: RunContext, intent: Intent, context: str) -> Publication:
        match intent:
            case Intent.SYSTEM_CHAT:
                return answer_chat(ctx)
            case Intent.KNOWLEDGE_QUERY:
                return answer_knowledge(ctx, self.retriever, self.config.grounding)
            case Intent.DIAGNOSIS:
                return self._diagnose(ctx, context)

    def _diagnose(self, ctx: RunContext, context: str) -> Publication:
        ctx.check_active()
        ctx.run.change_status(ChatApplicationStatus.DIAGNOSIS_RUNNING)
        collection = ctx.journal.collection = self.store.new_collection(
            ctx.run.id, self.known_services()
        )
        ctx.journal.record(collection)  # one boundary: the status and COLLECTION_STARTED together
        boundary = ToolBoundary(ctx, collection, self.tools, redactor=self.config.redactor)
        try:
            now = self.config.reference_time or self.clock.now()
            outcome: Any = run_agent(ctx, boundary, ctx.run.query, context, now=now)
        except AgentFailure as failure:
            outcome = failure
        ctx.journal.collecting = False
        ctx.check_release_window()
        ctx.run.change_status(ChatApplicationStatus.SAFETY_VALIDATING)
        ctx.journal.record()
        try:
            return release(ctx, outcome, collection, self.config.grounding)
        except NoSafeContent as none:
            raise NoSafeContent(str(none)) from (
                outcome if isinstance(outcome, AgentFailure) else None
            )

    # -- closing -----------------------------------------------------------------------------------

    def _after_outage(self, ctx: RunContext, error: StoreUnavailableError) -> ChatResult:
        """End the run FAILED (INTERNAL_ERROR) once the store answers again (see outage.py)."""
        cause = describe_error(error)
        return end_after_outage(
            ctx,
            self.clock,
            error,
            lambda: self._close(ctx, FailureCode.INTERNAL_ERROR, None, cause),
        )

    def _close(
        self,
        ctx: RunContext,
        failure: FailureCode | None,
        content: Published | None,
        cause: str = "",
    ) -> ChatResult:
        """Terminate (first terminal wins) and record ``RUN_FINISHED``, reloading on conflict.

        ``cause`` is what failed, recorded with a FAILED termination (redacted by the run).
        """

        def attempt() -> ChatResult:
            run = ctx.run
            termination = run.complete() if failure is None else run.fail(failure, cause)
            outcome = run.finished_outcome or run.finish(self.clock.now())
            journal = ctx.journal  # the end is committed with what the run recorded
            position = journal.commit_end() or journal.last_position
            published = content if outcome in PUBLISHED else None
            return ChatResult(run.id, run.session_id, termination, outcome, published, position)

        giving_up = (
            f"run {ctx.run.id!r}: could not record its end after {MAX_CONFLICT_RETRIES} conflicts"
        )
        # e.g. a cancel landed first: decide again on the latest run (commit_end reread it)
        return retry_on_conflict(attempt, giving_up=giving_up)


def _failure_code(cause: BaseException | None) -> FailureCode:
    if isinstance(cause, AgentFailure):
        if cause.kind is AgentFault.MODEL_FAILED:
            return FailureCode.MODEL_FAILED
        return FailureCode.INVALID_DRAFT
    return FailureCode.NO_SAFE_CONTENT
