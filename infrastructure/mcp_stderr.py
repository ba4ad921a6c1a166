"""An MCP server's stderr goes to a file of its own, bounded in size, never to the terminal.

A stdio server's warnings are the operator's to read when they want them, not lines among the
harness's own. The server writes into a pipe; a thread copies each line into a rotating file
(``mcp-NAME.log`` and one older ``mcp-NAME.log.1``, each at most ``max_bytes``), so a server that
writes without end fills at most twice that. One pipe serves every start of the server.
"""

from __future__ import annotations

import logging
import os
import threading
from logging.handlers import RotatingFileHandler
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

MAX_LOG_BYTES = 5 * 1024 * 1024
"""Bytes of one log file before it is rotated (one older file is kept)."""
LINE_LIMIT = 64 * 1024
"""Bytes a line is read in at most: a line without end is cut into pieces, never held whole."""
CLOSE_WAIT_S = 5.0


class StderrLog:
    """A pipe for a server's stderr whose lines a thread writes into a rotating file."""

    def __init__(
        self,
        path: Path,
        max_bytes: int = MAX_LOG_BYTES,
        redact: Callable[[str], str] = str,
    ) -> None:
        """Open ``path`` (its folder is made) and start copying; OSError when it cannot be.

        ``redact`` hides the secrets the server was handed in each line before it is written.
        """
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._redact = redact
        self._handler = RotatingFileHandler(
            path, maxBytes=max_bytes, backupCount=1, encoding="utf-8"
        )
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        read_end, write_end = os.pipe()
        self.writer: TextIO = os.fdopen(write_end, "w")
        """What the server process gets as its stderr (its own copy of the pipe's end)."""
        self._reader = os.fdopen(read_end, "rb")
        self._thread = threading.Thread(
            target=self._copy, name=f"harness-mcp-stderr-{path.stem}", daemon=True
        )
        self._thread.start()

    def _copy(self) -> None:
        """Copy lines until every writer (ours, and each server process's) is closed."""
        with self._reader:
            for raw in iter(lambda: self._reader.readline(LINE_LIMIT), b""):
                line = self._redact(raw.decode("utf-8", "replace").rstrip("\r\n"))
                self._handler.handle(logging.makeLogRecord({"msg": line, "args": None}))

    def close(self) -> None:
        """Close our end; the copying ends once the server processes have ended too (bounded)."""
        self.writer.close()
        self._thread.join(CLOSE_WAIT_S)
        self._handler.close()
