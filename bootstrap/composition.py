"""The composition root: :func:`bootstrap` opens what one process needs from ``Settings``.

The app's lifespan, every CLI command, the benches and the tests call it, so the event store
and the read side's engine are constructed here and nowhere else (one engine per process).
Tests and benches pass their own parts through :class:`Overrides` (a scripted model, fake
tools, a fixed clock), as cosmicpython's ``bootstrap`` does. It is the one module below ``api``
that may import every layer (tests/unit/test_layers.py), and nothing below ``api`` imports it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property, partial
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from application.chat import ChatService
from application.port_calls import PortCalls
from application.ports import StoreUnavailableError
from application.recovery import RecoverySweep
from application.turns import PreviousTurns
from bootstrap.run_config import chat_config, chat_config_of
from infrastructure.clock import SystemClock
from infrastructure.database import create_sql_engine
from infrastructure.eventstore import init_store, open_store
from infrastructure.knowledge import SqlKnowledgeRetriever, create_knowledge_tables, index_runbooks
from infrastructure.leases import Heartbeat, SqlLeases, start_heartbeat
from infrastructure.model_provider import configured_provider
from infrastructure.model_scripted import ScriptedProvider
from infrastructure.ops_data import create_ops_tables, load_sample
from infrastructure.otlp import configured_endpoint, otlp_exporter
from infrastructure.pg_listen import PgNotifyWake, read_channel
from infrastructure.read_tables import create_read_tables
from infrastructure.run_ends import hear_run_ends
from infrastructure.settings import ConfigurationError
from infrastructure.tool_sources import assemble_tools
from projections.live import LiveProjections
from projections.otel_follower import follow_traces
from projections.queries import last_turn_run, unfinished_runs
from projections.runner import Projector, brief

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping
    from uuid import UUID

    from sqlalchemy import Engine

    from application.chat import ChatConfig
    from application.ports import Clock, KnowledgeRetriever, ModelProvider, Tool
    from application.recovery import Unfinished
    from application.store import HarnessStore
    from infrastructure.settings import Settings
    from infrastructure.tool_sources import ToolSources
    from projections.otel_follower import TraceFollower


@dataclass(frozen=True)
class Overrides:
    """Parts a caller supplies instead of the configured ones; unset ones come from settings."""

    store: HarnessStore | None = None
    """An open store (its opener closes it); otherwise the configured one is opened."""
    provider: ModelProvider | None = None
    tools: Mapping[str, Tool] | None = None
    """Replace the built-in tools (``{}``: none); a scripted provider's tools are added anyway."""
    clock: Clock | None = None
    knowledge: KnowledgeRetriever | None = None
    config: ChatConfig | None = None
    """Run limits instead of the configured ones (a scripted scenario's still apply over them)."""
    heartbeat: bool = True
    """Give this process a worker lease when it executes runs (off for in-process tests)."""


class Services:
    """What one process opened: the store, one engine, and the parts built on them on demand.

    Use it as a context manager, or call :meth:`close`; parts close in reverse order.
    """

    def __init__(
        self, settings: Settings, store: HarnessStore, engine: Engine, overrides: Overrides
    ) -> None:
        """Hold ``store`` and ``engine``; nothing else is built until asked for."""
        self.settings = settings
        self.store = store
        self.engine = engine
        self.overrides = overrides
        self.sources: ToolSources | None = None  # once tools() assembled them
        self.heartbeat: Heartbeat | None = None
        """This process's worker lease, kept fresh while it may execute runs."""
        self._closers: list[Callable[[], None]] = []
        if overrides.store is None:
            self._closers.append(store.close)
        self._closers.append(engine.dispose)

    def defer(self, close: Callable[[], None]) -> None:
        """Run ``close`` when the services close (before what was opened earlier)."""
        self._closers.append(close)

    def close(self) -> None:
        """Close everything opened, newest first."""
        while self._closers:
            self._closers.pop()()

    def __enter__(self) -> Services:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @cached_property
    def chat(self) -> ChatService:
        """The service that starts and executes runs (HARNESS_MODEL picks the model)."""
        given = self.overrides
        tools: dict[str, Tool] = dict(self.tools() if given.tools is None else given.tools)
        config = given.config or chat_config_of(self.settings)
        provider = given.provider or self._provider()
        if isinstance(provider, ScriptedProvider):
            tools |= provider.tools()  # their results, like the steps, start afresh per run
            config = chat_config(provider.scenario, config)
        retriever = given.knowledge or SqlKnowledgeRetriever(self.engine)
        threads = PortCalls(self.settings.max_stuck_calls, self.settings.stuck_after)
        clock = given.clock or SystemClock()
        service = ChatService(self.store, provider, tools, clock, retriever, config, threads)
        self.defer(lambda: service.pool.shutdown(wait=False))
        if (stop_hearing := hear_run_ends(self.settings, self.store)) is not None:
            self.defer(stop_hearing)  # a run hears of a cancel instead of reading (PostgreSQL)
        if given.heartbeat:
            self.heartbeat = start_heartbeat(self.settings, self.store, self.engine)
            self.defer(self.heartbeat.close)  # the runs this process starts name its worker
        return service

    def tools(self, *, announce: bool = True) -> dict[str, Tool]:
        """The configured tools (HARNESS_TOOLS_CONFIG; unset: the built-ins), closed with us.

        ``announce`` logs one line per source: what was admitted, what was refused and why.
        """
        sources = assemble_tools(self.settings.tools_config, self.engine, announce=announce)
        self.defer(sources.close)  # MCP sessions; a ConfigurationError left nothing open
        self.sources = sources
        return sources.tools

    def _provider(self) -> ModelProvider:
        try:  # checked with the settings; again for settings made without their checks
            provider, close = configured_provider(self.settings)
        except ValueError as error:  # a scenario that cannot be played, a refused base URL
            raise ConfigurationError(str(error)) from None
        if close is not None:
            self.defer(close)
        return provider

    def projector(self, batch_size: int | None = None) -> Projector:
        """A projector over this store and engine (it follows nothing until asked)."""
        size = self.settings.projection_batch if batch_size is None else batch_size
        return Projector(self.store, self.engine, batch_size=size)

    def live_projections(
        self, *, poll_interval: float | None = None, batch_size: int | None = None
    ) -> LiveProjections:
        """The projections following the log, woken by LISTEN on PostgreSQL (not started).

        ``poll_interval`` and ``batch_size`` default to the configured ones.
        """
        settings = self.settings
        postgres = settings.database.kind == "postgres"
        channel = str(getattr(self.store.recorder, "channel_name", ""))
        return LiveProjections(
            self.store,
            self.engine,
            poll_interval=settings.projection_poll if poll_interval is None else poll_interval,
            batch_size=settings.projection_batch if batch_size is None else batch_size,
            notify_channel=read_channel(settings) if postgres else None,
            wake_source=partial(PgNotifyWake, settings, channel) if postgres else None,
        )

    def trace_follower(self, retry: tuple[float, float] | None = None) -> TraceFollower | None:
        """The live trace exporter, started, when an OTLP endpoint is configured (else None).

        ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` turn it on;
        ``retry`` is its first and longest wait after a failure (None: its defaults).
        """
        if configured_endpoint(os.environ) is None:
            return None
        poll = self.settings.projection_poll
        follower = follow_traces(self.store, self.engine, otlp_exporter(), poll, retry)
        self.defer(follower.close)
        return follower

    def recovery_sweep(
        self, executing: Callable[[], Collection[UUID]] | None = None
    ) -> RecoverySweep:
        """A sweep of the store's runs; a service worker passes the runs it is ``executing``.

        The candidates are the runs the read side shows unfinished; each is decided on its own
        stream, so a lagging read side only delays a run's recovery to a later sweep.
        """

        def candidates() -> list[Unfinished]:
            with self.engine.connect() as connection:
                return unfinished_runs(connection)

        return RecoverySweep(
            self.store,
            SqlLeases(self.engine),
            candidates,
            self.overrides.clock or SystemClock(),
            self.settings.worker_lease_ttl,
            me=self.store.worker,
            executing=executing,
        )

    def previous_turns(self, projector: Projector) -> PreviousTurns:
        """The PreviousTurn policy over the session table ``projector`` keeps current."""

        def last_turn(session_id: str) -> str | None:
            with self.engine.connect() as connection:
                return last_turn_run(connection, session_id)

        def caught_up(position: int) -> None:
            projector.wait_for(position, self.settings.read_wait, ["session_turn"])

        return PreviousTurns(self.store, last_turn, caught_up)


def bootstrap(
    settings: Settings,
    *,
    create: bool = False,
    sample: bool = False,
    overrides: Overrides | None = None,
) -> Services:
    """Open the configured store and one engine; ``create`` makes the tables first.

    Without ``create`` nothing is created, not even a file: a missing store raises
    StoreNotInitialisedError naming it. ``create`` makes the event tables (and the schema on
    PostgreSQL), the read tables and the lease table, and is safe to repeat; ``sample`` loads
    the sample operations data and indexes the runbooks too.
    """
    given = overrides or Overrides()
    if given.store is not None:
        store = given.store
    else:
        store = init_store(settings) if create else open_store(settings)
    try:
        services = Services(settings, store, create_sql_engine(settings), given)
    except BaseException:
        if given.store is None:
            store.close()
        raise
    try:
        if create:
            init_read_side(services)
        if sample:
            load_sample_data(services)
    except BaseException:
        services.close()
        raise
    return services


def init_read_side(services: Services) -> None:
    """Create the read tables and the lease table (workers only check that they exist)."""
    try:
        create_read_tables(services.engine)
        SqlLeases(services.engine).create()
    except SQLAlchemyError as error:
        where = services.settings.database.describe()
        raise StoreUnavailableError(
            f"cannot create the read tables in {where}: {brief(error)}"
        ) from None


def load_sample_data(services: Services) -> dict[str, int]:
    """Create and fill the sample operations tables and the runbook index (idempotent)."""
    engine = services.engine
    try:
        create_ops_tables(engine)
        counts = load_sample(engine)
        create_knowledge_tables(engine)
        counts["runbook_passages"] = index_runbooks(engine)
    except (SQLAlchemyError, OSError) as error:
        where = services.settings.database.describe()
        raise StoreUnavailableError(
            f"cannot load the sample data into {where}: {brief(error)}"
        ) from None
    return counts
