"""The composition root: what it opens, what it creates, and a whole chat through it with fakes.

Every part a run touches here is a fake passed through ``Overrides`` (the scripted model, a
hand-written tool, a fixed clock, a knowledge base in a list); the store is a real SQLite file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from application.chat import ChatConfig
from application.ports import (
    JSON,
    Passage,
    StoreClosedError,
    StoreNotInitialisedError,
    ToolOutput,
)
from bootstrap.composition import Overrides, bootstrap
from domain.release_states import ReleaseOutcome
from domain.states import Intent, RunState
from domain.values import Budget
from infrastructure.eventstore import init_store
from infrastructure.model_scripted import ScriptedProvider
from infrastructure.settings import Settings
from projections.queries import run_row
from tests.helpers import FixedClock

SCENARIO = Path(__file__).parents[2] / "scenarios" / "conclusion_supported.yaml"


@dataclass
class ListedKnowledge:
    """A knowledge base of one passage, and the queries it was asked."""

    asked: list[str] = field(default_factory=list)

    def search(self, query: str, limit: int = 5) -> list[Passage]:
        self.asked.append(query)
        return [Passage("kb-1", "Checkout", "Checkout calls the payment service.", 1.0)]


@dataclass
class CannedTool:
    """A read-only tool that returns the same lines for any arguments, and counts its calls."""

    name: str
    lines: tuple[str, ...]
    description: str = "canned lines"
    parameters: JSON = field(default_factory=lambda: {"type": "object", "properties": {}})
    read_only: bool = True
    required_scope: str = "ops:read"
    max_result_bytes: int = 65_536
    blocking: bool = False
    calls: int = 0

    def normalize_scope(self, arguments: JSON) -> str:
        return f"{self.name} {sorted(arguments.items())}"

    def run(self, arguments: JSON) -> ToolOutput:
        self.calls += 1
        return ToolOutput(self.lines, self.normalize_scope(arguments))


def _scenario_without_its_tools() -> dict[str, Any]:
    """The scripted model of SPEC §10 row 1; the tools it calls come from the test instead."""
    scenario: dict[str, Any] = yaml.safe_load(SCENARIO.read_text(encoding="utf-8"))
    tools = scenario.pop("tools")
    scenario["tools"] = {}
    scenario["_lines"] = {name: tuple(spec["lines"]) for name, spec in tools.items()}
    return scenario


def test_a_whole_chat_runs_through_the_composition_root_with_fakes_only(
    tmp_path: Path, fixed_clock: FixedClock
) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")
    scenario = _scenario_without_its_tools()
    tools = {name: CannedTool(name, lines) for name, lines in scenario.pop("_lines").items()}
    knowledge = ListedKnowledge()
    limits = ChatConfig(deadline_s=600.0, limits=Budget(12, 4, 20_000, 100_000))
    overrides = Overrides(
        provider=ScriptedProvider(scenario),
        tools=tools,
        clock=fixed_clock,
        knowledge=knowledge,
        config=limits,
        heartbeat=False,
    )
    with bootstrap(settings, create=True, overrides=overrides) as services:
        result = services.chat.ask("session-1", "why is checkout slow?", owner="ann")
        run = services.store.get_run(result.run_id)
        projector = services.projector()
        projector.catch_up()
        with services.engine.connect() as connection:
            row = run_row(connection, str(result.run_id))
        assert services.heartbeat is None  # no worker lease was asked for

    assert (result.termination.state, result.release_outcome) == (
        RunState.SUCCESS,
        ReleaseOutcome.SUCCESS,
    )
    assert result.content is not None and result.content["kind"] == "diagnosis"
    assert {name: tool.calls for name, tool in tools.items()} == {
        "search_logs": 1,
        "list_deployments": 1,
    }
    assert run.intent is Intent.DIAGNOSIS and run.owner == "ann"
    assert run.deadline == fixed_clock.at + timedelta(
        seconds=600
    )  # the fixed clock and the given limits
    assert run.limits == Budget(12, 4, 20_000, 100_000)
    assert knowledge.asked == []  # a diagnosis does not consult the knowledge base
    assert row is not None and row["status"] == "SUCCESS"


def test_without_create_nothing_is_created_and_the_store_is_named(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(StoreNotInitialisedError, match="absent.db"):
        bootstrap(Settings(database_url=f"sqlite:///{path}"))
    assert not path.exists()


def test_create_makes_the_store_the_read_tables_and_the_sample(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")
    with bootstrap(settings, create=True, sample=True) as services:
        assert services.store.head() == 0
        projector = services.projector()
        assert set(projector.positions().values()) == {0}  # the read tables exist
    with bootstrap(settings) as reopened:  # a second open finds everything
        answer = reopened.chat.ask("s", "Why was checkout slow on 2026-11-29?")
        assert answer.release_outcome is ReleaseOutcome.SUCCESS  # the offline model and sample


def test_a_given_store_is_left_open_and_everything_opened_is_closed(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'harness.db'}")
    given = init_store(settings)
    try:
        with bootstrap(settings, create=True, overrides=Overrides(store=given)) as services:
            assert services.store is given
        assert given.head() == 0  # still open: its opener closes it
    finally:
        given.close()
    services = bootstrap(settings)
    services.close()
    with pytest.raises(StoreClosedError):
        services.store.head()
