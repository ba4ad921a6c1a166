"""uvicorn's HTTP/1.1 protocol with a deadline for each request to arrive (headers and body).

uvicorn times a connection out only between requests (``timeout_keep_alive``, armed once a
response is complete). A client that opens a connection and then sends a request's headers or
its body a byte at a time (a "slow loris"), or nothing at all, holds a file descriptor and memory
for as long as it likes; a few thousand of them and the worker accepts no one else. Here each
request must have arrived whole within :data:`RequestClock.seconds` of its first byte (of the
connection, for the first): otherwise the connection is closed, with ``408 Request Timeout``
when part of the request had come and nothing of it had reached the app yet (a connection that
sent nothing is closed silently, as an idle one is). Once a request has arrived, the clock stops: a
response may take as long as it needs (an event stream lasts for the whole run).

The deadline is ``HARNESS_REQUEST_READ_TIMEOUT``, set by :func:`api.main.create_app` for the
process (one process serves one app). Serve with ``http=PROTOCOL`` (an import string, which
uvicorn's worker processes resolve too).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from infrastructure.settings import Settings

try:  # the C parser uvicorn itself prefers ("auto"), when it is installed
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol as _Base
except ImportError:  # pragma: no cover - httptools comes with uvicorn[standard]
    _Base = H11Protocol  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    import asyncio
    from asyncio import BaseTransport

log = logging.getLogger(__name__)

DEFAULT_SECONDS: float = Settings.model_fields["request_read_timeout"].default
"""Until :func:`set_request_deadline`: ``HARNESS_REQUEST_READ_TIMEOUT``'s default (one source)."""
_WHY = b"the request did not arrive whole in time\n"
TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(_WHY), _WHY)
)
"""The whole answer to a request that did not arrive in time (the connection closes after it)."""


class RequestClock:
    """Closes a connection whose request has not fully arrived within :attr:`seconds`."""

    seconds = DEFAULT_SECONDS
    """The deadline of every connection of this process (:func:`set_request_deadline`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, transport: asyncio.Transport) -> None:
        """Time requests on ``transport``; call :meth:`update` after the data of each read."""
        self.loop = loop
        self.transport = transport
        self.handle: asyncio.TimerHandle | None = None
        self.pending = True
        """Whether the request being read has reached the app not yet at all (no cycle)."""
        self.started = False
        """Whether any byte of the request being timed has arrived."""

    def update(self, cycle: Any, received: bool = True) -> None:
        """Run the clock while a request is arriving, stop it once one has arrived whole.

        ``cycle`` is the protocol's request/response cycle: None before the first request's
        headers; a finished one's response is complete, so new data starts the next request.
        ``received`` says whether bytes came (not so when the connection has just opened).
        """
        if self.transport.is_closing():
            self.stop()
            return
        arriving = cycle is None or cycle.response_complete or cycle.more_body
        self.pending = cycle is None or cycle.response_complete
        if not arriving:
            self.stop()
            return
        if self.handle is None:
            self.handle = self.loop.call_later(self.seconds, self._expire)
            self.started = False
        self.started = self.started or received

    def stop(self) -> None:
        """No deadline (the request arrived, or the connection is gone)."""
        if self.handle is not None:
            self.handle.cancel()
            self.handle = None

    def _expire(self) -> None:
        self.handle = None
        if self.transport.is_closing():
            return
        log.info("closing a connection whose request did not arrive in %gs", self.seconds)
        # An answer only to a request begun and not yet handed to the app; a connection that
        # sent nothing is closed silently, as an idle one is (a browser's preconnect retries).
        if self.pending and self.started:
            self.transport.write(TIMED_OUT)
        self.transport.close()


def set_request_deadline(seconds: float) -> None:
    """The deadline for every request this process reads from now on."""
    RequestClock.seconds = seconds


class DeadlineProtocol(_Base):
    """uvicorn's protocol (httptools, else h11) whose requests must arrive in time."""

    clock: RequestClock

    def connection_made(self, transport: BaseTransport) -> None:
        """Start the first request's clock at once: a client that sends nothing is timed too."""
        super().connection_made(transport)  # type: ignore[arg-type]
        self.clock = RequestClock(self.loop, self.transport)
        self.clock.update(None, received=False)

    def data_received(self, data: bytes) -> None:
        """Parse as uvicorn does, then see whether the request has arrived."""
        super().data_received(data)
        if self.transport.get_protocol() is not self:  # upgraded (a WebSocket): no longer ours
            self.clock.stop()
            return
        self.clock.update(self.cycle)

    def connection_lost(self, exc: Exception | None) -> None:
        """No clock for a connection that is gone."""
        self.clock.stop()
        super().connection_lost(exc)


PROTOCOL = f"{__name__}:DeadlineProtocol"
"""What to give uvicorn as ``http=`` (a string, so its worker processes import it too)."""
