"""The PreviousTurn policy: only a published DIAGNOSIS + SUCCESS result reaches the next turn."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from application.chat import ChatService
from application.ports import ModelRequest, ModelResponse
from application.store import HarnessStore
from bootstrap.composition import Services
from domain.release_states import ReleaseOutcome
from domain.states import ModelStepPurpose
from infrastructure.model_scripted import ScriptedProvider
from tests.helpers import scripted


@dataclass
class Recording:
    """A provider that remembers the agent prompts it was sent (a hand-written port fake)."""

    inner: ScriptedProvider
    name: str = "recording"
    blocking: bool = True
    prompts: list[str] = field(default_factory=list)

    def complete(self, request: ModelRequest) -> ModelResponse:
        if request.purpose is ModelStepPurpose.AGENT and len(request.messages) == 2:
            self.prompts.append(request.messages[1].content)
        return self.inner.complete(request)


@contextmanager
def _recorded(services: Services, name: str) -> Iterator[tuple[ChatService, Recording]]:
    """The scenario's service, and the agent prompts its model was sent."""
    with scripted(services, name, wrap=Recording) as made:
        assert isinstance(made.service.provider, Recording)
        yield made.service, made.service.provider


def test_a_successful_diagnosis_is_carried_into_the_next_turn(
    services: Services, store: HarnessStore
) -> None:
    with _recorded(services, "conclusion_supported") as (first_service, _):
        first = first_service.ask("s", "why is checkout slow?")
    assert first.release_outcome is ReleaseOutcome.SUCCESS

    with _recorded(services, "missing_context") as (second_service, recording):
        second_service.ask("s", "and what should I check next?", previous_run=first.run_id)

    assert first.content is not None
    assert "Previous diagnosis in this session" in recording.prompts[0]
    assert first.content["conclusion"] in recording.prompts[0]


def test_a_fallback_never_becomes_the_previous_turn(
    services: Services, store: HarnessStore
) -> None:
    with _recorded(services, "limited_checks") as (first_service, _):
        first = first_service.ask("s", "why is payments slow?")
    assert first.release_outcome is ReleaseOutcome.FALLBACK
    assert store.get_run(first.run_id).previous_turn is None

    with _recorded(services, "missing_context") as (second_service, recording):
        second_service.ask("s", "and now?", previous_run=first.run_id)

    assert recording.prompts == ["and now?"]
