"""The core of the Run aggregate: its start, its state, the queries on it and the shared checks.

:class:`domain.run.Run` is this core plus one layer per phase (:mod:`domain.run_steps`,
:mod:`domain.run_answers`, :mod:`domain.run_guards`, :mod:`domain.run_termination`); every
layer's events assign this state, and every layer's commands refuse through the same checks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate

from domain.errors import IllegalTransitionError, InvalidCommandError, RunNotActiveError
from domain.published_reader import published_conclusion
from domain.release import GuardProgress
from domain.release_states import FallbackType, ReleaseOutcome
from domain.states import BudgetKind, CancellationReason, ChatApplicationStatus, Intent, RunState
from domain.values import DEFAULT_LIMITS, Budget, Termination

if TYPE_CHECKING:
    from datetime import datetime

    from domain.answer_rules import RetrievedPassage


class RunCore(Aggregate):
    """A run's identity, deadline, budget and state, and the checks its commands share."""

    class RunStarted(Aggregate.Created):
        """A run started RUNNING with its identity, owner, query, deadline, budget and worker."""

        class_version = 3
        session_id: str
        query: str
        deadline: datetime
        limits: Budget
        owner: str
        """Who asked: the API principal's name ('' when the caller is not identified)."""
        worker: str
        """The worker process executing it (its lease id; '' when none was recorded)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Runs started before owners were recorded belong to no one."""
            state["owner"] = ""

        @staticmethod
        def upcast_v2_v3(state: dict[str, Any]) -> None:
            """Runs started before workers were recorded name none."""
            state["worker"] = ""

        def apply(self, aggregate: RunCore) -> None:
            """Set the run's identity, owner, limits and worker."""
            aggregate.session_id = self.session_id
            aggregate.query = self.query
            aggregate.deadline = self.deadline
            aggregate.limits = self.limits
            aggregate.owner = self.owner
            aggregate.worker = self.worker

    def __init__(self) -> None:
        """Fields are assigned by the events' ``apply`` methods."""
        self.session_id = ""
        self.owner = ""
        self.worker = ""
        self.query = ""
        self.deadline: datetime
        self.limits = DEFAULT_LIMITS
        self.usage = Budget()
        self.routing_attempts = 0
        self.routing_decided = False
        self.intent: Intent | None = None
        self.status: ChatApplicationStatus | None = None
        self.guards = GuardProgress()
        self.passages: tuple[RetrievedPassage, ...] | None = None
        """The passages a knowledge question retrieved (None: none were looked for)."""
        self.answer_parsed: bool | None = None
        """Whether the knowledge answer proposed parsed into statements (None: none proposed)."""
        self.release: tuple[ReleaseOutcome, FallbackType | None] | None = None
        self.published: dict[str, Any] | None = None
        self.cancellation: CancellationReason | None = None
        self.termination: Termination | None = None
        self.failure_cause = ""
        """Why the run failed, as recorded with its termination ('' when no cause is known)."""
        self.finished_outcome: ReleaseOutcome | None = None

    # -- creation and queries ------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        session_id: str,
        query: str,
        deadline: datetime,
        limits: Budget = DEFAULT_LIMITS,
        run_id: UUID | None = None,
        owner: str = "",
        worker: str = "",
    ) -> Self:
        """Start a RUNNING run (``RUN_STARTED``) for ``owner``, executed by ``worker``."""
        run_key = run_id or uuid4()
        if not session_id.strip() or not query.strip():
            raise InvalidCommandError(
                run_key, f"run {run_key!r}: session_id and query are required"
            )
        if deadline.tzinfo is None:
            raise InvalidCommandError(
                run_key, f"run {run_key!r}: the deadline must be timezone-aware"
            )
        if limits.is_negative():
            raise InvalidCommandError(run_key, f"run {run_key!r}: budget limits must be >= 0")
        return cls._create(
            cls.RunStarted,
            id=run_key,
            session_id=session_id,
            query=query,
            deadline=deadline,
            limits=limits,
            owner=owner,
            worker=worker,
        )

    @property
    def state(self) -> RunState:
        """RUNNING until the one termination, then its state."""
        return self.termination.state if self.termination else RunState.RUNNING

    @property
    def is_active(self) -> bool:
        """True while no termination exists: work may still be recorded."""
        return self.termination is None

    @property
    def is_finished(self) -> bool:
        """True once ``RUN_FINISHED`` was recorded; nothing may follow it."""
        return self.finished_outcome is not None

    @property
    def previous_turn(self) -> str | None:
        """What this run carries into the next turn of its session (SPEC §1 PreviousTurn).

        Only the published result of a DIAGNOSIS run whose ReleaseOutcome is SUCCESS; a fallback,
        an answer or a failure never becomes context.
        """
        diagnosed = self.intent is Intent.DIAGNOSIS and self.published is not None
        if not (diagnosed and self.finished_outcome is ReleaseOutcome.SUCCESS):
            return None
        assert self.published is not None
        return published_conclusion(self.published) or None

    def deadline_passed(self, now: datetime) -> bool:
        """Whether ``now`` is at or after the run's deadline."""
        return now >= self.deadline

    def would_exceed(self, kind: BudgetKind, amount: int) -> bool:
        """Whether charging ``amount`` of ``kind`` would take the run over its limit."""
        return self.usage.get(kind) + amount > self.limits.get(kind)

    def check_active(self) -> None:
        """Raise :class:`RunNotActiveError` when the run already has a termination."""
        if self.termination is not None:
            raise RunNotActiveError(
                self.id,
                f"run {self.id!r} is already {self.termination.state.value} "
                f"({self.termination.reason.value}); no further work is accepted",
            )

    # -- checks every command shares -----------------------------------------------------------

    def _in_release_window(self) -> bool:
        """Active, or exhausted by budget (the one terminal state that may still publish)."""
        return not self.is_finished and self.state in (RunState.RUNNING, RunState.BUDGET_EXHAUSTED)

    def _refuse_if(self, condition: bool, why: str) -> None:
        if condition:
            error = RunNotActiveError if self.is_finished else IllegalTransitionError
            raise error(self.id, f"run {self.id!r}: {why}")

    def _invalid_if(self, condition: bool, why: str) -> None:
        if condition:
            raise InvalidCommandError(self.id, f"run {self.id!r}: {why}")
