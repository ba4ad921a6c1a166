"""What the release pipeline needs of a run's handle: a live run's, or a replay's.

Release (:mod:`application.guards`, :mod:`application.judge`, :mod:`application.evidence`,
:mod:`application.published`) reads the run, its invocations and collection, records events on
the run and asks the model. A live run's :class:`~application.run_context.RunContext` gives all
of that against the store; a what-if replay (:mod:`application.whatif`) gives the same over a
recorded run's events, recording on a copy that never reaches the log as the run's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping
    from uuid import UUID

    from application.ports import ModelRequest, ModelResponse
    from domain.collection import Collection
    from domain.run import Run
    from domain.tool_invocation import ToolInvocation


class ReleaseJournal(Protocol):
    """Where a boundary's events go, and the run's evidence collection."""

    @property
    def collection(self) -> Collection | None:
        """The run's evidence collection (None before one started)."""

    def record(self) -> None:
        """Take the events the run recorded at this boundary."""


class InvocationSource(Protocol):
    """Reads a tool invocation that is not in hand."""

    def get_invocation(self, invocation_id: UUID) -> ToolInvocation:
        """The invocation; ``UnknownAggregateError`` when there is none."""


class ReleaseContext(Protocol):
    """One run's handle as release uses it."""

    @property
    def run(self) -> Run:
        """The run, as recorded so far."""

    @property
    def journal(self) -> ReleaseJournal:
        """Where its events go."""

    @property
    def invocations(self) -> Mapping[UUID, ToolInvocation]:
        """Its tool invocations in hand, in the order they were called."""

    @property
    def store(self) -> InvocationSource:
        """Where other invocations are read."""

    def check_active(self, *, reread: bool = True) -> None:
        """Raise ``RunAborted`` once the run has ended (a budget run out: ``BudgetExhausted``)."""

    def call_model(self, request: ModelRequest) -> ModelResponse:
        """One model call at a boundary, recorded as a model step."""
