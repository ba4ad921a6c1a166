"""Plain helpers every kind of test shares: a fixed clock, a knowledge base with nothing in it,
and chat services on a scripted scenario built by the composition root.

A scripted service goes through :func:`bootstrap.composition.bootstrap` with the parts a
test supplies in :class:`~bootstrap.composition.Overrides` (the scenario's model and tools,
a clock, no knowledge), on the store the test already opened, as cosmicpython's tests call its
``bootstrap`` with fakes. The wall clock is :class:`infrastructure.clock.SystemClock`.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from bootstrap.composition import Overrides, bootstrap
from bootstrap.run_config import chat_config
from infrastructure.clock import SystemClock
from infrastructure.model_scripted import ScriptedProvider, load_scenario
from infrastructure.scripted_tools import ScriptedTool, scripted_tools
from infrastructure.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from application.chat import ChatConfig, ChatResult, ChatService
    from application.ports import Clock, KnowledgeRetriever, ModelProvider, Passage, Tool
    from bootstrap.composition import Services

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
"""The scripted scenarios of the tests (``name`` is ``SCENARIOS / f"{name}.yaml"``)."""

AT = datetime(2026, 11, 29, 10, 30, tzinfo=UTC)
"""The instant a :class:`FixedClock` says unless told another."""


@dataclass
class FixedClock:
    """A clock that always says ``at`` (a hand-written Clock fake)."""

    at: datetime = AT

    def now(self) -> datetime:
        return self.at


class NoKnowledge:
    """A knowledge base that finds nothing (what a service without one retrieves)."""

    def search(self, query: str, limit: int = 5) -> Sequence[Passage]:
        return []


@dataclass
class Scripted:
    """A chat service the composition root built on a scripted scenario."""

    service: ChatService
    provider: ScriptedProvider
    """The scenario's model (the service may call it through a wrapper)."""

    @property
    def tools(self) -> dict[str, ScriptedTool]:
        """The scripted tools the service calls, by name."""
        return {n: t for n, t in self.service.tools.items() if isinstance(t, ScriptedTool)}

    def release(self) -> None:
        """Unblock every step of the model and of the scripted tools that hangs."""
        self.provider.release()
        for tool in self.tools.values():
            tool.release()


class FixedPassages:
    """A knowledge retriever that finds the given passages for any question (a port fake)."""

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)

    def search(self, query: str, limit: int = 5) -> Sequence[Passage]:
        return self.passages[:limit]


@contextmanager
def scripted(
    services: Services,
    scenario: Mapping[str, Any] | str,
    *,
    wrap: Callable[[ScriptedProvider], ModelProvider] | None = None,
    tools: Mapping[str, Tool] | None = None,
    clock: Clock | None = None,
    knowledge: KnowledgeRetriever | None = None,
    config: ChatConfig | None = None,
) -> Iterator[Scripted]:
    """A service on ``services``' store with ``scenario`` (a mapping, or a name) as its model.

    ``wrap`` puts a fake around the scripted model; the scenario's tools serve unless ``tools``
    replace them; the wall clock, no knowledge base and the scenario's limits over ``config``
    unless given. On exit every hang is released and the worker pool drained, so late results
    are recorded before whatever the test does next.
    """
    if isinstance(scenario, str):
        scenario = load_scenario(SCENARIOS / f"{scenario}.yaml")
    provider = ScriptedProvider(dict(scenario))
    overrides = Overrides(
        store=services.store,
        provider=provider if wrap is None else wrap(provider),
        tools=scripted_tools(provider.scenario, provider.play) if tools is None else tools,
        clock=clock or SystemClock(),
        knowledge=knowledge or NoKnowledge(),
        config=chat_config(provider.scenario, config),
        heartbeat=False,
    )
    with bootstrap(services.settings, overrides=overrides) as built:
        made = Scripted(built.chat, provider)
        try:
            yield made
        finally:
            made.release()
            made.service.pool.shutdown(wait=True)


def ask_scripted(
    services: Services,
    scenario: Mapping[str, Any] | str,
    session: str = "session-1",
    query: str = "why is checkout slow?",
    **parts: Any,
) -> ChatResult:
    """Ask once with ``scenario`` as the model (``parts`` as for :func:`scripted`)."""
    with scripted(services, scenario, **parts) as made:
        return made.service.ask(session, query)


@contextmanager
def fresh_sqlite(**settings: Any) -> Iterator[Services]:
    """The composition root on a new SQLite file, deleted afterwards (one per generated example).

    ``settings`` are further :class:`~infrastructure.settings.Settings` fields.
    """
    with tempfile.TemporaryDirectory() as folder:
        given = Settings(database_url=f"sqlite:///{Path(folder) / 'harness.db'}", **settings)
        with bootstrap(given, create=True, overrides=Overrides(heartbeat=False)) as services:
            yield services


@contextmanager
def tampered_routing_decision(engine: Engine) -> Iterator[int]:
    """A routing decision's stored state edited in the SQLite file (its position), then undone."""
    with engine.connect() as connection:
        position, state = connection.execute(
            text(
                "SELECT rowid, state FROM stored_events"
                " WHERE topic = 'domain.run:Run.RoutingDecision' LIMIT 1"
            )
        ).one()
    edited = json.loads(bytes(state))
    edited["error"] = "rewritten in the database"
    update = text("UPDATE stored_events SET state = :state WHERE rowid = :position")
    with engine.begin() as connection:
        new = json.dumps(edited, separators=(",", ":")).encode()
        connection.execute(update, {"state": new, "position": position})
    try:
        yield int(position)
    finally:
        with engine.begin() as connection:
            connection.execute(update, {"state": bytes(state), "position": position})
