"""A TCP proxy on a loopback port whose open connections a test can cut (a dropped network).

The browser talks to the service through it; :meth:`Proxy.drop` closes every connection open at
that moment (both sides), while the proxy keeps accepting new ones, as after a network blip.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Proxy:
    """Forwards each connection to ``upstream`` (host, port) byte for byte."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open: list[socket.socket] = []
        self.lock = threading.Lock()
        self.closed = threading.Event()

    def serve(self) -> None:
        """Accept connections until :meth:`close`."""
        while not self.closed.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            with self.lock:
                self.open += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def drop(self) -> None:
        """Cut every connection open now."""
        with self.lock:
            cut, self.open = self.open, []
        for sock in cut:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        """Stop accepting, and cut what is open."""
        self.closed.set()
        self.listener.close()
        self.drop()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@contextmanager
def proxied(base: str) -> Iterator[tuple[str, Proxy]]:
    """A proxy in front of ``base`` (``http://127.0.0.1:PORT``); yields its base URL and itself."""
    host, port = base.removeprefix("http://").split(":")
    proxy = Proxy((host, int(port)))
    thread = threading.Thread(target=proxy.serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.port}", proxy
    finally:
        proxy.close()
        thread.join(timeout=10)
