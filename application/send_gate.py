"""The gate a model request waits at before it leaves the service, while the run commits.

What a model call needs is durable before the call is sent (design §17.1). Committing first and
only then handing the call to its thread leaves that thread idle through the commit (a flush to
disk or a round trip to PostgreSQL, 0.5-1 ms) and then makes the run wait for it to build the
request (the client's JSON, headers and request object, about as long). A provider that says
``gated = True`` is handed the call at once, with a :class:`SendGate` in the request: it builds
what it sends while the run commits, and calls :meth:`SendGate.wait` right before anything
leaves the process. The run opens the gate once its commit succeeded, or refuses it when the
commit failed (a cancel won, the store is down): the request is then never sent.
"""

from __future__ import annotations

import threading


class SendRefused(Exception):
    """The run could not make durable what this call needs: the request must not be sent."""

    def __init__(self) -> None:
        """Say why the call stopped short."""
        super().__init__("not sent: the run could not commit what the call needs first")


class SendGate:
    """Opened once a call's prerequisites are in the log; refused when they cannot be."""

    def __init__(self) -> None:
        """A closed gate."""
        self._decided = threading.Event()
        self._refused = False

    def open(self) -> None:
        """The commit succeeded: the request may leave."""
        self._decided.set()

    def refuse(self) -> None:
        """The commit failed: a waiting (or later) :meth:`wait` raises :class:`SendRefused`."""
        self._refused = True
        self._decided.set()

    def wait(self) -> None:
        """Return once the request may leave; raise :class:`SendRefused` when it may not.

        The run always opens or refuses the gate of a call it handed out (whatever ends its
        commit), so this wait ends.
        """
        self._decided.wait()
        if self._refused:
            raise SendRefused
