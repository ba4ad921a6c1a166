"""The composition root: a ChatService, live projections and recovery from ``Settings``.

It is the one module below ``api`` that may import every layer (tests/unit/test_layers.py), and
nothing below ``api`` imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from application.chat import ChatConfig, ChatService
from application.recovery import RecoverySweep
from domain.grounding import GroundingRules
from domain.values import Budget
from infrastructure.database import create_sql_engine
from infrastructure.knowledge import (
    SqlKnowledgeRetriever,
    create_knowledge_tables,
    index_runbooks,
)
from infrastructure.leases import Heartbeat, SqlLeases, start_heartbeat
from infrastructure.model_scripted import ScriptedProvider, load_scenario, scenario_limits
from infrastructure.ops_data import create_ops_tables, load_sample
from infrastructure.pg_listen import PgNotifyWake, read_channel
from infrastructure.settings import ConfigurationError
from infrastructure.tools import builtin_tools
from projections.live import LiveProjections
from projections.queries import unfinished_runs

if TYPE_CHECKING:
    from collections.abc import Callable, Collection
    from uuid import UUID

    from sqlalchemy import Engine

    from application.ports import ModelProvider, Tool
    from application.recovery import Unfinished
    from application.store import HarnessStore
    from infrastructure.settings import Settings


class SystemClock:
    """The wall clock, timezone-aware."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)


@dataclass
class Runtime:
    """Everything a process needs to execute runs; close it when done."""

    service: ChatService
    engine: Engine
    closers: list[Any] = field(default_factory=list)
    heartbeat: Heartbeat | None = None
    """This process's worker lease, kept fresh while the runtime is open."""

    def close(self) -> None:
        """Release threads, connections and provider clients."""
        self.service.pool.shutdown(wait=False, cancel_futures=True)
        for closer in self.closers:
            closer()
        self.engine.dispose()


def build_runtime(settings: Settings, store: HarnessStore) -> Runtime:
    """Wire provider, tools, knowledge and limits from settings (HARNESS_MODEL picks the model)."""
    engine = create_sql_engine(settings)
    tools: dict[str, Tool] = {t.name: t for t in builtin_tools(engine)}
    config = ChatConfig(
        deadline_s=settings.run_deadline,
        limits=Budget(
            settings.budget_model_calls,
            settings.budget_tool_calls,
            settings.budget_tokens,
            settings.budget_bytes,
        ),
        model_timeout_s=settings.model_timeout,
        grounding=GroundingRules(settings.excerpt_min_words, settings.excerpt_min_chars),
    )
    provider, closers = _provider(settings)
    if isinstance(provider, ScriptedProvider):
        tools |= provider.tools()  # their results, like the steps, start afresh per run
        config = chat_config(provider.scenario, config)
        closers.append(provider.release)
    service = ChatService(
        store, provider, tools, SystemClock(), SqlKnowledgeRetriever(engine), config
    )
    heartbeat = start_heartbeat(settings, store, engine)  # the runs it starts name this worker
    closers.append(heartbeat.close)
    return Runtime(service, engine, closers, heartbeat)


def _provider(settings: Settings) -> tuple[ModelProvider, list[Any]]:
    name = settings.model
    if name.startswith("scripted:"):
        return ScriptedProvider(load_scenario(name.removeprefix("scripted:"))), []
    if name == "openai":
        from infrastructure.model_openai import OpenAICompatibleProvider

        provider = OpenAICompatibleProvider.from_settings(settings)
        return provider, [provider.close]
    if name == "offline":
        from infrastructure.model_offline import OfflineProvider

        return OfflineProvider(), []
    raise ConfigurationError(
        f"HARNESS_MODEL={name!r} is not a model provider: use offline, scripted:PATH or openai"
    )


def load_sample_data(settings: Settings) -> dict[str, int]:
    """Create and fill the sample operations tables and the runbook index (idempotent)."""
    engine = create_sql_engine(settings)
    try:
        create_ops_tables(engine)
        counts = load_sample(engine)
        create_knowledge_tables(engine)
        counts["runbook_passages"] = index_runbooks(engine)
        return counts
    finally:
        engine.dispose()


def chat_config(scenario: dict[str, Any], base: ChatConfig | None = None) -> ChatConfig:
    """A scripted scenario's run limits (``budget``, ``deadline_s``) over ``base``."""
    base = base or ChatConfig()
    limits, deadline_s = scenario_limits(scenario, base.limits, base.deadline_s)
    return replace(base, limits=limits, deadline_s=deadline_s)


def live_projections(
    settings: Settings,
    store: HarnessStore,
    engine: Engine,
    *,
    poll_interval: float | None = None,
    batch_size: int | None = None,
) -> LiveProjections:
    """The projections following ``store``'s log, woken by LISTEN on PostgreSQL.

    ``poll_interval`` and ``batch_size`` default to the configured ones.
    """
    postgres = settings.database.kind == "postgres"
    channel = str(getattr(store.recorder, "channel_name", ""))
    return LiveProjections(
        store,
        engine,
        poll_interval=settings.projection_poll if poll_interval is None else poll_interval,
        batch_size=settings.projection_batch if batch_size is None else batch_size,
        notify_channel=read_channel(settings) if postgres else None,
        wake_source=partial(PgNotifyWake, settings, channel) if postgres else None,
    )


def recovery_sweep(
    settings: Settings,
    store: HarnessStore,
    engine: Engine,
    executing: Callable[[], Collection[UUID]] | None = None,
) -> RecoverySweep:
    """A sweep of ``store``'s runs; a service worker passes the runs it is ``executing``.

    The candidates are the runs the read side shows unfinished; each is decided on its own
    stream, so a lagging read side only delays a run's recovery to a later sweep.
    """

    def candidates() -> list[Unfinished]:
        with engine.connect() as connection:
            return unfinished_runs(connection)

    return RecoverySweep(
        store,
        SqlLeases(engine),
        candidates,
        SystemClock(),
        settings.worker_lease_ttl,
        me=store.worker,
        executing=executing,
    )
