"""The peer: LangGraph's prebuilt ReAct agent, its model, its tools and a checkpointer.

With ``--model external`` its model is ``langchain_openai.ChatOpenAI`` pointed at the stub
(:mod:`bench.model_stub`), which plays it the tool calls and the answer of the harness's
diagnosis, and its tools are the harness's own sample-data tools (the same SQL, the same
results). With ``--model offline`` (the earlier comparison) its model is a fake in-process tool
caller and its one tool returns a constant. Model and tool seconds go to a
:class:`~bench.run.ports.PortTimer`, timed as the harness's are.

Imported only when the ``bench`` extra is installed (``bench.peers.__main__`` checks first).
"""

from __future__ import annotations

import inspect
import sqlite3
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from uuid import uuid4

import httpx2
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool, StructuredTool, tool
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent
from langgraph.pregel import Pregel

from bench.common import Place, pg_conninfo
from bench.model_external import time_http
from bench.model_stub import PEER_MODEL
from bench.peers import TOOL_CALLS

if TYPE_CHECKING:
    from application.ports import JSON
    from application.ports import Tool as HarnessTool
    from bench.run.ports import PortTimer

DURABILITIES = ("async", "sync")
"""LangGraph's default durability (``async``) and the one that commits before each next step."""


class FakeToolCaller(BaseChatModel):  # type: ignore[misc]  # Any: see the mypy overrides
    """A chat model with no latency: one tool call per turn, :data:`TOOL_CALLS` turns, an answer."""

    timer: Any = None
    """The :class:`~bench.run.ports.PortTimer` its calls are counted in."""

    @property
    def _llm_type(self) -> str:
        return "fake-tool-caller"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        began = time.perf_counter()
        made = sum(isinstance(message, ToolMessage) for message in messages)
        if made < TOOL_CALLS:
            call = {"name": "lookup", "args": {"step": made}, "id": f"call_{made}"}
            reply = AIMessage(content="", tool_calls=[call])
        else:
            reply = AIMessage(content=f"answer after {made} tool calls")
        self.timer.add_model(time.perf_counter() - began)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolCaller:
        """The model already knows its one tool."""
        return self


@tool  # type: ignore[untyped-decorator]
def lookup(step: int) -> str:
    """Return the record of one step (no I/O: the peer's tool costs nothing)."""
    return f"record {step}"


def harness_tool(inner: HarnessTool, timer: PortTimer) -> BaseTool:
    """One of the harness's tools as a LangChain tool: same name, schema and results, timed."""

    def run(**arguments: Any) -> str:
        began = time.perf_counter()
        try:
            output = inner.run(arguments)
        finally:
            timer.add_tool(time.perf_counter() - began)
        return "\n".join((*output.lines, *output.notes))

    schema: JSON = inner.parameters
    return StructuredTool.from_function(
        run, name=inner.name, description=inner.description, args_schema=dict(schema)
    )


def external_agent_parts(
    url: str, tools: dict[str, HarnessTool], timer: PortTimer
) -> tuple[BaseChatModel, list[BaseTool]]:
    """ChatOpenAI on the stub, its HTTP exchanges timed, and the harness's tools."""
    client = httpx2.Client()  # the openai client's own HTTP library, as the harness's
    time_http(client, timer.add_model)
    model = ChatOpenAI(
        model=PEER_MODEL, base_url=url, api_key="bench", max_retries=0, http_client=client
    )
    return model, [harness_tool(inner, timer) for inner in tools.values()]


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


def check(state: dict[str, Any]) -> None:
    """Refuse a run that did not make :data:`TOOL_CALLS` tool calls, each answered, then answer."""
    messages = state["messages"]
    failed = [m for m in messages if isinstance(m, ToolMessage) and m.status == "error"]
    if len(messages) != 2 * TOOL_CALLS + 2 or failed or not messages[-1].content:
        raise RuntimeError(f"the peer's run went wrong: {messages[-1]!r}")


def runners(
    checkpointer: Any, question: str, parts: tuple[BaseChatModel, list[BaseTool]]
) -> dict[str, Callable[[], object]]:
    """One agent run per call (a fresh thread each), per durability the installed version has."""
    model, tools = parts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent moved to langchain.agents in 1.0
        agent = create_react_agent(model, tools, checkpointer=checkpointer)
    modes: tuple[str | None, ...] = DURABILITIES if has_durability() else (None,)

    def runner(mode: str | None) -> Callable[[], object]:
        def run() -> object:
            config = {"configurable": {"thread_id": uuid4().hex}}
            extra = {"durability": mode} if mode else {}
            state = agent.invoke({"messages": [("user", question)]}, config, **extra)
            check(state)
            return state

        return run

    return {
        ("langgraph" if mode in (None, "async") else f"langgraph-{mode}"): runner(mode)
        for mode in modes
    }


def offline_agent_parts(timer: PortTimer) -> tuple[BaseChatModel, list[BaseTool]]:
    """The fake tool caller, counting its calls in ``timer``, and its one constant tool."""
    return FakeToolCaller(timer=timer), [lookup]
