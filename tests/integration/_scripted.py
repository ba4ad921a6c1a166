"""One run of a scripted scenario (a mapping) through ChatService, as a test drives it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from application.chat import ChatService
from infrastructure.composition import chat_config
from infrastructure.model_scripted import ScriptedProvider
from infrastructure.scripted_tools import scripted_tools

if TYPE_CHECKING:
    from application.chat import ChatResult
    from application.store import HarnessStore


class SystemClock:
    """The wall clock (a Clock for ChatService)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def ask_scripted(
    store: HarnessStore,
    scenario: dict[str, Any],
    session: str = "session-1",
    query: str = "why is checkout slow?",
) -> ChatResult:
    """Ask once with the scenario as the model and its tools; the worker pool is drained."""
    service = ChatService(
        store,
        ScriptedProvider(scenario),
        scripted_tools(scenario),
        SystemClock(),
        config=chat_config(scenario),
    )
    try:
        return service.ask(session, query)
    finally:
        service.pool.shutdown(wait=True)
