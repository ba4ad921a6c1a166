"""The peer: LangGraph's prebuilt ReAct agent, a fake zero-latency model, a checkpointer.

Imported only when the ``bench`` extra is installed (``bench.peers.__main__`` checks first).
"""

from __future__ import annotations

import inspect
import sqlite3
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from uuid import uuid4

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent
from langgraph.pregel import Pregel

from bench.common import Place, pg_conninfo
from bench.peers import TOOL_CALLS

DURABILITIES = ("async", "sync")
"""LangGraph's default durability (``async``) and the one that commits before each next step."""


class FakeToolCaller(BaseChatModel):  # type: ignore[misc]  # Any: see the mypy overrides
    """A chat model with no latency: one tool call per turn, :data:`TOOL_CALLS` turns, an answer."""

    @property
    def _llm_type(self) -> str:
        return "fake-tool-caller"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        made = sum(isinstance(message, ToolMessage) for message in messages)
        if made < TOOL_CALLS:
            call = {"name": "lookup", "args": {"step": made}, "id": f"call_{made}"}
            reply = AIMessage(content="", tool_calls=[call])
        else:
            reply = AIMessage(content=f"answer after {made} tool calls")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolCaller:
        """The model already knows its one tool."""
        return self


@tool  # type: ignore[untyped-decorator]
def lookup(step: int) -> str:
    """Return the record of one step (no I/O: the peer's tool costs nothing)."""
    return f"record {step}"


def has_durability() -> bool:
    """Whether the installed LangGraph's ``invoke`` takes ``durability``."""
    return "durability" in inspect.signature(Pregel.invoke).parameters


@contextmanager
def saver(where: Place) -> Iterator[Any]:
    """The checkpointer of ``where``'s backend: a SQLite file, or tables in its PG schema."""
    if where.backend == "sqlite":
        connection = sqlite3.connect(f"{where.directory}/langgraph.db", check_same_thread=False)
        try:
            yield SqliteSaver(connection)
        finally:
            connection.close()
        return
    conninfo = f"{pg_conninfo()} options='-c search_path={where.schema}'"
    with PostgresSaver.from_conn_string(conninfo) as postgres:
        postgres.setup()
        yield postgres


def runners(checkpointer: Any, question: str) -> dict[str, Callable[[], object]]:
    """One agent run per call (a fresh thread each), per durability the installed version has."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent moved to langchain.agents in 1.0
        agent = create_react_agent(FakeToolCaller(), [lookup], checkpointer=checkpointer)
    modes: tuple[str | None, ...] = DURABILITIES if has_durability() else (None,)

    def runner(mode: str | None) -> Callable[[], object]:
        def run() -> object:
            config = {"configurable": {"thread_id": uuid4().hex}}
            extra = {"durability": mode} if mode else {}
            state = agent.invoke({"messages": [("user", question)]}, config, **extra)
            if len(state["messages"]) != 2 * TOOL_CALLS + 2:
                raise RuntimeError(f"the peer's run went wrong: {state['messages'][-1]!r}")
            return state

        return run

    return {
        ("langgraph" if mode in (None, "async") else f"langgraph-{mode}"): runner(mode)
        for mode in modes
    }
