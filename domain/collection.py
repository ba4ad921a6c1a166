"""The Collection aggregate: per-run evidence collection, gain, violations and saturation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain.errors import (
    CollectionClosedError,
    ControlledStopError,
    IllegalTransitionError,
    InvalidCommandError,
)
from domain.tool_states import CollectionState, DiagnosisStopReason, GainSource, InformationGain

if TYPE_CHECKING:
    from domain.values import Fact

_COLLECTION_NAMESPACE = uuid5(NAMESPACE_URL, "diagnosis-harness:collection")


def collection_id(run_id: UUID) -> UUID:
    """The one collection id of a run, so a second collection for it cannot be saved."""
    return uuid5(_COLLECTION_NAMESPACE, run_id.hex)


class Collection(Aggregate):
    """Evidence collection of one run: COLLECTING until SATURATED (SPEC §9)."""

    class CollectionStarted(Aggregate.Created):
        """Collection began with its consecutive thresholds."""

        class_version = 2
        run_id: UUID
        no_gain_threshold: int
        violation_threshold: int
        known_services: tuple[str, ...]
        """The services the run's tools know: missing information may name these (or the
        question's), never one only the model named (design §10.1)."""

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Collections started before the catalogue was recorded knew no service."""
            state["known_services"] = ()

        def apply(self, aggregate: Collection) -> None:
            """Set the thresholds and the known services."""
            aggregate.run_id = self.run_id
            aggregate.no_gain_threshold = self.no_gain_threshold
            aggregate.violation_threshold = self.violation_threshold
            aggregate.known_services = tuple(self.known_services)

    class ToolProgress(Aggregate.Event):
        """A gain verdict for one tool result, with its source and the facts reported."""

        class_version = 1
        invocation_id: UUID | None
        gain: InformationGain
        source: GainSource
        facts: tuple[Fact, ...]

        def apply(self, aggregate: Collection) -> None:
            """GAINED resets the no-gain count; an agent's valid report resets the violations."""
            no_gain = self.gain is InformationGain.NO_GAIN
            aggregate.consecutive_no_gain = aggregate.consecutive_no_gain + 1 if no_gain else 0
            if self.source is GainSource.AGENT:
                aggregate.consecutive_violations = 0
            aggregate.facts = aggregate.facts + tuple(self.facts)

    class ProgressProtocolViolation(Aggregate.Event):
        """The agent's step after a tool result had a missing or malformed progress report."""

        class_version = 1
        detail: str

        def apply(self, aggregate: Collection) -> None:
            """Count the violation."""
            aggregate.consecutive_violations += 1

    class CollectionStop(Aggregate.Event):
        """Collection stopped: SATURATED by a threshold, or stopped by the run's budget."""

        class_version = 1
        stop_reason: DiagnosisStopReason

        def apply(self, aggregate: Collection) -> None:
            """Budget stops collection without making it SATURATED (SPEC §9)."""
            aggregate.stop_reason = self.stop_reason
            if self.stop_reason is not DiagnosisStopReason.BUDGET_LIMIT_REACHED:
                aggregate.state = CollectionState.SATURATED

    class StopRequiredDelivered(Aggregate.Event):
        """The agent was told to stop calling tools and draft now."""

        class_version = 1

        def apply(self, aggregate: Collection) -> None:
            """Set the separate STOP_REQUIRED flag."""
            aggregate.stop_required_delivered = True

    def __init__(self) -> None:
        """Fields are assigned by the events' ``apply`` methods."""
        self.run_id: UUID
        self.no_gain_threshold = 3
        self.violation_threshold = 2
        self.state = CollectionState.COLLECTING
        self.known_services: tuple[str, ...] = ()
        self.stop_reason: DiagnosisStopReason | None = None
        self.stop_required_delivered = False
        self.consecutive_no_gain = 0
        self.consecutive_violations = 0
        self.facts: tuple[Fact, ...] = ()

    @classmethod
    def start(
        cls,
        run_id: UUID,
        no_gain_threshold: int = 3,
        violation_threshold: int = 2,
        known_services: tuple[str, ...] = (),
    ) -> Collection:
        """Start the run's collection (``COLLECTION_STARTED``) with its tools' known services."""
        key = collection_id(run_id)
        if no_gain_threshold < 1 or violation_threshold < 1:
            raise InvalidCommandError(key, f"collection {key!r}: thresholds must be >= 1")
        return cls._create(
            cls.CollectionStarted,
            id=key,
            run_id=run_id,
            no_gain_threshold=no_gain_threshold,
            violation_threshold=violation_threshold,
            known_services=tuple(known_services),
        )

    @property
    def is_open(self) -> bool:
        """True while new evidence may be collected."""
        return self.stop_reason is None

    def admit_tool_request(self) -> None:
        """Raise unless a new evidence tool may run now (SPEC §16 invariant 6)."""
        if self.stop_required_delivered:
            raise ControlledStopError(
                self.id,
                f"collection {self.id!r}: a tool was requested after the stop instruction; "
                "the agent must draft now",
            )
        self._check_open()

    def record_gain(
        self,
        gain: InformationGain,
        source: GainSource,
        facts: tuple[Fact, ...] = (),
        invocation_id: UUID | None = None,
    ) -> None:
        """Record a gain verdict (``TOOL_PROGRESS``); saturate at the no-gain threshold."""
        self._check_open()
        if source is GainSource.HARNESS and gain is not InformationGain.NO_GAIN:
            raise InvalidCommandError(
                self.id, f"collection {self.id!r}: the harness only ever records NO_GAIN"
            )
        self.trigger_event(
            self.ToolProgress,
            invocation_id=invocation_id,
            gain=gain,
            source=source,
            facts=tuple(facts),
        )
        if self.consecutive_no_gain >= self.no_gain_threshold:
            self.trigger_event(
                self.CollectionStop, stop_reason=DiagnosisStopReason.INFORMATION_SATURATED
            )

    def record_violation(self, detail: str) -> None:
        """Record a progress-protocol violation; saturate at the violation threshold."""
        self._check_open()
        self.trigger_event(self.ProgressProtocolViolation, detail=detail)
        if self.consecutive_violations >= self.violation_threshold:
            self.trigger_event(
                self.CollectionStop, stop_reason=DiagnosisStopReason.PROGRESS_PROTOCOL_VIOLATED
            )

    def stop_for_budget(self) -> None:
        """Record that the run's budget stopped collection; never SATURATED. Idempotent."""
        if self.is_open:
            self.trigger_event(
                self.CollectionStop, stop_reason=DiagnosisStopReason.BUDGET_LIMIT_REACHED
            )

    def deliver_stop_required(self) -> None:
        """Record that the stop instruction reached the agent (``STOP_REQUIRED_DELIVERED``)."""
        if self.state is not CollectionState.SATURATED:
            raise IllegalTransitionError(
                self.id, f"collection {self.id!r}: stop is only required once SATURATED"
            )
        if self.stop_required_delivered:
            raise CollectionClosedError(
                self.id, f"collection {self.id!r}: the stop instruction was already delivered"
            )
        self.trigger_event(self.StopRequiredDelivered)

    def _check_open(self) -> None:
        if self.stop_reason is not None:
            raise CollectionClosedError(
                self.id,
                f"collection {self.id!r} is {self.state.value} ({self.stop_reason.value}); "
                "no new evidence tool may run",
            )
