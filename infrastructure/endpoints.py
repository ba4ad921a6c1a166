"""Where a configured URL reaches: its host and port, as a trace names a server."""

from __future__ import annotations

from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


def host_port(url: str) -> tuple[str, int]:
    """The host and port ``url`` reaches, the scheme's default port when it names none.

    Only those: never the userinfo, path or query, which may hold a credential.
    """
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:  # not a port: whatever uses the URL refuses it itself
        port = None
    return parts.hostname or "", port or DEFAULT_PORTS.get(parts.scheme, 0)
