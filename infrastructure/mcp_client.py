"""One MCP server's session, owned by an event loop in a thread of its own, restarted when broken.

The official SDK's client is async (anyio). The harness calls tools from worker threads, so each
server gets one background thread running an asyncio loop: a supervisor task opens the
transport and the session (stdio child process, or Streamable HTTP) and holds them until the
connection closes or breaks (a stdio server through ``infrastructure.mcp_stdio``, which reads no
message over ``max_message_bytes``); calls are submitted to that loop and awaited with the call's
timeout. A call that fails because the connection broke, hung or answered garbage marks the
connection broken; the next call (or the next listing) starts it again and lists its tools anew.
A stdio server's stderr goes to its log file (``infrastructure.mcp_stderr``), or nowhere.

The SDK is imported when a server is first started, not with this module: it takes about a third
of a second to import, and every process that assembles its tools imports this module, most of
them with no MCP server configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from domain.redactor import Redactor
from domain.values import McpSession
from infrastructure.endpoints import host_port
from infrastructure.mcp_errors import McpServerError, brief, failure
from infrastructure.mcp_stderr import StderrLog
from infrastructure.tool_config import (
    HttpServer,
    StdioServer,
    from_environment,
    server_environment,
    server_secrets,
)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping
    from pathlib import Path

    from mcp import Client
    from mcp_types import CallToolResult, Tool

    from infrastructure.mcp_http import SessionSeen

log = logging.getLogger(__name__)

__all__ = ["McpConnection", "McpServerError"]

CLOSE_WAIT_S = 5.0
"""Seconds a closing session is given to end (and a stdio server's process to exit)."""
_MAX_PAGES = 20
"""Pages of a tool listing read at most: a server that pages on and on is not listed forever."""

START_FLOOR_S = 15.0
"""The least a server's start (process, handshake, tool listing) is given, whatever its call
timeout: a Python server's imports alone can take seconds on a busy machine."""


class McpConnection:
    """A restartable session with one configured MCP server; thread-safe."""

    def __init__(
        self,
        name: str,
        config: StdioServer | HttpServer,
        environ: Mapping[str, str] | None = None,
        stderr_log: Path | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        """Prepare (not start) the connection to server ``name``; its stderr to ``stderr_log``.

        ``redactor`` hides secrets in the stderr lines (by default, the values it is handed).
        """
        self.name = name
        self.stderr_log = stderr_log if isinstance(config, StdioServer) else None
        """Where a stdio server's stderr goes (None: nowhere; an HTTP server has none)."""
        self._stderr: StderrLog | None = None
        self.config = config
        self.timeout = config.call_timeout
        self.start_timeout = max(config.call_timeout, START_FLOOR_S)
        self._environ = dict(os.environ if environ is None else environ)
        self.redactor = redactor or Redactor.of(server_secrets(config, self._environ))
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Client | None = None
        self._stop: asyncio.Event | None = None
        self._ended: Future[None] | None = None
        self._garbled = ""
        """What the server wrote that is not MCP, if it did (its session is then closed)."""
        self._seen: SessionSeen | None = None
        """The session id an HTTP server gave the current session (None: stdio, or not yet)."""
        self.tools: dict[str, Tool] = {}
        """The server's tools as last listed, by name (refreshed at each start)."""
        self.starts = 0

    def start(self) -> dict[str, Tool]:
        """Connect (again, if broken) and list the server's tools; raise McpServerError."""
        with self._lock:
            if self._client is not None and not self._broken():
                return self.tools
            self._shutdown()
            try:
                self._boot()
            except McpServerError as error:  # it may quote the server: hide what it was handed
                said = self.redactor.hide(str(error))
                raise McpServerError(said, broken=error.broken, code=error.code) from None
            return self.tools

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        """Call ``tool``; McpServerError (and a restart next time) when the server fails."""
        self.start()
        client = self._client
        if client is None:  # pragma: no cover - start() either sets it or raises
            raise McpServerError(f"MCP server {self.name!r} is not connected")
        try:
            result: CallToolResult = self._submit(
                lambda: client.call_tool(tool, arguments, timeout), timeout
            )
            return result
        except McpServerError as error:
            if error.broken:
                self.mark_broken()
            raise

    def session(self) -> McpSession:
        """The session calls go over now: the server, its transport, what it negotiated.

        Read without I/O: the protocol version and session id are '' while none is open.
        """
        version, client = "", self._client
        if client is not None:
            with contextlib.suppress(Exception):  # closing meanwhile: no version to tell
                version = str(client.protocol_version)
        if isinstance(self.config, StdioServer):
            return McpSession(self.name, "stdio", protocol_version=version)
        host, port = host_port(self.config.url)
        session_id = self._seen.id if self._seen is not None and client is not None else ""
        return McpSession(self.name, "http", host, port, version, session_id)

    def mark_broken(self) -> None:
        """Have the next call start the server again (the current session is closed then)."""
        with self._lock:
            if self._stop is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(self._stop.set)

    def close(self) -> None:
        """Close the session (ending a stdio server's process) and stop the thread."""
        with self._lock:
            self._shutdown()
            stderr, self._stderr = self._stderr, None
            if stderr is not None:
                stderr.close()

    def _open_stderr_log(self) -> None:
        """Open the stderr log (once); McpServerError naming the file when it cannot be."""
        if self._stderr is not None or self.stderr_log is None:
            return
        try:
            self._stderr = StderrLog(self.stderr_log, redact=self.redactor.hide)
        except OSError as error:
            raise McpServerError(
                f"cannot write its stderr log {self.stderr_log} ({error.strerror or error});"
                " set log_dir in HARNESS_TOOLS_CONFIG"
            ) from None

    def _broken(self) -> bool:
        """Whether the session ended or was told to stop, so the next call starts it again."""
        return self._ended is None or self._ended.done() or bool(self._stop and self._stop.is_set())

    def _boot(self) -> None:
        """Start the loop thread and the session, then list the tools, within the start bound."""
        self._open_stderr_log()
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=loop.run_forever, name=f"harness-mcp-{self.name}", daemon=True
        )
        thread.start()
        self._loop, self._thread = loop, thread
        ready: Future[None] = Future()
        self._garbled = ""
        self._ended = asyncio.run_coroutine_threadsafe(self._supervise(ready), loop)
        try:
            ready.result(self.start_timeout)
            self.tools = self._submit(self._list, self.start_timeout)
        except FutureTimeout:
            self._shutdown()
            raise McpServerError(
                f"MCP server {self.name!r} did not start within {self.start_timeout:g} s"
            ) from None
        except McpServerError:
            self._shutdown()
            raise
        except Exception as error:
            self._shutdown()
            raise McpServerError(
                f"MCP server {self.name!r} failed to start: {brief(error)}"
            ) from None
        self.starts += 1

    async def _supervise(self, ready: Future[None]) -> None:
        """Open the transport and session, hold them until told to stop or the transport ends."""
        from mcp import Client

        self._stop = asyncio.Event()
        try:
            async with contextlib.AsyncExitStack() as stack:
                target = await self._target(stack)
                client = await stack.enter_async_context(
                    Client(
                        target,
                        cache=None,
                        read_timeout_seconds=self.timeout,
                        message_handler=self._on_message,
                    )
                )
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as error:
            if not ready.done():  # the starter reports it
                ready.set_exception(error)
            else:
                log.warning("MCP server %r: connection ended: %s", self.name, brief(error))
        finally:
            self._client = None

    async def _on_message(self, message: object) -> None:
        """Close the session on a transport fault (a line that is not JSON-RPC).

        It cannot be trusted to pair answers with calls any more; the calls waiting fail MALFORMED.
        """
        if isinstance(message, Exception):
            self._garbled = brief(message)
            if self._stop is not None:
                self._stop.set()

    async def _target(self, stack: contextlib.AsyncExitStack) -> Any:
        config = self.config
        if isinstance(config, StdioServer):
            from mcp import StdioServerParameters

            from infrastructure.mcp_stdio import bounded_stdio_client

            env = server_environment(config, self._environ)
            parameters = StdioServerParameters(
                command=config.command, args=list(config.args), env=env, cwd=config.cwd
            )
            if self._stderr is not None:
                errlog = self._stderr.writer
            else:
                errlog = stack.enter_context(open(os.devnull, "w"))
            return bounded_stdio_client(parameters, errlog, config.max_message_bytes)
        from mcp.client.streamable_http import streamable_http_client

        from infrastructure.mcp_http import SessionSeen, bounded_http_client

        headers = from_environment(config.headers_from_env, "headers_from_env", self._environ)
        limit = config.max_message_bytes
        self._seen = SessionSeen()
        http = await stack.enter_async_context(bounded_http_client(headers, limit, self._seen))
        return streamable_http_client(config.url, http_client=http, max_sse_event_size=limit)

    async def _list(self) -> dict[str, Tool]:
        """The server's tools by name, from every page of its listing (at most _MAX_PAGES)."""
        client = self._client
        assert client is not None
        tools: dict[str, Tool] = {}
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools |= {tool.name: tool for tool in page.tools}
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def _submit(self, make: Callable[[], Awaitable[Any]], timeout: float) -> Any:
        """Run ``make()`` on the loop; McpServerError naming what went wrong."""
        loop = self._loop
        if loop is None:
            raise McpServerError(f"MCP server {self.name!r} is not connected")

        async def bounded() -> Any:
            return await asyncio.wait_for(make(), timeout)

        future = asyncio.run_coroutine_threadsafe(bounded(), loop)
        try:
            return future.result(timeout + 1.0)
        except (TimeoutError, FutureTimeout):
            future.cancel()
            raise McpServerError(
                f"MCP server {self.name!r} did not answer within {timeout:g} s; it is restarted"
                " for the next call",
                code="TIMEOUT",
            ) from None
        except Exception as error:
            if self._garbled:
                raise McpServerError(
                    f"MCP server {self.name!r} wrote something that is not MCP"
                    f" ({self._garbled[:200]}); it is restarted for the next call",
                    code="MALFORMED",
                ) from None
            raise failure(self.name, error) from None

    def _shutdown(self) -> None:
        """Stop the supervisor (closing the session) and the loop; wait a bounded time."""
        loop, thread, ended = self._loop, self._thread, self._ended
        self._loop = self._thread = self._ended = None
        self._client = None
        if loop is None:
            return
        if self._stop is not None:
            loop.call_soon_threadsafe(self._stop.set)
        if ended is not None:
            with contextlib.suppress(Exception):
                ended.result(CLOSE_WAIT_S)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(CLOSE_WAIT_S)
        if not loop.is_running():
            loop.close()
