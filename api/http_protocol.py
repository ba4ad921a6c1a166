"""uvicorn's HTTP/1.1 protocol with bounds on each request as it arrives: its time and its head.

* Time (:mod:`api.request_clock`): each request must arrive whole within
  ``HARNESS_REQUEST_READ_TIMEOUT`` (``408`` and closed beyond); the answer is not timed.
* Head (:mod:`api.request_head`): its bytes are counted before the parser holds them, and a head
  over ``HARNESS_MAX_HEADER_BYTES`` bytes or ``HARNESS_MAX_HEADERS`` fields is answered ``431``,
  after the answers to the requests before it on the connection (pipelined: nothing may go
  between an answer's bytes). The connection then closes once the client stops sending, at the
  latest after the read deadline; what it still sends is read and dropped meanwhile, so that it
  reads the answer (a socket closed with unread data resets the connection, and the client may
  see only the reset).

Both parsers uvicorn has are covered: httptools (:class:`HttpToolsGuarded`, what uvicorn itself
prefers) and h11 (:class:`H11Guarded`). Serve with ``http=PROTOCOL`` (an import string, which
uvicorn's worker processes resolve too).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from api.request_clock import RequestClock
from api.request_head import HeadMeter, too_large

try:  # the C parser uvicorn itself prefers ("auto"), when it is installed
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools comes with uvicorn[standard]
    HttpToolsProtocol = None  # type: ignore[assignment,misc]

if TYPE_CHECKING:
    import asyncio
    from asyncio import BaseProtocol, BaseTransport
    from collections.abc import Callable
    from typing import TypeAlias

    Event: TypeAlias = h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]

log = logging.getLogger(__name__)


class Guarded(Protocol):
    """What the guard reads of the protocol it guards (uvicorn's httptools or h11 protocol)."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    """The latest request/response cycle (None before the first request's head came whole)."""

    def head_arriving(self) -> bool:
        """Whether the bytes that come now are a request's head, for the parser to read now."""
        ...


class RequestGuard:
    """One connection's bounds on the request arriving: its clock and its head's size."""

    def __init__(self, protocol: Guarded) -> None:
        """Guard ``protocol``'s connection; start the first request's clock at once."""
        self.protocol = protocol
        self.clock = RequestClock(protocol.loop, protocol.transport)
        self.meter = HeadMeter()
        self.cause: str | None = None
        """Why the parser stopped at a bound (a hook raised), for :meth:`refused`."""
        self.refusal: str | None = None
        """Why the request being read was refused; its 431 is sent once (:attr:`linger`)."""
        self.linger: asyncio.TimerHandle | None = None
        self.clock.update(None, received=False)  # a client that sends nothing is timed too

    def receive(self, data: bytes, parse: Callable[[bytes], None]) -> None:
        """Parse ``data``, giving a head no more than its room; then run or stop the clock."""
        if self.refusal is not None:
            return  # answered: what still comes is dropped until the client stops
        while data and self._parsing():
            room = self.meter.room(self.protocol.head_arriving(), self.protocol.cycle)
            if room is None:  # a body: HARNESS_MAX_BODY_BYTES and uvicorn's flow control bound it
                parse(data)
                break
            if room <= 0:
                self.refuse(self.meter.limits.over_bytes())
                break
            piece, data = data[:room], data[room:]
            self.meter.used += len(piece)
            parse(piece)
        if self._parsing():
            self.clock.update(self.protocol.cycle)
        else:  # closed, refused or upgraded (a WebSocket: no longer ours)
            self.clock.stop()

    def refused(self) -> bool:
        """Answer 431 if the parser stopped at a bound (:attr:`cause`); else say it did not."""
        if self.cause is None or self.refusal is not None:
            return self.refusal is not None
        self.refuse(self.cause)
        return True

    def refuse(self, why: str) -> None:
        """Answer 431 saying ``why`` once no answer is being sent; nothing more is parsed."""
        log.info("answering 431: %s", why)
        self.refusal = why
        self.clock.stop()
        if not self._answering():  # else after the answers being sent (pipelining), in order
            self._answer()

    def response_complete(self) -> None:
        """An answer was sent whole: a refusal kept until then goes now."""
        if self.refusal is not None and not self._answering():
            self._answer()

    def _answering(self) -> bool:
        cycle = self.protocol.cycle  # the latest request's: the answers go in order
        return cycle is not None and not cycle.response_complete

    def _answer(self) -> None:
        """The 431, then the end; close when the client stops sending (or at the deadline)."""
        transport = self.protocol.transport
        if self.linger is not None or transport.is_closing():  # sent, or the connection ends
            return
        transport.write(too_large(self.refusal or ""))
        self.linger = self.protocol.loop.call_later(RequestClock.seconds, transport.close)
        if transport.can_write_eof():  # what the client still sends is dropped; its EOF closes
            transport.write_eof()
        else:  # pragma: no cover - TCP and Unix sockets can
            transport.close()

    def stop(self) -> None:
        """The connection is gone: no clock, no lingering."""
        self.clock.stop()
        if self.linger is not None:
            self.linger.cancel()

    def _parsing(self) -> bool:
        transport, protocol = self.protocol.transport, self.protocol
        ours = transport.get_protocol() is cast("BaseProtocol", protocol)  # not upgraded
        return ours and self.refusal is None and not transport.is_closing()


class _H11Connection(h11.Connection):
    """h11's server side that also refuses more than ``HARNESS_MAX_HEADERS`` header fields."""

    def __init__(self) -> None:
        # h11's own bound on an incomplete event: never below the head's (its default is 16 KiB)
        super().__init__(h11.SERVER, max_incomplete_event_size=HeadMeter.limits.bytes)
        self.cause: str | None = None

    def next_event(self) -> Event:
        """h11's next event; a head over a bound raises as h11's errors do (uvicorn: a 400)."""
        limits = HeadMeter.limits
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as error:
            if error.error_status_hint == 431:  # a pipelined head h11 buffered past the bound
                self.cause = limits.over_bytes()
            raise
        if isinstance(event, h11.Request) and len(event.headers) > limits.fields:
            self.cause = limits.over_fields()
            raise h11.RemoteProtocolError(self.cause, error_status_hint=431)
        return event


class H11Guarded(H11Protocol):
    """uvicorn's h11 protocol whose requests must arrive in time and within the head's bounds."""

    guard: RequestGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """uvicorn's, with h11's connection bounded as the head is."""
        super().__init__(*args, **kwargs)
        self.conn = _H11Connection()

    def connection_made(self, transport: BaseTransport) -> None:
        """uvicorn's, then the guard."""
        super().connection_made(transport)  # type: ignore[arg-type]
        self.guard = RequestGuard(self)

    def data_received(self, data: bytes) -> None:
        """Parse as uvicorn does, within the guard's bounds."""
        self.guard.receive(data, super().data_received)

    def head_arriving(self) -> bool:
        """h11 waits for a request (a pipelined one it keeps unread, bounded by its own limit)."""
        return self.conn.their_state is h11.IDLE

    def on_response_complete(self) -> None:
        """uvicorn's, then a refusal kept until the answer being sent was whole."""
        super().on_response_complete()
        self.guard.response_complete()

    def send_400_response(self, msg: str) -> None:
        """A head over a bound is a 431 naming it; anything else malformed, uvicorn's 400."""
        self.guard.cause = self.conn.cause if isinstance(self.conn, _H11Connection) else None
        if not self.guard.refused():
            super().send_400_response(msg)

    def connection_lost(self, exc: Exception | None) -> None:
        """No clock for a connection that is gone."""
        self.guard.stop()
        super().connection_lost(exc)


if HttpToolsProtocol is not None:

    class HttpToolsGuarded(HttpToolsProtocol):
        """uvicorn's httptools protocol whose requests must arrive in time and within bounds."""

        guard: RequestGuard

        def connection_made(self, transport: BaseTransport) -> None:
            """uvicorn's, then the guard."""
            super().connection_made(transport)  # type: ignore[arg-type]
            self.guard = RequestGuard(self)

        def data_received(self, data: bytes) -> None:
            """Parse as uvicorn does, within the guard's bounds."""
            self.guard.receive(data, super().data_received)

        def head_arriving(self) -> bool:
            """No body is arriving: httptools reads a request's head (pipelined ones too)."""
            return self.cycle is None or not self.cycle.more_body

        def on_response_complete(self) -> None:
            """uvicorn's, then a refusal kept until the answers being sent were whole."""
            super().on_response_complete()
            self.guard.response_complete()

        def on_header(self, name: bytes, value: bytes) -> None:
            """Keep the field, unless the request already has as many as it may."""
            if len(self.headers) >= HeadMeter.limits.fields:
                self.guard.cause = HeadMeter.limits.over_fields()
                raise ValueError(self.guard.cause)  # stops the parser: uvicorn answers 400 …
            super().on_header(name, value)

        def send_400_response(self, msg: str) -> None:
            """… which is a 431 naming the bound; anything else malformed, uvicorn's 400."""
            if not self.guard.refused():
                super().send_400_response(msg)

        def connection_lost(self, exc: Exception | None) -> None:
            """No clock for a connection that is gone."""
            self.guard.stop()
            super().connection_lost(exc)

    DeadlineProtocol: type[HttpToolsProtocol | H11Protocol] = HttpToolsGuarded
else:  # pragma: no cover
    DeadlineProtocol = H11Guarded
"""The protocol ``harness serve`` uses: httptools' when installed, else h11's."""

PROTOCOL = f"{__name__}:DeadlineProtocol"
"""What to give uvicorn as ``http=`` (a string, so its worker processes import it too)."""
