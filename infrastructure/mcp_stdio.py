"""The stdio transport to an MCP server, with every message bounded before it is parsed.

The SDK's ``mcp.client.stdio.stdio_client`` reads whole lines of any size: a 6 MB tool listing
or a 100 MB result is read and parsed in full (a worker peaked at 730 MB). This mirrors it — the
same process start, pipes, and spec-ordered shutdown (the SDK's own helpers do those) — but reads
stdout in chunks through :class:`~infrastructure.mcp_lines.BoundedLines`: a line over
``max_bytes`` is skipped as it streams, never held whole, and the request it answered fails at
once with the harness's TOO_LARGE error (``infrastructure.mcp_errors`` makes that SIZE). A line
over the limit that names no request is logged and dropped; its request ends at its timeout.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, TextIO

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.client.stdio import (
    _WRITER_FLUSH_TIMEOUT,
    _aclose_all,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

from infrastructure.mcp_lines import BoundedLines, Oversized, too_large

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from mcp import StdioServerParameters
    from mcp.client._transport import TransportStreams
    from mcp.os.win32.utilities import ServerProcess

log = logging.getLogger(__name__)


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters, errlog: TextIO, max_bytes: int
) -> AsyncGenerator[TransportStreams, None]:
    """Start ``server`` and talk to it over stdin/stdout; no message over ``max_bytes`` is read."""
    command = await _get_executable_command(server.command)
    process = await _create_platform_compatible_process(
        command=command,
        args=server.args,
        env=get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    pipes = _Pipes(process, server, max_bytes)  # no await before the task group: see the SDK
    async with anyio.create_task_group() as group:
        group.start_soon(pipes.read_stdout)
        group.start_soon(pipes.write_stdin)
        try:
            yield pipes.read_stream, pipes.write_stream
        finally:
            pipes.shutting_down = True
            with anyio.CancelScope(shield=True):  # every wait inside is bounded
                await pipes.shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


class _Pipes:
    """The two pipe tasks between a server process and the session's in-memory streams."""

    def __init__(self, process: ServerProcess, server: StdioServerParameters, limit: int) -> None:
        self.process = process
        self.server = server
        self.limit = limit
        self.shutting_down = False
        self.writer_done = anyio.Event()
        self.reader, self.read_stream = anyio.create_memory_object_stream[
            SessionMessage | Exception
        ](0)
        self.write_stream, self.writes = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_stdout(self) -> None:
        """Each line of stdout as a message (or a parse error, as the SDK does), bounded."""
        assert self.process.stdout, "the server process is spawned with pipes"
        lines = BoundedLines(self.limit)
        try:
            async with self.reader:
                try:
                    async for chunk in self.process.stdout:
                        for line in lines.feed(chunk):
                            message = self._message(line)
                            if message is None:
                                continue
                            try:
                                await self.reader.send(message)
                            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                                return
                finally:
                    await _drain_stdout(self.process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not self.shutting_down:
                log.warning("reading from an MCP server's stdout failed mid-session")

    def _message(self, line: bytes | Oversized) -> SessionMessage | Exception | None:
        if isinstance(line, Oversized):
            error = too_large(line, self.limit)
            if error is None:
                log.warning(
                    "an MCP server sent %d bytes in one message naming no request;"
                    " skipped (max_message_bytes is %d)",
                    line.size,
                    self.limit,
                )
                return None
            return SessionMessage(error)
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as error:
            return error

    async def write_stdin(self) -> None:
        """Each message of the session as one line on the server's stdin."""
        assert self.process.stdin, "the server process is spawned with pipes"
        encoding, errors = self.server.encoding, self.server.encoding_error_handler
        try:
            async with self.writes:
                async for message in self.writes:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await self.process.stdin.send((text + "\n").encode(encoding, errors))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await self.reader.aclose()  # the session sees the end, not a request hanging
        finally:
            self.writer_done.set()

    async def shutdown(self) -> None:
        """Stop traffic, flush, stop the server (the SDK's sequence), release the streams."""
        self.read_stream.close()
        self.write_stream.close()
        with anyio.move_on_after(_WRITER_FLUSH_TIMEOUT) as flush:
            await self.writer_done.wait()
        if flush.cancelled_caught:
            await anyio.lowlevel.cancel_shielded_checkpoint()
        await _stop_server_process(self.process)
        await _aclose_all(self.read_stream, self.write_stream, self.reader, self.writes)
        await anyio.lowlevel.checkpoint()  # unblocked tasks exit by their except paths first
