"""A save that fails for a reason nobody foresaw: the run still ends on a log that replays."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING

from application.audit.records import store_records
from application.ports import ModelRequest, ModelResponse, Usage
from bootstrap.composition import Services
from domain.states import FailureCode, ModelStepPurpose, RunState
from infrastructure.model_scripted import ScriptedProvider
from tests.helpers import scripted
from tests.integration._projection_helpers import QUERY
from tests.log_checks import check_chain

if TYPE_CHECKING:
    from application.store import HarnessStore


@dataclass
class UnstorableUsage:
    """A model port whose first agent answer reports usage the log cannot store."""

    inner: ScriptedProvider
    name: str = "unstorable-usage"
    blocking: bool = False
    spoiled: list[ModelRequest] = field(default_factory=list)

    def complete(self, request: ModelRequest) -> ModelResponse:
        """The scripted answer; the first agent step's token count is a Fraction."""
        response = self.inner.complete(request)
        if request.purpose is ModelStepPurpose.AGENT and not self.spoiled:
            self.spoiled.append(request)
            return replace(response, usage=Usage(Fraction(1, 3), 1))  # type: ignore[arg-type]
        return response


def test_a_save_failing_unexpectedly_ends_the_run_from_what_the_log_holds(
    services: Services, store: HarnessStore
) -> None:
    with scripted(services, "conclusion_supported", wrap=UnstorableUsage) as made:
        result = made.service.ask("session-1", QUERY)
    provider = made.service.provider
    assert isinstance(provider, UnstorableUsage)

    assert provider.spoiled, "the agent step was never asked"
    run = store.get_run(result.run_id)  # replays: no version the log never got
    assert run.termination is not None
    assert (run.termination.state, run.termination.reason) == (
        RunState.FAILED,
        FailureCode.INTERNAL_ERROR,
    )
    assert run.is_finished
    assert check_chain(store_records(store)) == []
