"""A deadline for each request to arrive (headers and body), per connection.

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
process (one process serves one app); :mod:`api.http_protocol` gives each connection a clock.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from api.errors import raw_problem
from infrastructure.settings import Settings

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger(__name__)

DEFAULT_SECONDS: float = Settings.model_fields["request_read_timeout"].default
"""Until :func:`set_request_deadline`: ``HARNESS_REQUEST_READ_TIMEOUT``'s default (one source)."""
TIMED_OUT = raw_problem(408, "the request did not arrive whole in time")
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
