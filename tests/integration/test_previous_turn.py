"""The PreviousTurn policy: only a published DIAGNOSIS + SUCCESS result reaches the next turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from application.chat import ChatService
from application.ports import ModelRequest, ModelResponse
from application.store import HarnessStore
from domain.release_states import ReleaseOutcome
from domain.states import ModelStepPurpose
from infrastructure.model_scripted import ScriptedProvider, load_scenario
from infrastructure.scripted_tools import scripted_tools

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


class Clock:
    def now(self) -> datetime:
        return datetime.now(UTC)


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


def _service(store: HarnessStore, name: str) -> tuple[ChatService, Recording]:
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    provider = Recording(ScriptedProvider(scenario))
    return ChatService(store, provider, scripted_tools(scenario), Clock()), provider


def test_a_successful_diagnosis_is_carried_into_the_next_turn(store: HarnessStore) -> None:
    first_service, _ = _service(store, "conclusion_supported")
    first = first_service.ask("s", "why is checkout slow?")
    first_service.pool.shutdown()
    assert first.release_outcome is ReleaseOutcome.SUCCESS

    second_service, recording = _service(store, "missing_context")
    second_service.ask("s", "and what should I check next?", previous_run=first.run_id)
    second_service.pool.shutdown()

    assert first.content is not None
    assert "Previous diagnosis in this session" in recording.prompts[0]
    assert first.content["conclusion"] in recording.prompts[0]


def test_a_fallback_never_becomes_the_previous_turn(store: HarnessStore) -> None:
    first_service, _ = _service(store, "limited_checks")
    first = first_service.ask("s", "why is payments slow?")
    first_service.pool.shutdown()
    assert first.release_outcome is ReleaseOutcome.FALLBACK
    assert store.get_run(first.run_id).previous_turn is None

    second_service, recording = _service(store, "missing_context")
    second_service.ask("s", "and now?", previous_run=first.run_id)
    second_service.pool.shutdown()

    assert recording.prompts == ["and now?"]
